"""The rank program of a partitioned run: one long Dask task per worker, all of them running the
same steps and meeting in collectives. Read the share -> renumber together -> CSR of the owned
vertices -> BFS per source set -> forest by local filtering -> validate every result -> write
this rank's parts (with the writer a one-partition run would choose: the page writer takes
integer ids as the backend's arrays, tasks.parquet.write.result_files.ResultWriter) -> (file
layout, local staging) each result's parts joined by one rank; in a
store the driver joins them as it publishes (tasks.parquet.publish.store_staging). Every rank returns its stage times;
rank 0 also returns the run's figures, which every rank holds after the reductions.

Phases are logged on the ``graph.partitioned`` logger ("rank R: PHASE") at INFO. Rank 0 also
reports when each stage starts and ends as a Dask worker event (``stage_topic``), which the
driver reads while it waits (tasks.partitioned.driver.await_ranks) and hands on: the stages of
the run's one Prefect task, shown as they happen.
"""
from __future__ import annotations

import itertools
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from kernels import backend as be
from kernels.partitioned import bfs_partitioned, build_local_graph, msf_partitioned
from kernels.partitioned_verify import verify_bfs_partitioned, verify_forest_partitioned
from kernels.structures import UNIT_WEIGHT
from tasks.errors import DeviceMemoryError, InputError, ValidationFailed
from tasks.forest_weight import reported_total
from tasks.parquet.read.checks import Signs, unify_signs
from tasks.parquet.dataset.plan import InputPlan
from tasks.parquet.read.reader import read_share
from tasks.parquet.write.results import FOREST_RESULT_NAME, forest_columns
from tasks.parquet.write.tables import ResultColumns, bfs_schema, bfs_table, forest_schema, forest_table
from tasks.parquet.store import locations
from tasks.parquet.publish.store_staging import upload_parts
from tasks.parquet.write.result_files import ResultWriter, merge_parts, write_parts
from tasks.partitioned.comm_tcp import Mesh, TcpCommunicator
from tasks.partitioned.vertex_ids import IntegerIds, renumber_share
from tasks.sources import missing_source

log = logging.getLogger("graph.partitioned")


@dataclass
class RunSpec:
    """Everything a rank needs; the same object goes to every rank."""

    token: str
    plan: InputPlan
    size: int
    endpoints: list[tuple[str, int]]
    nccl_id: tuple | None  # NCCL's unique id (CuPy backend)
    backend: str
    staging: str
    layout: str
    compression: str
    source_sets: list[list]  # input ids per search, as the user gave them (integers or their text)
    bfs_results: list[str]  # where each search's result goes, relative to the output
    forest: bool
    directed: bool
    depth_limit: int | None
    timeout: float
    kruskal_limit: int
    reader: str = "auto"  # the Parquet reader (tasks.parquet.read.reader)
    writer: str = "auto"  # the Parquet writer of the parts (tasks.parquet.write.result_files.ResultWriter)
    forest_result: str = FOREST_RESULT_NAME  # where the forest goes, relative to the output


def nccl_unique_id() -> tuple:
    """NCCL's unique id for a new communicator (run on one worker)."""
    os.environ["NCCL_NVLS_ENABLE"] = "0"  # before NCCL's first call in this process reads it
    from cupy.cuda import nccl

    return nccl.get_unique_id()


def stage_topic(token: str) -> str:
    """The Dask event topic of a run's stage reports (rank 0's): dicts of ``stage``, ``event``
    ("start" or "end"), at the end ``seconds``, and ``n``, their number from 0 in order."""
    return f"partitioned-stages-{token}"


def _stage_reporter(spec: RunSpec, rank: int):
    """Where rank 0 reports its stages (its Dask worker's event log); None on other ranks, or
    outside a Dask worker."""
    if rank != 0:
        return None
    try:
        import distributed

        worker = distributed.get_worker()
    except (ImportError, ValueError):
        return None
    topic, numbers = stage_topic(spec.token), itertools.count()
    return lambda **message: worker.log_event(topic, {**message, "n": next(numbers)})


def _communicator(spec: RunSpec, rank: int, mesh: Mesh):
    if spec.backend == "cupy":
        from tasks.partitioned.comm_nccl import NcclCommunicator

        return NcclCommunicator(spec.nccl_id, rank, spec.size, mesh)
    return TcpCommunicator(mesh)


def rank_main(spec: RunSpec, rank: int) -> dict:
    """Run rank ``rank`` of a partitioned run (a Dask task pinned to its worker)."""
    started = time.perf_counter()
    mesh = Mesh.connect(spec.token, rank, spec.endpoints, spec.timeout)
    try:
        comm = _communicator(spec, rank, mesh)
    except BaseException:
        mesh.close(clean=False)
        raise
    with comm:
        try:
            return _Rank(spec, rank, comm, connect_seconds=time.perf_counter() - started).run()
        except Exception as exc:
            if type(exc).__name__ != "OutOfMemoryError":
                raise
            start, stop = spec.plan.share(rank, spec.size)
            raise DeviceMemoryError(
                f"{spec.plan.path}: rank {rank} ran out of GPU memory on its {stop - start} edges ({exc}); "
                "run with more partitions (GPU workers) or --backend numpy") from None


class _Rank:
    def __init__(self, spec: RunSpec, rank: int, comm, connect_seconds: float = 0.0):
        self.spec, self.rank, self.comm = spec, rank, comm
        self.xp = be.module(spec.backend)
        # the rendezvous: the TCP mesh and (GPUs) NCCL's communicator, made before any stage
        self.seconds: dict[str, float] = {"connect": connect_seconds}
        self.summary: dict = {}
        self.report = _stage_reporter(spec, rank)

    def _start(self, stage: str) -> float:
        """The start of ``stage`` (reported by rank 0): its perf_counter time."""
        if self.report is not None:
            self.report(stage=stage, event="start")
        return time.perf_counter()

    def _phase(self, name: str, started: float, stage: str | None = None) -> None:
        be.synchronize(self.xp)
        elapsed = time.perf_counter() - started
        if stage:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + elapsed
            if self.report is not None:
                self.report(stage=stage, event="end", seconds=elapsed)
        log.info("rank %d: %s (%.3f s)", self.rank, name, elapsed)

    def _sum(self, value) -> int:
        return int(be.to_host(self.comm.allreduce(self.xp.asarray([value], dtype=np.int64), "sum"))[0])

    def _depth(self, distance) -> int:
        """The largest distance any rank holds (its owned vertices'): the farthest vertex reached."""
        local = int(distance.max()) if distance.shape[0] else -1
        return int(be.to_host(self.comm.allreduce(self.xp.asarray([local], dtype=np.int64), "max"))[0])

    def run(self) -> dict:
        spec, comm = self.spec, self.comm
        plan = spec.plan
        started = self._start("load")
        share = read_share(plan, self.rank, spec.size, self.xp, reader=spec.reader)
        self.summary["reader"] = share.report
        if plan.footers.mixed_signs:
            unified = self._unify_signs(share.signs)
            share.src, share.dst = share.src.view(unified), share.dst.view(unified)
        self._phase("read", started, "load")
        started = self._start("prepare")
        weight = share.weight
        if weight is None and spec.forest:  # an unweighted input's forest: unit weights
            weight = self.xp.ones(share.rows, dtype=UNIT_WEIGHT)
        try:
            src, dst, own, ids = renumber_share(comm, self.xp, share)
        except ValueError as exc:
            raise InputError(f"{plan.path}: {exc}") from None
        self._phase("renumbered", started, "prepare")
        self.summary.update(vertices=own.n, edges=plan.rows, self_loops=self._sum(int((src == dst).sum())))
        searches = []
        if spec.source_sets:
            started = self._start("csr")
            graph = build_local_graph(comm, own, src, dst, spec.directed)
            self._phase("csr", started, "csr")
            for k, given in enumerate(spec.source_sets):
                dense = ids.locate(comm, own, given)
                if (dense < 0).any():
                    missing = given[int(np.flatnonzero(dense < 0)[0])]
                    raise missing_source(plan.path, missing, plan.filter)
                started = self._start("bfs")
                searches.append((dense, bfs_partitioned(comm, graph, dense, spec.depth_limit)))
                self._phase(f"bfs {k}", started, "bfs")
            del graph
        forest = None
        if spec.forest:
            started = self._start("msf")
            forest = msf_partitioned(comm, src, dst, weight, own.n, share.row_offset)
            self._phase("msf", started, "msf")
        started = self._start("validate")
        self._validate(src, dst, weight, share.row_offset, own, searches, forest)
        self._phase("validated", started, "validate")
        started = self._start("write")
        self._write(src, dst, weight, share.row_offset, own, ids, searches, forest)
        self._phase("written", started, "write")
        self.summary["seconds"] = self.seconds
        return self.summary

    def _unify_signs(self, found: list[Signs]) -> np.dtype:
        """uint64 ids beside signed ones: the type every rank's ids fit (tasks.parquet.read.checks' rule, over
        the first id above 2**63-1 and the first negative id of any rank)."""
        files = list(dict.fromkeys(u.file for u in self.spec.plan.footers.units))
        columns = [self.spec.plan.src_col, self.spec.plan.dst_col]
        big = next((s.big for s in found if s.big), None)
        negative = next((s.negative for s in found if s.negative), None)
        mine = np.full(8, -1, dtype=np.int64)  # (file, column, row, value bits) of each, -1: none
        for k, where in enumerate((big, negative)):
            if where is not None:
                file, column, row, value = where
                bits = np.array([value], dtype=np.uint64 if value > 0 else np.int64).view(np.int64)[0]
                mine[4 * k:4 * k + 4] = [files.index(file), columns.index(column), row, bits]
        every, _ = self.comm.allgatherv(self.xp.asarray(mine))
        every = be.to_host(every).reshape(-1, 2, 4)
        first = []
        for k in (0, 1):
            ranks = np.flatnonzero(every[:, k, 0] >= 0)
            if ranks.size == 0:
                first.append(None)
                continue
            file, column, row, bits = every[ranks[0], k]
            value = int(np.array([bits]).view(np.uint64 if k == 0 else np.int64)[0])
            first.append((files[file], columns[column], int(row), value))
        return unify_signs([Signs(big=first[0], negative=first[1])])

    def _validate(self, src, dst, weight, row_offset, own, searches, forest) -> None:
        spec, comm = self.spec, self.comm
        failed = []
        reports = []
        for dense, result in searches:
            report = verify_bfs_partitioned(comm, own.bounds, src, dst, dense, result.distance, result.predecessor,
                                            spec.directed, spec.depth_limit)
            reports.append(report)
            failed += [f"{k} ({v})" for k, v in report.items() if v != 0]
        if searches:
            self.summary.update(bfs_validation=reports, source_sets=len(searches),
                                sources=sum(len(s) for s in spec.source_sets),
                                reached=[self._sum(int((r.distance >= 0).sum())) for _, r in searches],
                                depth=[self._depth(r.distance) for _, r in searches],
                                steps=[r.steps for _, r in searches],
                                level_times=[r.level_times for _, r in searches],
                                frontiers=[r.frontiers for _, r in searches])
            traversed = 0
            for _, r in searches:  # Graph500: input edges whose source end was reached
                every, _ = comm.allgatherv(r.distance)
                traversed += self._sum(int((every[src] >= 0).sum()))
            bfs_seconds = self.seconds.get("bfs", 0.0)
            self.summary["gteps"] = round(traversed / bfs_seconds / 1e9, 4) if bfs_seconds > 0 else None
        if failed:
            raise ValidationFailed(f"BFS result failed validation: {', '.join(failed)}; nothing was written")
        if forest is not None:
            report = verify_forest_partitioned(comm, src, dst, weight, own.n, row_offset, spec.plan.rows, forest.rows,
                                               spec.kruskal_limit)
            chosen = forest.rows[(forest.rows >= row_offset) & (forest.rows < row_offset + src.shape[0])] - row_offset
            # the forest's weights in input row order (rank order), summed as a one-partition run sums them
            weights, _ = comm.allgatherv(weight[chosen])
            self.summary.update(msf_validation=report, forest_edges=int(forest.rows.shape[0]),
                                components=forest.components, rounds=forest.rounds, merges=forest.merges,
                                msf_stage_times=forest.stage_times,
                                forest_weight=reported_total(weights))
            if spec.plan.weight_dtype is None:
                self.summary["unit_weights"] = True
            msf_seconds = self.seconds.get("msf", 0.0)
            self.summary["edges_per_second"] = round(spec.plan.rows / msf_seconds) if msf_seconds > 0 else None
            bad = [f"{k} ({v})" for k, v in report.items() if v != 0]
            if bad:
                raise ValidationFailed(f"MSF result failed validation: {', '.join(bad)}; nothing was written")

    def _write(self, src, dst, weight, row_offset, own, ids, searches, forest) -> None:
        spec, comm, xp = self.spec, self.comm, self.xp
        # every rank chooses alike (the same writer, backend and id kind), so every rank makes the
        # same collective lookups: integer ids as the backend's arrays, string ids as pyarrow's
        encoder = ResultWriter.resolve(spec.writer, xp, spec.compression)
        integer = isinstance(ids, IntegerIds)
        refused = None if integer else "string vertex ids"

        def found(dense):
            return ids.fetch(comm, own, dense) if integer else ids.lookup(comm, own, dense)

        def host(values) -> pa.Array:
            return pa.array(be.to_host(values), type=ids.type) if integer else values

        tables, writers = {}, []
        for (_, result), name in zip(searches, spec.bfs_results):
            has_parent = result.distance > 0  # sources and unreached vertices have none
            parents = found(result.predecessor[has_parent])
            tables[name], by = encoder.choose(
                lambda: owned_bfs_columns(xp, ids.ids, result.distance, has_parent, parents),
                lambda: owned_bfs_table(ids.owned(), be.to_host(result.distance), be.to_host(has_parent),
                                        host(parents)),
                refused)
            writers.append(by)
        if forest is not None:
            mine = forest.rows[(forest.rows >= row_offset) & (forest.rows < row_offset + src.shape[0])] - row_offset
            ends = found(xp.concatenate([src[mine], dst[mine]]))
            k = int(mine.shape[0])
            w = weight[mine].astype(spec.plan.weight_dtype or UNIT_WEIGHT, copy=False)
            named = forest_columns(spec.plan.src_col, spec.plan.dst_col, spec.plan.weight_col)

            def forest_result_columns() -> ResultColumns:
                return ResultColumns(forest_schema(pa.from_numpy_dtype(ends.dtype), pa.from_numpy_dtype(w.dtype), named),
                                     (ends[:k], ends[k:], w), (None, None, None))

            def forest_host_table() -> pa.Table:
                both = host(ends)
                return forest_table(both.slice(0, k), both.slice(k), be.to_host(w), named)

            tables[spec.forest_result], by = encoder.choose(forest_result_columns, forest_host_table, refused)
            writers.append(by)
        self.summary["writers"] = writers
        if locations.is_store(spec.staging):  # the driver joins the parts as it publishes (store_staging)
            upload_parts(tables, spec.staging, self.rank, spec.layout, spec.compression)
            return
        staging = Path(spec.staging)
        write_parts(tables, staging, self.rank, spec.layout, spec.compression)
        if spec.layout == "file":
            self._sum(1)  # every part is on disk before any rank reads them
            for name in list(tables)[self.rank::spec.size]:  # each result merged by one rank, all at once
                merge_parts(staging, name, spec.size)


def owned_bfs_table(vertex: pa.Array, distance: np.ndarray, has_parent: np.ndarray, parents: pa.Array) -> pa.Table:
    """A search's rows of a rank's owned vertices (``vertex``, their ids) as a pyarrow table:
    ``parents`` holds the ids of the predecessors of the vertices ``has_parent`` marks, in order."""
    at = np.zeros(len(vertex), dtype=np.int64)
    at[has_parent] = np.arange(int(has_parent.sum()))  # each vertex's parent in ``parents``, null where none
    return bfs_table(vertex, distance, parents.take(pa.array(at, mask=~has_parent)))


def owned_bfs_columns(xp, vertex, distance, has_parent, parents) -> ResultColumns:
    """owned_bfs_table's result as ResultColumns of ``xp`` arrays (``vertex``: the owned
    vertices' integer ids; ``parents``: their predecessors' ids where ``has_parent``)."""
    predecessor = xp.zeros_like(vertex)
    predecessor[has_parent] = parents
    return ResultColumns(bfs_schema(pa.from_numpy_dtype(vertex.dtype)),
                         (vertex, distance.astype(xp.int32, copy=False), predecessor),
                         (None, distance >= 0, has_parent))
