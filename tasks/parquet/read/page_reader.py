"""The page reader as a reader backend ("gpu"): a plan's id and weight column chunks read
through the plan's filesystem (one ranged read per chunk), their page headers parsed, CRC32s
checked, pages decompressed (nvCOMP's batched decoder where it is usable and the arrays are
CuPy's, else pyarrow's codecs on the host) and decoded by kernels/parquet/decode.py into arrays
of the compute backend: CuPy on a GPU, NumPy elsewhere (the same code, so it runs and is
tested without a GPU).

Its rows go through the assembly both backends share (tasks.parquet.read.assembly): the same
cuts, checks and stores as the host reader's, with the same errors. Corrupt data is
refused as the host reader refuses it, ``FILE: corrupt Parquet data in column C, row group G
(...)``, the parenthesis in the page reader's words (the page and what is wrong with it) where
the host reader gives pyarrow's.

A column chunk the page reader does not take is read by the host reader (pyarrow, that one
column of that row group), and the reason is counted in the read's report:
- by the footer: ids that are not integers ("string ids"), decimal or float16 weights, a
  physical type other than INT32, INT64, FLOAT, DOUBLE (INT96, FIXED_LEN_BYTE_ARRAY,
  BYTE_ARRAY, BOOLEAN), a codec pyarrow cannot decompress here (LZO), a file whose footer
  counts fewer values than rows in a chunk;
- by the page headers: a value encoding other than PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY,
  DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT, or definition levels not in RLE (BIT_PACKED).
Where nvCOMP lacks a chunk's codec (Brotli) its pages are decompressed on the host and still
page-decoded: counted apart, in the report's ``host_decompressed``. So are the compressed
chunks in another codec than Snappy whose pages carry no CRC32: nvCOMP's decoders end the
process's CUDA context on a damaged page (a device-side trap: every later CUDA call fails, seen
with nvidia-nvcomp-cu13 6.0 on a Snappy page with zeroed bytes), so only bytes a verified CRC32
vouches for reach them, or Snappy streams that a walk on the GPU found well-formed
(tasks.parquet.codec.decompress).

Unit of work: a batch of consecutive row groups of one file holding at most ``BATCH_BYTES``
of uncompressed column chunks (at least one row group), read with one open of the file. Its
chunks' headers are parsed, their pages decompressed together (nvCOMP: one call per codec) into
one buffer and decoded by the batched steps of kernels/parquet/batch.py; a chunk those leave
(another encoding, a null, a malformed page) is decoded page by page (the report's
``page_decoded`` counts them, by reason). The row groups are then checked src, dst, weight, in
row order. Any error in that pass reads the batch again row group by row group through the
reference steps, so the error raised is the first the host reader would meet. Batches run on
the host's cores with NumPy. On CuPy, BATCHES_IN_FLIGHT batches run at once, each on a thread
and a CUDA stream of its own with a slot of its own: a device buffer as large as the largest
batch's stored bytes, allocated once per read; their stored bytes are read ahead, in batch
order, on a thread of their own into a ring of pinned host buffers of that size (one per batch
in flight and READS_AHEAD more). Why several: a
batch's GPU steps are bound by its longest page, not by its bytes (the Snappy walk and nvCOMP
take a stream per warp), so one batch at a time leaves most of the GPU idle for most of its time
(`benchmarks.page_reader_timeline`). For the same reason a batch's Snappy streams far longer
than its others (pyarrow's 1 MiB dictionary pages, about 262 k Snappy elements at Kron-24,
beside data pages of 20,000 rows) are decompressed by the host's codec on a pool of threads
while the GPU takes the rest (decompress.long_streams; the report's ``host_streams`` counts
them). Results and errors come in batch order.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import queue
from concurrent.futures import ThreadPoolExecutor, wait as futures_wait
from contextlib import nullcontext

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kernels.parquet.decode import VALUE_ENCODINGS, to_logical
from kernels.parquet.format import (DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, DICTIONARY_PAGE_ENCODINGS, ENCODING_NAMES,
                                    PAGE_FIELDS, PHYSICAL_DTYPES, RLE)
from kernels.parquet.headers import PageTable
from tasks.errors import InputError
from tasks.parquet.arrays import numpy_dtype
from kernels.parquet import gpu_headers
from kernels.backend import count_nonfinite
from kernels.parquet.batch import RAW, decode_pages
from tasks.parquet.codec.decompress import (HOST_CODECS, check_page_crcs, decompress_pages_host, decompress_pages_nvcomp,
                                            nvcomp_usable, walk_snappy_streams)
from tasks.parquet.read.assembly import Assembly, Rows, count_chunks, new_report, run_in_order, units_between
from tasks.parquet.read.host_reader import read_row_group
from tasks.parquet.read.pages import (ColumnChunk, batch_pages, decode_chunks, parse_page_headers, plan_column_chunks,
                                      read_chunk_bytes, read_chunks_into)
from tasks.parquet.dataset.plan import InputPlan, ReadUnit, check_unchanged, value_type
from tasks.parquet.store.filesystem import Filesystem

UNVERIFIED = "chunks without CRC32s in a codec nvCOMP may trap on"
LONG_STREAMS = "Snappy pages far longer than their batch's others"  # counted in pages (decompress.long_streams)
# Uncompressed column-chunk bytes per batch: bounds the decompressed pages held at once (on the
# GPU, beside the edge list being filled) while giving nvCOMP many pages per call.
BATCH_BYTES = 256 << 20
# Batches read at once on a GPU (each a thread, a CUDA stream, a device buffer of a batch's
# stored bytes and a pinned one, about 1 GB of device memory per 256 MiB batch at Kron-24): with a batch's
# long Snappy streams on the host's cores, a third batch gains nothing (at Kron-24 on an H100:
# 0.99 s with 1, 0.91 s with 2, 0.95 s with 3), since the batches' host work is then what they
# wait for, and costs 4.6 bytes per edge of peak.
BATCHES_IN_FLIGHT = 2
# Batches whose stored bytes are read ahead of those in flight, on a thread of their own, into
# pinned buffers of their own: a batch in flight starts from its bytes in host memory, so its
# chain of GPU steps and waits no longer begins with the preads, and the preads of one batch at
# a time get the page cache's bandwidth to themselves.
READS_AHEAD = 1


@dataclasses.dataclass
class FileLayout:
    """What the page reader needs from one file's footer: each (row group, column)'s chunk, the
    column's Arrow type, and a reason to leave the whole file to the host reader (or None)."""

    chunks: dict  # (row group, column name) -> ColumnChunk
    types: dict  # column name -> Arrow value type
    refused: str | None


def file_layout(unit: ReadUnit, columns: list[str]) -> FileLayout:
    schema = unit.metadata.schema.to_arrow_schema()
    types = {c: value_type(schema.field(c).type) for c in columns}
    try:
        plan = plan_column_chunks(unit.metadata, columns, str(unit.file))
    except InputError:
        # the footer counts fewer values than rows in a chunk (written so by some writers when
        # there are nulls); pyarrow reads such a chunk, the page planner does not
        return FileLayout({}, types, "a chunk's values differ from its rows in the footer")
    return FileLayout({(c.row_group, c.name): c for c in plan}, types, None)


def footer_fallback(layout: FileLayout, chunk: ColumnChunk | None, column: str, is_id: bool) -> str | None:
    """Why the footer alone sends this column chunk to the host reader; None: the page reader
    takes it."""
    if layout.refused:
        return layout.refused
    t = layout.types[column]
    if is_id and not pa.types.is_integer(t):
        return "string ids"
    if pa.types.is_decimal(t):
        return "decimal weights"
    if pa.types.is_float16(t):
        return "float16 weights"
    if chunk.physical_type not in PHYSICAL_DTYPES:
        return f"physical type {chunk.physical_type}"
    if chunk.codec != "UNCOMPRESSED" and not (chunk.codec in HOST_CODECS
                                               and pa.Codec.is_available(HOST_CODECS[chunk.codec])):
        return f"codec {chunk.codec}"
    return None


def _unsupported(pages: PageTable, with_levels: bool) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per header field the decoder may not take: (the reason's words, the pages whose field it
    does not take, the field's codes). The definition levels' encoding only ``with_levels``
    (a chunk of a required column has none to decode)."""
    kind, encoding, levels = pages.page_type, pages.encoding, pages.definition_level_encoding
    data = (kind == DATA_PAGE) | (kind == DATA_PAGE_V2)
    fields = [("encoding {}", data & ~np.isin(encoding, VALUE_ENCODINGS), encoding),
              ("dictionary page encoding {}", (kind == DICTIONARY_PAGE) & ~np.isin(encoding, DICTIONARY_PAGE_ENCODINGS),
               encoding)]
    if with_levels:
        fields.append(("definition levels in {}", (kind == DATA_PAGE) & (levels != RLE), levels))
    return fields


def header_fallback(pages: PageTable, chunk: ColumnChunk) -> str | None:
    """Why the chunk's page headers send it to the host reader: an encoding the decoder does not
    take (looked up on the header arrays, not page by page)."""
    for words, bad, codes in _unsupported(pages, bool(chunk.max_definition_level)):
        if bad.any():
            code = int(codes[np.argmax(bad)])
            return words.format(ENCODING_NAMES.get(code, code))
    return None


def possible_fallbacks(pages: PageTable) -> np.ndarray:
    """Pages whose header may send their chunk to the host reader (``header_fallback`` decides,
    chunk by chunk): all pages' headers screened at once, since almost no chunk has one."""
    return np.logical_or.reduce([bad for _, bad, _ in _unsupported(pages, with_levels=True)])


def corrupt(unit: ReadUnit, fs, chunk: ColumnChunk, exc: InputError) -> InputError:
    """The host reader's refusal of a damaged column chunk, with the page reader's detail (the
    page and what is wrong). A file replaced while it was read is named as such instead."""
    check_unchanged(fs, unit.file, unit.identity)
    text, where = str(exc), f"{unit.file}: column {chunk.name!r}, row group {chunk.row_group}"
    detail = text[len(where):].lstrip(",: ") if text.startswith(where) else text.removeprefix(f"{unit.file}: ")
    return InputError(f"{unit.file}: corrupt Parquet data in column {chunk.name!r}, row group {chunk.row_group} "
                      f"({detail})")


class PageReader:
    """The page reader on the arrays of ``xp``; chunks it does not take read by pyarrow."""

    def read_rows(self, plan: InputPlan, start: int, stop: int, xp) -> Rows:
        footers = plan.footers
        assembly = Assembly(plan, start, stop, xp)
        units = assembly.units()
        nvcomp = xp is not np and nvcomp_usable()
        report = new_report("gpu", footers.columns, xp=xp.__name__, decompress="nvCOMP" if nvcomp else "host",
                            host_decompressed={}, page_decoded={}, host_streams={})
        layouts = file_layouts(units, footers.columns)
        read = PageRead(assembly, nvcomp, layouts)
        batches = batch_units(units, footers.columns)
        if nvcomp:
            with ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0)),
                                    thread_name_prefix="parquet-codecs") as read.host_pool:
                results = read.in_flight(batches)
        else:
            threads = 1 if xp is not np else max(1, min(len(os.sched_getaffinity(0)), len(batches)))
            results = run_in_order(read.batch, batches, threads)
        per_unit = []
        for found, counts, notes in results:
            per_unit += found
            for column, by, reason in counts:
                count_chunks(report, column, by, reason=reason)
            for where, reasons in notes.items():
                for reason, n in reasons.items():
                    report[where][reason] = report[where].get(reason, 0) + n
        if xp is not np:
            xp.cuda.Device().synchronize()
        return assembly.rows(per_unit, report)


def prepare_first_read(plan: InputPlan) -> None:
    """What a process's first GPU read of ``plan`` would pay before its first batch, paid now:
    nvCOMP's library loaded, and the pinned host buffers its stored bytes are read into (the
    read's ``ReadBuffers``: BATCHES_IN_FLIGHT + READS_AHEAD of its largest batch's stored bytes)
    allocated and freed into CuPy's pinned pool, which hands a freed block to the next request
    of its size. Pinning zeroes and locks every page, at a cost in proportion to the bytes. The command
    line's device start calls this on its own thread while the command imports Prefect (a GPU
    run of the whole input on this process, the page reader chosen)."""
    if not nvcomp_usable():
        return
    import cupy

    footers = plan.footers
    units = units_between(plan, 0, footers.rows)
    size, count = read_ring(plan, file_layouts(units, footers.columns), batch_units(units, footers.columns))
    blocks = [cupy.cuda.alloc_pinned_memory(size) for _ in range(count)]
    del blocks  # back to the pool, each kept for the read's request of its size


def file_layouts(units: list[ReadUnit], columns: list[str]) -> dict:
    """file -> its FileLayout, for the files of ``units``."""
    layouts: dict = {}
    for u in units:
        if u.file not in layouts:
            layouts[u.file] = file_layout(u, columns)
    return layouts


def chunks_taken(plan: InputPlan, layout: FileLayout, units: list[ReadUnit]):
    """The units' column chunks the footer lets the page reader take, and {(row group, column):
    why} for those it sends to the host reader."""
    ends = (plan.src_col, plan.dst_col)
    wanted, fallback = [], {}
    for u in units:
        for c in plan.footers.columns:
            chunk = layout.chunks.get((u.group, c))
            reason = footer_fallback(layout, chunk, c, c in ends)
            if reason:
                fallback[u.group, c] = reason
            else:
                wanted.append(chunk)
    return wanted, fallback


def read_ring(plan: InputPlan, layouts: dict, batches: list[list[ReadUnit]]) -> tuple[int, int]:
    """(bytes, count) of the pinned buffers a GPU read of ``batches`` reads their stored bytes
    into (``ReadBuffers``): its largest batch's stored bytes that the page reader takes (at least
    one), one buffer per batch in flight and READS_AHEAD more."""
    largest = max((sum(c.size for c in chunks_taken(plan, layouts[b[0].file], b)[0]) for b in batches), default=0)
    return max(largest, 1), BATCHES_IN_FLIGHT + READS_AHEAD


def batch_units(units: list[ReadUnit], columns: list[str]) -> list[list[ReadUnit]]:
    """Consecutive units of one file, at most BATCH_BYTES of uncompressed chunks each (one unit
    at least)."""
    batches, size = [], 0
    for u in units:
        group = u.metadata.row_group(u.group)
        names = {group.column(j).path_in_schema: j for j in range(group.num_columns)}
        bytes_ = sum(group.column(names[c]).total_uncompressed_size for c in columns if c in names)
        if batches and batches[-1][-1].file == u.file and size + bytes_ <= BATCH_BYTES:
            batches[-1].append(u)
            size += bytes_
        else:
            batches.append([u])
            size = bytes_
    return batches


@dataclasses.dataclass
class Staged:
    """A batch's stored bytes on the GPU and what its fetch found in them: ``stored_at``
    maps each chunk to its first byte in ``device``; ``headers``: gpu_headers.PageHeaders of the
    batch's chunks, in their order; ``walked``: decompress.SnappyWalk of its Snappy streams (None
    where the batch has no pages)."""

    device: object
    stored_at: dict
    headers: object = None
    walked: object = None


@dataclasses.dataclass
class Stored:
    """A batch's stored bytes as read (``PageRead.read_batch``): the chunks the page reader
    takes, those the footer sends to the host reader with why, one memoryview per chunk taken,
    and the buffer they lie in back to back (on a GPU with nvCOMP one of the read's pinned
    buffers, given back when the batch ends) with each chunk's start in it."""

    units: list
    wanted: list
    fallback: dict
    views: list
    buffer: np.ndarray
    starts: np.ndarray
    held: np.ndarray | None = None  # the whole buffer of ReadBuffers that ``buffer`` begins


@dataclasses.dataclass
class ChunkPages:
    """The page headers of some of a batch's column chunks: ``chunks`` in batch order and one
    table of all their pages (kernels.parquet.headers.PageTable, whose ``chunk`` column indexes
    ``chunks``)."""

    chunks: list
    table: PageTable

    @staticmethod
    def of(tables: dict) -> ChunkPages:
        """From chunk -> a table of its own pages (chunk index 0), in the dict's order."""
        if not tables:
            return ChunkPages([], PageTable({name: np.zeros(0, np.int64) for name in PAGE_FIELDS}))
        return ChunkPages(list(tables), PageTable.merge(list(tables.values())))

    def subset(self, keep: np.ndarray) -> ChunkPages:
        """The chunks where ``keep`` (a bool per chunk) holds, and their pages, renumbered."""
        keep = np.asarray(keep, bool)
        if keep.all():
            return self
        mine = keep[self.table.chunk]
        columns = {name: v[mine] for name, v in self.table.columns.items()}
        columns["chunk"] = (np.cumsum(keep) - 1)[columns["chunk"]]
        return ChunkPages([c for c, k in zip(self.chunks, keep.tolist()) if k], PageTable(columns))


@dataclasses.dataclass
class Slot:
    """What one batch in flight holds (a GPU with nvCOMP; else all None): ``device``, the buffer
    its stored bytes are uploaded into, sized once for the read's largest batch; the CUDA stream
    its steps run on; ``unpacked``, a pinned buffer grown to the largest batch's pages the host's
    codecs decompress (chunks nvCOMP may not take), uploaded in one copy; and the same for its
    long Snappy streams."""

    device: object = None
    stream: object = None
    unpacked: np.ndarray | None = None
    # pinned, grown to the largest batch's long Snappy streams, which the host's codec decompresses
    # (decompress.HostStreams) while the GPU takes the others; ``pending``: their futures, ended
    # before the slot is taken again
    long_streams: np.ndarray | None = None
    pending: list = dataclasses.field(default_factory=list)

    def grown(self, name: str, size: int) -> np.ndarray:
        """The first ``size`` bytes of pinned buffer ``name`` (``unpacked`` or ``long_streams``),
        allocated anew when it is smaller (the batch before on this slot has ended: its copies
        from the old one are done)."""
        size = max(size, 1)
        buffer = getattr(self, name)
        if buffer is None or buffer.size < size:
            import cupy

            buffer = np.frombuffer(cupy.cuda.alloc_pinned_memory(size), np.uint8, size)
            setattr(self, name, buffer)
        return buffer[:size]


class ReadBuffers:
    """The buffers batches' stored bytes are read into ahead of their steps (``PageRead.in_flight``):
    ``count`` of them, each ``size`` bytes of pinned host memory allocated once per read, taken by
    a read and given back when its batch ends, so at most ``count`` batches' bytes are held at
    once. With ``size`` None (no GPU) a read allocates its own and ``take`` gives None, still one
    of ``count``. ``close`` ends a read that waits for one."""

    def __init__(self, size: int | None, count: int):
        self.free: queue.Queue = queue.Queue()
        self.closed = False
        for _ in range(count):
            if size is None:
                self.free.put(None)
            else:
                import cupy

                self.free.put(np.frombuffer(cupy.cuda.alloc_pinned_memory(max(size, 1)), np.uint8, max(size, 1)))

    def take(self) -> np.ndarray | None:
        while not self.closed:
            try:
                return self.free.get(timeout=0.05)
            except queue.Empty:
                continue
        raise RuntimeError("the read ended before this batch's bytes were read")

    def give_back(self, buffer: np.ndarray | None) -> None:
        self.free.put(buffer)

    def close(self) -> None:
        self.closed = True


@dataclasses.dataclass
class PageRead:
    """One ``read_rows`` call's shared state; ``batch`` reads one batch of its units."""

    assembly: Assembly  # the plan, the rows asked for and the arrays being filled
    nvcomp: bool
    layouts: dict
    # pages the host's codecs decompress on a GPU run (chunks nvCOMP may not take): decompressed
    # by a pool of threads, one per core (pyarrow's codecs release the GIL), into the batch's
    # Slot.unpacked
    host_pool: object = None

    @property
    def plan(self) -> InputPlan:
        return self.assembly.plan

    @property
    def xp(self):
        return self.assembly.xp

    def batch(self, units: list[ReadUnit]):
        """(per unit: its string ids (src, dst) or its Signs; (column, reader, reason) per column
        chunk; {where: {reason: chunks}} for chunks decompressed on the host or decoded page by
        page)."""
        return self.process(self.fetch(self.read_batch(units)))

    def in_flight(self, batches: list) -> list:
        """``batch`` for each batch, BATCHES_IN_FLIGHT of them at once on threads, each batch
        taking a free Slot for its upload and steps (on the slot's stream) and giving it back
        once its stream is done. Their stored bytes are read in batch order on a thread of their
        own, up to READS_AHEAD batches ahead of those in flight, each batch's into a buffer it
        holds until it ends (pinned on a GPU). Results in batch order; the first failing batch's
        error (in batch order) is raised once the batches under way have ended (their launches
        write into the read's arrays), and the batches not begun are dropped (reads already
        under way, at most one per buffer, end first)."""
        largest, ring = read_ring(self.plan, self.layouts, batches)
        slots = self.allocate_slots(largest) if self.nvcomp else [Slot() for _ in range(BATCHES_IN_FLIGHT)]
        free: queue.Queue = queue.Queue()
        for slot in slots:
            free.put(slot)
        buffers = reader = None

        def run(read):
            slot = free.get()
            stored = None
            try:
                stored = read.result()  # a read that failed gave its buffer back
                with slot.stream if slot.stream is not None else nullcontext():
                    return self.process(self.fetch(stored, slot))
            finally:
                futures_wait(slot.pending)  # the host's threads write into its buffers
                slot.pending = []
                if slot.stream is not None:  # its buffers are free once its launches and copies end
                    slot.stream.synchronize()
                free.put(slot)
                if stored is not None:
                    buffers.give_back(stored.held)

        try:
            buffers = ReadBuffers(largest if self.nvcomp else None, ring)
            reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parquet-preads")
            with ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="parquet-batch") as pool:
                reads = [reader.submit(self.read_batch, b, buffers) for b in batches]
                futures = [pool.submit(run, r) for r in reads]
                try:
                    return [f.result() for f in futures]
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
        finally:
            if buffers is not None:
                buffers.close()  # a read waiting for a buffer ends: the batches that would free one are gone
            if reader is not None:
                reader.shutdown(wait=True, cancel_futures=True)
            if self.nvcomp:  # each stream's cached blocks (its batches' buffers) back to the device
                import cupy

                for slot in slots:  # a block still in use stays cached in its stream's arena for good
                    slot.device = None
                for slot in slots:
                    cupy.get_default_memory_pool().free_all_blocks(stream=slot.stream)

    def taken(self, units: list[ReadUnit]):
        """``chunks_taken`` of the batch."""
        return chunks_taken(self.plan, self.layouts[units[0].file], units)

    def allocate_slots(self, size: int) -> list[Slot]:
        """BATCHES_IN_FLIGHT slots, each a device buffer of ``size`` bytes and a non-blocking
        stream (the device buffer in that stream's part of CuPy's pool): once per read, before
        the first batch (a GPU with nvCOMP only)."""
        import cupy

        size = max(size, 1)
        slots = []
        for _ in range(BATCHES_IN_FLIGHT):
            stream = cupy.cuda.Stream(non_blocking=True)
            with stream:
                device = cupy.empty(size, dtype=cupy.uint8)
            slots.append(Slot(device, stream))
        return slots

    def read_batch(self, units: list[ReadUnit], buffers: ReadBuffers | None = None) -> Stored:
        """The batch's chunks the page reader takes, their stored bytes read into a buffer of
        ``buffers`` (else one of its own), and the chunks the footer sends to the host reader."""
        wanted, fallback = self.taken(units)
        held = None if buffers is None else buffers.take()  # waits for a batch before this one to end
        try:
            views, buffer, starts = self.read_bytes(units[0], wanted, held)
        except BaseException:
            if buffers is not None:
                buffers.give_back(held)
            raise
        return Stored(units, wanted, fallback, views, buffer, starts, held)

    def fetch(self, stored: Stored, slot: Slot | None = None):
        """The batch's stored bytes, on a GPU with nvCOMP uploaded into the slot's device buffer,
        with the page headers parsed and the Snappy streams walked there, on the current stream."""
        units, wanted, fallback, buffer, starts = stored.units, stored.wanted, stored.fallback, stored.buffer, \
            stored.starts
        staged = None
        if self.nvcomp and wanted:
            staged = Staged(slot.device[:buffer.size], dict(zip(wanted, starts)))
            staged.device.set(buffer)
            staged.headers = gpu_headers.page_headers(staged.device, starts, [c.size for c in wanted],
                                                      [c.num_values for c in wanted])
            if staged.headers.pages.page_type.size:
                staged.walked = walk_snappy_streams(staged.device, wanted, staged.headers.pages, starts,
                                                    host=(stored.views, self.host_pool,
                                                          functools.partial(slot.grown, "long_streams"),
                                                          str(units[0].file)))
                if staged.walked.host is not None:
                    slot.pending += staged.walked.host.futures
        return units, wanted, fallback, dict(zip(wanted, stored.views)), staged, slot

    def process(self, fetched):
        """The batch's chunks decoded (at once, else row group by row group), its units checked
        and stored: ``batch``'s result."""
        units, wanted, fallback, stored, staged, slot = fetched
        try:
            return self.batch_at_once(units, wanted, dict(fallback), stored, staged, slot)
        except InputError:
            # a damaged page or a refused row: read the batch again row group by row group on the
            # reference steps, so the error raised is the first the host reader meets
            return self.batch_in_order(units, wanted, fallback, stored)

    def prepare(self, unit: ReadUnit, chunk: ColumnChunk, data, fallback: dict):
        """The chunk's page table, its CRC32s checked; None with the reason in ``fallback`` when
        its headers send it to the host reader."""
        try:
            table = parse_page_headers([data], [chunk], str(unit.file))
            reason = header_fallback(table, chunk)
            if reason is None:
                check_page_crcs([data], [chunk], table, str(unit.file))
        except InputError as exc:
            raise corrupt(unit, self.plan.footers.filesystem, chunk, exc) from None
        if reason:
            fallback[chunk.row_group, chunk.name] = reason
            return None
        return table

    def prepare_on_gpu(self, by_group, wanted, stored, staged, fallback) -> ChunkPages:
        """``prepare`` for every chunk of the batch at once, on the GPU: page headers parsed by
        one walk per chunk, CRC32s computed where stored (kernels/parquet/gpu_headers.py). A chunk
        the walk refuses is parsed again on the host, which names the fault; a CRC32 that
        differs raises, and the batch is read again in row order (``batch``). The headers come
        parsed by the batch's fetch (``staged.headers``); the table is the batch's as it came,
        less the chunks its headers send to the host reader (looked at one by one only where a
        page's header may)."""
        headers = staged.headers
        table = headers.pages
        keep = np.ones(len(wanted), bool)
        reparsed = {}  # chunk index -> its table from the host's walk (a chunk the GPU's walk refused)
        for k in headers.refused().tolist():  # the host names it (or takes a header deeper than the walk's bound)
            chunk = wanted[k]
            reparsed[k] = self.prepare(by_group[chunk.row_group], chunk, stored[chunk], fallback)
            keep[k] = reparsed[k] is not None
        for k in np.unique(table.chunk[possible_fallbacks(table)]).tolist():
            chunk = wanted[k]
            reason = header_fallback(table.pages_of(k), chunk)
            if reason:
                fallback[chunk.row_group, chunk.name] = reason
                keep[k] = False
        if any(t is not None for t in reparsed.values()):  # rare: rebuilt chunk by chunk
            pages = ChunkPages.of({wanted[k]: reparsed[k] if k in reparsed else table.pages_of(k)
                                   for k in np.flatnonzero(keep).tolist()})
        else:
            pages = ChunkPages(wanted, table).subset(keep)
        t = pages.table
        checked = t.crc >= 0
        if checked.any():
            stored_at = np.array([staged.stored_at[c] for c in pages.chunks], np.int64)
            at = stored_at[t.chunk[checked]] + t.offset[checked]
            if (gpu_headers.crc32_pages(staged.device, at, t.compressed_size[checked]).get().astype(np.int64)
                    != t.crc[checked]).any():
                raise InputError("a page's CRC32 differs")  # named by the reading in row order
        return pages

    def batch_at_once(self, units, wanted, fallback, stored, staged, slot):
        """Every chunk's headers, then one decompression per codec (nvCOMP's where usable) and
        one run of the batched decoding steps for the batch; chunks those steps leave go page by
        page. The units are then checked and stored in row order."""
        by_group = {u.group: u for u in units}
        if self.nvcomp and wanted:  # the batch's stored bytes are on the GPU (fetch); headers and CRC32s there
            pages = self.prepare_on_gpu(by_group, wanted, stored, staged, fallback)
        else:
            tables = {}
            for chunk in wanted:
                table = self.prepare(by_group[chunk.row_group], chunk, stored[chunk], fallback)
                if table is not None:
                    tables[chunk] = table
            pages = ChunkPages.of(tables)
        notes = {"host_decompressed": {}, "page_decoded": {}, "host_streams": {}}
        groups = [(pages, self.nvcomp)]
        if self.nvcomp:  # nvCOMP takes pages a CRC32 or the Snappy walk vouches for (docstring)
            t = pages.table
            every_crc = np.bincount(t.chunk, weights=t.crc < 0, minlength=len(pages.chunks)) == 0
            trusted = np.array([c.codec in ("UNCOMPRESSED", "SNAPPY") for c in pages.chunks], bool) | every_crc
            groups = [(pages.subset(trusted), True), (pages.subset(~trusted), False)]
            if not trusted.all():
                notes["host_decompressed"][UNVERIFIED] = int((~trusted).sum())
        decoded, into = {}, self.places_in_destination(units, pages.chunks, fallback)
        for group, on_gpu in groups:
            if group.chunks:
                self.decode_group(units[0].file, group, stored, staged if on_gpu else None, decoded, notes, slot,
                                  into)
        if into and len(into) == len(wanted) and not notes["page_decoded"]:
            # every chunk's values were written in place: the batch's checks at once
            return self.check_in_place(units), [(c, "gpu", None) for _ in units for c in self.plan.footers.columns], \
                notes
        per_unit, counts = self.store_units(units, fallback, lambda unit, chunk: decoded[chunk])
        return per_unit, counts, notes

    def places_in_destination(self, units, chunks, fallback) -> dict:
        """chunk -> (raw view of its column's array in the edge list, its first row there, its
        rows): the chunks whose values the batched steps may write where they stay, because
        storing them would only copy them (kernels.parquet.batch.decode_pages' ``into``). Empty
        where any unit needs more than a copy: a filter's rows, rows cut at the read's ends, a
        column left to the host reader, string ids, uint64 ids beside signed ones; per column,
        only a physical type that is the destination's dtype and the logical type too (int64 ids
        from INT64, int32 ids from INT32 where every file's are, float64 weights from DOUBLE,
        float32 from FLOAT where every file's are). ``check_in_place`` then stands for
        ``Assembly.check_and_store``'s checks: a check added there must be added there too."""
        assembly, footers = self.assembly, self.plan.footers
        if footers.strings or footers.mixed_signs or fallback or any(
                u.keep is not None or u.start < assembly.start or u.start + u.rows > assembly.stop for u in units):
            return {}
        names = {self.plan.src_col: "src", self.plan.dst_col: "dst"}
        if self.plan.weight_col:
            names[self.plan.weight_col] = "weight"
        types, by_group = self.layouts[units[0].file].types, {u.group: u for u in units}
        into = {}
        for chunk in chunks:
            dest = assembly.dest[names[chunk.name]]
            physical = np.dtype(PHYSICAL_DTYPES[chunk.physical_type])
            if physical == dest.dtype == numpy_dtype(types[chunk.name]):
                unit = by_group[chunk.row_group]
                into[chunk] = (dest.view(RAW[physical.itemsize]), unit.start - assembly.start, unit.rows)
        return into

    def check_in_place(self, units) -> list:
        """The checks of units whose every column the batched steps wrote in place (so without a
        null): the weights finite, over the batch's rows at once; a NaN or infinity raises, and
        the batch is read again in row order, which names it. Returns what ``check_and_store``
        returns per unit of such a plan (no Signs: ``places_in_destination``)."""
        if self.plan.weight_col and self.assembly.dest["weight"].dtype.kind == "f":
            lo, hi = units[0].start - self.assembly.start, units[-1].start + units[-1].rows - self.assembly.start
            if count_nonfinite(self.assembly.dest["weight"][lo:hi]):
                raise InputError("a weight is not finite")  # named by the reading in row order
        return [[] for _ in units]

    def decode_group(self, file, pages: ChunkPages, stored, on_gpu, decoded: dict, notes: dict, slot: Slot | None,
                     into: dict) -> None:
        """The chunks' pages decompressed into one buffer (``on_gpu``: the batch's ``Staged`` bytes
        on the GPU, for nvCOMP; else None, the host's codecs)
        and decoded by the batched steps, or page by page where those leave a chunk;
        decoded[chunk] = (values in the logical type, valid or None). A chunk in ``into``
        (``places_in_destination``) the batched steps write in place."""
        xp, path, types = self.xp, str(file), self.layouts[file].types
        chunks, merged = pages.chunks, pages.table
        data = [stored[c] for c in chunks]
        if on_gpu:
            body, starts, fallen_back = decompress_pages_nvcomp(data, chunks, merged, on_gpu.device,
                                                                [on_gpu.stored_at[c] for c in chunks], path,
                                                                walked=on_gpu.walked)
            for _, reason in fallen_back:
                notes["host_decompressed"][reason] = notes["host_decompressed"].get(reason, 0) + 1
            if on_gpu.walked is not None and on_gpu.walked.host is not None:
                notes["host_streams"][LONG_STREAMS] = on_gpu.walked.host.start.size
        else:
            body, starts = self.decompress_on_host(data, chunks, merged, path, slot)
        results = decode_pages(xp, batch_pages(body, starts, merged, chunks), into=[into.get(c) for c in chunks])
        for k, (chunk, (raw, reason)) in enumerate(zip(chunks, results)):
            dtype = numpy_dtype(types[chunk.name])
            if raw is not None:
                decoded[chunk] = (to_logical(xp, raw.view(PHYSICAL_DTYPES[chunk.physical_type]), dtype), None)
                continue
            notes["page_decoded"][reason] = notes["page_decoded"].get(reason, 0) + 1
            mine = merged.of_chunk(k)
            bodies = [body[int(starts[i]):int(starts[i]) + int(merged.uncompressed_size[i])] for i in mine]
            values, valid = decode_chunks(xp, [chunk], merged.pages_of(k), bodies, path)[0]
            decoded[chunk] = (to_logical(xp, values, dtype), valid)

    def decompress_on_host(self, data, chunks, merged: PageTable, path: str, slot: Slot | None):
        """(the chunks' pages decompressed by the host's codecs, back to back, on the backend;
        each page's start in it). Each page decompresses to exactly its declared size or raises,
        so the starts are known before. On a GPU the pool's threads take runs of pages of about
        equal bytes, each writing its pages into the slot's pinned buffer, which one copy uploads;
        the slot's next batch begins after this batch's last launch."""
        xp = self.xp
        sizes = merged.uncompressed_size.astype(np.int64)
        starts = np.cumsum(sizes) - sizes
        total = int(sizes.sum())
        if self.host_pool is None or slot is None or total == 0:
            parts = decompress_pages_host(data, chunks, merged, path)
            return (xp.asarray(np.concatenate(parts)) if parts else xp.zeros(0, xp.uint8)), starts
        out = slot.grown("unpacked", total)

        def fill(pages: np.ndarray) -> None:
            parts = decompress_pages_host(data, chunks, merged, path, select=pages)
            for i, at, n in zip(pages.tolist(), starts[pages].tolist(), sizes[pages].tolist()):
                out[at:at + n] = parts[i]

        runs = 4 * len(os.sched_getaffinity(0))
        cuts = np.searchsorted(starts, np.arange(1, runs) * (total / runs))
        list(self.host_pool.map(fill, [r for r in np.split(np.arange(sizes.size), cuts) if r.size]))
        body = xp.empty(total, dtype=xp.uint8)
        body.set(out)
        return body, starts

    def batch_in_order(self, units, wanted, fallback, stored):
        """The reference order: row group by row group, each chunk's headers, CRC32s, the host's
        codecs and page-by-page decoding, then the unit's checks; the first fault met is raised
        as the host reader would raise it."""
        def decode(unit, chunk):
            table = self.prepare(unit, chunk, stored[chunk], fallback)
            return None if table is None else self.decode(unit, chunk, stored[chunk], table)

        per_unit, counts = self.store_units(units, fallback, decode)
        return per_unit, counts, {"host_decompressed": {}, "page_decoded": {}}

    def store_units(self, units, fallback: dict, decode):
        """Unit by unit in row order: each column chunk's (values, valid) from decode(unit,
        chunk), or the host reader where ``fallback`` names the chunk (``decode`` may add it and
        return None), then the unit checked and stored (``check_and_store``). Returns (per unit,
        (column, reader, reason) per column chunk)."""
        counts, per_unit = [], []
        for u in units:
            columns = {}
            for c in self.plan.footers.columns:
                got = None if (u.group, c) in fallback else decode(u, self.layouts[u.file].chunks[u.group, c])
                if got is None:
                    counts.append((c, "host", fallback[u.group, c]))
                else:
                    columns[c] = got
                    counts.append((c, "gpu", None))
            per_unit.append(self.check_and_store(u, columns, [c for g, c in fallback if g == u.group]))
        return per_unit, counts

    def read_bytes(self, unit: ReadUnit, chunks: list[ColumnChunk], into: np.ndarray | None = None):
        """The chunks' stored bytes from the planned file, back to back in one buffer: (a
        memoryview per chunk, the buffer, each chunk's start in it). The buffer is the start of
        ``into`` where given (on a GPU with nvCOMP a pinned one), else one of its own."""
        fs = self.plan.footers.filesystem
        sizes = np.array([c.size for c in chunks], np.int64)
        starts = np.cumsum(sizes) - sizes
        total = int(sizes.sum())
        buffer = np.empty(total, np.uint8) if into is None else into[:total]
        if not chunks:
            return [], buffer, starts
        check_unchanged(fs, unit.file, unit.identity)
        try:
            read_chunks_into(fs, unit.file, chunks, buffer, starts)
        except InputError as exc:
            check_unchanged(fs, unit.file, unit.identity)
            chunk = next(c for c in chunks if f"column {c.name!r}, row group {c.row_group}:" in str(exc))
            raise corrupt(unit, fs, chunk, exc) from None
        except (pa.ArrowException, OSError) as exc:
            check_unchanged(fs, unit.file, unit.identity)
            raise InputError(f"{unit.file}: not a readable Parquet file ({exc})") from None
        check_unchanged(fs, unit.file, unit.identity)
        view = memoryview(buffer)
        return [view[s:s + n] for s, n in zip(starts.tolist(), sizes.tolist())], buffer, starts

    def decode(self, unit: ReadUnit, chunk: ColumnChunk, data, table: PageTable):
        """(values in the column's logical type, valid or None) of one chunk, on the backend,
        through the reference steps (the host's codecs, page-by-page decoding)."""
        xp, path = self.xp, str(unit.file)
        fs = self.plan.footers.filesystem
        try:
            bodies = upload(xp, decompress_pages_host([data], [chunk], table, path))
            values, valid = decode_chunks(xp, [chunk], table, bodies, path)[0]
        except InputError as exc:
            raise corrupt(unit, fs, chunk, exc) from None
        dtype = numpy_dtype(self.layouts[unit.file].types[chunk.name])
        return to_logical(xp, values, dtype), valid

    def check_and_store(self, unit: ReadUnit, decoded: dict, on_host: list[str]):
        """The unit's decoded chunks, and those left to the host reader (``on_host``) read by
        pyarrow, checked and stored by the assembly. Returns the unit's string ids (src, dst) or
        its Signs."""
        kept = unit.kept()
        if kept is not None:  # a filter's rows of the row group, as read_row_group keeps them
            index = self.xp.asarray(np.flatnonzero(kept))
            decoded = {c: (v[index], None if m is None else m[index]) for c, (v, m) in decoded.items()}
        if on_host:
            table = read_row_group(self.plan, unit, use_threads=False, columns=on_host)
            decoded.update({c: table[c] for c in on_host})
        return self.assembly.check_and_store(unit, decoded)


def upload(xp, bodies: list) -> list:
    """Pages decompressed on the host, on the backend: one copy of them all to a GPU, sliced."""
    if xp is np:
        return bodies
    sizes = [0 if b is None else b.size for b in bodies]
    ends = np.cumsum(sizes)
    device = xp.asarray(np.concatenate([b for b in bodies if b is not None] or [np.zeros(0, np.uint8)]))
    return [None if b is None else device[e - n:e] for b, n, e in zip(bodies, sizes, ends)]


def read_columns(filesystem: Filesystem, path: str, columns, xp=np, check_crc: bool = True) -> dict:
    """name -> (values, valid) for whole flat fixed-width columns of one file, through the
    host reference steps: plan, ranged reads, page headers, CRC32s, pyarrow's codecs, the
    decoding kernels. Values come in the column's Arrow integer or float type."""
    with filesystem.arrow.open_input_file(filesystem.arrow_path(path)) as source:
        metadata = pq.ParquetFile(source).metadata
    plan = plan_column_chunks(metadata, columns, path)
    chunk_bytes = read_chunk_bytes(filesystem, path, plan)
    pages = parse_page_headers(chunk_bytes, plan, path)
    if check_crc:
        check_page_crcs(chunk_bytes, plan, pages, path)
    bodies = [None if b is None else xp.asarray(b)
              for b in decompress_pages_host(chunk_bytes, plan, pages, path)]
    decoded = decode_chunks(xp, plan, pages, bodies, path)
    arrow_schema = metadata.schema.to_arrow_schema()
    result = {}
    for name in columns:
        mine = [d for d, chunk in zip(decoded, plan) if chunk.name == name]
        dtype = numpy_dtype(arrow_schema.field(name).type)
        if not mine:  # a file without row groups
            result[name] = (xp.zeros(0, dtype=dtype), None)
            continue
        values = xp.concatenate([v for v, _ in mine])
        if all(m is None for _, m in mine):
            valid = None
        else:
            valid = xp.concatenate([xp.ones(v.shape[0], dtype=bool) if m is None else m
                                    for v, m in mine])
        result[name] = (to_logical(xp, values, dtype), valid)
    return result
