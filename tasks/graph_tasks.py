"""Prefect tasks of the one-partition pipeline. Each moves data between I/O and one kernel, times it (after a
device sync) and logs one line. They run on Dask workers (or threads) and hand their products to
each other as futures, wrapped in ``Timed``; only ``write_results``, the last, returns something
the flow process fetches (the run's summary). Array-carrying tasks use NO_CACHE: a cache key
would pickle, and on the GPU copy to the host, every array they receive; and no task persists
its result (the flows persist theirs, the summary, and a task would otherwise inherit that and
write its arrays to disk).
Only the Parquet read and writes retry. The load reads through the run's one input plan, made
by the flow (tasks.parquet.dataset.plan); what the tasks share lives in modules of its own:
memory admission (tasks.memory), progress bars (tasks.artifacts.Progress), the source lookup
(tasks.sources), the writer choice (tasks.parquet.write.result_files.ResultWriter) and the
summary (tasks.summary).

Artifacts: the flow publishes the run's summary (tasks.artifacts.publish_summary, a table, the
first thing in the run's Artifacts tab); tasks publish per-level BFS and per-round Boruvka tables
(their markdown from tasks/report.py), the validation reports and, on large graphs, progress
bars. Keys carry the source set (``bfs-levels-source-set-1``) so that the searches of one run do
not overwrite each other."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from prefect import Task, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from kernels import backend as be
from kernels.bfs import BFSResult, bfs
from kernels.graph import EdgeList, Graph, build_graph
from kernels.msf import MSFResult, minimum_spanning_forest
from kernels.verify import verify_bfs, verify_forest
from tasks import artifacts, stopping
from tasks.artifacts import Progress
from tasks.errors import InputError, OutputError
from tasks.forest_weight import KRUSKAL_LIMIT, kruskal_check, reported_total
from tasks.lineage import materializing
from tasks.memory import device_memory_guard
from tasks.parquet.dataset.plan import InputPlan
from tasks.parquet.store.locations import absolute
from tasks.parquet.publish.publish import publish_results
from tasks.parquet.write.results import DEFAULT_COMPRESSION
from tasks.parquet.write.tables import (
    dense_bfs_columns, dense_bfs_table, dense_forest_columns, dense_forest_table, vertex_names,
)
from tasks.parquet.write.result_files import ResultWriter
from tasks.pickling import pickle_by_reference
from tasks.prepare import PreparedEdges, prepare_input
from tasks.report import (
    RunSummary, TaskRunName, artifact_key, bfs_levels_markdown, count, direction_summary, filter_text,
    msf_rounds_markdown, reader_text, search_label,
)
from tasks.sources import dense_sources
from tasks.summary import summarize


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
    stopping.check(fn.__name__)
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    be.synchronize(xp)
    return Timed(out, time.perf_counter() - start)


@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_io, cache_policy=NO_CACHE, persist_result=False,
      task_run_name=TaskRunName("load"))
def load_edges(plan: InputPlan, backend: str | None, algorithms: tuple = ("bfs", "msf"), directed: bool = False,
               reader: str = "auto", source_sets: list = ()) -> Timed:
    """The input the run planned, on the compute backend, renumbered (a PreparedEdges, see
    prepare_input). The backend and the Parquet reader are resolved here, on the worker that
    computes. Every id of ``source_sets`` (the searches' sources) is looked up as soon as the
    ids are known: a source that is no vertex fails the load, so no other stage of the run
    starts (the forest and its validation would otherwise run on after the search failed)."""
    p = prepare_input(plan, backend, algorithms, directed, reader)
    for sources in source_sets:
        dense_sources(p, sources)
    logger = get_run_logger()
    logger.info("read %s edges from %s in %.3f s; reader %s", f"{p.rows:,}", p.path, p.read_seconds,
                reader_text(p.reader))
    if p.selection:
        logger.info("%s", filter_text({**p.selection, "edges": p.rows}))
    if p.skipped:
        logger.warning("skipped %d files that are not Parquet: %s", len(p.skipped), ", ".join(p.skipped))
    logger.info("renumbered: %s vertices, %s edges (%s self-loops) on %s in %.3f s", f"{p.edges.n:,}",
                f"{p.rows:,}", f"{p.self_loops:,}", p.device, p.renumber_seconds)
    return Timed(p, p.read_seconds + p.renumber_seconds)


@task(cache_policy=NO_CACHE, persist_result=False, task_run_name=TaskRunName("csr"))
def build_csr(prepared: Timed, directed: bool) -> Timed:
    """CSR by degree counts, exclusive prefix sum and scatter (plus the reverse CSR if directed)."""
    p: PreparedEdges = prepared.value
    with device_memory_guard("CSR", p.edges.m):
        graph = _timed(be.module(p.backend), build_graph, p.edges, directed)
    get_run_logger().info("CSR: %s vertices, %s arcs in %.3f s", f"{graph.value.n:,}", f"{graph.value.out.nnz:,}",
                          graph.seconds)
    return graph


class StepLog:
    """Wall-clock time of each reported step (a BFS level or a GPU batch of fused levels; a
    Boruvka round), taken in the kernel's callback. Callbacks follow a device sync (the
    frontier size or edge count is read back), so the intervals are the steps' real times."""

    def __init__(self):
        self.last = time.perf_counter()
        self.rows: list[tuple] = []

    def record(self, *values) -> None:
        now = time.perf_counter()
        self.rows.append((*values, now - self.last))
        self.last = now


@dataclass
class Search:
    """One search's answer and the dense vertex numbers it started from."""

    sources: np.ndarray  # host int64: dense numbers of the set's source ids, in the user's order
    result: BFSResult


@task(cache_policy=NO_CACHE, persist_result=False, task_run_name=TaskRunName("bfs"))
def breadth_first_search(prepared: Timed, graph: Timed, source_ids: list, depth_limit: int | None,
                         source_set: int | None = None) -> Timed:
    """Direction-optimizing BFS from all of a set's sources at once (a Search); publishes the
    per-level table as a markdown artifact. The set's ids are looked up here rather than in a
    task of their own: on a running cluster every task run costs a hand-off between tasks, and
    the lookup is a few binary searches."""
    sources = dense_sources(prepared.value, source_ids)
    g: Graph = graph.value
    label = search_label(source_set)
    progress = Progress(artifact_key("bfs-progress", source_set), g.out.nnz,
                        f"{label} from {count(len(sources), 'source')} over {count(g.n, 'vertex', 'vertices')}")
    reached = [len(sources)]
    steps = StepLog()

    def on_level(level, frontier):
        steps.record(level, frontier)
        reached[0] += frontier
        progress.update(100 * reached[0] / g.n, f"level {level:,}: frontier {frontier:,}, reached {reached[0]:,} of {g.n:,}")

    with device_memory_guard("BFS", g.out.nnz):
        search = _timed(be.array_module(g.out.indptr), bfs, g, sources, depth_limit, on_level=on_level)
    r: BFSResult = search.value
    progress.update(100, f"done: {count(r.levels, 'level')} in {search.seconds:.3f} s", final=True)
    artifacts.publish(
        create_markdown_artifact,
        key=artifact_key("bfs-levels", source_set),
        markdown=bfs_levels_markdown(f"{label}: levels", r.steps, steps.rows, g.n),
        description=f"{label}: direction, frontier size and seconds per level",
    )
    # counted from the distances: on a GPU one report can stand for several levels run in one launch
    reached_vertices = be.count_at_least(r.distance, 0)
    get_run_logger().info("%s: %s, reached %s of %s vertices in %.3f s", label, direction_summary(r.steps),
                          f"{reached_vertices:,}", f"{g.n:,}", search.seconds)
    return Timed(Search(sources, r), search.seconds)


@task(cache_policy=NO_CACHE, persist_result=False, task_run_name=TaskRunName("msf"))
def spanning_forest(prepared: Timed) -> Timed:
    """Boruvka minimum spanning forest (an MSFResult); publishes the per-round table as a
    markdown artifact."""
    e: EdgeList = prepared.value.edges
    progress = Progress("msf-progress", e.m, f"Boruvka over {e.m:,} edges, {e.n:,} vertices")
    steps = StepLog()

    def on_round(rounds, edges_left):
        steps.record(rounds, edges_left)
        progress.update(100 * (1 - edges_left / max(e.m, 1)), f"round {rounds}: {edges_left:,} edges still cross components")

    with device_memory_guard("MSF", e.m):
        forest = _timed(be.array_module(e.src), minimum_spanning_forest, e, on_round=on_round)
    f: MSFResult = forest.value
    progress.update(100, f"done: {count(f.rounds, 'round')} in {forest.seconds:.3f} s", final=True)
    artifacts.publish(create_markdown_artifact, key="msf-rounds",
                      markdown=msf_rounds_markdown(f.rounds, f.bands, steps.rows, e.m, forest.seconds),
                      description="Boruvka: edges still crossing components and seconds per round")
    get_run_logger().info("MSF: %s, %s, %s in %s, %.3f s", count(int(f.edges.shape[0]), "edge"),
                          count(f.components, "tree"), count(f.rounds, "round"), count(f.bands, "band"), forest.seconds)
    return forest


@task(cache_policy=NO_CACHE, persist_result=False, task_run_name=TaskRunName("validate-bfs"))
def validate_bfs(prepared: Timed, search: Timed, directed: bool, depth_limit: int | None,
                 source_set: int | None = None) -> Timed:
    """Graph500's five rules on the raw edge list; fails the run on any violation."""
    stopping.check("BFS validation")
    e, sources, result = prepared.value.edges, search.value.sources, search.value.result
    start = time.perf_counter()
    report = verify_bfs(e.src, e.dst, e.n, sources, result.distance, result.predecessor, directed, depth_limit)
    seconds = time.perf_counter() - start
    reached = be.count_at_least(result.distance, 0)
    artifacts.publish_validation(search_label(source_set), artifact_key("bfs-validation", source_set), report,
                                 {"sources": len(sources), "reached vertices": reached, "seconds": round(seconds, 4)},
                                 seconds)
    return Timed(report, seconds)


@task(cache_policy=NO_CACHE, persist_result=False, task_run_name=TaskRunName("validate-msf"))
def validate_forest(prepared: Timed, forest: Timed) -> Timed:
    """Forest structure and minimality (cycle property; Kruskal's total for small graphs)."""
    stopping.check("MSF validation")
    e, chosen = prepared.value.edges, forest.value.edges
    start = time.perf_counter()
    report = verify_forest(e.src, e.dst, e.weight, e.n, chosen)
    extra = {"forest edges": int(chosen.shape[0]), "total weight": reported_total(be.take(e.weight, chosen))}
    if e.m <= KRUSKAL_LIMIT:
        checks, extra["Kruskal total weight"] = kruskal_check(e.src, e.dst, e.weight, e.n, chosen)
        report.update(checks)
    seconds = time.perf_counter() - start
    extra["seconds"] = round(seconds, 4)
    artifacts.publish_validation("MSF", "msf-validation", report, extra, seconds)
    return Timed(report, seconds)


WRITE_OPTIONS = dict(retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_io, cache_policy=NO_CACHE,
                     persist_result=False, task_run_name=TaskRunName("write"))


@task(**WRITE_OPTIONS)
def write_results(prepared: Timed, searches: list, results: list[str], forest: Timed | None = None,
                  output: str | None = None, compression: str = DEFAULT_COMPRESSION, graph: Timed | None = None,
                  checks: list = (), writer: str = "auto") -> RunSummary:
    """Every result file of the run at once, each written atomically to its path in ``results``
    (tasks.parquet.write.results.result_paths): each search's (bfs_distances.parquet), in the
    order of ``searches``, then the forest's (mst_edges.parquet) where there is one, all in the
    folder ``output`` (a file target's folder). Then the
    BFS results an earlier run left under OUTPUT that this run does not replace are removed, all
    while no other run publishes into OUTPUT (tasks.parquet.publish.publish.publish_results). Runs once every
    check in ``checks`` passed, and returns the run's summary (summarize), the one product the
    flow process fetches. The run's last task: the artifacts its process published are on the
    server before it ends (tasks/artifacts.py says how other workers' are). ``writer``: auto,
    gpu or host (tasks.parquet.write.result_files.ResultWriter); with gpu the results go to the page
    writer as the compute backend's arrays, except files the page writer does not take (string ids)."""
    p: PreparedEdges = prepared.value
    start = time.perf_counter()
    xp = be.module(p.backend)
    encoder = ResultWriter.resolve(writer, xp, compression)
    ids = xp.asarray(p.ids) if encoder.pages and p.names is None else None
    refused = "string vertex ids" if p.names is not None else None  # the page writer takes integer ids
    names = None
    writers = []

    def result(columns, table):
        """The page writer's ResultColumns (``columns()``) where it takes them, else the table."""
        chosen, by = encoder.choose(columns, table, refused)
        writers.append(by)
        return chosen

    def host_names():
        nonlocal names
        names = vertex_names(p.names, p.ids) if names is None else names
        return names

    tables = {}
    for s, path in zip(searches, results):
        r = s.value.result
        tables[path] = result(
            lambda: dense_bfs_columns(xp, ids, r.distance, r.predecessor),
            lambda: dense_bfs_table(host_names(), be.to_host(r.distance), be.to_host(r.predecessor)))
    if forest is not None:
        rows, e = forest.value.edges, p.edges  # an edge's index is its input row
        tables[results[len(searches)]] = result(
            lambda: dense_forest_columns(xp, ids, *(be.take(column, rows) for column in (e.src, e.dst, e.weight)),
                                         p.columns),
            lambda: dense_forest_table(host_names(), *(be.to_host(be.take(column, rows)) for column in (e.src, e.dst, e.weight)),
                                       p.columns))
    written, removed = publish_results(tables, output, compression, check=check_flow_run_going)
    # absolute, as seen by the process that wrote them: the summary names them for the user
    paths = [absolute(path) for path in written]
    seconds = time.perf_counter() - start
    for path, table, by in zip(paths, tables.values(), writers):
        get_run_logger().info("wrote %s (%s rows; writer %s)", path, f"{table.num_rows:,}", by)
    for path in removed:
        get_run_logger().info("removed %s, an earlier run's result that this run does not replace", path)
    get_run_logger().info("wrote %s with %s compression in %.3f s", count(len(paths), "file"), compression, seconds)
    summary = summarize(p, graph, searches, forest, checks, paths, seconds)
    summary["writers"] = writers
    artifacts.wait_until_published()
    return summary


def results_writer(results: list, input: str) -> Task:
    """write_results, materializing the run's RESULTS (paths or URIs) from INPUT as Prefect
    assets (tasks/lineage.py)."""
    return materializing(write_results, WRITE_OPTIONS, results, input)


def check_flow_run_going() -> None:
    """Raise stopping.Stopped when the flow run of this task has already ended (timed out,
    crashed) or is being cancelled. A flow run that exceeds its time limit is marked failed at
    once, but the tasks already running go on (a thread pool waits for them): without this the
    results of a run reported failed were renamed into place after it. Asked of the server,
    since the task may run on a Dask worker."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    if not flow_run.get_id():
        return
    if stopping.run_ended(flow_run.get_id()):  # told by the flow, in this process
        raise stopping.Stopped("the flow run ended (over its time limit) before its results were published")
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run.get_id()).state
    if state is not None and (state.is_final() or state.is_cancelling()):
        raise stopping.Stopped(f"the flow run ended ({state.name}: {state.message}) before its results were published")


pickle_by_reference(globals())  # tasks/pickling.py: Dask sends the functions by name
