"""What a fresh GPU machine pays before its first answer: CUDA code compiled at run time.

    python -m benchmarks.cold_start --graph kron:20 --json FILE [--repeat 2]

A container started for each run (a Kubernetes or Docker work pool) has an empty CuPy kernel
cache. This times, as a user types it, `python -m flows.pipeline GRAPH --source S --backend cupy
--runner threads` against one running `prefect server` (started here) with CUPY_CACHE_DIR an
empty folder (cold), then --repeat more times with the cache that run left (warm), and counts
the kernels the cold run compiled; each run's seconds by stage (its summary's) are kept too. Beside it, in a fresh process each: the project's own CUDA
module compiled by NVRTC (kernels/cuda_source.py, one module), and CuPy's context and first
allocation. What is left of the cold run's extra seconds is CuPy's own elementwise, reduction
and indexing kernels, each compiled by NVRTC on its first call. Appends one record to FILE.
Needs a GPU.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.cli_startup import fresh_environment, start_server
from benchmarks.harness import append_records, machine
from benchmarks.orchestration import code_version

# run in a fresh interpreter with an empty cache: seconds for CuPy's context, then for the module
MODULE_PROBE = """
import time
started = time.perf_counter()
import cupy
cupy.zeros(1)
ready = time.perf_counter()
from kernels.cuda_source import name_expressions, source
module = cupy.RawModule(code=source(), options=("-std=c++17",), name_expressions=name_expressions())
module.get_function(name_expressions()[0])
print(ready - started, time.perf_counter() - ready)
"""


def timed(env: dict, argv: list[str]) -> tuple[float, dict]:
    """Seconds of a run of the command line (with --json) end to end, and its summary's seconds
    by stage."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr}")
    summary = json.loads(done.stdout.splitlines()[-1])
    return time.perf_counter() - started, {k: v for k, v in summary.items() if k.endswith("_seconds")}


def compiled_kernels(cache: Path) -> int:
    """Kernels in a CuPy cache folder: one .cubin file each."""
    return sum(1 for _ in cache.glob("*.cubin"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cold_start", description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="kron:20", help="kron:SCALE, or a Parquet file")
    p.add_argument("--repeat", type=int, default=2, help="warm runs after the cold one (median)")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cold-start-"))
    if args.graph.startswith("kron:"):
        from data.generators import kronecker

        src, dst, weight = kronecker(np, int(args.graph.split(":")[1]))
        graph, source = work / "graph.parquet", int(src[0])
        pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
    else:
        graph = Path(args.graph)
        source = pq.read_table(graph, columns=["src"]).column(0)[0].as_py()
    env = fresh_environment(str(work / "prefect-home"), drop=("CUPY_CACHE",))
    server, url = start_server(env)
    env["PREFECT_API_URL"] = url
    try:
        probe_cache = work / "module-cache"
        probe = subprocess.run([sys.executable, "-c", MODULE_PROBE], env={**env, "CUPY_CACHE_DIR": str(probe_cache)},
                               capture_output=True, text=True, check=True)
        context_seconds, module_seconds = map(float, probe.stdout.split())
        cache = work / "cupy-cache"
        run_env = {**env, "CUPY_CACHE_DIR": str(cache)}
        command = [sys.executable, "-m", "flows.pipeline", str(graph), "--source", str(source), "--backend", "cupy",
                   "--runner", "threads", "--output", str(work / "out"), "--json"]
        cold, cold_stages = timed(run_env, command)
        kernels = compiled_kernels(cache)
        warm_runs = [timed(run_env, command) for _ in range(args.repeat)]
        warm = [round(seconds, 2) for seconds, _ in warm_runs]
    finally:
        server.terminate()
        server.wait(timeout=30)
    record = {"algo": "cold-start", "graph": args.graph, "command_run": "flows.pipeline --source S --runner threads",
              "cold_seconds": round(cold, 2), "warm_seconds": round(statistics.median(warm), 2), "warm_runs": warm,
              "kernels_compiled_cold": kernels, "stages_cold": cold_stages,
              "stages_warm": [stages for _, stages in warm_runs], "own_module_nvrtc_seconds": round(module_seconds, 2),
              "cupy_context_seconds": round(context_seconds, 2), "machine": machine("cupy"), "code": code_version(),
              "date": datetime.date.today().isoformat(),
              "command": " ".join(["python -m benchmarks.cold_start", *(argv if argv is not None else sys.argv[1:])])}
    print(record, flush=True)
    append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    sys.exit(main())
