"""The input as the kernels take it: the planned Parquet edge list read onto the compute
backend and its ids renumbered densely there (``prepare_input``), without Prefect. The load task
(tasks.graph_tasks.load_edges) runs it on a worker; the bare recipe of the benchmarks calls it
straight, so a process that only computes does not import Prefect (whose import takes a second
or more of a fresh process's start).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kernels import backend as be
from kernels.graph import EdgeList, edge_list, renumber
from kernels.structures import UNIT_WEIGHT
from tasks.errors import InputError
from tasks.memory import check_device_memory, check_host_memory, device_memory_guard
from tasks.parquet.dataset.plan import InputPlan
from tasks.parquet.read.reader import read_edges
from tasks.parquet.write.results import FOREST_COLUMNS, forest_columns


@dataclass
class PreparedEdges:
    """The input as the kernels take it (dense ids on the compute backend; edge e is input row
    e) and what maps results back to the input's own ids."""

    edges: EdgeList
    ids: np.ndarray  # host: dense vertex -> original id (or code into names)
    names: pa.Array | None  # string ids: code -> name
    path: str
    skipped: list[str]  # files of a dataset directory that are not Parquet
    backend: str
    device: str
    self_loops: int
    read_seconds: float
    renumber_seconds: float
    unit_weights: bool = False  # an unweighted input's forest: every edge weighs 1 (UNIT_WEIGHT)
    selection: dict | None = None  # what a filter kept (the filter keys of RunSummary)
    reader: dict | None = None  # which Parquet reader decoded what (tasks.parquet.read.host_reader)
    columns: tuple[str, str, str] = FOREST_COLUMNS  # the forest's column names (results.forest_columns)

    @property
    def rows(self) -> int:
        return self.edges.m


def prepare_input(plan: InputPlan, backend: str | None, algorithms=("bfs", "msf"), directed: bool = False,
                  reader: str = "auto") -> PreparedEdges:
    """Read and check the planned Parquet edge list (with a filter, the rows it keeps) straight
    into the compute backend's memory, then renumber its ids densely there. A run that cannot
    fit is refused by the plan's figures, before any upload."""
    path = plan.path
    backend = be.resolve(backend)
    xp = be.module(backend)

    def check_memory(rows, vertices, weight_dtype):
        if backend == "cupy":
            check_device_memory(path, rows, vertices, weight_dtype, algorithms, directed)
        else:
            check_host_memory(path, rows, algorithms)

    start = time.perf_counter()
    with device_memory_guard(path):
        table = read_edges(plan, xp=xp, before_reading=check_memory, reader=reader)
        be.synchronize(xp)
        read_seconds = time.perf_counter() - start
        start = time.perf_counter()
        try:
            src, dst, ids = renumber(table.src, table.dst)
        except ValueError as exc:
            raise InputError(f"{path}: {exc}") from None
        names, weight, skipped = table.names, table.weight, table.skipped
        selection, report = table.selection, table.report
        unit_weights = weight is None and "msf" in algorithms
        if unit_weights:
            weight = be.full(xp, table.rows, 1, UNIT_WEIGHT)
        del table  # the input's own ids go once renumbered: nothing holds the edge list twice
        edges = edge_list(src, dst, weight, int(ids.shape[0]))
        del src, dst
        be.synchronize(xp)
    return PreparedEdges(edges, be.to_host(ids), names, path, skipped, backend, be.device_name(backend),
                         edges.self_loops(), read_seconds, time.perf_counter() - start, unit_weights, selection,
                         report, forest_columns(plan.src_col, plan.dst_col, plan.weight_col))
