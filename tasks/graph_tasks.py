"""Prefect tasks of the pipeline. Each moves data between I/O and one kernel, times it (after a
device sync) and logs one line. They run on Dask workers (or threads) and hand their products to
each other as futures, wrapped in ``Timed``; only ``summarize`` returns something the flow
process fetches. Array-carrying tasks use NO_CACHE: a cache key would pickle, and on the GPU
copy to the host, every array they receive. Only the Parquet read and writes retry."""
from __future__ import annotations

import math
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from prefect import get_run_logger, task
from prefect.artifacts import (
    create_markdown_artifact, create_progress_artifact, create_table_artifact, update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE

from kernels import backend as be
from kernels.bfs import BFSResult, bfs
from kernels.footprint import gpu_bytes
from kernels.graph import EdgeList, Graph, build_graph, edge_list, renumber
from kernels.msf import MSFResult, minimum_spanning_forest
from kernels.verify import kruskal, verify_bfs, verify_forest
from tasks.edges_io import EdgeTable, read_edges, vertex_names, write_many
from tasks.errors import DeviceMemoryError, InputError, OutputError, ValidationFailed

# Kruskal's serial reference also runs inside validation up to this many edges; above it the
# cycle-property check alone proves minimality (it is exact, just not a second algorithm).
KRUSKAL_LIMIT = 200_000


@dataclass
class PreparedEdges:
    """Dense, backend-resident edges plus what is needed to map results back."""

    edges: EdgeList
    ids: np.ndarray  # host: dense vertex -> original id (or string code)
    backend: str
    device: str
    self_loops: int


@dataclass
class Timed:
    """A task's product and the seconds its work took (after a device sync). Compute tasks pass
    these between them as futures, so the product stays on the worker that made it."""

    value: Any
    seconds: float


def _retry_io(task, task_run, state) -> bool:
    """Retry reads and writes that failed for a transient reason, never for a bad input."""
    try:
        state.result()
    except (InputError, OutputError):
        return False
    except OSError:
        return True
    except Exception:
        return False
    return False


def _timed(xp, fn, *args, **kwargs) -> Timed:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    be.synchronize(xp)
    return Timed(out, time.perf_counter() - start)


@contextmanager
def device_memory_guard(path: str, edges: int):
    """Turn CuPy's out-of-memory error into one line that says what to do."""
    try:
        yield
    except Exception as exc:
        if type(exc).__name__ != "OutOfMemoryError":
            raise
        raise DeviceMemoryError(
            f"{path}: the GPU ran out of memory on {edges} edges ({exc}); "
            "rerun with --backend numpy (GRAPH_BACKEND=numpy) to compute on the CPU"
        ) from None


def check_device_memory(path: str, edges: int) -> None:
    """Refuse, before any upload, a graph whose working set exceeds the GPU's free memory."""
    needed = gpu_bytes(edges)  # vertices unknown before renumbering: kernels/footprint.py
    free = be.device_memory_free()
    if needed > free:
        raise DeviceMemoryError(
            f"{path}: {edges} edges need about {needed / 2**30:.2f} GiB of GPU memory, "
            f"{free / 2**30:.2f} GiB is free; rerun with --backend numpy (GRAPH_BACKEND=numpy) "
            "to compute on the CPU"
        )


class Progress:
    """A progress artifact in the UI, for graphs of at least PROGRESS_MIN_EDGES edges; updated
    at most every UPDATE_SECONDS so that fast GPU levels do not wait on the API."""

    UPDATE_SECONDS = 0.5

    def __init__(self, key: str, edges: int, description: str):
        self.artifact = None
        self.last = time.monotonic()
        if edges >= int(os.environ.get("GRAPH_PROGRESS_MIN_EDGES", 1_000_000)):
            self.artifact = create_progress_artifact(0.0, key=key, description=description)

    def update(self, percent: float, description: str, final: bool = False) -> None:
        if self.artifact is None or (not final and time.monotonic() - self.last < self.UPDATE_SECONDS):
            return
        update_progress_artifact(self.artifact, min(100.0, percent), description=description)
        self.last = time.monotonic()


@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_io, cache_policy=NO_CACHE)
def load_edges(path: str, src_col: str, dst_col: str, weight_col: str | None) -> Timed:
    """Read and check the Parquet edge list (an EdgeTable)."""
    start = time.perf_counter()
    table = read_edges(path, src_col, dst_col, weight_col)
    get_run_logger().info("read %d edges from %s", table.rows, path)
    if table.skipped:
        get_run_logger().warning("skipped %d files that are not Parquet: %s", len(table.skipped), ", ".join(table.skipped))
    return Timed(table, time.perf_counter() - start)


@task(cache_policy=NO_CACHE)
def prepare_edges(loaded: Timed, backend: str | None) -> Timed:
    """Move the ids to the backend and renumber them densely (PreparedEdges).
    The backend is resolved here, on the worker that computes."""
    table: EdgeTable = loaded.value
    backend = be.resolve(backend)
    xp = be.module(backend)
    start = time.perf_counter()
    if backend == "cupy":
        check_device_memory(table.path, table.rows)
    with device_memory_guard(table.path, table.rows):
        src, dst = be.to_backend(table.src, backend), be.to_backend(table.dst, backend)
        weight = be.to_backend(table.weight, backend)
        try:
            src, dst, ids = renumber(src, dst)
        except ValueError as exc:
            raise InputError(f"{table.path}: {exc}") from None
        edges = edge_list(src, dst, weight, int(ids.shape[0]))
        be.synchronize(xp)
    prepared = PreparedEdges(edges, be.to_host(ids), backend, be.device_name(backend), edges.self_loops())
    return Timed(prepared, time.perf_counter() - start)


@task(cache_policy=NO_CACHE)
def resolve_sources(loaded: Timed, prepared: Timed, sources: list) -> np.ndarray:
    """Dense vertex numbers of the user's source ids; every one must be a vertex of the graph."""
    table, ids = loaded.value, prepared.value.ids
    if not sources:
        raise InputError(f"{table.path}: a BFS source set is empty")
    found = []
    for s in sources:
        if table.names is not None:
            code = table.names.index(str(s)).as_py()
            dense = int(np.searchsorted(ids, code)) if code >= 0 else -1
            ok = code >= 0 and dense < ids.shape[0] and ids[dense] == code
        else:
            try:
                value = int(s)
            except (TypeError, ValueError):
                raise InputError(f"{table.path}: source {s!r} is not an integer vertex id") from None
            dense = int(np.searchsorted(ids, value))
            ok = dense < ids.shape[0] and int(ids[dense]) == value
        if not ok:
            raise InputError(f"{table.path}: source {s!r} is not a vertex of the graph")
        found.append(dense)
    return np.array(found, dtype=np.int64)


@task(cache_policy=NO_CACHE)
def build_csr(prepared: Timed, directed: bool) -> Timed:
    """CSR by degree counts, exclusive prefix sum and scatter (plus the reverse CSR if directed)."""
    p: PreparedEdges = prepared.value
    with device_memory_guard("CSR", p.edges.m):
        graph = _timed(be.module(p.backend), build_graph, p.edges, directed)
    get_run_logger().info("CSR: %d vertices, %d arcs in %.3f s", graph.value.n, graph.value.out.nnz, graph.seconds)
    return graph


@task(cache_policy=NO_CACHE)
def breadth_first_search(graph: Timed, sources: np.ndarray, depth_limit: int | None) -> Timed:
    """Direction-optimizing BFS from all sources at once (a BFSResult)."""
    g: Graph = graph.value
    progress = Progress("bfs-progress", g.out.nnz, f"BFS from {len(sources)} source(s) over {g.n} vertices")
    reached = [len(sources)]

    def on_level(level, frontier):
        reached[0] += frontier
        progress.update(100 * reached[0] / g.n, f"level {level}: frontier {frontier}, reached {reached[0]} of {g.n}")

    with device_memory_guard("BFS", g.out.nnz):
        search = _timed(be.array_module(g.out.indptr), bfs, g, sources, depth_limit, on_level=on_level)
    r: BFSResult = search.value
    progress.update(100, f"done: {r.levels} levels in {search.seconds:.3f} s", final=True)
    get_run_logger().info("BFS: %d levels (%s) in %.3f s", r.levels, ",".join(r.steps), search.seconds)
    return search


@task(cache_policy=NO_CACHE)
def spanning_forest(prepared: Timed) -> Timed:
    """Boruvka minimum spanning forest (an MSFResult)."""
    e: EdgeList = prepared.value.edges
    progress = Progress("msf-progress", e.m, f"Boruvka over {e.m} edges, {e.n} vertices")

    def on_round(rounds, edges_left):
        progress.update(100 * (1 - edges_left / max(e.m, 1)), f"round {rounds}: {edges_left} edges still cross components")

    with device_memory_guard("MSF", e.m):
        forest = _timed(be.array_module(e.src), minimum_spanning_forest, e, on_round=on_round)
    f: MSFResult = forest.value
    progress.update(100, f"done: {f.rounds} rounds in {forest.seconds:.3f} s", final=True)
    get_run_logger().info(
        "MSF: %d edges, %d trees, %d rounds in %d bands, %.3f s",
        f.edges.shape[0], f.components, f.rounds, f.bands, forest.seconds,
    )
    return forest


def _report_markdown(title: str, report: dict, extra: dict) -> str:
    lines = [f"# {title}", "", "| check | result | violations |", "|---|---|---|"]
    for name, count in report.items():
        lines.append(f"| {name} | {'pass' if count == 0 else 'FAIL'} | {count} |")
    lines += ["", *[f"- {k}: {v}" for k, v in extra.items()]]
    return "\n".join(lines)


def _publish_report(kind: str, report: dict, extra: dict) -> None:
    failed = {k: v for k, v in report.items() if v != 0}
    create_markdown_artifact(
        key=f"{kind}-validation",
        markdown=_report_markdown(f"{kind.upper()} validation: {'FAILED' if failed else 'passed'}", report, extra),
        description=f"Independent verification of the {kind.upper()} result",
    )
    if failed:
        detail = ", ".join(f"{k} ({v})" for k, v in failed.items())
        raise ValidationFailed(f"{kind.upper()} result failed validation: {detail}; nothing was written")
    get_run_logger().info("%s validation passed: %s", kind.upper(), ", ".join(report))


@task(cache_policy=NO_CACHE)
def validate_bfs(prepared: Timed, sources: np.ndarray, search: Timed, directed: bool,
                 depth_limit: int | None) -> Timed:
    """Graph500's five rules on the raw edge list; fails the run on any violation."""
    e, result = prepared.value.edges, search.value
    start = time.perf_counter()
    report = verify_bfs(e.src, e.dst, e.n, sources, result.distance, result.predecessor, directed, depth_limit)
    seconds = time.perf_counter() - start
    reached = int((result.distance >= 0).sum())
    _publish_report("bfs", report, {"sources": len(sources), "reached vertices": reached, "seconds": round(seconds, 4)})
    return Timed(report, seconds)


@task(cache_policy=NO_CACHE)
def validate_forest(prepared: Timed, forest: Timed) -> Timed:
    """Forest structure and minimality (cycle property; Kruskal's total for small graphs)."""
    e, chosen = prepared.value.edges, forest.value.edges
    start = time.perf_counter()
    report = verify_forest(e.src, e.dst, e.weight, e.n, chosen)
    extra = {"forest edges": int(chosen.shape[0]), "total weight": _reported_total(e.weight[chosen])}
    if e.m <= KRUSKAL_LIMIT:
        weight = be.to_host(e.weight)
        # Kruskal walks the edges by (weight, row). Given each edge's rank in that order instead
        # of its weight it accepts the same edges, and the total it sums is then one of ranks,
        # which weights near 1e308 cannot overflow; both forests' weights are summed exactly here.
        rank = np.empty(e.m)
        rank[np.lexsort((np.arange(e.m), weight))] = np.arange(e.m)
        _, ref_edges = kruskal(be.to_host(e.src), be.to_host(e.dst), rank, e.n)
        ours = _exact_total(weight[be.to_host(chosen)])
        report["total weight equals Kruskal's"] = 0 if ours == _exact_total(weight[ref_edges]) else 1
        report["edge count equals Kruskal's"] = abs(len(ref_edges) - int(chosen.shape[0]))
        extra["Kruskal total weight"] = _reported_total(weight[ref_edges])
    seconds = time.perf_counter() - start
    extra["seconds"] = round(seconds, 4)
    _publish_report("msf", report, extra)
    return Timed(report, seconds)


def _exact_total(weights: np.ndarray) -> int:
    """The exact sum of float64 values, in units of 2**-1074 (the smallest float64): any finite
    weights, where math.fsum raises once a partial sum passes float64's range."""
    total = 0
    for value in weights.tolist():
        numerator, denominator = value.as_integer_ratio()  # denominator = 2**k, k <= 1074
        total += numerator << (1075 - denominator.bit_length())
    return total


def _reported_total(weights) -> float | str:
    """A sum to show (weights on either backend): a float, or where float64 cannot hold it,
    its decimal text."""
    xp = be.array_module(weights)
    largest = float(xp.abs(weights).max()) if weights.size else 0.0
    # scaled by a power of two so that no partial sum overflows (exact for weights this large)
    shift = weights.size.bit_length() if largest >= np.finfo(np.float64).max / max(weights.size, 1) else 0
    total = float((weights * 2.0**-shift).sum())
    try:
        return math.ldexp(total, shift)
    except OverflowError:
        return f"{Decimal(total) * Decimal(2) ** shift:.6e}"


def bfs_table(table: EdgeTable, prepared: PreparedEdges, result: BFSResult) -> pa.Table:
    """vertex, distance (null = unreached), predecessor (null for sources and unreached)."""
    dist = be.to_host(result.distance)
    pred = be.to_host(result.predecessor)
    names = vertex_names(table, prepared.ids)
    reached = dist >= 0
    has_parent = reached & (dist > 0)
    parent_names = names.take(pa.array(np.where(has_parent, pred, 0)))
    return pa.table({
        "vertex": names,
        "distance": pa.array(dist, mask=~reached),
        "predecessor": pc.if_else(pa.array(has_parent), parent_names, pa.scalar(None, type=names.type)),
    })


def forest_table(table: EdgeTable, prepared: PreparedEdges, forest: MSFResult) -> pa.Table:
    """One row per forest edge: the chosen input edge's ids and weight, in input row order."""
    rows = be.to_host(forest.edges)  # an edge's index is its input row
    if table.names is not None:
        src = table.names.take(pa.array(table.src[rows]))
        dst = table.names.take(pa.array(table.dst[rows]))
    else:
        src, dst = pa.array(table.src[rows]), pa.array(table.dst[rows])
    return pa.table({"src": src, "dst": dst, "weight": pa.array(table.weight[rows])})


def _write(name: str, table: pa.Table, output: str) -> Timed:
    start = time.perf_counter()
    paths = [str(p) for p in write_many({name: table}, output)]
    get_run_logger().info("wrote %s", ", ".join(paths))
    return Timed(paths, time.perf_counter() - start)


@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_io, cache_policy=NO_CACHE)
def write_distances(loaded: Timed, prepared: Timed, search: Timed, output: str) -> Timed:
    """OUTPUT/bfs_distances.parquet, written atomically."""
    return _write("bfs_distances.parquet", bfs_table(loaded.value, prepared.value, search.value), output)


@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_io, cache_policy=NO_CACHE)
def write_forest(loaded: Timed, prepared: Timed, forest: Timed, output: str) -> Timed:
    """OUTPUT/mst_edges.parquet, written atomically."""
    return _write("mst_edges.parquet", forest_table(loaded.value, prepared.value, forest.value), output)


@task(cache_policy=NO_CACHE)
def summarize(loaded: Timed, prepared: Timed, graph: Timed | None = None, searches: list = (),
              source_sets: list = (), forest: Timed | None = None, checks: list = (),
              writes: list = ()) -> dict:
    """The run's figures, small enough to return to the flow: sizes, BFS levels and GTEPS
    (Graph500: input edges inside the searched component, per second), Boruvka rounds and
    edges/s, and the seconds of every stage."""
    table, p = loaded.value, prepared.value
    summary = {"input": table.path, "backend": p.backend, "device": p.device, "vertices": p.edges.n,
               "edges": table.rows, "self_loops_dropped": p.self_loops}
    seconds = {"load": loaded.seconds, "prepare": prepared.seconds}
    if searches:
        traversed = sum(int((s.value.distance[p.edges.src] >= 0).sum()) for s in searches)
        bfs_seconds = sum(s.seconds for s in searches)
        summary.update({
            "source_sets": len(searches), "sources": sum(len(s) for s in source_sets),
            "reached": [int((s.value.distance >= 0).sum()) for s in searches],
            "levels": [s.value.levels for s in searches],
            "gteps": round(traversed / bfs_seconds / 1e9, 4) if bfs_seconds > 0 else None,
        })
        seconds.update(csr=graph.seconds, bfs=bfs_seconds)
    if forest is not None:
        f = forest.value
        summary.update({
            "forest_edges": int(f.edges.shape[0]), "components": f.components, "rounds": f.rounds,
            "edges_per_second": round(table.rows / forest.seconds) if forest.seconds > 0 else None,
        })
        seconds["msf"] = forest.seconds
    seconds.update(validate=sum(c.seconds for c in checks), write=sum(w.seconds for w in writes))
    summary.update({f"{stage}_seconds": round(s, 4) for stage, s in seconds.items()})
    summary["outputs"] = [path for w in writes for path in w.value]
    return summary


@task(cache_policy=NO_CACHE)
def publish_summary(kind: str, summary: dict) -> None:
    """The run's summary as a table artifact (and a log line)."""
    create_table_artifact(
        key=f"{kind}-summary",
        table=[{"metric": k, "value": str(v)} for k, v in summary.items()],
        description=f"{kind} run summary",
    )
    get_run_logger().info("summary: %s", summary)
