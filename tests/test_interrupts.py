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


@pytest.mark.parametrize("runner", ["threads", "dask"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_after_the_read_stops_the_run_before_any_later_stage(tmp_path, runner, signum):
    src, dst, weight = kronecker(np, 16, seed=3)
    graph = tmp_path / "kron.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
    out = tmp_path / "out"
    run = subprocess.Popen([sys.executable, "-m", "flows.mst", str(graph), "--output", str(out), "--runner", runner,
                            "--verbose"], cwd=ROOT, env={**os.environ, "PREFECT_LOGGING_LEVEL": "INFO"},
                           text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
