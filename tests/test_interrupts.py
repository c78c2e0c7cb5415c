"""A signal ends a run where it is: the stages after it never run, nothing is written, exit 130.
(Whole-or-nothing outputs when the signal comes late are in tests/test_faults.py.)"""
import os
import signal
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data.generators import kronecker
from tests.conftest import ROOT

pytestmark = pytest.mark.usefixtures("prefect_server")


def start_mst(tmp_path, scale: int, seed: int, out, runner: str) -> subprocess.Popen:
    """`python -m flows.mst` on a Kronecker graph, verbose, its log readable line by line."""
    src, dst, weight = kronecker(np, scale, seed=seed)
    graph = tmp_path / "kron.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
    return subprocess.Popen([sys.executable, "-m", "flows.mst", str(graph), "--output", str(out), "--runner", runner,
                             "--verbose"], cwd=ROOT, env={**os.environ, "PREFECT_LOGGING_LEVEL": "INFO"},
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("runner", ["threads", "dask"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_after_the_read_stops_the_run_before_any_later_stage(tmp_path, runner, signum):
    out = tmp_path / "out"
    run = start_mst(tmp_path, 16, 3, out, runner)
    for line in run.stderr:
        if "read 1,048,576 edges" in line:
            run.send_signal(signum)
            break
    else:
        pytest.fail("the run never logged its read")
    _, rest = run.communicate(timeout=120)
    assert run.returncode == 130, rest
    assert "MSF validation passed" not in rest and "wrote " not in rest
    assert not out.exists() or list(out.iterdir()) == []


def _flow_run_writing_to(out) -> "object":
    """The flow run, read back from the server, whose output parameter is ``out``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        # the newest first: the suite's server holds hundreds of runs by the time this one ends
        runs = [r for r in client.read_flow_runs(sort=FlowRunSort.EXPECTED_START_TIME_DESC, limit=50)
                if r.parameters.get("output") == str(out)]
    assert len(runs) == 1, runs
    return runs[0]


@pytest.mark.parametrize("runner, signum", [("threads", signal.SIGTERM), ("dask", signal.SIGTERM),
                                            ("threads", signal.SIGINT)], ids=["threads-SIGTERM", "dask-SIGTERM",
                                                                              "threads-SIGINT"])
def test_a_stopped_command_leaves_its_flow_run_cancelled_on_the_server(tmp_path, runner, signum):
    """The run was Running on the server for good once the command had exited 130 (the task in
    hand outlived the watchdog's grace, and the command runs without a heartbeat): the command
    now marks it Cancelled, naming the signal, before it exits."""
    out = tmp_path / "out"
    run = start_mst(tmp_path, 17, 5, out, runner)
    for line in run.stderr:
        if "read 2,097,152 edges" in line:  # the forest's task is in hand
            run.send_signal(signum)
            break
    else:
        pytest.fail("the run never logged its read")
    _, rest = run.communicate(timeout=120)
    assert run.returncode == 130, rest
    state = _flow_run_writing_to(out).state
    assert state.type.value == "CANCELLED", (state.type, state.message)
    assert state.message == f"stopped by {signum.name}: the command that ran it was interrupted"
    assert not out.exists() or list(out.iterdir()) == []


def test_a_signal_once_the_outcome_is_decided_exits_with_that_outcome():
    """Once a command has said how it ended, Prefect's exit handlers can take seconds to send the
    last logs; a SIGTERM then ended it with 143 and no word (the default handler), though its run
    had completed and written its file. It now exits with the status already decided."""
    code = ("import os, signal, time\nfrom flows import interrupts\ninterrupts.ending(0)\n"
            "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(30)\nraise SystemExit(5)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
