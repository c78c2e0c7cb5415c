"""The one-partition pipeline's stages on all of this host's cores and on halves of them:
whether reading and writing Parquet are bound by the host's cores.

    python -m benchmarks.host_cores --graph kron:24 --parts 16 --json FILE

Writes the graph as ``--parts`` Snappy files (untimed), then runs the pipeline without Prefect
or Dask (benchmarks.orchestration.bare_pipeline) in a fresh process pinned with ``taskset`` to
all cores, to the lower half and to the upper half; each process makes one untimed run, then
times one. The reader and the writer size their thread pools by the process's CPU affinity, so a
pinned process reads with as many cores as a Dask worker given half of the host would have
(dask-cuda pins each GPU's worker to the cores near its GPU; the halves here are by CPU number,
which may not be the host's NUMA split). One record per pinning.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import append_records, load_graph, machine
from benchmarks.orchestration import bare_pipeline, code_version, free_device_pool, write_input
from kernels import backend as be


def pinned_run(path: str, source_id: str, output: str, backend: str) -> None:
    """One untimed and one timed bare pipeline in this (pinned) process; one JSON line."""
    import time

    bare_pipeline(path, int(source_id), output + "-warm-up", backend)
    started = time.perf_counter()
    stages = bare_pipeline(path, int(source_id), output, backend)
    print("PINNED " + json.dumps({"cores": len(os.sched_getaffinity(0)), "seconds": time.perf_counter() - started,
                                  "stages": stages}), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.host_cores", description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="kron:20", help="kron:SCALE | grid:SIDE | parquet:PATH")
    p.add_argument("--parts", type=int, default=16, help="input files (written at once)")
    p.add_argument("--backend", default=None, choices=["numpy", "cupy"])
    p.add_argument("--workdir", default=None, help="where the input and outputs go (default: a temporary directory)")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    if shutil.which("taskset") is None:
        raise SystemExit("taskset (util-linux) is needed to pin the runs to cores")
    backend = be.resolve(args.backend)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="host-cores-"))
    src, dst, weight = (be.to_host(a) for a in load_graph(args.graph, be.module(backend)))
    path = write_input(src, dst, weight, work, "snappy", args.parts)
    source, edges = str(int(src[0])), int(src.shape[0])
    del src, dst, weight
    free_device_pool(backend)
    cores = sorted(os.sched_getaffinity(0))
    half = len(cores) // 2
    command = " ".join(["python -m benchmarks.host_cores", *(argv if argv is not None else sys.argv[1:])])
    base = {"algo": "pipeline-host-cores", "graph": args.graph, "backend": backend, "edges": edges,
            "input_files": args.parts, "input_compression": "snappy", "machine": machine(backend),
            "date": datetime.date.today().isoformat(), "command": command, "code": code_version()}
    records = []
    pinnings = [("all", cores)] + ([("lower half", cores[:half]), ("upper half", cores[half:])] if half else [])
    for name, chosen in pinnings:
        output = work / f"out-{name.replace(' ', '-')}"
        done = subprocess.run(["taskset", "-c", ",".join(map(str, chosen)), sys.executable, "-m",
                               "benchmarks.host_cores", "--pinned-run", path, source, str(output), backend],
                              capture_output=True, text=True)
        line = next((x for x in done.stdout.splitlines() if x.startswith("PINNED ")), None)
        if done.returncode or line is None:
            sys.stderr.write(done.stderr[-4000:])
            raise SystemExit(f"the run pinned to {name} cores failed (exit {done.returncode})")
        report = json.loads(line[len("PINNED "):])
        records.append({**base, "cores": name, "core_count": report["cores"], "seconds": round(report["seconds"], 3),
                        "stages": {k: round(v, 4) for k, v in report["stages"].items()}})
        print(json.dumps(records[-1]), flush=True)
        shutil.rmtree(output, ignore_errors=True)
        shutil.rmtree(str(output) + "-warm-up", ignore_errors=True)
    append_records(args.json, records)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pinned-run"]:
        pinned_run(*sys.argv[2:6])
        sys.exit(0)
    sys.exit(main())
