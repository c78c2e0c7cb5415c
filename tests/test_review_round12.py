"""Review of the run paths made absolute in the flows. Faults are pinned by named cases
against real Prefect runs."""
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.references import assert_forest

ROOT = Path(__file__).resolve().parent.parent

# A process whose working folder is removed before it calls the flow (a shell left in a build
# folder that was deleted, a notebook whose folder was moved): argv is the folder, then the
# flow's input and output
FROM_A_REMOVED_FOLDER = """
import os, sys
os.chdir(sys.argv[1])
os.rmdir(sys.argv[1])
from flows.mst import mst_flow
state = mst_flow(sys.argv[2], output=sys.argv[3], return_state=True)
print(state.type.value)
print(state.message)
"""


def run_from_a_removed_folder(tmp_path: Path, input: str, output: str) -> list[str]:
    folder = tmp_path / "removed"
    folder.mkdir()
    done = subprocess.run([sys.executable, "-c", FROM_A_REMOVED_FOLDER, str(folder), input, output],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()[-2:]


def small_graph(path: Path):
    src, dst, weight = [0, 1, 2, 0], [1, 2, 0, 3], [1.0, 2.0, 3.0, 0.5]
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), path)
    return src, dst, weight


@pytest.mark.usefixtures("prefect_server")
def test_absolute_paths_run_from_a_folder_that_was_removed(tmp_path):
    """The flows make relative paths absolute against the current folder. They looked the folder
    up for absolute paths too, so a run given only absolute paths, from a process whose working
    folder had been removed, failed with "[Errno 2] No such file or directory", naming nothing;
    such a run needs no current folder and completes."""
    graph = small_graph(tmp_path / "g.parquet")
    state, _ = run_from_a_removed_folder(tmp_path, str(tmp_path / "g.parquet"), str(tmp_path / "o"))
    assert state == "COMPLETED"
    assert_forest(tmp_path / "o" / "mst_edges.parquet", *graph)


@pytest.mark.usefixtures("prefect_server")
def test_a_relative_path_from_a_folder_that_was_removed_is_named(tmp_path):
    """A relative path has no meaning once the folder it was given in is gone: the run fails
    naming the path, and writes nothing."""
    small_graph(tmp_path / "g.parquet")
    state, message = run_from_a_removed_folder(tmp_path, "g.parquet", str(tmp_path / "o"))
    assert state == "FAILED"
    assert ("input 'g.parquet' is relative, but the folder the run started in no longer exists; "
            "give an absolute path") in message
    assert not (tmp_path / "o").exists()
