"""Graphs over several Dask workers: the driver of a partitioned run.

``run_partitioned`` takes the input's plan (the run's one plan, tasks.parquet.dataset.plan; a
path is planned here from its Parquet footers), picks ``partitions`` workers (one rank each,
one GPU each on dask-cuda workers), hands out the rendezvous (a TCP endpoint per
rank, and NCCL's unique id on GPUs) through Dask, starts one long task per worker
(tasks.partitioned.rank.rank_main) and waits. When every rank has finished, validation
included, it moves the staged results into the output directory (in a store: publishes them
from the staging prefix, tasks.parquet.publish.store_staging); when any rank fails it cancels the
others, deletes the staging directory (prefix) and raises one error: the first rank's own
error (a bad input row, a failed validation, ...) when there is one, else which rank was lost.

A rank whose worker dies is not retried on its own: the survivors see its connections close
and stop, and the run fails whole, with nothing written; a caller may retry the run whole.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from kernels import backend as be
from kernels.footprint import gpu_bytes
from tasks.cluster import cluster_workers, local_cluster
from tasks.errors import DeviceMemoryError, InputError, OutputError
from tasks.forest_weight import KRUSKAL_LIMIT
from tasks.parameters import parse_partitions, source_plan
from tasks.parquet.store import locations
from tasks.parquet.read.checks import integer_vertex_id
from tasks.parquet.publish.output_paths import prepare_output_dir
from tasks.parquet.dataset.plan import InputPlan, plan_input
from tasks.parquet.publish.publish import (
    publish, publishing, remove_earlier_bfs_results, remove_stale_staging, remove_staging, staging_name,
)
from tasks.parquet.write.results import (
    BFS_RESULT_NAME, COMPRESSIONS, DEFAULT_COMPRESSION, FOREST_RESULT_NAME, LAYOUTS, WRITERS, is_file_target,
    result_paths,
)
from tasks.parquet.publish.store_staging import close_staging, open_staging, publish_staged
from tasks.partitioned.comm_tcp import CommError, comm_timeout, open_endpoint
from tasks.partitioned.rank import RunSpec, nccl_unique_id, rank_main, stage_topic
from tasks.report import RunSummary, merge_reader_reports, run_summary

# distributed is imported where a run needs it: importing a flow (which imports this module)
# costs no Dask import, as flows.runners promises

log = logging.getLogger("graph.partitioned")

# How long the driver keeps collecting the other ranks' errors after the first one, to report
# the cause rather than the consequences (peers that saw the failed rank's connections close).
GRACE_SECONDS = 10.0
POLL_SECONDS = 0.2


class PartitionFailed(RuntimeError):
    """A partitioned run lost a rank (its worker died) or its ranks stopped talking."""


def _requested_partitions(value) -> int | str:
    """tasks.parameters.parse_partitions, refusing a bad value as an input error."""
    try:
        return parse_partitions(value)
    except ValueError:
        raise InputError(f"partitions must be a positive integer or 'auto' (got {value!r})") from None


def rank_bytes(plan: InputPlan, count: int, algorithms=("bfs", "msf"), directed: bool = False) -> int:
    """GPU bytes each of ``count`` ranks needs: the one-GPU footprint (kernels/footprint.py) of
    its share of the rows, with the whole graph's vertex bound (distances, parents and frontier
    bitmaps over every vertex are held by every rank). One rank: the one-GPU run's figure."""
    weight_bytes = plan.weight_dtype.itemsize if plan.weight_dtype is not None else 0
    return gpu_bytes(math.ceil(plan.rows / count), plan.footers.vertex_bound, weight_bytes, algorithms, directed)


def choose_partitions(requested, rows: int, free: list[int], backend: str, path: str, need=None) -> int:
    """How many ranks a run uses. ``free``: bytes each worker can allocate on its GPU (empty on
    the CPU); ``need(count)``: bytes each rank needs when there are ``count`` (rank_bytes).
    ``auto`` keeps one partition when the graph fits one GPU, else takes every GPU worker; a
    graph that fits neither is refused with the figures, before anything is read."""
    requested = _requested_partitions(requested)
    workers = len(free) if backend == "cupy" else None
    if requested == "auto":
        if backend != "cupy":
            return 1
        choices = [1, workers] if workers and workers > 1 else [1]
    else:
        choices = [requested]
    if backend != "cupy":
        return choices[0]
    free = sorted(free, reverse=True)
    for count in choices:
        if count <= len(free) and need(count) <= free[count - 1]:
            return count
    count = choices[-1]
    if count > len(free):
        raise InputError(f"{path}: {count} partitions need {count} GPU workers; the cluster has {len(free)}")
    raise DeviceMemoryError(
        f"{path}: {rows} edges need about {need(count) / 2**30:.2f} GiB of GPU memory on each of {count} GPU(s), "
        f"only {free[count - 1] / 2**30:.2f} GiB is free on one of them; add GPU workers or rerun with "
        "--backend numpy (GRAPH_BACKEND=numpy) to compute on the CPU")


def as_plan(input: InputPlan | str, src_col: str, dst_col: str, weight_col: str | None,
            filter: str | None) -> InputPlan:
    """``input`` as its plan: a plan as given (the run's one plan, made by the flow), a path
    planned here (plan_input, with the columns and filter)."""
    if isinstance(input, InputPlan):
        return input
    return plan_input(input, src_col, dst_col, weight_col, filter=filter)


def count_partitions(input: InputPlan | str, partitions="auto", *, backend: str | None = None, client=None,
                     src_col: str = "src", dst_col: str = "dst", weight_col: str | None = None,
                     algorithms=("bfs", "msf"), directed: bool = False, filter: str | None = None) -> int:
    """How many partitions a run of ``input`` (its plan, or a path planned here with the
    columns and filter) would use on ``client``'s workers (without a client: the cluster a run
    starts on this machine, one worker per GPU): what a flow asks before choosing between the
    one-partition recipe and ``partitioned_run``. Asks only the plan's figures; an input the
    run would refuse for what the footers say is refused here."""
    plan = as_plan(input, src_col, dst_col, weight_col, filter)
    workers = None
    if client is None:
        backend = be.resolve(backend)
        free = []
        if backend == "cupy":
            import cupy

            # the other GPUs are taken to have as much free as this one: asking them would
            # create a CUDA context on each in this process
            free = [be.device_memory_free()] * cupy.cuda.runtime.getDeviceCount()
    else:
        workers = ordered_workers(client)
        backend = next(iter(client.run(be.resolve, backend, workers=workers[:1]).values()))
        free = list(client.run(be.device_memory_free, workers=workers).values()) if backend == "cupy" else []
    count = choose_partitions(partitions, plan.rows, free, backend, plan.path,
                              lambda c: rank_bytes(plan, c, algorithms, directed))
    if count > 1 and workers is not None and count > len(workers):
        raise InputError(f"{plan.path}: {count} partitions need {count} Dask workers; the cluster has {len(workers)}")
    return count


def _check_integer_ids(path: str, ids: list) -> None:
    for s in ids:
        integer_vertex_id(path, s)


def ordered_workers(client) -> list[str]:
    """The addresses of ``client``'s workers, by worker name: the order ranks are given out in."""
    info = cluster_workers(client)
    return sorted(info, key=lambda a: (str(info[a].get("name")), a))


@contextmanager
def _own_cluster(partitions: int | None, backend: str | None):
    """A client of this machine's cluster (tasks.cluster.local_cluster) of ``partitions``
    workers for a run given no client (None: one per GPU, or one on the CPU)."""
    import distributed

    with local_cluster(partitions or (None if be.resolve(backend) == "cupy" else 1), backend,
                       dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def run_partitioned(input: InputPlan | str, output: str, partitions=2, *, source: list | None = None,
                    source_sets: list[list] | None = None, forest: bool = True, directed: bool = False,
                    depth_limit: int | None = None, src_col: str = "src", dst_col: str = "dst",
                    weight_col: str | None = "weight", backend: str | None = None, output_layout: str = "file",
                    compression: str = DEFAULT_COMPRESSION, client=None, timeout: float | None = None,
                    check=None, filter: str | None = None, reader: str = "auto",
                    writer: str = "auto", progress=None) -> RunSummary:
    """BFS from ``source`` (one search) or ``source_sets`` (one search each) and, if ``forest``,
    the minimum spanning forest of the Parquet edge list ``input`` (its plan, or a path planned
    here with the columns and, if ``forest``, the weight column; with a ``filter``, of the rows
    it keeps: every rank reads through the one plan), over ``partitions`` Dask
    workers of ``client`` (a LocalCluster of that many workers when None). Results go to
    ``output`` as one file each (``output_layout="file"``) or one dataset directory each
    (``"dataset"``), only after every result verified (an ``output`` ending in .parquet names the
    run's one result itself: results.result_paths); ``check()``, called just before the first
    result is moved into place, may still refuse (raise). ``reader``: the Parquet reader each
    rank reads its share with (tasks.parquet.read.reader); ``writer``: what encodes each rank's
    parts (auto, gpu or host: tasks.parquet.write.result_files.ResultWriter). ``progress(reports)``,
    called on this thread while the ranks run, gets rank 0's new stage reports in order (dicts
    of ``stage``, ``event``: "start" or "end", and ``seconds`` at the end; tasks.partitioned.rank).
    Returns the run's summary."""
    started = time.perf_counter()
    if output_layout not in LAYOUTS:
        raise InputError(f"output layout must be one of {', '.join(LAYOUTS)} (got {output_layout!r})")
    if compression not in COMPRESSIONS:
        raise InputError(f"unknown compression {compression!r} (choose from {', '.join(COMPRESSIONS)})")
    if writer not in WRITERS:  # (the ranks resolve it: auto depends on their backend)
        raise OutputError(f"unknown Parquet writer {writer!r} (choose from {', '.join(WRITERS)})")
    if depth_limit is not None and depth_limit < 0:
        raise InputError(f"depth limit must be >= 0 (got {depth_limit})")
    searches = source_plan(source, source_sets, required=False)
    sets, bfs_results = searches.sets, searches.results(BFS_RESULT_NAME)
    if not sets and not forest:
        raise InputError("nothing to compute: give a BFS source or ask for the forest")
    output, bfs_results, forest_result = _named_results(output, bfs_results, forest)
    plan = as_plan(input, src_col, dst_col, weight_col if forest else None, filter)
    for ids in sets:
        if not ids:  # a search from nowhere reaches nothing, and that answer would pass its checks
            raise InputError(f"{plan.path}: a BFS source set is empty")
        if not plan.footers.strings:  # string ids are looked up as text, as one partition does
            _check_integer_ids(plan.path, ids)
    if client is None:
        count = _requested_partitions(partitions)
        with _own_cluster(None if count == "auto" else count, backend) as own:
            return _drive(own, plan, partitions, sets, bfs_results, forest, directed, depth_limit, backend,
                          output, output_layout, compression, timeout, started, check, reader, writer,
                          forest_result, progress)
    return _drive(client, plan, partitions, sets, bfs_results, forest, directed, depth_limit, backend,
                  output, output_layout, compression, timeout, started, check, reader, writer, forest_result,
                  progress)


def _named_results(output: str, bfs_results: list[str], forest: bool) -> tuple[str, list[str], str]:
    """The output folder, each search's result and the forest's, relative to it: OUTPUT/<name>,
    or, where ``output`` names a Parquet file (results.result_paths), that file for the run's one
    result (in the ``dataset`` layout, a folder of parts of that name)."""
    folder, paths = result_paths(output, bfs_results + ([FOREST_RESULT_NAME] if forest else []))
    if not is_file_target(output):
        return output, bfs_results, FOREST_RESULT_NAME
    name = paths[0].rsplit("/", 1)[-1] if locations.is_uri(output) else os.path.basename(paths[0])
    return folder, [name] if bfs_results else [], name


def _check_one_gpu_each(client, workers: list[str]) -> None:
    """NCCL takes one rank per GPU: workers that share a GPU (a plain LocalCluster on a GPU
    machine) are refused before anything is read, naming them."""
    buses = client.run(be.device_bus_id, workers=workers)
    seen: dict[str, str] = {}
    for worker in workers:
        if buses[worker] in seen:
            raise InputError(f"Dask workers {seen[buses[worker]]} and {worker} compute on the same GPU "
                             f"({buses[worker]}); a partitioned run on GPUs needs one worker per GPU "
                             "(dask-cuda's LocalCUDACluster or `dask cuda worker`), or --backend numpy")
        seen[buses[worker]] = worker


def _drive(client, plan, partitions, sets, bfs_results, forest, directed, depth_limit, backend, output, layout,
           compression, timeout, started, check=None, reader="auto", writer="auto",
           forest_result=FOREST_RESULT_NAME, progress=None) -> RunSummary:
    from distributed.comm import get_address_host

    workers = ordered_workers(client)
    backends = client.run(be.resolve, backend, workers=workers)
    if len(set(backends.values())) > 1:
        raise InputError(f"the Dask workers disagree on the backend ({backends}); give --backend")
    backend = next(iter(backends.values()))
    free = client.run(be.device_memory_free, workers=workers) if backend == "cupy" else {}
    if free:  # the GPUs with the most free memory first
        workers = sorted(workers, key=lambda w: -free[w])
    algorithms = (("bfs",) if sets else ()) + (("msf",) if forest else ())
    size = choose_partitions(partitions, plan.rows, [free[w] for w in workers if w in free], backend, plan.path,
                             lambda count: rank_bytes(plan, count, algorithms, directed))
    if size > len(workers):
        raise InputError(f"{plan.path}: {size} partitions need {size} Dask workers; the cluster has {len(workers)}")
    workers = workers[:size]
    if backend == "cupy" and size > 1:
        _check_one_gpu_each(client, workers)
    token = uuid.uuid4().hex
    results = bfs_results + ([forest_result] if forest else [])
    stage = _StoreStage(output, token) if locations.is_store(output) else _LocalStage(output, token)
    futures = []
    try:
        endpoints = client.gather([
            client.submit(open_endpoint, token, rank, size, get_address_host(w), workers=[w],
                          allow_other_workers=False, pure=False, key=f"partitioned-endpoint-{rank}-{token}")
            for rank, w in enumerate(workers)])
        nccl_id = None
        if backend == "cupy":
            nccl_id = client.submit(nccl_unique_id, workers=[workers[0]], allow_other_workers=False,
                                    pure=False, key=f"partitioned-nccl-id-{token}").result()
        spec = RunSpec(token=token, plan=plan, size=size, endpoints=endpoints, nccl_id=nccl_id, backend=backend,
                       staging=str(stage.staging), layout=layout, compression=compression, source_sets=sets,
                       bfs_results=bfs_results, forest=forest, directed=directed, depth_limit=depth_limit,
                       timeout=comm_timeout() if timeout is None else timeout, kruskal_limit=KRUSKAL_LIMIT,
                       reader=reader, writer=writer, forest_result=forest_result)
        futures = [client.submit(rank_main, spec, rank, workers=[w], allow_other_workers=False, pure=False,
                                 retries=0, key=f"partitioned-rank-{rank}-{token}")
                   for rank, w in enumerate(workers)]
        reports = _StageReports(client, token, progress) if progress is not None else None
        summaries = await_ranks(client, futures, workers, reports)
        placed, removed = stage.publish(results, layout, size, check)
        for path in removed:
            log.info("removed %s, an earlier run's result that this run does not replace", path)
    except BaseException:
        client.cancel([f for f in futures if f.status not in ("finished", "error")])
        stage.give_up()
        raise
    stage.close()
    device = client.run(be.device_name, backend, workers=[workers[0]])[workers[0]]
    figures = dict(summaries[0])  # every rank holds the run's figures after the reductions
    # a stage lasts as long as its slowest rank
    seconds = {stage: max(s["seconds"].get(stage, 0.0) for s in summaries) for stage in figures.pop("seconds")}
    figures["reader"] = merge_reader_reports([s["reader"] for s in summaries])  # each rank read its own share
    summary = run_summary(input=plan.path, backend=backend, device=f"{device}, {size} partitions", seconds=seconds,
                          outputs=placed, partitions=size, layout=layout, **figures,
                          **(plan.footers.selection or {}))  # (a failed check raised on the ranks)
    summary["total_seconds"] = round(time.perf_counter() - started, 3)
    return summary


class _LocalStage:
    """A staging folder in the output folder, its results renamed into place (publish.publish)."""

    def __init__(self, output: str, token: str):
        out = Path(output)
        self.created = not out.exists()
        self.out = prepare_output_dir(out)
        remove_stale_staging(self.out)
        self.staging = self.out / staging_name(token)
        self.staging.mkdir()

    def publish(self, results: list[str], layout: str, size: int, check) -> tuple[list[str], list]:
        with publishing(self.out):  # other runs into this output wait (tasks.parquet.publish.publish.publishing)
            if check is not None:
                check()
            placed = publish(self.staging, self.out, results)
            return placed, remove_earlier_bfs_results(self.out, placed) if any(
                r.endswith(BFS_RESULT_NAME) for r in results) else []

    def give_up(self) -> None:
        remove_staging(self.staging)
        if self.created:
            try:
                self.out.rmdir()  # only if the failed run left it empty, as it found it
            except OSError:
                pass

    def close(self) -> None:
        remove_staging(self.staging)


class _StoreStage:
    """A staging prefix in a store, its results published in the store's order
    (tasks.parquet.publish.store_staging)."""

    def __init__(self, output: str, token: str):
        self.fs, self.out, self.staging = open_staging(output, token)

    def publish(self, results: list[str], layout: str, size: int, check) -> tuple[list[str], list]:
        placed, removed = publish_staged(self.fs, self.staging, self.out, results, layout, size, check)
        return [str(p) for p in placed], removed

    def give_up(self) -> None:
        try:
            close_staging(self.fs, self.staging)
        except OutputError as exc:  # the run's own error is the one to report
            log.warning("%s", exc)

    def close(self) -> None:
        close_staging(self.fs, self.staging)


class _StageReports:
    """Rank 0's stage reports (Dask worker events of the run's topic) not yet handed to
    ``progress``."""

    def __init__(self, client, token: str, progress):
        self.client, self.topic, self.progress, self.next = client, stage_topic(token), progress, 0

    def __call__(self) -> None:
        try:
            events = self.client.get_events(self.topic)
        except Exception as exc:  # a report of progress: the run goes on without it
            log.debug("stage reports unread: %s", exc)
            return
        # by the rank's numbering: the scheduler keeps a topic's latest events only
        new = sorted((r for _, r in events if r.get("n", -1) >= self.next), key=lambda r: r["n"])
        if new:
            self.next = new[-1]["n"] + 1
            self.progress(new)


def await_ranks(client, futures, workers, reports=None) -> list[dict]:
    """Every rank's summary; on the first failure, the error that explains it. ``reports()``,
    if given, is called at each look (and once more when the ranks have settled)."""
    errors: dict[int, BaseException] = {}
    lost: dict[int, str] = {}
    failing_since = None
    changed = threading.Event()  # set when any rank's task settles: the loop looks at once
    for future in futures:
        future.add_done_callback(lambda _: changed.set())
    while True:
        changed.clear()
        # one snapshot per pass: statuses change under us (the client's thread), and a rank seen
        # settled must have had its error collected, or a peer's "connection closed" would be
        # reported in place of the error that closed it
        statuses = [f.status for f in futures]
        if reports is not None:
            reports()  # (rank 0's last reports reach the scheduler before its task's end)
        if all(s == "finished" for s in statuses):
            return client.gather(futures)
        for rank, status in enumerate(statuses):
            if status == "error" and rank not in errors:
                errors[rank] = futures[rank].exception()
            elif status == "cancelled" and rank not in errors:
                lost[rank] = workers[rank]
        alive = set(cluster_workers(client))
        for rank, w in enumerate(workers):
            if w not in alive and statuses[rank] not in ("finished", "error"):
                lost[rank] = w
        if errors or lost:
            failing_since = failing_since or time.monotonic()
            settled = all(s in ("finished", "error") or r in lost for r, s in enumerate(statuses))
            if settled or time.monotonic() - failing_since > GRACE_SECONDS:
                break
        changed.wait(POLL_SECONDS)  # a lost worker is noticed at the next look
    client.cancel([f for f in futures if f.status not in ("finished", "error")])
    raise _cause(errors, lost)


def _cause(errors: dict[int, BaseException], lost: dict[int, str]) -> BaseException:
    """The error to report: a rank's own failure first (lowest rank), then a lost worker, then
    the communication error that stopped the ranks."""
    from distributed.scheduler import KilledWorker

    own = {r: e for r, e in errors.items() if not isinstance(e, (CommError, KilledWorker))}
    if own:
        return own[min(own)]
    lost.update({r: "" for r, e in errors.items() if isinstance(e, KilledWorker) and r not in lost})
    if lost:
        rank = min(lost)
        where = f" ({lost[rank]})" if lost[rank] else ""
        return PartitionFailed(f"partitioned run failed: the worker of rank {rank}{where} died; nothing was written")
    rank = min(errors)
    return PartitionFailed(f"partitioned run failed: {errors[rank]}; nothing was written")
