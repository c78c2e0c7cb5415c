"""What a fresh GPU process compiles at run time on the pipeline's path: only the kernels not yet
moved into the ahead-of-time module, from the functions listed here. A run from the command line
with an empty CuPy cache is recorded by benchmarks/runtime_compiles.py; a compilation from any
other function (a new CuPy elementwise, indexing or reduction call on the path, or one moved
code calls again) fails the test. Moving a step into kernels/cuda/ shrinks the list. GPU only:
without one nothing is compiled."""
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

# (file, function) of the project's innermost frame at each compilation still allowed: CuPy
# kernels the path calls where the module has no step of its own yet
STILL_COMPILED = {
    ("kernels/backend.py", "scatter_min"),
    ("kernels/backend.py", "float32_order_keys"),
    ("kernels/backend.py", "float32_to_float64"),
    ("kernels/verify.py", "connected_components"),
    ("kernels/verify.py", "_pointer_jump"),
    ("kernels/verify.py", "_list_suffix_sums"),
    ("kernels/verify.py", "_root_forest"),
    ("kernels/verify.py", "_heavier_ancestor"),
    ("kernels/verify.py", "_krt_leaf_order"),
    ("kernels/verify.py", "_range_maximum"),
    ("kernels/verify.py", "query"),
    ("kernels/verify.py", "verify_forest"),
    ("kernels/parquet/encode.py", "dictionary"),
    ("kernels/parquet/encode.py", "_varint_length"),
    ("kernels/parquet/encode.py", "hybrid"),
    ("tasks/forest_weight.py", "exact_units"),
    ("tasks/graph_tasks.py", "validate_forest"),
    ("tasks/parquet/write/page_writer.py", "_encode_chunk"),
    ("tasks/parquet/write/result_files.py", "dictionary_columns"),
    ("tasks/parquet/write/tables.py", "dense_bfs_columns"),
}


def site(entry: dict) -> tuple:
    """(file, function) of a compilation's innermost project frame."""
    frame = entry["called_from"][0] if entry["called_from"] else "outside the project:0 ?"
    where, function = frame.split(" ", 1)
    return where.rsplit(":", 1)[0], function


@pytest.mark.parametrize("weighted", [True, False], ids=["weighted", "unweighted"])
def test_a_fresh_process_compiles_only_the_steps_not_yet_in_the_module(tmp_path, prefect_server, weighted):
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
    unexpected = [entry for entry in compiled if site(entry) not in STILL_COMPILED]
    assert not unexpected, unexpected
