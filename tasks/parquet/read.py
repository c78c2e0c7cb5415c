"""The reader: rows of a planned edge list (tasks.parquet.plan), checked, into arrays of the
compute backend (NumPy or CuPy). One interface serves both paths:
- ``read_edges(path, ...)``: the whole edge list (a one-partition run), as an ``EdgeTable``;
- ``read_share(plan, rank, size)``: global rows [rows * r // P, rows * (r + 1) // P) of a
  partitioned run's rank r of P (``InputPlan.share``), as a ``Share``: the row groups that
  overlap that range, cut to it (a row group on a boundary is decoded by both neighbours).
Both ask a ``ReaderBackend`` for ``Rows`` of the plan; a backend is registered once in
``BACKENDS`` and chosen by name. The host reader (``HostReader``, pyarrow's decoder) is the one
backend so far: a second (a GPU page decoder, say) gets from the plan the files, the row
groups and each column chunk's byte range (``ReadUnit.column_ranges``) and reads the bytes
through the plan's filesystem (``FooterPlan.filesystem.arrow.open_input_file``, ranged).

``EdgeTable`` encoding (arrays of the compute backend):
- ``src``, ``dst``: integer arrays of one dtype (the narrowest that holds every file's ids) or,
  for string ids, int32 codes into ``names`` (a pyarrow large_string array over src and dst).
- ``weight``: float32 when every file's weights are float16 or float32, else float64 (integers
  and decimals included), or None; ``rows``: number of input rows; ``path``: input name.
- ``skipped``: files of a dataset directory that were looked at and are not data (not Parquet);
  ``selection``: what a filter kept (tasks.parquet.selection), None without one.
``Share`` encoding: ``src``/``dst`` the ids in the plan's integer dtype (int64 bit patterns
while uint64 ids sit beside signed ones: ``signs`` then says, per row group, which ids only one
of int64 and uint64 can hold, and the ranks agree on one type), or for string ids int32 codes
into ``names`` (the share's own distinct ids, as an EdgeTable's); ``weight`` as above; the
share's first global row is ``row_offset``.
Rows are the dataset's files in discovery order, each file's rows in order (with a filter, only
the rows it keeps: edge e is the e-th row kept). Every check runs on
one row group of one file at a time (tasks.parquet.checks), and an error names that file and
the row within it (counted from 0).
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
from tasks.parquet.checks import Signs, find_signs, unify_signs, unit_ids, unit_weights
from tasks.parquet.plan import InputPlan, ReadUnit, check_unchanged, plan_input

# Dask starts its workers with OMP_NUM_THREADS=1, which Arrow takes as its thread count: Parquet
# reads on a worker ran 2.3x slower than in a plain process (Kron-24, H200 host). Arrow gets the
# cores this process may run on (dask-cuda pins each GPU worker to its GPU's cores) unless
# ARROW_NUM_THREADS says otherwise.
if "ARROW_NUM_THREADS" not in os.environ:
    pa.set_cpu_count(len(os.sched_getaffinity(0)))


@dataclass
class EdgeTable:
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    names: pa.Array | None  # string ids: vertex code -> name
    path: str
    skipped: list[str] = field(default_factory=list)
    selection: dict | None = None

    @property
    def rows(self) -> int:
        return int(self.src.shape[0])


@dataclass
class Share:
    src: object  # arrays of the rank's backend (NumPy or CuPy)
    dst: object
    weight: object | None
    row_offset: int
    signs: list[Signs] = field(default_factory=list)
    names: pa.Array | None = None  # string ids: code -> id (this share's ids only)

    @property
    def rows(self) -> int:
        return int(self.src.shape[0])


@dataclass
class Rows:
    """Rows [start, start + n) of a planned edge list, as a backend read them: ``src``/``dst``
    as in a Share (None for string ids, whose per-unit large_string pieces are in ``strings``,
    (src, dst) per unit in order), ``weight``, and the ``signs`` of a uint64-beside-signed input."""

    src: object | None
    dst: object | None
    weight: object | None
    start: int
    strings: list[tuple] = field(default_factory=list)
    signs: list[Signs] = field(default_factory=list)


class ReaderBackend(Protocol):
    """One way to decode a plan's rows. ``read_rows`` returns global rows [start, stop) of
    ``plan``, checked as tasks.parquet.checks checks them, in arrays of ``xp``; ids of a
    uint64-beside-signed input as int64 bit patterns with their ``Signs``; errors are
    InputErrors naming file, column and row."""

    def read_rows(self, plan: InputPlan, start: int, stop: int, xp) -> Rows: ...


def read_edges(path: str, src_col="src", dst_col="dst", weight_col: str | None = "weight", xp=np,
               before_reading=None, backend: str = "host", filter: str | None = None) -> EdgeTable:
    """Read and check an edge list (a Parquet file or a directory holding one dataset; with a
    ``filter``, the rows it keeps) into arrays of the backend ``xp`` (numpy or cupy), row
    groups decoded in parallel.
    ``before_reading(rows, vertex_bound, weight_dtype)``, if given, is called once the footers
    are read and before any array is allocated (a memory check can refuse the input there)."""
    plan = plan_input(path, src_col, dst_col, weight_col, filter=filter)
    footers = plan.footers
    if before_reading is not None:
        before_reading(footers.rows, footers.vertex_bound, footers.weight_type)
    rows = reader(backend).read_rows(plan, 0, footers.rows, xp)
    skipped = [str(p) for p in footers.skipped]
    if footers.strings:
        src, dst, names = string_codes(rows.strings, xp)
        return EdgeTable(src, dst, rows.weight, names, str(path), skipped, footers.selection)
    src, dst = rows.src, rows.dst
    if footers.mixed_signs:
        unified = unify_signs(rows.signs)
        src, dst = src.view(unified), dst.view(unified)
    return EdgeTable(src, dst, rows.weight, None, str(path), skipped, footers.selection)


def string_codes(pieces: list[tuple], xp):
    """String ids read as (src, dst) large_string pieces per unit, in row order: int32 codes
    (arrays of ``xp``) into the distinct ids, numbered in the order they first appear down src,
    then down dst; returns ``(src_codes, dst_codes, names)``."""
    both = pa.chunked_array([chunk for end in (0, 1) for pair in pieces for chunk in pair[end].chunks],
                            type=pa.large_string()).combine_chunks().dictionary_encode()
    codes = xp.asarray(both.indices.to_numpy(zero_copy_only=False).astype(np.int32))
    n = len(both) // 2
    return codes[:n], codes[n:], both.dictionary


def read_share(plan: InputPlan, rank: int, size: int, xp=np, backend: str = "host") -> Share:
    """This rank's rows of the edge list, checked, in arrays of the backend ``xp``."""
    start, stop = plan.share(rank, size)
    rows = reader(backend).read_rows(plan, start, stop, xp)
    if plan.footers.strings:
        src, dst, names = string_codes(rows.strings, xp)
        return Share(src, dst, rows.weight, start, names=names)
    return Share(rows.src, rows.dst, rows.weight, start, rows.signs)


def read_row_group(plan: InputPlan, unit: ReadUnit, use_threads: bool) -> pa.Table:
    """The plan's columns of one row group, decoded by pyarrow, only the unit's rows (a filter's;
    tasks.parquet.selection); the file checked to be the planned one before it is opened and
    after the row group is read, so every byte read came from it (a replacement after the open
    is refused too: the input changed)."""
    fs, columns = plan.footers.filesystem, plan.footers.columns
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
        if footers.strings:
            return Rows(None, None, weight, start, strings=results)
        return Rows(src, dst, weight, start, signs=[s for found in results for s in found])


BACKENDS: dict[str, ReaderBackend] = {"host": HostReader()}


def reader(name: str) -> ReaderBackend:
    """The reader backend registered as ``name``."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise InputError(f"unknown Parquet reader {name!r} (choose from {', '.join(BACKENDS)})") from None


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
