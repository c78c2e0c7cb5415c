"""The host reader: pyarrow's decoder, one row group of one file at a time (``HostReader``), a
reader backend (tasks.parquet.read.assembly); ``read_row_group`` (the plan's columns of one row
group, checked to come from the planned file), which the page reader uses for the chunks it
leaves; and the ``Uploader`` (a reading thread's pinned buffers and CUDA stream).
"""
from __future__ import annotations

import os
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.errors import InputError
from tasks.parquet.read.assembly import Assembly, Rows, count_chunks, new_report, run_in_order, store
from tasks.parquet.dataset.plan import InputPlan, ReadUnit, check_unchanged

# Dask starts its workers with OMP_NUM_THREADS=1, which Arrow takes as its thread count: Parquet
# reads on a worker ran 2.3x slower than in a plain process (Kron-24, H200 host). Arrow gets the
# cores this process may run on (dask-cuda pins each GPU worker to its GPU's cores) unless
# ARROW_NUM_THREADS says otherwise.
if "ARROW_NUM_THREADS" not in os.environ:
    pa.set_cpu_count(len(os.sched_getaffinity(0)))


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
        assembly = Assembly(plan, start, stop, xp)
        units = assembly.units()
        threads = max(1, min(len(os.sched_getaffinity(0)), len(units)))
        local = threading.local()

        def read(unit: ReadUnit):
            table = read_row_group(plan, unit, use_threads=len(units) < threads * 2)
            put = store
            if xp is not np:
                put = getattr(local, "uploader", None) or Uploader(xp)
                local.uploader = put
            return assembly.check_and_store(unit, {c: table[c] for c in plan.footers.columns}, put)

        per_unit = run_in_order(read, units, threads)
        if xp is not np:
            xp.cuda.Device().synchronize()  # every reading thread's last uploads
        report = new_report("host", plan.footers.columns)
        for c in plan.footers.columns:
            count_chunks(report, c, "host", len(units))
        return assembly.rows(per_unit, report)


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

    def __call__(self, column: int, dest, start: int, values: np.ndarray) -> None:
        """A ``put`` of tasks.parquet.read.assembly: ``values`` into ``dest[start:]``."""
        if column == 0:
            self.stream.synchronize()  # this thread's previous uploads have left the buffers
        buffer = self.buffers.get(column)
        if buffer is None or buffer.nbytes < values.shape[0] * dest.itemsize:
            buffer = self.buffers[column] = self.empty_pinned(values.shape[0] * dest.itemsize, dtype=np.uint8)
        staged = buffer[:values.shape[0] * dest.itemsize].view(dest.dtype)
        np.copyto(staged, values, casting="unsafe")  # same kind; narrower ids widen
        dest[start:start + values.shape[0]].set(staged, stream=self.stream)
