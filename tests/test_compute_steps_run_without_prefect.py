"""The pipeline's steps below the Prefect tasks (the read and renumbering of tasks.prepare, the
kernels, the validations, the result writer) run in a process that never imports Prefect: the
bare recipe of benchmarks.orchestration, which times a fresh process, pays for the computing
and not for Prefect's import."""
import subprocess
import sys

import pyarrow.parquet as pq

from tests.test_cli import ROOT, SAMPLE


def test_the_bare_recipe_reads_computes_validates_and_writes_without_importing_prefect(tmp_path):
    code = ("import sys\n"
            "from benchmarks.orchestration import bare_pipeline\n"
            "stages = bare_pipeline(sys.argv[1], int(sys.argv[2]), sys.argv[3], 'numpy')\n"
            "print(sorted(stages))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'dask', 'distributed')))")
    done = subprocess.run([sys.executable, "-c", code, SAMPLE, "0", str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    stages, imported = done.stdout.strip().splitlines()[-2:]
    assert stages == str(sorted(["load", "prepare", "csr", "bfs", "msf", "validate", "write", "reader"]))
    assert imported == "[]"
    forest = pq.read_table(tmp_path / "out" / "mst_edges.parquet")
    assert forest.num_rows == 5 and abs(sum(forest.column("weight").to_pylist()) - 13) < 1e-9
