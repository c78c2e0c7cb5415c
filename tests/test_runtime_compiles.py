"""A fresh GPU process compiles nothing at run time on the pipeline's path: every step it takes
on the device is precompiled, in CuPy's library code or in the ahead-of-time module. A run from
the command line with an empty CuPy cache is recorded by benchmarks/runtime_compiles.py; any
compilation (a new CuPy elementwise, indexing or reduction call on the path) fails the test,
named by the project's innermost frame that led to it. GPU only: without one nothing is
compiled."""
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernels import backend as be
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not be.cupy_usable(), reason="run-time compilation happens on a GPU only")


def site(entry: dict) -> tuple:
    """(file, function) of a compilation's innermost project frame."""
    frame = entry["called_from"][0] if entry["called_from"] else "outside the project:0 ?"
    where, function = frame.split(" ", 1)
    return where.rsplit(":", 1)[0], function


@pytest.mark.parametrize("weighted", [True, False], ids=["weighted", "unweighted"])
def test_a_fresh_process_compiles_no_kernel(tmp_path, prefect_server, weighted):
    from data.generators import kronecker

    src, dst, weight = kronecker(np, 12)
    graph = tmp_path / "kron12.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
    log = tmp_path / "compiles.json"
    command = [sys.executable, "-m", "benchmarks.runtime_compiles", str(log), "-m", "flows.pipeline", str(graph),
               "--source", str(int(src[0])), "--backend", "cupy", "--runner", "threads",
               "--output", str(tmp_path / "out")]
    if not weighted:
        command += ["--weight-col", "none"]
    env = {**os.environ, "CUPY_CACHE_DIR": str(tmp_path / "empty-cupy-cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=200)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = json.loads(log.read_text())["log"]
    assert not compiled, sorted({site(entry) for entry in compiled})
