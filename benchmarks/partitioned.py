"""Partitioned runs against partition counts: the whole pipeline (read, renumber, CSR, BFS, MSF,
both validations, both writes) from Parquet to Parquet on 1, 2, ... workers of one cluster.

    python -m benchmarks.partitioned --graph kron:20 --partitions 1,2 --json FILE [--bare]

Writes the graph to Parquet (untimed, snappy), starts one cluster of max(partitions) workers
(dask_cuda.LocalCUDACluster, one GPU each, when CuPy has a GPU; else a LocalCluster of
single-threaded processes), makes one untimed run at the largest count (imports, CUDA kernel
compilation), then times one run per count. Every run's results are compared with the first
count's: the forest file must be identical and the distances equal vertex by vertex
(predecessors may differ; each run validated its own). ``--bare`` also times the one-partition
pipeline without Prefect or Dask (benchmarks.orchestration.bare_pipeline) in this process, the
one-GPU reference, and compares every count's results with its results the same way
(``identical_to_one_partition``). Appends one record per count to FILE.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.harness import append_records, load_graph, machine
from benchmarks.orchestration import bare_pipeline, code_version
from kernels import backend as be
from tasks.partitioned.driver import run_partitioned


def _cluster(workers: int, backend: str):
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    if backend == "cupy":
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(n_workers=workers, protocol="tcp", dashboard_address=None)
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None)


def _distances(directory: Path) -> pa.Table:
    table = pq.read_table(directory / "bfs_distances.parquet").select(["vertex", "distance"])
    return table.sort_by("vertex")


def _same_results(a: Path, b: Path) -> bool:
    """The same forest file, and the same distance of every vertex."""
    return (pq.read_table(a / "mst_edges.parquet").equals(pq.read_table(b / "mst_edges.parquet"))
            and _distances(a).equals(_distances(b)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.partitioned", description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="kron:20", help="kron:SCALE | grid:SIDE | parquet:PATH")
    p.add_argument("--partitions", default="1,2", help="comma-separated partition counts")
    p.add_argument("--backend", default=None, choices=["numpy", "cupy"])
    p.add_argument("--layout", default="file", choices=["file", "dataset"])
    p.add_argument("--bare", action="store_true", help="also time the one-partition pipeline bare, in this process")
    p.add_argument("--workdir", default=None, help="where the input and outputs go (default: a temporary directory)")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    backend = be.resolve(args.backend)
    counts = [int(c) for c in args.partitions.split(",") if c]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="partitioned-"))
    work.mkdir(parents=True, exist_ok=True)
    src, dst, weight = (be.to_host(a) for a in load_graph(args.graph, be.module(backend)))
    path = str(work / "input.parquet")
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), path, compression="snappy")
    source = str(int(src[0]))
    del src, dst, weight
    command = " ".join(["python -m benchmarks.partitioned", *(argv if argv is not None else sys.argv[1:])])
    base = {"algo": "partitioned-pipeline", "graph": args.graph, "backend": backend, "layout": args.layout,
            "machine": machine(backend), "date": datetime.date.today().isoformat(), "command": command,
            "code": code_version()}
    records = []
    bare_seconds = None
    if args.bare:

        bare_pipeline(path, int(source), str(work / "bare-warm-up"), backend)
        started = time.perf_counter()
        stages = bare_pipeline(path, int(source), str(work / "bare"), backend)
        bare_seconds = time.perf_counter() - started
        records.append({**base, "load_average": [round(x, 2) for x in os.getloadavg()], "partitions": 0, "gpus": 1 if backend == "cupy" else 0, "mode": "bare one-partition",
                        "seconds": round(bare_seconds, 3), "stages": {k: round(v, 4) for k, v in stages.items()}})
        print(json.dumps(records[-1]), flush=True)
        if backend == "cupy":
            import cupy

            cupy.get_default_memory_pool().free_all_blocks()  # leave the GPU to the workers
    from distributed import Client

    with _cluster(max(counts), backend) as cluster, Client(cluster) as client:
        run_partitioned(path, str(work / "warm-up"), max(counts), source=[source], output_layout=args.layout,
                        backend=backend, client=client)
        first = None
        for count in counts:
            out = work / f"p{count}"
            started = time.perf_counter()
            summary = run_partitioned(path, str(out), count, source=[source], output_layout=args.layout,
                                      backend=backend, client=client)
            seconds = time.perf_counter() - started
            if first is None:
                first = out
            identical = _same_results(out, first)
            record = {**base, "load_average": [round(x, 2) for x in os.getloadavg()], "partitions": count, "gpus": count if backend == "cupy" else 0,
                      "edges": summary["edges"], "vertices": summary["vertices"], "seconds": round(seconds, 3),
                      "stages": {k: v for k, v in summary.items() if k.endswith("_seconds")},
                      "levels": summary["levels"], "steps": summary["steps"][0],
                      "level_times": summary["level_times"][0], "gteps": summary["gteps"],
                      "msf_edges_per_second": summary["edges_per_second"], "msf_stage_times": summary["msf_stage_times"],
                      "forest_edges": summary["forest_edges"],
                      "rounds": summary["rounds"], "validated": True,
                      "identical_to_partitions": counts[0] if identical else None}
            if bare_seconds:
                record["vs_bare"] = round(seconds / bare_seconds, 3)
                record["identical_to_one_partition"] = _same_results(out, work / "bare")
            records.append(record)
            print(json.dumps(record), flush=True)
            if not identical:
                print(f"partitions={count}: results differ from partitions={counts[0]}", file=sys.stderr)
    append_records(args.json, records)
    return 0 if all(r.get("identical_to_partitions", counts[0]) is not None
                    and r.get("identical_to_one_partition", True) for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
