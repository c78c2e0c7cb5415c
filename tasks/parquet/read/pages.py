"""Column chunks read from a Parquet file and their page headers parsed into arrays.

The plan is one ``ColumnChunk`` per (row group, column), taken from the footer pyarrow parsed.
Each chunk's bytes come through the input's ``Filesystem`` (``read_ranges``); the page
headers in them (Thrift compact protocol) are parsed into a ``PageTable``, a struct of NumPy
arrays with one entry per page, so the steps after it (decompression, decoding) work on
whole arrays and never walk Thrift again.

Limits: flat columns only (no repetition levels: the edge-list columns are top-level);
INDEX_PAGE headers are parsed and skipped; a chunk whose pages do not tile its byte range
exactly, or whose data pages' value counts do not add up to the footer's, is refused.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.parquet.gpu_headers import PAGE_FIELDS
from kernels.parquet.batch import BatchPages
from kernels.parquet.decode import (DataPage, PageError, decode_data_page,
                                    decode_dictionary_page)
from tasks.errors import InputError
from tasks.parquet.store.filesystem import Filesystem

# PageType (parquet.thrift)
DATA_PAGE = 0
INDEX_PAGE = 1
DICTIONARY_PAGE = 2
DATA_PAGE_V2 = 3

# The physical types a fixed-width decoder reads, with their NumPy dtype (little-endian).
PHYSICAL_DTYPES = {"INT32": "<i4", "INT64": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}


@dataclass(frozen=True)
class ColumnChunk:
    """One column of one row group: where its bytes lie and how they are coded."""

    row_group: int
    column: int  # index of the leaf column in the file's schema
    name: str
    physical_type: str  # 'INT32', 'INT64', 'FLOAT', 'DOUBLE', ...
    codec: str  # pyarrow's name: 'UNCOMPRESSED', 'SNAPPY', 'GZIP', 'LZ4', 'ZSTD', 'BROTLI', ...
    offset: int  # file offset of the chunk's first page header
    size: int  # bytes from ``offset``: every page header and page of the chunk
    num_values: int  # values in the chunk, nulls included (= rows for a flat column)
    first_row: int  # file row of the chunk's first value
    max_definition_level: int  # 0: REQUIRED column (no definition levels stored), 1: OPTIONAL


def plan_column_chunks(metadata, columns, path: str = "") -> list[ColumnChunk]:
    """The chunks of ``columns`` (names) in every row group of ``metadata``, row group order."""
    schema = metadata.schema
    names = [schema.column(i).name for i in range(metadata.num_columns)]
    plan = []
    for name in columns:
        if name not in names:
            raise InputError(f"{path}: no column {name!r} in the file")
        index = names.index(name)
        leaf = schema.column(index)
        if leaf.max_repetition_level != 0:
            raise InputError(f"{path}: column {name!r} is repeated (nested); only flat columns are read")
    first_row = 0
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        for name in columns:
            index = names.index(name)
            chunk = group.column(index)
            # The chunk starts at its dictionary page, if any, else its first data page; writers
            # store 0 for an absent one (pyarrow's data page offset of an empty chunk too).
            offsets = [chunk.data_page_offset]
            if chunk.has_dictionary_page:
                offsets.append(chunk.dictionary_page_offset)
            start = min((o for o in offsets if o and o > 0), default=chunk.data_page_offset)
            if chunk.num_values != group.num_rows:
                raise InputError(
                    f"{path}: column {name!r}, row group {rg}: {chunk.num_values} values for "
                    f"{group.num_rows} rows")
            plan.append(ColumnChunk(
                row_group=rg, column=index, name=name, physical_type=chunk.physical_type,
                codec=chunk.compression, offset=start, size=chunk.total_compressed_size,
                num_values=chunk.num_values, first_row=first_row,
                max_definition_level=schema.column(index).max_definition_level))
        first_row += group.num_rows
    return plan


def read_chunk_bytes(filesystem: Filesystem, path, plan) -> list[bytes]:
    """Each chunk's byte range of ``path``, in plan order: ``read_chunks_into``'s reads and
    checks, one bytes object per chunk (the reference steps' input)."""
    sizes = np.array([c.size for c in plan], np.int64)
    starts = np.cumsum(sizes) - sizes
    buffer = np.empty(int(sizes.sum()), np.uint8)
    read_chunks_into(filesystem, path, plan, buffer, starts)
    return [buffer[s:s + n].tobytes() for s, n in zip(starts.tolist(), sizes.tolist())]


def read_chunks_into(filesystem: Filesystem, path, plan, out: np.ndarray, starts) -> None:
    """Each chunk's byte range of ``path`` (a path of ``filesystem``) into ``out`` (uint8) at
    ``starts[c]``, by the filesystem's ``read_ranges`` (parallel preads on the local disk); a
    range outside the file's pages, or a short read, is refused naming the chunk."""
    file_size, got = filesystem.read_ranges(path, [(c.offset, c.size, int(at)) for c, at in zip(plan, starts)], out)
    for chunk in plan:
        if chunk.offset < 4 or chunk.offset + chunk.size > file_size - 8:
            raise InputError(
                f"{path}: column {chunk.name!r}, row group {chunk.row_group}: byte range "
                f"[{chunk.offset}, {chunk.offset + chunk.size}) lies outside the file's "
                f"pages ({file_size} bytes)")
    for chunk, n in zip(plan, got):
        _check_length(path, chunk, n)


def _check_length(path, chunk, got: int) -> None:
    if got != chunk.size:
        raise InputError(f"{path}: column {chunk.name!r}, row group {chunk.row_group}: "
                         f"read {got} of {chunk.size} bytes")


# The PageTable's columns: kernels.parquet.gpu_headers.PAGE_FIELDS (what each holds is said there).
_SLOTS = {name: i for i, name in enumerate(PAGE_FIELDS)}


@dataclass
class PageTable:
    """Struct of arrays, one entry per page, chunks in plan order, pages in file order."""

    columns: dict  # field name -> np.ndarray int64

    def __getattr__(self, name):
        try:
            return self.__dict__["columns"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __len__(self) -> int:
        return int(self.columns["chunk"].shape[0])

    def of_chunk(self, chunk: int) -> np.ndarray:
        """Indices of the pages of one chunk."""
        return np.flatnonzero(self.columns["chunk"] == chunk)

    def pages_of(self, chunk: int) -> PageTable:
        """The pages of one chunk as a table of their own (chunk index 0)."""
        mine = self.of_chunk(chunk)
        return PageTable.merge([PageTable({name: values[mine] for name, values in self.columns.items()})])

    @staticmethod
    def merge(tables: list) -> PageTable:
        """Tables of one chunk each as one table, table k's pages under chunk index k."""
        merged = PageTable({k: np.concatenate([t.columns[k] for t in tables]) for k in tables[0].columns})
        merged.columns["chunk"] = np.repeat(np.arange(len(tables)), [len(t) for t in tables])
        return merged


# Thrift compact protocol: the low nibble of a field header is its type.
_T_TRUE, _T_FALSE, _T_BYTE, _T_I16, _T_I32, _T_I64 = 1, 2, 3, 4, 5, 6
_T_DOUBLE, _T_BINARY, _T_LIST, _T_SET, _T_MAP, _T_STRUCT = 7, 8, 9, 10, 11, 12

# (field id in PageHeader, field id in the nested header) -> slot in a PageTable row.
_OUTER = {1: "page_type", 2: "uncompressed_size", 3: "compressed_size", 4: "crc"}
_NESTED = {
    5: {1: "num_values", 2: "encoding", 3: "definition_level_encoding"},  # DataPageHeader
    7: {1: "num_values", 2: "encoding"},  # DictionaryPageHeader
    8: {1: "num_values", 2: "num_nulls", 3: "num_rows", 4: "encoding",  # DataPageHeaderV2
        5: "definition_levels_length", 6: "repetition_levels_length", 7: "is_compressed"},
}
_OUTER_SLOTS = {k: _SLOTS[v] for k, v in _OUTER.items()}
_NESTED_SLOTS = {s: {k: _SLOTS[v] for k, v in f.items()} for s, f in _NESTED.items()}


def _varint(buf, pos):
    shift = 0
    value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _skip(buf, pos, ftype):
    """Position after one value of compact type ``ftype`` starting at ``pos``."""
    if ftype in (_T_TRUE, _T_FALSE):
        return pos  # a bool field's value is in its header's type nibble
    if ftype == _T_BYTE:
        return pos + 1
    if ftype in (_T_I16, _T_I32, _T_I64):
        while buf[pos] >= 0x80:
            pos += 1
        return pos + 1
    if ftype == _T_DOUBLE:
        return pos + 8
    if ftype == _T_BINARY:
        n, pos = _varint(buf, pos)
        return pos + n
    if ftype in (_T_LIST, _T_SET):
        head = buf[pos]
        pos += 1
        n = head >> 4
        if n == 15:
            n, pos = _varint(buf, pos)
        etype = head & 0x0F
        if n > len(buf) - pos:  # every element takes a byte at least: a damaged count, not a walk of 2**40
            raise IndexError("a list longer than the bytes left")
        for _ in range(n):
            pos = pos + 1 if etype in (_T_TRUE, _T_FALSE) else _skip(buf, pos, etype)
        return pos
    if ftype == _T_MAP:
        n, pos = _varint(buf, pos)
        if n > len(buf) - pos:  # as for lists: a damaged count
            raise IndexError("a map longer than the bytes left")
        if n:
            kv = buf[pos]
            pos += 1
            for _ in range(n):
                pos = _skip(buf, pos, kv >> 4)
                pos = _skip(buf, pos, kv & 0x0F)
        return pos
    if ftype == _T_STRUCT:
        while True:
            head = buf[pos]
            pos += 1
            if head == 0:
                return pos
            if head >> 4 == 0:
                _, pos = _varint(buf, pos)  # long-form field id (i16 zigzag)
            pos = _skip(buf, pos, head & 0x0F)
    raise ValueError(f"Thrift compact type {ftype} unknown")


def _skip_flat_struct(buf, pos):
    """Position after a struct of scalar and binary fields (Statistics), without recursion."""
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:
            return pos
        if head < 0x10:
            while buf[pos] >= 0x80:  # long-form field id
                pos += 1
            pos += 1
        t = head & 0x0F
        if t == _T_BINARY:
            b = buf[pos]
            if b < 0x80:
                pos += 1 + b
            else:
                n, pos = _varint(buf, pos)
                pos += n
        elif _T_I16 <= t <= _T_I64:
            while buf[pos] >= 0x80:
                pos += 1
            pos += 1
        elif t > _T_FALSE:
            pos = _skip(buf, pos, t)


def _parse_header(buf, pos, row):
    """Fill ``row`` (a list of PAGE_FIELDS slots) from the PageHeader at ``pos``; its end.

    One pass, no objects: each integer field's varint is decoded in place and written to its
    slot; fields the table does not keep (statistics, index page header) are skipped.
    """
    fid = 0
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:
            return pos
        delta = head >> 4
        ftype = head & 0x0F
        if delta:
            fid += delta
        else:
            raw, pos = _varint(buf, pos)
            fid = (raw >> 1) ^ -(raw & 1)
        if ftype == _T_I32 and fid in _OUTER_SLOTS:
            b = buf[pos]
            pos += 1
            if b < 0x80:
                raw = b
            else:
                raw, pos = _varint(buf, pos - 1)
            row[_OUTER_SLOTS[fid]] = (raw >> 1) ^ -(raw & 1)
        elif ftype == _T_STRUCT and fid in _NESTED_SLOTS:
            slots = _NESTED_SLOTS[fid]
            inner = 0
            while True:
                h = buf[pos]
                pos += 1
                if h == 0:
                    break
                d = h >> 4
                t = h & 0x0F
                if d:
                    inner += d
                else:
                    raw, pos = _varint(buf, pos)
                    inner = (raw >> 1) ^ -(raw & 1)
                slot = slots.get(inner)
                if slot is None:
                    if t == _T_STRUCT:
                        pos = _skip_flat_struct(buf, pos)
                    else:
                        pos = _skip(buf, pos, t)
                elif t == _T_I32:
                    b = buf[pos]
                    pos += 1
                    if b < 0x80:
                        raw = b
                    else:
                        raw, pos = _varint(buf, pos - 1)
                    row[slot] = (raw >> 1) ^ -(raw & 1)
                elif t in (_T_TRUE, _T_FALSE):
                    row[slot] = 1 if t == _T_TRUE else 0
                else:
                    pos = _skip(buf, pos, t)
        else:
            pos = _skip(buf, pos, ftype)


_CRC_ABSENT = -(1 << 40)  # outside i32, so a stored CRC of -1 stays distinguishable
_EMPTY_ROW = [-1] * len(PAGE_FIELDS)
_EMPTY_ROW[_SLOTS["is_compressed"]] = 1  # DataPageHeaderV2's default
_EMPTY_ROW[_SLOTS["crc"]] = _CRC_ABSENT


def parse_page_headers(chunk_bytes, plan, path: str = "") -> PageTable:
    """Every page header of every chunk, checked to tile the chunk and count its values."""
    rows = []
    slot_chunk = _SLOTS["chunk"]
    slot_header = _SLOTS["header_offset"]
    slot_offset = _SLOTS["offset"]
    slot_size = _SLOTS["compressed_size"]
    slot_type = _SLOTS["page_type"]
    slot_values = _SLOTS["num_values"]
    for c, (buf, chunk) in enumerate(zip(chunk_bytes, plan)):
        pos = 0
        end = len(buf)
        values = 0
        while pos < end:
            row = _EMPTY_ROW.copy()
            row[slot_chunk] = c
            row[slot_header] = pos
            try:
                pos = _parse_header(buf, pos, row)
            except (IndexError, ValueError, OverflowError, RecursionError) as exc:
                raise InputError(
                    f"{path}: column {chunk.name!r}, row group {chunk.row_group}: page header "
                    f"at chunk byte {row[slot_header]} cannot be parsed ({exc})") from None
            size = row[slot_size]
            if size < 0 or row[slot_type] < 0 or pos + size > end:
                raise InputError(
                    f"{path}: column {chunk.name!r}, row group {chunk.row_group}: page header at "
                    f"chunk byte {row[slot_header]} declares {size} bytes, past the chunk's "
                    f"{end} bytes")
            row[slot_offset] = pos
            pos += size
            if row[slot_type] in (DATA_PAGE, DATA_PAGE_V2):
                values += row[slot_values]
            rows.append(row)
        if values != chunk.num_values:
            raise InputError(
                f"{path}: column {chunk.name!r}, row group {chunk.row_group}: data pages hold "
                f"{values} values, the footer says {chunk.num_values}")
    table = np.array(rows, dtype=np.int64).reshape(-1, len(PAGE_FIELDS))
    columns = {name: np.ascontiguousarray(table[:, i]) for i, name in enumerate(PAGE_FIELDS)}
    crc = columns["crc"]
    columns["crc"] = np.where(crc == _CRC_ABSENT, -1, crc & 0xFFFFFFFF)  # i32 on the wire
    return PageTable(columns)


def data_page_fields(pages: PageTable, i: int, chunk: ColumnChunk) -> DataPage:
    """What the decoder needs from data page ``i``'s header."""
    c = pages.columns
    if c["page_type"][i] == DATA_PAGE_V2:
        return DataPage(version=2, num_values=int(c["num_values"][i]),
                        encoding=int(c["encoding"][i]),
                        max_definition_level=chunk.max_definition_level,
                        definition_levels_length=int(c["definition_levels_length"][i]),
                        repetition_levels_length=int(c["repetition_levels_length"][i]),
                        num_nulls=int(c["num_nulls"][i]))
    return DataPage(version=1, num_values=int(c["num_values"][i]), encoding=int(c["encoding"][i]),
                    max_definition_level=chunk.max_definition_level,
                    definition_level_encoding=int(c["definition_level_encoding"][i]))


def decode_chunks(xp, plan, pages: PageTable, bodies, path: str = "") -> list:
    """(values, valid) per chunk of the plan: ``bodies`` are the pages' uncompressed bytes
    (arrays of backend ``xp``); ``valid`` is None for a chunk without nulls."""
    out = []
    for c, chunk in enumerate(plan):
        if chunk.physical_type not in PHYSICAL_DTYPES:
            raise InputError(f"{path}: column {chunk.name!r} has physical type "
                             f"{chunk.physical_type}; this reader takes "
                             f"{', '.join(PHYSICAL_DTYPES)}")
        dtype = PHYSICAL_DTYPES[chunk.physical_type]
        dictionary = None
        parts, masks = [], []
        for k, i in enumerate(pages.of_chunk(c)):
            kind = pages.columns["page_type"][i]
            where = f"{path}: column {chunk.name!r}, row group {chunk.row_group}, page {k}"
            try:
                if kind == DICTIONARY_PAGE:
                    if dictionary is not None:
                        raise PageError("a second dictionary page")
                    dictionary = decode_dictionary_page(
                        xp, bodies[i], int(pages.columns["encoding"][i]),
                        int(pages.columns["num_values"][i]), dtype)
                elif kind in (DATA_PAGE, DATA_PAGE_V2):
                    values, valid = decode_data_page(
                        xp, bodies[i], data_page_fields(pages, i, chunk), dtype, dictionary)
                    parts.append(values)
                    masks.append(valid)
            except PageError as exc:
                raise InputError(f"{where}: {exc}") from None
        values = xp.concatenate(parts) if parts else xp.zeros(0, dtype=dtype)
        if all(m is None for m in masks):
            valid = None
        else:
            valid = xp.concatenate([xp.ones(p.shape[0], dtype=bool) if m is None else m
                                    for p, m in zip(parts, masks)])
        out.append((values, valid))
    return out


def batch_pages(body, body_start, pages: PageTable, plan) -> BatchPages:
    """The pages of ``plan``'s chunks as kernels.parquet.batch's input: ``body`` holds their
    uncompressed bytes (an array of the backend), page i from ``body_start[i]``."""
    c = pages.columns
    return BatchPages(
        body=body, chunk=c["chunk"], page_type=c["page_type"], body_start=np.asarray(body_start, np.int64),
        body_size=c["uncompressed_size"], num_values=c["num_values"], encoding=c["encoding"],
        definition_level_encoding=c["definition_level_encoding"],
        definition_levels_length=c["definition_levels_length"],
        repetition_levels_length=c["repetition_levels_length"],
        itemsize=np.array([np.dtype(PHYSICAL_DTYPES[chunk.physical_type]).itemsize for chunk in plan], np.int64),
        max_definition_level=np.array([chunk.max_definition_level for chunk in plan], np.int64))
