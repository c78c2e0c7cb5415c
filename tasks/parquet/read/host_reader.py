"""The host reader: pyarrow's decoder, one row group of one file at a time (``HostReader``),
and what every reader backend shares: the ``Rows`` a backend returns with its ``report`` (which
reader decoded each column's chunks), the ``ReaderBackend`` protocol, ``read_row_group`` (the
plan's columns of one row group, checked to come from the planned file), ``run_in_order``
(units of work on a pool of threads, the first failure in input order raised) and the
``Uploader`` (a reading thread's pinned buffers and CUDA stream).

Report encoding (JSON, for the run's summary): ``{"reader": name, "columns": {column: {reader:
column chunks it decoded}}, "fallbacks": {reason: column chunks}}``, plus backend details
(the page reader adds ``xp`` and ``decompress``). A column chunk is one column of one row
group; a chunk decoded for two ranks (a row group on a share boundary) counts for each.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.errors import InputError
from tasks.parquet.read.checks import Signs, find_signs, unit_ids, unit_weights
from tasks.parquet.dataset.plan import InputPlan, ReadUnit, check_unchanged

# Dask starts its workers with OMP_NUM_THREADS=1, which Arrow takes as its thread count: Parquet
# reads on a worker ran 2.3x slower than in a plain process (Kron-24, H200 host). Arrow gets the
# cores this process may run on (dask-cuda pins each GPU worker to its GPU's cores) unless
# ARROW_NUM_THREADS says otherwise.
if "ARROW_NUM_THREADS" not in os.environ:
    pa.set_cpu_count(len(os.sched_getaffinity(0)))


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
    InputErrors naming file, column and row."""

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


def read_row_group(plan: InputPlan, unit: ReadUnit, use_threads: bool, columns: list[str] | None = None) -> pa.Table:
    """The plan's columns (or ``columns`` of them) of one row group, decoded by pyarrow, only the
    unit's rows (a filter's; tasks.parquet.dataset.selection); the file checked to be the planned one
    before it is opened and after the row group is read, so every byte read came from it (a
    replacement after the open is refused too: the input changed)."""
    fs, columns = plan.footers.filesystem, columns or plan.footers.columns
    check_unchanged(fs, unit.file, unit.identity)
    try:
        # page checksums (CRC32) are verified where the writer stored them (Spark does by default)
        # read, not memory-mapped: mapped pages of the whole file would stay in this process's
        # resident memory while the decoded row groups are already on the GPU
        parquet = pq.ParquetFile(fs.arrow_path(unit.file), filesystem=fs.arrow, metadata=unit.metadata, memory_map=False,
                                 pre_buffer=True, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as exc:
        check_unchanged(fs, unit.file, unit.identity)
        raise InputError(f"{unit.file}: not a readable Parquet file ({exc})") from None
    with parquet:
        try:
            table = parquet.read_row_group(unit.group, columns=columns, use_threads=use_threads)
        except (pa.ArrowException, OSError) as exc:
            check_unchanged(fs, unit.file, unit.identity)
            raise InputError(_locate_damage(unit, parquet, columns, exc)) from None
    check_unchanged(fs, unit.file, unit.identity)
    claimed = unit.metadata.row_group(unit.group).num_rows
    if table.num_rows != claimed:
        raise InputError(f"{unit.file}: corrupt Parquet data: row group {unit.group} claims {claimed} rows "
                         f"but {table.num_rows} were read")
    kept = unit.kept()
    return table if kept is None else table.filter(pa.array(kept))


def _locate_damage(unit: ReadUnit, parquet: pq.ParquetFile, columns: list[str], exc: Exception) -> str:
    """Name the column of a row group that failed to read (a bad page checksum, say)."""
    for c in columns:
        try:
            parquet.read_row_group(unit.group, columns=[c], use_threads=False)
        except (pa.ArrowException, OSError) as err:
            return f"{unit.file}: corrupt Parquet data in column {c!r}, row group {unit.group} ({err})"
    return f"{unit.file}: corrupt Parquet data in row group {unit.group} ({exc})"


# The host reader's unit of work is one row group of one file. A pool of threads decodes units
# (pyarrow releases the GIL while it decodes), each into its own slice of arrays allocated once
# for all the rows asked for, on the compute backend. On a GPU each thread uploads its unit on a
# stream of its own while the others decode, so the table never exists whole on the host.
# (pyarrow's read_table decodes the columns of a row group in parallel: three threads for an
# edge list, however many cores there are.)
class HostReader:
    """pyarrow's decoder on the host's cores; the rows uploaded as they are decoded."""

    def read_rows(self, plan: InputPlan, start: int, stop: int, xp) -> Rows:
        footers = plan.footers
        ends = (plan.src_col, plan.dst_col)
        units = [u for u in footers.units if u.start < stop and u.start + u.rows > start]
        threads = max(1, min(len(os.sched_getaffinity(0)), len(units)))
        # ids of a uint64-beside-signed input are stored as their 64-bit patterns until the
        # values say which type holds them all
        src = dst = None
        if not footers.strings:
            src, dst = xp.empty(stop - start, dtype=footers.id_type), xp.empty(stop - start, dtype=footers.id_type)
        weight = xp.empty(stop - start, dtype=footers.weight_type) if plan.weight_col else None
        local = threading.local()

        def read(unit: ReadUnit):
            table = read_row_group(plan, unit, use_threads=len(units) < threads * 2)
            lo, hi = max(start, unit.start), min(stop, unit.start + unit.rows)
            piece = unit
            if (lo, hi) != (unit.start, unit.start + unit.rows):
                table = table.slice(lo - unit.start, hi - lo)
                piece = unit.piece(lo, hi)  # a unit of its own: the checks name its rows in the file
            ids = [unit_ids(piece, table[c], c) for c in ends]
            w = unit_weights(piece, table[plan.weight_col], plan.weight_col, footers.weight_type) \
                if plan.weight_col else None
            del table
            found = [find_signs(piece, c, v) for c, v in zip(ends, ids)] if footers.mixed_signs else []
            stores = [(weight, w)] if footers.strings else [(src, ids[0]), (dst, ids[1]), (weight, w)]
            for column, (dest, values) in enumerate((d, v) for d, v in stores if d is not None):
                if values.dtype == np.uint64 and footers.mixed_signs:
                    values = values.view(np.int64)
                if xp is np:
                    dest[lo - start:hi - start] = values
                else:
                    uploader = getattr(local, "uploader", None) or Uploader(xp)
                    local.uploader = uploader
                    uploader.put(column, dest, lo - start, values)
            return ids if footers.strings else found

        results = run_in_order(read, units, threads)
        if xp is not np:
            xp.cuda.Device().synchronize()  # every reading thread's last uploads
        report = new_report("host", footers.columns)
        for c in footers.columns:
            count_chunks(report, c, "host", len(units))
        if footers.strings:
            return Rows(None, None, weight, start, strings=results, report=report)
        return Rows(src, dst, weight, start, signs=[s for found in results for s in found], report=report)


class Uploader:
    """One reading thread's way to the GPU: its own CUDA stream and pinned host buffers, one per
    column. A row group is copied into the pinned buffers and uploaded asynchronously, so the
    copy runs while the thread decodes its next row group (copies from pageable memory go
    through the driver's staging and ran at a fraction of the bus's speed). Before a buffer is
    refilled, the stream is synchronized: the previous upload from it is done."""

    def __init__(self, xp):
        import cupyx

        self.xp, self.empty_pinned = xp, cupyx.empty_pinned
        self.stream = xp.cuda.Stream(non_blocking=True)
        self.buffers: dict[int, np.ndarray] = {}

    def put(self, column: int, dest, start: int, values: np.ndarray) -> None:
        if column == 0:
            self.stream.synchronize()  # this thread's previous uploads have left the buffers
        buffer = self.buffers.get(column)
        if buffer is None or buffer.nbytes < values.shape[0] * dest.itemsize:
            buffer = self.buffers[column] = self.empty_pinned(values.shape[0] * dest.itemsize, dtype=np.uint8)
        staged = buffer[:values.shape[0] * dest.itemsize].view(dest.dtype)
        np.copyto(staged, values, casting="unsafe")  # same kind; narrower ids widen
        dest[start:start + values.shape[0]].set(staged, stream=self.stream)


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
