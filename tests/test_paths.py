"""Paths as users give them: relative paths mean the folder the command (or the Python
process) runs in, also when the tasks run on a Dask cluster whose workers started in another
folder; absolute paths need no current folder, so a run from a folder that was removed
completes, while a relative one is named; a path or id that is not UTF-8 text is refused
before the run, named in one line."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows import pipeline as pipeline_cli
from tests.helpers import child_pythonpath, run, write_edges
from tests.references import assert_distances, assert_forest

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.mark.parametrize("partitions", ["1", "2"])
def test_relative_paths_on_a_running_cluster_mean_the_commands_folder(tmp_path, capsys, monkeypatch,
                                                                    cpu_cluster, cpu_workers_folder, partitions):
    """`python -m flows.pipeline data/g.parquet --dask-address ...`: the command checked
    data/g.parquet in its own folder, but the tasks resolved the relative paths in their
    workers' folder, where another data/g.parquet was: they read that graph and wrote its
    results there, and the command printed them with exit 0. Paths are now made absolute in
    the flow, against the folder the run was started from."""
    address, workers_folder = cpu_cluster.scheduler_address, cpu_workers_folder
    mine = ([0, 1, 2, 0], [1, 2, 0, 2], [1.0, 2.0, 3.0, 0.5])
    write_edges(tmp_path / "data" / "g.parquet", *mine)
    write_edges(workers_folder / "data" / "g.parquet", [0, 1], [1, 5], [7.0, 7.0])  # another graph, vertex 0 included
    monkeypatch.chdir(tmp_path)
    code, out, err = run(pipeline_cli.main, ["data/g.parquet", "--source", "0", "--partitions", partitions,
                                             "--backend", "numpy", "--dask-address", address], capsys)
    assert code == 0, err
    results = tmp_path / "output" / "g"
    wrote = [line for line in out.splitlines() if line.startswith("wrote ")]
    assert wrote == [f"wrote {results / name}" for name in ("bfs_distances.parquet", "mst_edges.parquet")]
    assert_forest(results / "mst_edges.parquet", *mine)
    assert_distances(results / "bfs_distances.parquet", *mine[:2], [0])
    assert not (workers_folder / "output").exists()


LATIN1 = os.fsdecode(b"caf\xe9")  # a name in Latin-1, as Python holds it: with a surrogate escape


@pytest.mark.parametrize("where", ["input", "--output", "--source"])
def test_an_argument_that_is_not_utf8_is_named_in_one_line(tmp_path, capsys, monkeypatch, where):
    """A file or folder named in another encoding than UTF-8 (or such an id): the run failed with
    "'utf-8' codec can't encode character '\\udce9' in position 256: surrogates not allowed",
    naming neither the argument nor the path. It is now refused before the run, named."""
    monkeypatch.chdir(tmp_path)
    graph = write_edges(tmp_path / "g.parquet", [0, 1], [1, 2], [1.0, 1.0])
    if where == "input":  # (pyarrow cannot open such a path itself)
        graph = graph.rename(tmp_path / f"{LATIN1}.parquet")
    argv = [graph, "--source", LATIN1 if where == "--source" else "0",
            "--output", tmp_path / (LATIN1 if where == "--output" else "o")]
    code, out, err = run(pipeline_cli.main, argv, capsys)
    shown = {"input": f"{tmp_path}/caf\\xe9.parquet", "--output": f"{tmp_path}/caf\\xe9", "--source": "caf\\xe9"}[where]
    assert code == 1 and out == ""
    assert err.splitlines() == [f"error: {where} '{shown}' is not UTF-8 text, which a run needs to record it; "
                                + ("give it in UTF-8" if where == "--source" else "rename it")]
    assert sorted(p.name for p in tmp_path.iterdir()) == [graph.name]


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
    # the checkout first, then what the environment already has (where Prefect may be installed)
    done = subprocess.run([sys.executable, "-c", FROM_A_REMOVED_FOLDER, str(folder), input, output],
                          env={**os.environ, "PYTHONPATH": child_pythonpath()}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()[-2:]


def small_graph(path: Path):
    src, dst, weight = [0, 1, 2, 0], [1, 2, 0, 3], [1.0, 2.0, 3.0, 0.5]
    write_edges(path, src, dst, weight)
    return src, dst, weight


def test_absolute_paths_run_from_a_folder_that_was_removed(tmp_path):
    """The flows make relative paths absolute against the current folder. They looked the folder
    up for absolute paths too, so a run given only absolute paths, from a process whose working
    folder had been removed, failed with "[Errno 2] No such file or directory", naming nothing;
    such a run needs no current folder and completes."""
    graph = small_graph(tmp_path / "g.parquet")
    state, _ = run_from_a_removed_folder(tmp_path, str(tmp_path / "g.parquet"), str(tmp_path / "o"))
    assert state == "COMPLETED"
    assert_forest(tmp_path / "o" / "mst_edges.parquet", *graph)


def test_a_relative_path_from_a_folder_that_was_removed_is_named(tmp_path):
    """A relative path has no meaning once the folder it was given in is gone: the run fails
    naming the path, and writes nothing."""
    small_graph(tmp_path / "g.parquet")
    state, message = run_from_a_removed_folder(tmp_path, "g.parquet", str(tmp_path / "o"))
    assert state == "FAILED"
    assert ("input 'g.parquet' is relative, but the folder the run started in no longer exists; "
            "give an absolute path") in message
    assert not (tmp_path / "o").exists()
