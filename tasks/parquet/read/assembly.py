"""What every reader backend shares: the ``ReaderBackend`` protocol, the ``Rows`` a backend
returns with its ``report``, and the ``Assembly`` that turns each unit's decoded columns into
checked rows of the destination arrays. A backend only decodes; cutting a unit to the rows
asked for, the value checks, the uint64-beside-signed rule and the stores are made here, once,
so both backends give the same arrays and the same errors.

A unit's columns come to ``Assembly.check_and_store`` in one of two forms, each holding the
unit's rows (a filter's rows kept, ReadUnit.kept):
- an Arrow column (pyarrow decoded it): checked by tasks.parquet.read.checks ``unit_ids`` /
  ``unit_weights``;
- ``(values, valid)``: arrays of the compute backend a page decoder gave, ``valid`` a bool mask
  or None without nulls: checked by ``decoded_ids`` / ``decoded_weights``.

Report encoding (JSON, for the run's summary): ``{"reader": name, "columns": {column: {reader:
column chunks it decoded}}, "fallbacks": {reason: column chunks}}``, plus backend details
(the page reader adds ``xp``, ``decompress``, ``host_decompressed``, ``page_decoded`` and ``host_streams``). A
column chunk is one column of one row group; a chunk decoded for two ranks (a row group on a
share boundary) counts for each.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from kernels.backend import array_module
from tasks.parquet.dataset.plan import InputPlan, ReadUnit
from tasks.parquet.read.checks import (Signs, decoded_ids, decoded_weights, find_signs, unit_ids,
                                       unit_weights)


@dataclass
class Rows:
    """Rows [start, start + n) of a planned edge list, as a backend read them: ``src``/``dst``
    as in a Share (None for string ids, whose per-unit large_string pieces are in ``strings``,
    (src, dst) per unit in order), ``weight``, and the ``signs`` of a uint64-beside-signed input,
    and the read's ``report``."""

    src: object | None
    dst: object | None
    weight: object | None
    start: int
    strings: list[tuple] = field(default_factory=list)
    signs: list[Signs] = field(default_factory=list)
    report: dict = field(default_factory=dict)  # which reader decoded what (the module's encoding)


class ReaderBackend(Protocol):
    """One way to decode a plan's rows. ``read_rows`` returns global rows [start, stop) of
    ``plan``, checked as tasks.parquet.read.checks checks them, in arrays of ``xp``; ids of a
    uint64-beside-signed input as int64 bit patterns with their ``Signs``; errors are
    InputErrors naming file, column and row. Backends decode and hand each unit's columns to
    an ``Assembly``."""

    def read_rows(self, plan: InputPlan, start: int, stop: int, xp) -> Rows: ...


def new_report(reader: str, columns, **details) -> dict:
    """An empty report of a read by ``reader`` of ``columns`` (the module's encoding)."""
    return {"reader": reader, **details, "columns": {c: {} for c in columns}, "fallbacks": {}}


def count_chunks(report: dict, column: str, by: str, chunks: int = 1, reason: str | None = None) -> None:
    """``chunks`` column chunks of ``column`` decoded by reader ``by``; ``reason``: why the page
    reader left them to the host reader."""
    tally = report["columns"][column]
    tally[by] = tally.get(by, 0) + chunks
    if reason:
        report["fallbacks"][reason] = report["fallbacks"].get(reason, 0) + chunks


def store(k: int, dest, at: int, values) -> None:
    """The plain store: ``values`` into ``dest[at:]``, converted to its dtype on its device.
    (``k``: the column's place among the unit's stores, for stores that stage per column.)"""
    dest[at:at + values.shape[0]] = array_module(dest).asarray(values).astype(dest.dtype, copy=False)


def units_between(plan: InputPlan, start: int, stop: int) -> list[ReadUnit]:
    """The plan's units holding rows of [start, stop), in row order."""
    return [u for u in plan.footers.units if u.start < stop and u.start + u.rows > start]


@dataclass
class Assembly:
    """Global rows [start, stop) of ``plan`` being read into arrays of ``xp``, allocated once:
    ids in the plan's integer dtype (int64 bit patterns while uint64 ids sit beside signed ones:
    the values decide, checks.unify_signs), none for string ids (returned per unit instead),
    weights in the plan's weight dtype."""

    plan: InputPlan
    start: int
    stop: int
    xp: object
    dest: dict = field(init=False)  # "src", "dst", "weight" -> the array being filled, or None

    def __post_init__(self):
        footers, n, xp = self.plan.footers, self.stop - self.start, self.xp
        ids = not footers.strings
        self.dest = {"src": xp.empty(n, dtype=footers.id_type) if ids else None,
                     "dst": xp.empty(n, dtype=footers.id_type) if ids else None,
                     "weight": xp.empty(n, dtype=footers.weight_type) if self.plan.weight_col else None}

    def units(self) -> list[ReadUnit]:
        """The plan's units holding rows of [start, stop), in row order."""
        return units_between(self.plan, self.start, self.stop)

    def check_and_store(self, unit: ReadUnit, columns: dict, put=store):
        """The unit's rows within [start, stop), from ``columns`` (name -> an Arrow column or
        (values, valid), the module's forms), checked src, dst, weight and written into the
        destination arrays by ``put(k, dest, at, values)``. Returns the unit's string ids (src,
        dst) or its Signs. (The page reader checks batches written in place without it:
        tasks.parquet.read.page_reader.PageRead.check_in_place must make any check added here.)"""
        plan, footers = self.plan, self.plan.footers
        lo, hi = max(self.start, unit.start), min(self.stop, unit.start + unit.rows)
        piece = unit
        if (lo, hi) != (unit.start, unit.start + unit.rows):
            cut = slice(lo - unit.start, hi - unit.start)
            columns = {c: (v[0][cut], None if v[1] is None else v[1][cut]) if isinstance(v, tuple)
                       else v.slice(cut.start, hi - lo) for c, v in columns.items()}
            piece = unit.piece(lo, hi)  # a unit of its own: the checks name its rows in the file
        ends = (plan.src_col, plan.dst_col)
        ids = [decoded_ids(piece, *columns[c], c) if isinstance(columns[c], tuple) else unit_ids(piece, columns[c], c)
               for c in ends]
        weight = None
        if plan.weight_col:
            c, dtype = plan.weight_col, footers.weight_type
            weight = decoded_weights(piece, *columns[c], c, dtype) if isinstance(columns[c], tuple) else \
                unit_weights(piece, columns[c], c, dtype)
        del columns
        found = [find_signs(piece, c, v) for c, v in zip(ends, ids)] if footers.mixed_signs else []
        stores = [("weight", weight)] if footers.strings else [("src", ids[0]), ("dst", ids[1]), ("weight", weight)]
        k = 0
        for name, values in stores:
            if self.dest[name] is None:
                continue
            if values.dtype == np.uint64 and footers.mixed_signs:
                values = values.view(np.int64)
            put(k, self.dest[name], lo - self.start, values)
            k += 1
        return ids if footers.strings else found

    def rows(self, per_unit: list, report: dict) -> Rows:
        """The read's ``Rows`` from ``check_and_store``'s results, in unit order."""
        if self.plan.footers.strings:
            return Rows(None, None, self.dest["weight"], self.start, strings=per_unit, report=report)
        return Rows(self.dest["src"], self.dest["dst"], self.dest["weight"], self.start,
                    signs=[s for found in per_unit for s in found], report=report)


def run_in_order(work, units: list, threads: int) -> list:
    """work(unit) for every unit on a pool of threads; results in unit order. On a failure the
    error of the first failing unit (in input order) is raised, and units after it are dropped."""
    if threads == 1:
        return [work(u) for u in units]
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="parquet-read")
    futures = [pool.submit(work, u) for u in units]
    try:
        return [f.result() for f in futures]  # in order: units before a failure all completed
    finally:
        # an error or an interrupt leaves at once: queued units are cancelled, running ones end
        # with their row group
        pool.shutdown(wait=False, cancel_futures=True)
