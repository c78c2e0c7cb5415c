"""What the pipeline costs from Parquet to Parquet, stage by stage, and what orchestration adds.

    python -m benchmarks.orchestration --graph kron:24 --input-compression snappy,none --json FILE

For each input compression the graph is written to Parquet (untimed; one file, or --parts files
written at once), then:
- plain read: the fastest plain pyarrow read of the same input into host memory
  (`pq.read_table(memory_map=True, pre_buffer=True)`), the yardstick of the load stage;
- bare: read -> renumber -> CSR -> BFS -> MSF -> verify both -> write both, the kernels and the
  Parquet I/O called directly (no Prefect, no Dask), warm (in this process, after one untimed
  run that compiles the CUDA kernels into CuPy's on-disk cache) and in a fresh process, which
  also reports its peak RSS and its GPU memory (CuPy pool's peak plus what the device shows in
  use beyond it and beyond this benchmark's own process: the CUDA context, the module);
- flow (input compressions named by --flows): `pipeline_flow` on a cluster it starts itself,
  its workers starting while the flow run is created (what a CLI run without --dask-address
  does; --cluster-start first-task starts them at the run's first task instead), and on a
  cluster started beforehand and warmed by one run, as a process that runs flows one after
  another calls it (repeated runs with --dask-address skip the process start): the flow
  configured once, the command line's Prefect settings (no heartbeat) entered once, --repeats
  runs interleaved with as many bare runs (alternating which goes first), medians compared,
  and the flow's median against the warm bare run alone too. One more run enters the settings
  around the call, as a script that wraps each call does. Prefect's console log is off in the
  flow's process and its workers, as in a command-line run without --verbose (a Python caller
  has it on by default). The seconds the flow spends outside its stages (task hand-offs, cluster start) are recorded as the gap, the task runs' start and
  end as the timeline, and the seconds before the flow run's start and after its end (creating
  the run; the task runner's exit, the cluster's close) apart.
On a GPU, libcudf's read of the same input and its write of the same two results are recorded
beside the bare run's load and write where pylibcudf is installed (benchmarks.libcudf,
LIBCUDF_SITE). The Prefect server is the one PREFECT_API_URL names; start one first (one server for the flow
and its Dask workers). Appends one record per input compression to FILE.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.harness import GpuPoolPeak, append_records, load_graph, machine
from kernels import backend as be
from kernels.bfs import bfs
from kernels.graph import build_graph
from kernels.msf import minimum_spanning_forest
from kernels.verify import verify_bfs, verify_forest
from tasks.prepare import prepare_input
from tasks.parquet.dataset.plan import plan_input
from tasks.parquet.write.results import BFS_RESULT_NAME, FOREST_RESULT_NAME
from tasks.parquet.write.tables import (dense_bfs_columns, dense_bfs_table, dense_forest_columns, dense_forest_table,
                                  vertex_names)
from tasks.parquet.write.result_files import resolve_writer, write_many

STAGES = ("load", "prepare", "csr", "bfs", "msf", "validate", "write")
# the pipeline flow's task runs with one source set: load, CSR, BFS, forest, two validations,
# write (which returns the summary)
PIPELINE_TASKS = 7


def peak_rss() -> int:
    """This process's peak resident set, bytes: VmHWM, which starts afresh at exec (ru_maxrss
    keeps the parent's peak across fork and exec, here the generator's and the plain reads')."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def bare_pipeline(path: str, source_id: int, output: str, backend: str, rss: dict | None = None,
                  reader: str = "auto", writer: str = "auto") -> dict:
    """The pipeline's work without Prefect or Dask; seconds per stage, and under "reader" what
    read the input (the read's report). ``writer`` gpu hands the results to the page writer as
    the backend's arrays, host as pyarrow tables. ``rss``, if given, gets the process's peak RSS
    as it stands at the end of each stage (where the host peak is set)."""
    xp = be.module(backend)
    rss = {} if rss is None else rss
    start = time.perf_counter()
    plan = plan_input(path)  # the run's plan, made by its flow: part of the load here
    planned = time.perf_counter() - start
    prepared = prepare_input(plan, backend, reader=reader)
    stages = {"load": planned + prepared.read_seconds, "prepare": prepared.renumber_seconds}
    rss["prepare"] = peak_rss()
    start = time.perf_counter()

    def lap(name):
        nonlocal start
        be.synchronize(xp)
        stages[name] = time.perf_counter() - start
        rss[name] = peak_rss()
        start = time.perf_counter()

    edges = prepared.edges
    source = np.array([int(np.searchsorted(prepared.ids, int(source_id)))])
    graph = build_graph(edges, False)
    lap("csr")
    result = bfs(graph, source)
    lap("bfs")
    forest = minimum_spanning_forest(edges)
    lap("msf")
    bfs_report = verify_bfs(edges.src, edges.dst, edges.n, source, result.distance, result.predecessor, False, None)
    forest_report = verify_forest(edges.src, edges.dst, edges.weight, edges.n, forest.edges)
    assert not any(bfs_report.values()) and not any(forest_report.values()), (bfs_report, forest_report)
    lap("validate")
    rows = forest.edges
    if resolve_writer(writer, xp) == "gpu" and prepared.names is None:
        results = {Path(output) / BFS_RESULT_NAME: dense_bfs_columns(xp, prepared.ids, result.distance,
                                                                     result.predecessor),
                   Path(output) / FOREST_RESULT_NAME: dense_forest_columns(
                       xp, prepared.ids, edges.src[rows], edges.dst[rows], edges.weight[rows])}
    else:
        names = vertex_names(prepared.names, prepared.ids)
        results = {Path(output) / BFS_RESULT_NAME: dense_bfs_table(names, be.to_host(result.distance),
                                                                   be.to_host(result.predecessor)),
                   Path(output) / FOREST_RESULT_NAME: dense_forest_table(
                       names, *(be.to_host(column[rows]) for column in (edges.src, edges.dst, edges.weight)))}
    write_many(results)
    lap("write")
    stages["reader"] = prepared.reader
    return stages


def fresh_run(path: str, source_id: str, output: str, backend: str, reader: str = "auto",
              writer: str = "auto", others_bytes: str = "0") -> None:
    """bare_pipeline in this (fresh) process; prints its wall time, stages, peak RSS and GPU
    memory as one JSON line. ``others_bytes``: the GPU memory other processes held when it
    started (the benchmark's own process: its CUDA context and what it keeps outside CuPy's
    pool), left out of this process's memory outside the pool."""
    peak = GpuPoolPeak() if backend == "cupy" else None
    started = time.perf_counter()
    rss = {"start": peak_rss()}
    stages = bare_pipeline(path, int(source_id), output, backend, rss, reader, writer)
    stages.pop("reader")
    report = {"seconds": time.perf_counter() - started, "stages": stages, "peak_rss_bytes": peak_rss(),
              "peak_rss_by_stage": rss}
    if backend == "cupy":
        import cupy

        pool = cupy.get_default_memory_pool().total_bytes()
        report.update(gpu_pool_peak_bytes=peak.bytes,
                      gpu_outside_pool_bytes=max(0, device_bytes_in_use(backend) - pool - int(others_bytes)))
    print("FRESH " + json.dumps(report), flush=True)


def write_input(src, dst, weight, work: Path, compression: str, parts: int) -> str:
    """The graph as Parquet: one file, or a dataset directory of `parts` files written at once."""
    work.mkdir(parents=True, exist_ok=True)
    if parts == 1:
        path = work / f"input-{compression}.parquet"
        pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), path, compression=compression)
        return str(path)
    folder = work / f"input-{compression}"
    folder.mkdir()
    bounds = np.linspace(0, src.shape[0], parts + 1).astype(np.int64)

    def part(k):
        lo, hi = bounds[k], bounds[k + 1]
        table = pa.table({"src": src[lo:hi], "dst": dst[lo:hi], "weight": weight[lo:hi]})
        pq.write_table(table, folder / f"part-{k:05d}.parquet", compression=compression)

    with ThreadPoolExecutor(max_workers=min(parts, len(os.sched_getaffinity(0)))) as pool:
        list(pool.map(part, range(parts)))
    return str(folder)


def plain_read_seconds(path: str) -> float:
    """The fastest plain pyarrow read of the input into host memory (best of two)."""
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        table = pq.read_table(path, memory_map=True, pre_buffer=True)
        best = min(best, time.perf_counter() - started)
        del table
    return best


def task_timeline(flow_run_id, called: float | None = None, returned: float | None = None,
                  tasks: int = 0) -> tuple[list, dict]:
    """[task run name, start, end] in seconds from the flow run's start, in order of start: where
    a flow's time goes between its tasks (from the Prefect server's record of the run); and,
    given when the caller called the flow and got its state back (time.time()), the seconds
    spent outside the run: before its start (the run's creation) and after its end (the task
    runner's exit, the return)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(flow_run_id)
        # task runs reach the server as events, some after the flow run's end: wait for `tasks`
        deadline = time.monotonic() + 30
        while True:
            found = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            if sum(1 for t in found if t.end_time) >= tasks or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    origin = run.start_time
    rows = [[t.name, round((t.start_time - origin).total_seconds(), 3), round((t.end_time - origin).total_seconds(), 3)]
            for t in found if t.start_time and t.end_time]
    end = round((run.end_time - origin).total_seconds(), 3)
    outside = {}
    if called is not None and returned is not None:
        outside = {"before_start": round(origin.timestamp() - called, 3),
                   "after_end": round(returned - run.end_time.timestamp(), 3)}
    return sorted(rows, key=lambda r: r[1]) + [["flow end", end, end]], outside


def flow_records(path: str, source_id: int, work: Path, backend: str, runner: str, early_cluster: bool = True,
                 repeats: int = 5) -> dict:
    """The flow on a cluster it starts itself (one run), then, on a running cluster, ``repeats``
    flow runs interleaved with as many bare runs (a slow write or read hits either kind alike;
    the medians are compared; the two kinds alternate which runs first). Flows run as the command line runs them: without the heartbeat,
    whose thread the end of a run waits for (up to a second), and without Prefect's console log,
    in this process and in the workers (the server gets the log either way)."""
    from flows.cli import console_off, inherited_environment
    from flows.pipeline import pipeline_flow
    from flows.runners import cluster_started_early, local_cluster, task_runner

    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    command_line_settings = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}

    def timed_flow(flow_, task_runner_, output, settings_per_run=True):
        called, started = time.time(), time.perf_counter()
        # a flow run starting its own cluster starts it as the run is created (as the command
        # line does); a process that runs flows one after another enters its settings once
        with temporary_settings(updates=command_line_settings) if settings_per_run else nullcontext():
            with cluster_started_early(task_runner_) if early_cluster else nullcontext():
                state = flow_(path, source=[str(source_id)], output=str(work / output), backend=backend, return_state=True)
        seconds = time.perf_counter() - started
        summary = state.result()
        summary["timeline"], summary["outside"] = task_timeline(state.state_details.flow_run_id, called, called + seconds,
                                                                tasks=PIPELINE_TASKS)
        return summary, seconds

    def stages(summary):
        return {k: v for k, v in summary.items() if k.endswith("_seconds")}

    def gap(summary, seconds):
        return round(seconds - sum(v for k, v in summary.items() if k.endswith("_seconds") and k != "total_seconds"), 3)

    workers_environment = console_off()
    with inherited_environment(workers_environment):
        own_runner = task_runner(runner)
        summary, seconds = timed_flow(pipeline_flow.with_options(task_runner=own_runner), own_runner, "flow")
    record = {"flow_seconds": round(seconds, 3), "flow_stages": stages(summary), "flow_gap_seconds": gap(summary, seconds),
              "flow_timeline": summary["timeline"], "flow_outside_run_seconds": summary["outside"]}
    if runner == "dask":
        with inherited_environment(workers_environment), local_cluster() as cluster:
            address_runner = task_runner(address=cluster.scheduler_address)
            on_cluster = pipeline_flow.with_options(task_runner=address_runner)  # configured once, as a caller would
            timed_flow(on_cluster, address_runner, "flow-warm-up")
            # what a script pays that enters the command line's settings around every call
            _, per_run_settings = timed_flow(on_cluster, address_runner, "flow-settings-per-run")
            bare_runs, flow_runs = [], []
            with temporary_settings(updates=command_line_settings):
                # bare and flow alternate which goes first; bare keeps its CuPy pool between its
                # runs as the warm bare run above does (Kron-26 fits twice on one H200)
                for k in range(repeats):
                    for kind in (("bare", "flow") if k % 2 == 0 else ("flow", "bare")):
                        if kind == "bare":
                            started = time.perf_counter()
                            bare_pipeline(path, source_id, str(work / "bare-beside-flow"), backend)
                            bare_runs.append(time.perf_counter() - started)
                        else:
                            flow_runs.append(timed_flow(on_cluster, address_runner, f"flow-warm-{k}",
                                                        settings_per_run=False))
            free_device_pool(backend)
        median = sorted(range(repeats), key=lambda k: flow_runs[k][1])[repeats // 2]
        warm, warm_seconds = flow_runs[median]
        bare_median = sorted(bare_runs)[repeats // 2]
        record.update(flow_running_cluster_seconds=round(warm_seconds, 3),
                      flow_running_cluster_runs_seconds=[round(s, 3) for _, s in flow_runs],
                      flow_running_cluster_bare_runs_seconds=[round(s, 3) for s in bare_runs],
                      running_cluster_vs_bare=round(warm_seconds / bare_median, 3),
                      flow_running_cluster_settings_per_run_seconds=round(per_run_settings, 3),
                      flow_running_cluster_stages=stages(warm),
                      flow_running_cluster_gap_seconds=gap(warm, warm_seconds),
                      flow_running_cluster_timeline=warm["timeline"],
                      flow_running_cluster_outside_run_seconds=warm["outside"])
    # same answers (GPU predecessors may differ: any valid parent is a valid answer)
    assert pq.read_table(work / "flow" / "mst_edges.parquet").equals(pq.read_table(work / "bare" / "mst_edges.parquet"))
    assert pq.read_table(work / "flow" / "bfs_distances.parquet")["distance"].equals(
        pq.read_table(work / "bare" / "bfs_distances.parquet")["distance"])
    return record


def libcudf_records(path: str, results: Path, bare: dict) -> dict:
    """libcudf's read of the input and its write of the bare run's two results (benchmarks.libcudf),
    with the bare run's load and write over them."""
    from benchmarks import libcudf

    files = [str(f) for f in sorted(Path(path).rglob("*.parquet"))] if Path(path).is_dir() else [path]
    read = libcudf.measure("read", files)
    write = libcudf.measure("write", [str(results.parent / "libcudf-writes"),
                                      *(str(results / name) for name in (BFS_RESULT_NAME, FOREST_RESULT_NAME))])
    found = {"read": read, "write": write}
    if read["seconds"]:
        found["load_over_libcudf_read"] = round(bare["load"] / read["seconds"], 3)
    if write["seconds"]:
        found["write_over_libcudf_write"] = round(bare["write"] / write["seconds"], 3)
    return found


def code_version(checkout: str | os.PathLike | None = None) -> str | None:
    """The commit measured: GRAPH_BENCH_CODE (a copy of the checkout without its .git, e.g. on a
    GPU machine), else the short commit of the checkout these benchmarks are imported from
    (``checkout``), whatever folder the command runs in, with "-dirty" when a tracked file
    differs from it: the record then measured code that no commit holds."""
    if os.environ.get("GRAPH_BENCH_CODE"):
        return os.environ["GRAPH_BENCH_CODE"]
    where = Path(checkout) if checkout is not None else Path(__file__).resolve().parent
    try:
        return subprocess.run(["git", "describe", "--always", "--abbrev=7", "--dirty", "--exclude", "*"], cwd=where,
                              capture_output=True, text=True, check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def free_device_pool(backend: str) -> None:
    """Hand the CuPy pool's blocks back, leaving the GPU to the flow's worker processes."""
    if backend == "cupy":
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


def device_bytes_in_use(backend: str) -> int:
    """GPU memory in use by every process (this one's context and pool included): 0 without one."""
    if backend != "cupy":
        return 0
    import cupy

    free, total = cupy.cuda.runtime.memGetInfo()
    return total - free


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.orchestration", description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="kron:24", help="kron:SCALE | grid:SIDE | parquet:PATH")
    p.add_argument("--backend", default=None, choices=["numpy", "cupy"])
    p.add_argument("--input-compression", default="snappy", help="comma-separated: snappy, none, zstd, ...")
    p.add_argument("--reader", default="auto",
                   help="comma-separated Parquet readers to time the bare pipeline with: auto, gpu, host")
    p.add_argument("--writer", default="auto", choices=["auto", "gpu", "host"],
                   help="the Parquet writer of the bare pipeline's results")
    p.add_argument("--flows", default="snappy", help="input compressions whose flows are timed too ('' for none)")
    p.add_argument("--parts", type=int, default=1, help="write the input as this many files (a dataset directory)")
    p.add_argument("--runner", default="dask", choices=["dask", "threads"])
    p.add_argument("--workdir", default=None, help="where the input and outputs go (default: a temporary directory)")
    p.add_argument("--cluster-start", default="early", choices=["early", "first-task"],
                   help="when a flow that starts its own Dask cluster starts it: as the command line does, while "
                        "the flow run is created (early), or at the run's first task")
    p.add_argument("--repeats", type=int, default=5,
                   help="flow runs on the running cluster, each beside a bare run (medians compared)")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    backend = be.resolve(args.backend)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="orchestration-"))
    work.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python -m benchmarks.orchestration", *(argv if argv is not None else sys.argv[1:])])

    src, dst, weight = (be.to_host(a) for a in load_graph(args.graph, be.module(backend)))
    source_id, rows = int(src[0]), int(src.shape[0])
    compressions = [c for c in args.input_compression.split(",") if c]
    inputs = {c: write_input(src, dst, weight, work / c, c, args.parts) for c in compressions}
    decoded = src.nbytes + dst.nbytes + weight.nbytes  # the Parquet columns' decoded size
    del src, dst, weight

    for compression, path, reader in [(c, p, r) for c, p in inputs.items() for r in args.reader.split(",")]:
        out = work / compression / reader
        plain = plain_read_seconds(path)
        bare_pipeline(path, source_id, str(out / "warm-up"), backend, reader=reader, writer=args.writer)
        started = time.perf_counter()
        bare = bare_pipeline(path, source_id, str(out / "bare"), backend, reader=reader, writer=args.writer)
        bare_seconds = time.perf_counter() - started
        read_by = bare.pop("reader")
        free_device_pool(backend)
        others = device_bytes_in_use(backend)
        started = time.perf_counter()
        fresh = subprocess.run(
            [sys.executable, "-c", "import sys; from benchmarks.orchestration import fresh_run; fresh_run(*sys.argv[1:])",
             path, str(source_id), str(out / "bare-fresh"), backend, reader, args.writer,
             str(others)], check=True, capture_output=True, text=True)
        fresh_seconds = time.perf_counter() - started
        report = json.loads(next(line for line in fresh.stdout.splitlines() if line.startswith("FRESH "))[6:])
        record = {
            "algo": "pipeline-orchestration", "graph": args.graph, "backend": backend,
            "input_compression": compression, "input_files": args.parts, "edges": rows,
            "reader": reader, "read_by": read_by, "writer": resolve_writer(args.writer, be.module(backend)),
            "plain_read_seconds": round(plain, 3),
            "bare_seconds": round(bare_seconds, 3), "bare_stages": {k: round(v, 4) for k, v in bare.items()},
            "load_vs_plain_read": round(bare["load"] / plain, 3),
            "load_decoded_gb_per_second": round(decoded / bare["load"] / 1e9, 2),
            "bare_fresh_process_seconds": round(fresh_seconds, 3),
            "bare_fresh_stages": {k: round(v, 4) for k, v in report["stages"].items()},
            "peak_rss_bytes": report["peak_rss_bytes"], "decoded_columns_bytes": decoded,
            "peak_rss_vs_decoded": round(report["peak_rss_bytes"] / decoded, 3),
            "peak_rss_bytes_by_stage": report["peak_rss_by_stage"],
        }
        if backend == "cupy":  # the yardstick on the same input and the same two results
            record["libcudf"] = libcudf_records(path, out / "bare", bare)
        if "gpu_pool_peak_bytes" in report:
            peak = report["gpu_pool_peak_bytes"] + report["gpu_outside_pool_bytes"]
            record.update(gpu_pool_peak_bytes=report["gpu_pool_peak_bytes"],
                          gpu_outside_pool_bytes=report["gpu_outside_pool_bytes"],
                          # this process's GPU memory beside the fresh run (left out of its figures)
                          gpu_bytes_of_the_benchmark_process=others,
                          gpu_peak_bytes_per_edge=round(peak / rows, 1))
        if compression in args.flows.split(",") and reader == args.reader.split(",")[0]:
            flows = flow_records(path, source_id, out, backend, args.runner, args.cluster_start == "early", args.repeats)
            record.update(flows, cluster_start=args.cluster_start)
            # against the bare pipeline in a fresh process: the flow's workers are fresh processes too
            record["overhead"] = round(flows["flow_seconds"] / fresh_seconds - 1, 4)
            record["overhead_vs_warm_process"] = round(flows["flow_seconds"] / bare_seconds - 1, 4)
            if "flow_running_cluster_seconds" in flows:
                record["running_cluster_vs_bare_alone"] = round(flows["flow_running_cluster_seconds"] / bare_seconds, 3)
        record.update(machine=machine(backend), date=datetime.date.today().isoformat(), command=command,
                      code=code_version(), console_log="off (as the command line without --verbose)")
        print(json.dumps(record, indent=1), flush=True)
        append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    sys.exit(main())
