"""Prefect tasks of the pipeline. Each moves data between I/O and one kernel, times it (after a
device sync) and logs one line. Array-carrying tasks use NO_CACHE: a cache key would pickle,
and on the GPU copy to the host, every array they receive."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from kernels import backend as be
from kernels.bfs import BFSResult, bfs
from kernels.graph import EdgeList, Graph, build_graph, edge_list, renumber
from kernels.msf import MSFResult, minimum_spanning_forest
from kernels.verify import kruskal, verify_bfs, verify_forest
from tasks.edges_io import EdgeTable, read_edges, vertex_names, write_many
from tasks.errors import InputError, OutputError, ValidationFailed

# Kruskal's serial reference also runs inside validation up to this many edges; above it the
# cycle-property check alone proves minimality (it is exact, just not a second algorithm).
KRUSKAL_LIMIT = 200_000


@dataclass
class PreparedEdges:
    """Dense, backend-resident edges plus what is needed to map results back."""

    edges: EdgeList
    ids: np.ndarray  # host: dense vertex -> original id (or string code)
    backend: str
    self_loops: int
    input_rows: int


def _retry_io(task, task_run, state) -> bool:
    """Retry reads that failed for a transient reason, never for a bad input."""
    try:
        state.result()
    except (InputError, OutputError):
        return False
    except OSError:
        return True
    except Exception:
        return False
    return False


def _timed(xp, fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    be.synchronize(xp)
    return out, time.perf_counter() - start


@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_io, cache_policy=NO_CACHE)
def load_edges(path: str, src_col: str, dst_col: str, weight_col: str | None) -> EdgeTable:
    """Read and check the Parquet edge list."""
    table = read_edges(path, src_col, dst_col, weight_col)
    get_run_logger().info("read %d edges from %s", table.rows, path)
    return table


@task(cache_policy=NO_CACHE)
def prepare_edges(table: EdgeTable, backend: str) -> PreparedEdges:
    """Move the ids to the backend, renumber them densely and drop self-loops."""
    xp = be.module(backend)
    src, dst = be.to_backend(table.src, backend), be.to_backend(table.dst, backend)
    weight = be.to_backend(table.weight, backend)
    try:
        src, dst, ids = renumber(src, dst)
    except ValueError as exc:
        raise InputError(f"{table.path}: {exc}") from None
    edges = edge_list(src, dst, weight, int(ids.shape[0]))
    be.synchronize(xp)
    return PreparedEdges(edges, be.to_host(ids), backend, table.rows - edges.m, table.rows)


@task(cache_policy=NO_CACHE)
def resolve_sources(table: EdgeTable, prepared: PreparedEdges, sources: list) -> np.ndarray:
    """Dense vertex numbers of the user's source ids; every one must be a vertex of the graph."""
    found = []
    for s in sources:
        if table.names is not None:
            code = table.names.index(str(s)).as_py()
            dense = int(np.searchsorted(prepared.ids, code)) if code >= 0 else -1
            ok = code >= 0 and dense < prepared.ids.shape[0] and prepared.ids[dense] == code
        else:
            try:
                value = int(s)
            except (TypeError, ValueError):
                raise InputError(f"{table.path}: source {s!r} is not an integer vertex id") from None
            dense = int(np.searchsorted(prepared.ids, value))
            ok = dense < prepared.ids.shape[0] and int(prepared.ids[dense]) == value
        if not ok:
            raise InputError(f"{table.path}: source {s!r} is not a vertex of the graph")
        found.append(dense)
    return np.array(found, dtype=np.int64)


@task(cache_policy=NO_CACHE)
def build_csr(prepared: PreparedEdges, directed: bool) -> tuple[Graph, float]:
    """CSR by degree counts, exclusive prefix sum and scatter (plus the reverse CSR if directed)."""
    xp = be.module(prepared.backend)
    graph, seconds = _timed(xp, build_graph, prepared.edges, directed)
    get_run_logger().info("CSR: %d vertices, %d arcs in %.3f s", graph.n, graph.out.nnz, seconds)
    return graph, seconds


@task(cache_policy=NO_CACHE)
def breadth_first_search(graph: Graph, sources: np.ndarray, depth_limit: int | None) -> tuple[BFSResult, float]:
    """Direction-optimizing BFS from all sources at once."""
    xp = be.array_module(graph.out.indptr)
    result, seconds = _timed(xp, bfs, graph, sources, depth_limit)
    get_run_logger().info("BFS: %d levels (%s) in %.3f s", result.levels, ",".join(result.steps), seconds)
    return result, seconds


@task(cache_policy=NO_CACHE)
def spanning_forest(prepared: PreparedEdges) -> tuple[MSFResult, float]:
    """Boruvka minimum spanning forest."""
    xp = be.module(prepared.backend)
    forest, seconds = _timed(xp, minimum_spanning_forest, prepared.edges)
    get_run_logger().info(
        "MSF: %d edges, %d trees, %d rounds in %d bands, %.3f s",
        forest.edges.shape[0], forest.components, forest.rounds, forest.bands, seconds,
    )
    return forest, seconds


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
def validate_bfs(prepared: PreparedEdges, sources: np.ndarray, result: BFSResult, directed: bool,
                 depth_limit: int | None) -> dict:
    """Graph500's five rules on the raw edge list; fails the run on any violation."""
    e = prepared.edges
    start = time.perf_counter()
    report = verify_bfs(e.src, e.dst, e.n, sources, result.distance, result.predecessor, directed, depth_limit)
    reached = int((result.distance >= 0).sum())
    _publish_report("bfs", report, {"reached vertices": reached, "seconds": round(time.perf_counter() - start, 4)})
    return report


@task(cache_policy=NO_CACHE)
def validate_forest(prepared: PreparedEdges, forest: MSFResult) -> dict:
    """Forest structure and minimality (cycle property; Kruskal's total for small graphs)."""
    e = prepared.edges
    start = time.perf_counter()
    report = verify_forest(e.src, e.dst, e.weight, e.n, forest.edges)
    total = float(e.weight[forest.edges].sum())
    extra = {"forest edges": int(forest.edges.shape[0]), "total weight": total}
    if e.m <= KRUSKAL_LIMIT:
        ref_total, ref_edges = kruskal(be.to_host(e.src), be.to_host(e.dst), be.to_host(e.weight), e.n)
        import math

        ours = math.fsum(be.to_host(e.weight[forest.edges]).tolist())
        report["total weight equals Kruskal's"] = 0 if ours == ref_total else 1
        report["edge count equals Kruskal's"] = abs(len(ref_edges) - int(forest.edges.shape[0]))
        extra["Kruskal total weight"] = ref_total
    extra["seconds"] = round(time.perf_counter() - start, 4)
    _publish_report("msf", report, extra)
    return report


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
    rows = be.to_host(prepared.edges.row[forest.edges])
    if table.names is not None:
        src = table.names.take(pa.array(table.src[rows]))
        dst = table.names.take(pa.array(table.dst[rows]))
    else:
        src, dst = pa.array(table.src[rows]), pa.array(table.dst[rows])
    return pa.table({"src": src, "dst": dst, "weight": pa.array(table.weight[rows])})


@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_io, cache_policy=NO_CACHE)
def write_results(tables: dict[str, pa.Table], output: str) -> list[str]:
    """Write every result file atomically into the output directory."""
    paths = [str(p) for p in write_many(tables, output)]
    get_run_logger().info("wrote %s", ", ".join(paths))
    return paths


@task(cache_policy=NO_CACHE)
def publish_summary(kind: str, summary: dict) -> None:
    """The run's summary as a table artifact (and a log line)."""
    create_table_artifact(
        key=f"{kind}-summary",
        table=[{"metric": k, "value": str(v)} for k, v in summary.items()],
        description=f"{kind} run summary",
    )
    get_run_logger().info("summary: %s", summary)
