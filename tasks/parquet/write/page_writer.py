"""The page writer: a result's columns encoded into a Parquet file on the compute backend.

The writing twin of the page reader (tasks.parquet.read.pages, decompress, page_reader). Input: a
pyarrow table or a tasks.parquet.write.tables.ResultColumns (the columns as CuPy arrays on a GPU,
NumPy elsewhere) of fixed-width columns (int32, int64, float32, float64); output: one Parquet
file whose schema, values, row order, nulls and footer metadata are those pyarrow writes for
the same table (tasks.parquet.write.result_files). What it writes:

- row groups of ``row_group_rows`` rows (1 Mi by default), the last one shorter; a table of
  no rows has no row group;
- per column chunk, data pages (v1) of at most ``page_bytes`` bytes of values (1 MiB) and
  ``page_rows`` rows (20,000), each
  [u32 length][definition levels, RLE/bit-packed hybrid][values], compressed whole; every
  column is OPTIONAL, as pyarrow writes them, so every page carries its levels;
- values PLAIN, or for the columns ``dictionary`` names a dictionary page (PLAIN values) and
  RLE_DICTIONARY pages; a chunk whose dictionary would pass 1 MiB (pyarrow's dictionary page
  limit) is written PLAIN instead (pyarrow would switch to PLAIN within the chunk);
- a CRC32 in every page header (of the page's bytes as stored), computed where the pages were
  compressed;
- column statistics (min, max, null count) and level histograms per chunk, the schema, the
  key-value metadata (the schema's, and ``ARROW:schema`` as pyarrow stores it, so pyarrow reads
  the same types back) and the column orders, encoded by kernels.parquet.thrift.

Encoding happens on the arrays' backend (kernels/parquet/encode.py); compression with nvCOMP's
batched encoder (its C API, one call per part of the file) where the arrays are on a GPU, nvCOMP is
usable and has an encoder for the codec (Snappy, Zstd, LZ4_RAW), with the CRC32s on the GPU
too; else with pyarrow's codecs and zlib on the host's cores. The row groups are encoded in
parts of ``WRITE_PART_ROWS`` rows: a part's pages come to the host once compressed, in one
copy, and are written while the next part is encoded.
"""
from __future__ import annotations

import base64
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from kernels import backend as be
from kernels.backend import array_module
from kernels.parquet import encode as enc
from kernels.parquet.format import (BINARY, CODECS, DATA_PAGE, DICTIONARY_PAGE, I32, I64, LIST, OPTIONAL,
                                    PHYSICAL_DTYPES, PHYSICAL_TYPES, PLAIN, REQUIRED, RLE, RLE_DICTIONARY, STRUCT,
                                    TRUE, ColumnChunkField, ColumnMetaDataField, ColumnOrderField,
                                    DataPageHeaderField, DictionaryPageHeaderField, FileMetaDataField, KeyValueField,
                                    PageEncodingStatsField, PageHeaderField, RowGroupField, SchemaElementField,
                                    SizeStatisticsField, StatisticsField)
from kernels.parquet.thrift import encode_struct
from tasks.parquet.arrays import to_numpy
from tasks.parquet.write.concat import LARGEST_ROW_GROUP, MAGIC, for_each
from tasks.parquet.codec.decompress import HOST_CODECS, NVCOMP_CODECS, nvcomp_usable
from tasks.parquet.codec.nvcomp_c import ENCODERS
from tasks.parquet.write.results import COMPRESSION_CODECS
from tasks.parquet.write.tables import ResultColumns

# The physical type code of each Arrow type the page writer takes: the fixed-width types
ARROW_PHYSICAL_TYPES = {pa.from_numpy_dtype(np.dtype(dtype)): PHYSICAL_TYPES[name]
                        for name, dtype in PHYSICAL_DTYPES.items()}


# Pages as pyarrow cuts them: 1 MiB of values or 20,000 rows, whichever comes first (larger
# pages made Zstd files ~2% larger, and nvCOMP's batch wants many pages anyway)
PAGE_BYTES = 1 << 20
PAGE_ROWS = 20_000
ALIGNMENT = 8
# Rows encoded and compressed at a time: each part's pages are written to the file on a thread of
# their own while the next part is encoded and compressed, and at most two parts' pages are held
# at once (on a GPU: their bodies and compressed streams), not the whole file's. (At Kron-24 on
# an H100 the bare run's write stage was no faster for it, within its spread from run to run.)
WRITE_PART_ROWS = 4 << 20
DICTIONARY_PAGE_LIMIT = 1 << 20
CREATED_BY = b"parquet-graph-pipeline page writer version 0.1.0"


def refusal(schema: pa.Schema) -> str | None:
    """Why the page writer does not take a table of ``schema`` (None: it does)."""
    for f in schema:
        if f.type not in ARROW_PHYSICAL_TYPES:
            return f"{f.type} column {f.name!r}"
    return None


def nvcomp_encoder(compression: str) -> str | None:
    """nvCOMP's algorithm for writing pages in ``compression``, or None where it has no encoder."""
    algorithm = NVCOMP_CODECS.get(COMPRESSION_CODECS[compression], (None,))[0]
    return algorithm if algorithm in ENCODERS else None


def compressor(xp, compression: str) -> str:
    """What compresses the pages of arrays of ``xp``: 'nvCOMP', or 'host' (pyarrow's codecs)."""
    if compression == "none":
        return "none"
    return "nvCOMP" if xp is not np and nvcomp_encoder(compression) and nvcomp_usable() else "host"


@dataclass
class _Page:
    body: object  # uint8 array of the backend: the uncompressed page (None once compressed)
    header: list  # the PageHeader's fields but sizes and CRC
    stored: bytes = b""
    crc: int = 0
    size: int = 0  # the uncompressed page's bytes, kept once ``body`` is dropped


@dataclass
class _Chunk:
    column: int
    rows: int
    null_count: int
    bounds: tuple | None  # (min, max) NumPy scalars
    dictionary: bool
    pages: list = field(default_factory=list)


def columns_of(table, xp) -> ResultColumns:
    """A pyarrow table's columns as ResultColumns of ``xp`` arrays (nulls hold 0)."""
    if isinstance(table, ResultColumns):
        return table
    values, valid = [], []
    for column in table.columns:
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        values.append(xp.asarray(to_numpy(column.fill_null(0))))
        valid.append(xp.asarray(column.is_valid().to_numpy(zero_copy_only=False)) if column.null_count else None)
    return ResultColumns(table.schema, tuple(values), tuple(valid))


def write_columns(table, path, compression: str, dictionary=(), threads: int = 1, xp=None,
                  row_group_rows: int = LARGEST_ROW_GROUP, page_bytes: int = PAGE_BYTES,
                  page_rows: int = PAGE_ROWS) -> None:
    """Write ``table`` (ResultColumns, or a pyarrow table taken to ``xp``, NumPy by default) to
    ``path``: the module's docstring says how. ``dictionary``: the names of the columns to
    dictionary-encode. ``threads``: host cores for host codecs and CRCs. Does not fsync."""
    if compression not in COMPRESSION_CODECS:
        raise ValueError(f"unknown compression {compression!r}")
    reason = refusal(table.schema)
    if reason is not None:
        raise ValueError(f"the page writer takes no {reason}")
    if isinstance(table, ResultColumns):
        values = table.values[0] if table.values else np.zeros(0)
        xp = xp or (np if isinstance(values, np.ndarray) else array_module(values))
    else:
        xp = xp or np
    columns = columns_of(table, xp)
    rows = columns.num_rows
    groups = [(start, min(rows, start + row_group_rows)) for start in range(0, rows, row_group_rows)]
    per_part = max(1, WRITE_PART_ROWS // max(1, row_group_rows))
    with open(path, "wb") as out, ThreadPoolExecutor(1, thread_name_prefix="parquet-page-writer") as writer:
        out.write(MAGIC)
        written = []  # per part: the future of its RowGroup entries
        try:
            for k in range(0, len(groups), per_part):
                # the part before the last written first (two parts' pages held at once: the one
                # being written, the one being encoded); a failed write stops the encoding
                if len(written) > 1:
                    written[-2].result()
                if written and written[-1].done():
                    written[-1].result()
                chunks = [[_encode_chunk(xp, columns, c, start, stop, columns.schema.field(c).name in dictionary,
                                         page_bytes, page_rows)
                           for c in range(len(columns.schema))] for start, stop in groups[k:k + per_part]]
                pages = [p for group in chunks for chunk in group for p in chunk.pages]
                _compress(xp, pages, compression, threads)
                for page in pages:  # the stored bytes are on the host now; only the size is kept
                    page.size, page.body = int(page.body.shape[0]), None
                written.append(writer.submit(_write_row_groups, out, columns.schema, chunks, compression))
            row_groups = [group for part in written for group in part.result()]
        except BaseException:
            writer.shutdown(cancel_futures=True)  # the parts not yet written are dropped
            raise
        footer = encode_struct(_file_metadata(columns.schema, rows, row_groups))
        out.write(footer)
        out.write(len(footer).to_bytes(4, "little"))
        out.write(MAGIC)


def _encode_chunk(xp, columns: ResultColumns, c: int, start: int, stop: int, dictionary: bool,
                  page_bytes: int, page_rows: int) -> _Chunk:
    """One column chunk's pages, uncompressed: rows [start, stop) of column ``c``."""
    values = columns.values[c][start:stop]
    valid = columns.valid[c]
    rows = stop - start
    itemsize = values.dtype.itemsize
    page_rows = max(8, min(page_rows, page_bytes // itemsize) // 8 * 8)  # whole groups of 8 but the last
    row_starts = np.append(np.arange(0, rows, page_rows, dtype=np.int64), rows)
    if valid is None:  # every level 1: one RLE run a page, written on the host (no launches)
        present = values
        value_starts = row_starts
        level_bytes, level_offsets = enc.present_levels(xp, np.diff(row_starts))
    else:
        valid = valid[start:stop]
        counted = be.mask_counts(valid)  # rows + 1 entries: values kept before each row
        present = be.compress(values, valid, counted)
        value_starts = be.to_host(be.take(counted, xp.asarray(row_starts))).astype(np.int64)
        level_bytes, level_offsets = enc.hybrid(xp, valid, row_starts, 1)
    chunk = _Chunk(c, rows, rows - int(present.shape[0]), enc.min_max(xp, present), False)
    streams = [enc.host_stream(xp, [int(n).to_bytes(4, "little") for n in np.diff(level_offsets)]),
               (level_bytes, level_offsets)]
    encoding = PLAIN
    if dictionary:
        distinct, index = enc.dictionary(xp, present)
        if distinct.shape[0] * itemsize <= DICTIONARY_PAGE_LIMIT:
            width = enc.index_bit_width(int(distinct.shape[0]))
            chunk.dictionary, encoding = True, RLE_DICTIONARY
            chunk.pages.append(_Page(enc.plain(xp, distinct), [
                [PageHeaderField.type, I32, DICTIONARY_PAGE],
                [PageHeaderField.dictionary_page_header, STRUCT, [
                    [DictionaryPageHeaderField.num_values, I32, int(distinct.shape[0])],
                    [DictionaryPageHeaderField.encoding, I32, PLAIN]]]]))
            streams.append(enc.host_stream(xp, [bytes([width])] * (len(row_starts) - 1)))
            streams.append(enc.hybrid(xp, index, value_starts, width))
    if encoding == PLAIN:
        streams.append((enc.plain(xp, present), value_starts * itemsize))
    # each page padded to 8 bytes, so every page starts where nvCOMP's encoders want their
    # inputs aligned (Zstd: 8 bytes)
    sizes = sum(np.diff(o) for _, o in streams)
    streams.append(enc.host_stream(xp, [bytes(int(-n % ALIGNMENT)) for n in sizes]))
    body, offsets = enc.interleave(xp, streams)
    for p in range(len(row_starts) - 1):
        chunk.pages.append(_Page(body[offsets[p]:offsets[p] + sizes[p]], [
            [PageHeaderField.type, I32, DATA_PAGE],
            [PageHeaderField.data_page_header, STRUCT, [
                [DataPageHeaderField.num_values, I32, int(row_starts[p + 1] - row_starts[p])],
                [DataPageHeaderField.encoding, I32, encoding],
                [DataPageHeaderField.definition_level_encoding, I32, RLE],
                [DataPageHeaderField.repetition_level_encoding, I32, RLE]]]]))
    return chunk


def _compress(xp, pages: list, compression: str, threads: int) -> None:
    """Each page's stored bytes (compressed per ``compression``) on the host, and their CRC32:
    with nvCOMP both on the GPU; otherwise pyarrow's codecs and zlib's CRC32 on up to
    ``threads`` cores (both release the GIL)."""
    if compressor(xp, compression) == "nvCOMP":
        _compress_nvcomp(pages, compression)
        return
    _compress_host(xp, pages, compression, threads)

    def crc(page: _Page) -> None:
        page.crc = zlib.crc32(page.stored)

    for_each(crc, pages, threads)


def _compress_host(xp, pages: list, compression: str, threads: int) -> None:
    # one pa.Codec per thread: a gzip codec shared by two threads crashed the process (its
    # stream state is the codec's own), snappy, zstd and lz4 did not
    local = threading.local()

    def codec():
        if not hasattr(local, "codec"):
            local.codec = pa.Codec(HOST_CODECS[COMPRESSION_CODECS[compression]])
        return local.codec

    if xp is not np and pages:  # device pages come to the host in one copy, not one per page
        flat = xp.concatenate([p.body for p in pages]).get()
        ends = np.cumsum([int(p.body.shape[0]) for p in pages])
        bodies = np.split(flat, ends[:-1])
    else:
        bodies = [p.body for p in pages]

    def one(i: int) -> None:
        data = bodies[i].tobytes()
        pages[i].stored = codec().compress(data, asbytes=True) if compression != "none" and data else data

    for_each(one, range(len(pages)), threads)


def _compress_nvcomp(pages: list, compression: str) -> None:
    """The pages (a part of the file) compressed by one call of nvCOMP's batched encoder (its C API,
    tasks.parquet.codec.nvcomp_c, given the pages' device addresses), the streams packed back to back
    on the GPU, their CRC32s computed there, then one copy of the streams to pinned host memory."""
    import cupy

    from kernels.parquet import gpu_headers
    from tasks.parquet.codec import nvcomp_c

    for page in pages:
        page.stored, page.crc = b"", 0  # an empty page (CRC32 of no bytes: 0)
    todo = [p for p in pages if p.body.shape[0]]
    if not todo:
        return
    bodies = [cupy.ascontiguousarray(p.body) for p in todo]
    try:
        packed, starts = nvcomp_c.compress(nvcomp_encoder(compression), [b.data.ptr for b in bodies],
                                           [int(b.shape[0]) for b in bodies])
    except RuntimeError as exc:
        raise OSError(f"{exc}; --writer host writes without it") from None
    crcs = gpu_headers.crc32_pages(packed, starts[:-1], np.diff(starts)).get()
    host = np.frombuffer(cupy.cuda.alloc_pinned_memory(max(int(starts[-1]), 1)), np.uint8, max(int(starts[-1]), 1))
    packed[:int(starts[-1])].get(out=host[:int(starts[-1])])
    view = memoryview(host)
    for page, a, b, crc in zip(todo, starts[:-1].tolist(), starts[1:].tolist(), crcs.tolist()):
        page.stored, page.crc = view[a:b], crc


def _page_header(page: _Page) -> bytes:
    signed = page.crc - (1 << 32) if page.crc >= 1 << 31 else page.crc  # the header's crc is an i32
    head = page.header
    return encode_struct([head[0], [PageHeaderField.uncompressed_page_size, I32, page.size],
                          [PageHeaderField.compressed_page_size, I32, len(page.stored)],
                          [PageHeaderField.crc, I32, signed], *head[1:]])


def _statistics(chunk: _Chunk) -> list:
    stats = [[StatisticsField.null_count, I64, chunk.null_count]]
    if chunk.bounds is not None:
        low, high = (v.tobytes() for v in chunk.bounds)
        # the deprecated max and min too, which older readers look for; both bounds exact
        stats = [[StatisticsField.max, BINARY, high], [StatisticsField.min, BINARY, low], *stats,
                 [StatisticsField.max_value, BINARY, high], [StatisticsField.min_value, BINARY, low],
                 [StatisticsField.is_max_value_exact, TRUE, None], [StatisticsField.is_min_value_exact, TRUE, None]]
    return stats


def _write_row_groups(out, schema: pa.Schema, chunks: list, compression: str) -> list:
    """The pages of ``chunks`` (row groups of column chunks, compressed) written at the end of
    ``out``, in order, with their headers; returns a RowGroup entry of the footer per group."""
    names = schema.names
    codec = CODECS[COMPRESSION_CODECS[compression]]
    row_groups = []
    position = out.tell()
    for group in chunks:
        described, group_start = [], position
        for chunk in group:
            first = position
            uncompressed = compressed = 0
            data_offset = None
            for page in chunk.pages:
                header = _page_header(page)
                if page.header[0][2] == DATA_PAGE and data_offset is None:  # header[0]: its type entry
                    data_offset = position
                out.write(header)
                out.write(page.stored)
                position += len(header) + len(page.stored)
                uncompressed += len(header) + page.size
                compressed += len(header) + len(page.stored)
            data_pages = len(chunk.pages) - chunk.dictionary
            encodings = [PLAIN, RLE, RLE_DICTIONARY] if chunk.dictionary else [RLE, PLAIN]
            page_stats = ([_page_encoding_stats(DICTIONARY_PAGE, PLAIN, 1),
                           _page_encoding_stats(DATA_PAGE, RLE_DICTIONARY, data_pages)]
                          if chunk.dictionary else [_page_encoding_stats(DATA_PAGE, PLAIN, data_pages)])
            meta = [[ColumnMetaDataField.type, I32, ARROW_PHYSICAL_TYPES[schema.field(chunk.column).type]],
                    [ColumnMetaDataField.encodings, LIST, (I32, encodings)],
                    [ColumnMetaDataField.path_in_schema, LIST, (BINARY, [names[chunk.column].encode()])],
                    [ColumnMetaDataField.codec, I32, codec], [ColumnMetaDataField.num_values, I64, chunk.rows],
                    [ColumnMetaDataField.total_uncompressed_size, I64, uncompressed],
                    [ColumnMetaDataField.total_compressed_size, I64, compressed],
                    [ColumnMetaDataField.data_page_offset, I64, data_offset]]
            if chunk.dictionary:
                meta.append([ColumnMetaDataField.dictionary_page_offset, I64, first])
            meta += [[ColumnMetaDataField.statistics, STRUCT, _statistics(chunk)],
                     [ColumnMetaDataField.encoding_stats, LIST, (STRUCT, page_stats)],
                     [ColumnMetaDataField.size_statistics, STRUCT, _size_statistics(chunk)]]
            described.append((meta, uncompressed, compressed))
        row_groups.append([
            [RowGroupField.columns, LIST, (STRUCT, [[[ColumnChunkField.file_offset, I64, 0],
                                                     [ColumnChunkField.meta_data, STRUCT, meta]]
                                                    for meta, _, _ in described])],
            [RowGroupField.total_byte_size, I64, sum(u for _, u, _ in described)],
            [RowGroupField.num_rows, I64, group[0].rows], [RowGroupField.file_offset, I64, group_start],
            [RowGroupField.total_compressed_size, I64, sum(c for _, _, c in described)]])
    return row_groups


def _page_encoding_stats(page_type: int, encoding: int, count: int) -> list:
    """A PageEncodingStats: ``count`` pages of ``page_type`` in ``encoding``."""
    return [[PageEncodingStatsField.page_type, I32, page_type], [PageEncodingStatsField.encoding, I32, encoding],
            [PageEncodingStatsField.count, I32, count]]


def _size_statistics(chunk: _Chunk) -> list:
    """A SizeStatistics: no repetition levels; rows per definition level (null, present)."""
    return [[SizeStatisticsField.repetition_level_histogram, LIST, (I64, [])],
            [SizeStatisticsField.definition_level_histogram, LIST,
             (I64, [chunk.null_count, chunk.rows - chunk.null_count])]]


def _file_metadata(schema: pa.Schema, rows: int, row_groups: list) -> list:
    root = [[SchemaElementField.repetition_type, I32, REQUIRED], [SchemaElementField.name, BINARY, b"schema"],
            [SchemaElementField.num_children, I32, len(schema)]]
    leaves = [[[SchemaElementField.type, I32, ARROW_PHYSICAL_TYPES[f.type]],
               [SchemaElementField.repetition_type, I32, OPTIONAL], [SchemaElementField.name, BINARY, f.name.encode()]]
              for f in schema]
    # pyarrow stores the Arrow schema (with its metadata) beside the schema's own keys
    stored = {**(schema.metadata or {}), b"ARROW:schema": base64.b64encode(schema.serialize().to_pybytes())}
    key_values = [[[KeyValueField.key, BINARY, k], [KeyValueField.value, BINARY, v]] for k, v in stored.items()]
    type_order = [[ColumnOrderField.TYPE_ORDER, STRUCT, []]]  # every column's ColumnOrder
    return [[FileMetaDataField.version, I32, 2], [FileMetaDataField.schema, LIST, (STRUCT, [root, *leaves])],
            [FileMetaDataField.num_rows, I64, rows], [FileMetaDataField.row_groups, LIST, (STRUCT, row_groups)],
            [FileMetaDataField.key_value_metadata, LIST, (STRUCT, key_values)],
            [FileMetaDataField.created_by, BINARY, CREATED_BY],
            [FileMetaDataField.column_orders, LIST, (STRUCT, [type_order for _ in schema])]]
