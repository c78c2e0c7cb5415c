"""What orchestration costs: the pipeline flow against the same work done bare.

    python -m benchmarks.orchestration --graph kron:24 --runner dask --json FILE

Writes the graph to Parquet (untimed), then times, end to end from Parquet to Parquet:
- bare: read -> renumber -> CSR -> BFS -> MSF -> verify both -> write both, the kernels and
  Parquet I/O called directly: warm (in this process, after one untimed run that compiles the
  CUDA kernels into CuPy's on-disk cache) and in a fresh process (interpreter, imports and
  CUDA context included, as a new Dask worker pays them);
- flow on a new cluster: `pipeline_flow` from the call to its return, the task runner's cluster
  started and stopped inside (what a CLI run or a deployment run without --dask-address does);
- flow on a running cluster: the same flow on a cluster started beforehand and warmed by one
  untimed run (what repeated runs with --dask-address / GRAPH_DASK_ADDRESS get).
The Prefect server is the one PREFECT_API_URL names; start one first (one server for the flow
and its Dask workers). Appends one record to FILE; overhead = flow / bare - 1.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.harness import append_records, load_graph, machine
from kernels import backend as be
from kernels.bfs import bfs
from kernels.graph import build_graph, edge_list, renumber
from kernels.msf import minimum_spanning_forest
from kernels.verify import verify_bfs, verify_forest
from tasks.edges_io import read_edges, write_many
from tasks.graph_tasks import PreparedEdges, bfs_table, forest_table


def bare_pipeline(path: str, source_id: int, output: str, backend: str) -> dict:
    """The pipeline's work without Prefect or Dask; seconds per stage."""
    xp = be.module(backend)
    stages, start = {}, time.perf_counter()

    def lap(name):
        nonlocal start
        be.synchronize(xp)
        stages[name] = time.perf_counter() - start
        start = time.perf_counter()

    source_id = int(source_id)
    table = read_edges(path, "src", "dst", "weight")
    lap("load")
    src, dst, ids = renumber(be.to_backend(table.src, backend), be.to_backend(table.dst, backend))
    edges = edge_list(src, dst, be.to_backend(table.weight, backend), int(ids.shape[0]))
    prepared = PreparedEdges(edges, be.to_host(ids), backend, "", table.rows - edges.m)
    source = np.array([int(np.searchsorted(prepared.ids, source_id))])
    lap("prepare")
    graph = build_graph(edges, False)
    lap("csr")
    result = bfs(graph, source)
    lap("bfs")
    forest = minimum_spanning_forest(edges)
    lap("msf")
    bfs_report = verify_bfs(edges.src, edges.dst, edges.n, source, result.distance, result.predecessor, False, None)
    forest_report = verify_forest(edges.src, edges.dst, edges.weight, edges.n, forest.edges)
    assert not any(bfs_report.values()) and not any(forest_report.values())
    lap("validate")
    write_many({"bfs_distances.parquet": bfs_table(table, prepared, result),
                "mst_edges.parquet": forest_table(table, prepared, forest)}, output)
    lap("write")
    return stages


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.orchestration", description=__doc__.split("\n")[1])
    p.add_argument("--graph", default="kron:24", help="kron:SCALE | grid:SIDE | parquet:PATH")
    p.add_argument("--backend", default=None, choices=["numpy", "cupy"])
    p.add_argument("--runner", default="dask", choices=["dask", "threads"])
    p.add_argument("--workdir", default=None, help="where the input and outputs go (default: a temporary directory)")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    backend = be.resolve(args.backend)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="orchestration-"))
    work.mkdir(parents=True, exist_ok=True)

    src, dst, weight = (be.to_host(a) for a in load_graph(args.graph, be.module(backend)))
    path = str(work / "input.parquet")
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), path, compression="snappy")
    source_id = int(src[0])
    del src, dst, weight

    bare_pipeline(path, source_id, str(work / "warm-up"), backend)
    started = time.perf_counter()
    bare = bare_pipeline(path, source_id, str(work / "bare"), backend)
    bare_seconds = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import sys; from benchmarks.orchestration import bare_pipeline; "
                    "bare_pipeline(*sys.argv[1:3], sys.argv[3], sys.argv[4])", path, str(source_id),
                    str(work / "bare-fresh"), backend], check=True)
    bare_fresh_seconds = time.perf_counter() - started
    gpu_peak = None
    if backend == "cupy":
        import cupy

        pool = cupy.get_default_memory_pool()
        gpu_peak = pool.total_bytes()  # the pool keeps what it ever held: the run's peak footprint
        pool.free_all_blocks()  # give the flow's GPU worker the memory this process cached

    from flows.pipeline import pipeline_flow
    from flows.runners import local_cluster, task_runner

    def timed_flow(runner, output):
        started = time.perf_counter()
        summary = pipeline_flow.with_options(task_runner=runner)(
            path, source=[str(source_id)], output=str(work / output), backend=backend)
        return summary, time.perf_counter() - started

    summary, flow_seconds = timed_flow(task_runner(args.runner), "flow")
    running = {}
    if args.runner == "dask":
        with local_cluster() as cluster:
            timed_flow(task_runner(address=cluster.scheduler_address), "flow-warm-up")
            warm_summary, warm_seconds = timed_flow(task_runner(address=cluster.scheduler_address), "flow-warm")
        running = {"flow_running_cluster_seconds": round(warm_seconds, 3),
                   "flow_running_cluster_stages": {k: v for k, v in warm_summary.items() if k.endswith("_seconds")},
                   "overhead_running_cluster": round(warm_seconds / bare_fresh_seconds - 1, 4)}
    # same answers (GPU predecessors may differ: any valid parent is a valid answer)
    assert pq.read_table(work / "flow" / "mst_edges.parquet").equals(pq.read_table(work / "bare" / "mst_edges.parquet"))
    assert pq.read_table(work / "flow" / "bfs_distances.parquet")["distance"].equals(
        pq.read_table(work / "bare" / "bfs_distances.parquet")["distance"])

    record = {
        "algo": "pipeline-orchestration", "graph": args.graph, "backend": backend, "runner": args.runner,
        "edges": summary["edges"], "vertices": summary["vertices"],
        "bare_seconds": round(bare_seconds, 3), "bare_stages": {k: round(v, 4) for k, v in bare.items()},
        "bare_fresh_process_seconds": round(bare_fresh_seconds, 3),
        "flow_seconds": round(flow_seconds, 3),
        "flow_stages": {k: v for k, v in summary.items() if k.endswith("_seconds")},
        # against the bare pipeline in a fresh process: the flow's workers are fresh processes too
        "overhead": round(flow_seconds / bare_fresh_seconds - 1, 4),
        "overhead_vs_warm_process": round(flow_seconds / bare_seconds - 1, 4),
        **running,
        "gpu_peak_bytes_per_edge": round(gpu_peak / summary["edges"], 1) if gpu_peak else None,
        "machine": machine(backend), "date": datetime.date.today().isoformat(),
        "command": " ".join(["python -m benchmarks.orchestration", *(argv if argv is not None else sys.argv[1:])]),
    }
    print(json.dumps(record, indent=1))
    append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    sys.exit(main())
