"""Where the GPU starts to pay on the command line, against NumPy on the same machine.

    python -m benchmarks.backend_threshold --scale 12 --scale 16 --scale 20 --repeat 3 --json FILE

For the bundled sample and each Kronecker scale (Graph500 generator, written to Parquet
untimed) times `python -m flows.pipeline GRAPH --source S --runner threads` as a subprocess with
each ``--backend`` of BACKENDS, taking turns, against one running `prefect server` started here:
a fresh process each, as a user's command is, so CuPy's import and the device's start are paid
by the GPU runs. Median of --repeat runs, each run's seconds kept. Appends one record per graph
to FILE, with the backend ``auto`` resolves to and, where ``auto`` ran, its median over the
faster one's: whether ``auto`` (CuPy wherever a GPU is usable) loses anything on small graphs.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.cli_startup import fresh_environment, start_server
from benchmarks.harness import append_records, machine
from benchmarks.orchestration import code_version
from benchmarks.runner_threshold import timed
from kernels.backend import cupy_usable, resolve
from tasks.parquet.dataset.plan import plan_input

BACKENDS = ("numpy", "cupy", "auto")
SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "graph.parquet")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.backend_threshold", description=__doc__.split("\n")[1])
    p.add_argument("--scale", type=int, action="append", default=[], help="Kronecker scale (repeat)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated, of " + ", ".join(BACKENDS))
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    from data.generators import kronecker

    work = tempfile.mkdtemp(prefix="backend-threshold-")
    env = fresh_environment(os.path.join(work, "prefect-home"))
    server, url = start_server(env)
    env["PREFECT_API_URL"] = url
    records = []
    try:
        for scale in [None, *args.scale]:
            if scale is None:
                graph, name = SAMPLE, "data/graph.parquet"
                source = str(pq.read_table(graph, columns=["src"]).column(0)[0])
            else:
                src, dst, weight = kronecker(np, scale)
                graph, name = os.path.join(work, f"kron{scale}.parquet"), f"kron:{scale}"
                pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
                source = str(int(src[0]))
            runs = {b: [] for b in args.backends.split(",")}
            for _ in range(args.repeat):  # the backends take turns, so a change of load falls on each alike
                for b in runs:
                    run = [graph, "--source", source, "--runner", "threads", "--backend", b,
                           "--output", os.path.join(work, "out", b)]
                    runs[b].append(round(timed(env, run), 3))
            seconds = {b: statistics.median(t) for b, t in runs.items()}
            fastest = min(seconds.get("numpy", float("inf")), seconds.get("cupy", float("inf")))
            plan = plan_input(graph)
            record = {"algo": "backend-threshold", "graph": name, "edges": plan.rows,
                      "flow": "pipeline, one source",
                      **{f"{b}_seconds": round(v, 3) for b, v in seconds.items()}, "runs": runs,
                      "auto_chose": resolve("auto"),
                      "auto_over_fastest": round(seconds["auto"] / fastest, 3) if "auto" in seconds else None,
                      "repeat": args.repeat, "load_average": [round(x, 2) for x in os.getloadavg()],
                      "machine": machine("cupy" if cupy_usable() else "numpy"), "code": code_version(),
                      "date": datetime.date.today().isoformat(),
                      "command": " ".join(["python -m benchmarks.backend_threshold",
                                           *(argv if argv is not None else sys.argv[1:])])}
            print(record, flush=True)
            records.append(record)
            if scale is not None:
                os.remove(graph)
    finally:
        server.terminate()
        server.wait(timeout=30)
    append_records(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
