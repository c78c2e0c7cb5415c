"""Settings read from the environment (GRAPH_*): a bad value is one line naming the variable
on the command line, and fails a run from Python naming it; an empty one means the default;
the task runner is read when a run starts, never at import."""
import os
import subprocess
import sys

import pytest

from flows import mst as mst_cli
from flows.mst import mst_flow
from tests.conftest import ROOT
from tests.helpers import run, write_seed

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.mark.parametrize("name, value", [
    ("GRAPH_BACKEND", "gpu"),
    ("GRAPH_DASK_MIN_EDGES", "10M"),
    ("GRAPH_DASK_WORKERS", "two"),
    ("GRAPH_DASK_WORKERS", "0"),
    ("GRAPH_PROGRESS_MIN_EDGES", "1e6"),
    ("GRAPH_FLOW_TIMEOUT_SECONDS", "6h"),
    ("GRAPH_FLOW_TIMEOUT_SECONDS", "0"),
    ("GRAPH_COMM_TIMEOUT", "15m"),
], ids=["backend", "dask-min-edges", "dask-workers", "no-dask-workers", "progress-min-edges", "flow-timeout",
        "zero-flow-timeout", "comm-timeout"])
def test_a_bad_setting_in_the_environment_is_one_line_naming_it(tmp_path, capsys, monkeypatch, name, value):
    """On any failure, a wrong argument included, the command prints one line `error: ...` on
    stderr, naming the argument, and exits 1. The GRAPH_* variables are the arguments' defaults
    (`--backend`, else `$GRAPH_BACKEND`; GRAPH_DASK_MIN_EDGES moves the threshold of `--runner
    auto`; GRAPH_PROGRESS_MIN_EDGES the size from which progress bars are published), so a bad
    one is named the same way. A value that is not a number gave `error: invalid literal for int() with base 10: '10M'`, naming no variable, or
    (GRAPH_DASK_WORKERS, GRAPH_COMM_TIMEOUT) passed unchecked until a Dask run read it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(name, value)
    code, out, err = run(mst_cli.main, [write_seed(tmp_path / "g.parquet"), "--output", tmp_path / "out"], capsys)
    assert code == 1 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {name}={value}: "), err
    assert not (tmp_path / "out").exists()


def test_a_bad_setting_fails_a_run_from_python_naming_it_and_an_empty_one_is_the_default(tmp_path, monkeypatch):
    """GRAPH_PROGRESS_MIN_EDGES sets the size from which progress bars are published. A run from
    Python or a deployment reads the variable in its task: a value that
    is not a number failed the run with `invalid literal for int()`; set but empty (`VAR=` in
    a job's environment) it failed too, while every other GRAPH_* variable left empty means its
    default."""
    graph = write_seed(tmp_path / "g.parquet")
    monkeypatch.setenv("GRAPH_PROGRESS_MIN_EDGES", "1e6")
    state = mst_flow(str(graph), output=str(tmp_path / "out"), return_state=True)
    assert state.is_failed() and "GRAPH_PROGRESS_MIN_EDGES=1e6" in state.message, state.message
    assert not (tmp_path / "out").exists()
    monkeypatch.setenv("GRAPH_PROGRESS_MIN_EDGES", "")
    state = mst_flow(str(graph), output=str(tmp_path / "out"), return_state=True)
    assert state.is_completed(), state.message


def test_the_task_runner_is_chosen_when_a_run_starts(tmp_path, monkeypatch):
    """The task runner is chosen when a run starts, never at import, so every flow imports on
    any machine; its default is `$GRAPH_TASK_RUNNER` as the run starts. The flows used to take
    their default runner from the environment at import: a notebook that set
    GRAPH_TASK_RUNNER=dask after `import flows.pipeline` ran in threads, and a bad value made
    the import itself fail."""
    imported = subprocess.run([sys.executable, "-c", "import flows.mst, flows.bfs, flows.pipeline"], cwd=ROOT,
                              env={**os.environ, "GRAPH_TASK_RUNNER": "processes"}, capture_output=True, text=True,
                              timeout=120)
    assert imported.returncode == 0, imported.stderr
    monkeypatch.setenv("GRAPH_TASK_RUNNER", "processes")  # after the import: the run reads it
    state = mst_flow(str(write_seed(tmp_path / "g.parquet")), output=str(tmp_path / "out"), return_state=True)
    assert state.is_failed() and "GRAPH_TASK_RUNNER=processes" in state.message, state.message
    assert not (tmp_path / "out").exists()
