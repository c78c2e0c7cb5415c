"""Where Dask workers start to pay: the command line's `auto` runner threshold.

    python -m benchmarks.runner_threshold --scale 14 --scale 16 --scale 18 --scale 20 --json FILE

For each Kronecker scale (Graph500 generator, written to Parquet untimed) times
`python -m flows.pipeline GRAPH --source-set A --source-set B` as a subprocess (two searches and
the forest: the work a Dask cluster can spread) with `--runner threads`, `--runner dask` (a
LocalCluster the run starts: GRAPH_DASK_WORKERS, default min(4, cores)) and `--runner auto`,
taking turns, against one running `prefect server` started here. Median of --repeat runs, each
run's seconds and the load average after each round kept. Appends one record per scale to FILE,
with what `auto` chose and its median over the faster runner's.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.cli_startup import fresh_environment, start_server
from benchmarks.harness import append_records, machine
from benchmarks.orchestration import code_version
from flows.runner_choice import resolve_auto
from tasks.parquet.dataset.plan import plan_input

RUNNERS = ("threads", "dask", "auto")


def timed(env: dict, argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "flows.pipeline", *argv], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr}")
    return seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.runner_threshold", description=__doc__.split("\n")[1])
    p.add_argument("--scale", type=int, action="append", required=True, help="Kronecker scale (repeat)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    from data.generators import kronecker

    work = tempfile.mkdtemp(prefix="runner-threshold-")
    env = fresh_environment(os.path.join(work, "prefect-home"))
    server, url = start_server(env)
    env["PREFECT_API_URL"] = url
    records = []
    try:
        for scale in args.scale:
            src, dst, weight = kronecker(np, scale)
            graph = os.path.join(work, f"kron{scale}.parquet")
            pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
            sources = ["--source-set", str(int(src[0])), "--source-set", str(int(src[1]))]
            # the runners take turns within each repeat, so that a change in the machine's load
            # falls on all of them alike rather than on whichever ran last
            runs = {runner: [] for runner in RUNNERS}
            loads = [round(os.getloadavg()[0], 2)]
            for _ in range(args.repeat):
                for runner in RUNNERS:
                    run = [graph, *sources, "--runner", runner, "--output", os.path.join(work, runner)]
                    runs[runner].append(round(timed(env, run), 2))
                loads.append(round(os.getloadavg()[0], 2))
            seconds = {runner: statistics.median(times) for runner, times in runs.items()}
            fastest = min(seconds["threads"], seconds["dask"])
            record = {"algo": "runner-threshold", "graph": f"kron:{scale}", "edges": int(src.shape[0]),
                      "flow": "pipeline, 2 source sets", **{f"{k}_seconds": round(v, 2) for k, v in seconds.items()},
                      "runs": runs, "auto_chose": resolve_auto("auto", plan_input(graph)),
                      "auto_over_fastest": round(seconds["auto"] / fastest, 3), "load_average_per_repeat": loads,
                      "dask_workers": int(os.environ.get("GRAPH_DASK_WORKERS") or min(4, os.cpu_count() or 1)),
                      "repeat": args.repeat, "load_average": [round(x, 2) for x in os.getloadavg()],
                      "machine": machine("numpy"), "code": code_version(), "date": datetime.date.today().isoformat(),
                      "command": " ".join(["python -m benchmarks.runner_threshold",
                                           *(argv if argv is not None else sys.argv[1:])])}
            print(record, flush=True)
            records.append(record)
            os.remove(graph)
    finally:
        server.terminate()
        server.wait(timeout=30)
    append_records(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
