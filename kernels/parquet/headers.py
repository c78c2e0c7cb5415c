"""Column chunks' page headers parsed on the host into a page table: the walk whose GPU twin is
kernels/parquet/gpu_headers.py (kernels/cuda/parquet_headers.cu mirrors it decision for
decision, so both refuse exactly the same chunks).

A chunk's bytes are page header (a Thrift compact PageHeader), page, header, page, ... The walk
reads them into a ``PageTable``, a struct of NumPy arrays with one entry per page (the columns
of kernels.parquet.format.PAGE_FIELDS), so the steps after it (decompression, decoding) work on
whole arrays and never walk Thrift again. INDEX_PAGE headers are parsed and kept, statistics
skipped; a chunk whose pages do not tile its byte range exactly, or whose data pages' value
counts do not add up to the footer's, is refused with a ``HeaderError``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.parquet.format import (DATA_PAGES, I32, NESTED_HEADER_FIELDS, PAGE_FIELDS, PAGE_HEADER_FIELDS,
                                    STRUCT, TRUE, FALSE, read_uleb128)
from kernels.parquet.thrift import skip, skip_flat_struct


class HeaderError(ValueError):
    """A chunk's page headers cannot be parsed, do not tile the chunk, or count other values than
    the footer: ``chunk`` is its index; the message says what, the caller names the chunk."""

    def __init__(self, chunk: int, message: str):
        super().__init__(message)
        self.chunk = chunk


@dataclass
class PageTable:
    """Struct of arrays, one entry per page, chunks in plan order, pages in file order: the
    columns of PAGE_FIELDS (format.py says what each holds), int64 each."""

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


_SLOTS = {name: i for i, name in enumerate(PAGE_FIELDS)}
# (field id in PageHeader, field id in the nested header) -> slot in a row
_OUTER_SLOTS = {k: _SLOTS[v] for k, v in PAGE_HEADER_FIELDS.items()}
_NESTED_SLOTS = {s: {k: _SLOTS[v] for k, v in f.items()} for s, f in NESTED_HEADER_FIELDS.items()}


def _parse_header(buf, pos, row):
    """Fill ``row`` (a list of PAGE_FIELDS slots) from the PageHeader at ``pos``; its end.

    One pass, no objects: each integer field's varint is decoded in place and written to its
    slot; fields the table does not keep (statistics, index page header) are skipped. The
    one-byte varint and the zigzag are written out here rather than called: they are most of
    the walk's steps.
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
            raw, pos = read_uleb128(buf, pos)
            fid = (raw >> 1) ^ -(raw & 1)
        if ftype == I32 and fid in _OUTER_SLOTS:
            b = buf[pos]
            pos += 1
            if b < 0x80:
                raw = b
            else:
                raw, pos = read_uleb128(buf, pos - 1)
            row[_OUTER_SLOTS[fid]] = (raw >> 1) ^ -(raw & 1)
        elif ftype == STRUCT and fid in _NESTED_SLOTS:
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
                    raw, pos = read_uleb128(buf, pos)
                    inner = (raw >> 1) ^ -(raw & 1)
                slot = slots.get(inner)
                if slot is None:
                    if t == STRUCT:
                        pos = skip_flat_struct(buf, pos)
                    else:
                        pos = skip(buf, pos, t)
                elif t == I32:
                    b = buf[pos]
                    pos += 1
                    if b < 0x80:
                        raw = b
                    else:
                        raw, pos = read_uleb128(buf, pos - 1)
                    row[slot] = (raw >> 1) ^ -(raw & 1)
                elif t in (TRUE, FALSE):
                    row[slot] = 1 if t == TRUE else 0
                else:
                    pos = skip(buf, pos, t)
        else:
            pos = skip(buf, pos, ftype)


_CRC_ABSENT = -(1 << 40)  # outside i32, so a stored CRC of -1 stays distinguishable
_EMPTY_ROW = [-1] * len(PAGE_FIELDS)
_EMPTY_ROW[_SLOTS["is_compressed"]] = 1  # DataPageHeaderV2's default
_EMPTY_ROW[_SLOTS["crc"]] = _CRC_ABSENT


def page_headers(chunk_bytes, num_values) -> PageTable:
    """Every page header of every chunk (``chunk_bytes``: one bytes object per chunk), checked
    to tile the chunk and, for the data pages, to count ``num_values[c]`` values (the footer's
    count, nulls included). Raises HeaderError naming the first chunk that fails; OverflowError
    where a header holds a value beyond int64."""
    rows = []
    slot_chunk = _SLOTS["chunk"]
    slot_header = _SLOTS["header_offset"]
    slot_offset = _SLOTS["offset"]
    slot_size = _SLOTS["compressed_size"]
    slot_type = _SLOTS["page_type"]
    slot_values = _SLOTS["num_values"]
    for c, (buf, expected) in enumerate(zip(chunk_bytes, num_values)):
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
                raise HeaderError(c, f"page header at chunk byte {row[slot_header]} cannot be parsed "
                                     f"({exc})") from None
            size = row[slot_size]
            if size < 0 or row[slot_type] < 0 or pos + size > end:
                raise HeaderError(c, f"page header at chunk byte {row[slot_header]} declares {size} bytes, "
                                     f"past the chunk's {end} bytes")
            row[slot_offset] = pos
            pos += size
            if row[slot_type] in DATA_PAGES:
                values += row[slot_values]
            rows.append(row)
        if values != expected:
            raise HeaderError(c, f"data pages hold {values} values, the footer says {expected}")
    table = np.array(rows, dtype=np.int64).reshape(-1, len(PAGE_FIELDS))
    columns = {name: np.ascontiguousarray(table[:, i]) for i, name in enumerate(PAGE_FIELDS)}
    crc = columns["crc"]
    columns["crc"] = np.where(crc == _CRC_ABSENT, -1, crc & 0xFFFFFFFF)  # i32 on the wire
    return PageTable(columns)
