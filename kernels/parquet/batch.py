"""The data pages of many column chunks decoded together, a few launches per batch instead of
a few per page, for NumPy (the reference of every step) or CuPy (kernels/cuda/parquet_values.cu
through kernels/parquet/gpu_pages.py).

Input, a batch of column chunks (``BatchPages``): one ``uint8`` array ``body`` holding every
page's uncompressed bytes, and host NumPy arrays per page (its chunk, where its body lies in
``body``, and its header's fields: kernels.parquet.headers.PageTable) and per chunk (value width
in bytes, maximum definition level). Output: per chunk its values as raw bits, one per row
(``uint32`` for 4-byte types, ``uint64`` for 8-byte ones: the caller views them as the physical
type), or None with the reason the page-by-page decoder (kernels/parquet/decode.py) must take
that chunk instead. A chunk's values go to an array of the batch's own unless the caller gives
it a place (``into``): a raw view of the caller's array and a first row there, such as the edge
list's column being filled, so the values are written once, where they stay.

The batched steps take what pyarrow, Spark, DuckDB and Polars write for flat fixed-width
columns without nulls: PLAIN pages, a dictionary page with RLE_DICTIONARY or PLAIN_DICTIONARY
pages (pyarrow's default chunk is both: dictionary pages until its dictionary outgrows 1 MiB,
PLAIN after), v1 and v2 pages, definition levels of an OPTIONAL column. Every other chunk goes
to the page-by-page decoder, which also names every fault: a chunk whose levels, sizes or
indices are malformed here is handed to it rather than refused, so there is one source of error
messages. That includes nulls: a null id or weight is refused by the caller's checks, with its
row, unless a filter drops the row, and both need the reference's validity masks.

Steps (each one launch on CuPy for the whole batch, whole arrays on NumPy):
1. ``page_levels``: each data page's definition levels walked: where its values start, whether
   every row holds a value.
2. ``plain_copy``: PLAIN pages and dictionary pages copied to their rows / dictionary slots.
3. ``dictionary_runs`` (twice: count, then fill) and ``dictionary_expand``: the index streams
   of dictionary-encoded pages as a table of runs, then each run's values looked up.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.parquet.decode import PageError, decode_hybrid, unpack_bits
from kernels.parquet.format import (DATA_PAGE, DATA_PAGE_V2, DICTIONARY_INDEX_ENCODINGS, DICTIONARY_PAGE,
                                    DICTIONARY_PAGE_ENCODINGS, PLAIN, RLE, read_uleb128)
from kernels.parquet.headers import PageTable
# page status words, as kernels/cuda/parquet_values.cu sets them
PAGE_REFERENCE = 1  # malformed levels or indices, or a null: the reference decodes the chunk
PAGE_BAD_INDEX = 2  # a dictionary index past the dictionary
RAW = {4: np.uint32, 8: np.uint64}


@dataclass
class BatchPages:
    """A batch of column chunks' pages: their page table, where each page's uncompressed bytes
    lie, and per chunk what its values are; arrays are host NumPy int64 unless said otherwise."""

    body: object  # uint8 array of the backend: every page's uncompressed bytes
    body_start: np.ndarray  # per page: its first byte in ``body`` (uncompressed_size bytes from there)
    headers: PageTable  # the pages' headers (chunk: the chunk's index in the batch, pages of a
    # chunk consecutive and in file order)
    itemsize: np.ndarray  # per chunk: 4 or 8
    max_definition_level: np.ndarray  # per chunk: 0 or 1


@dataclass
class Places:
    """Where pages' values go: page i's first value to ``arrays[which[i]][row[i]]`` (the arrays
    of one raw dtype; ``which`` and ``row`` host int64 arrays, one entry per page)."""

    arrays: list
    which: np.ndarray
    row: np.ndarray

    @staticmethod
    def one(array, row) -> Places:
        row = np.asarray(row, np.int64)
        return Places([array], np.zeros(row.shape[0], np.int64), row)

    def __getitem__(self, pages) -> Places:
        return Places(self.arrays, self.which[pages], self.row[pages])


def unsupported(pages: BatchPages) -> list:
    """Per chunk: why its pages are outside the batched steps (a text), or None."""
    chunks = pages.itemsize.shape[0]
    headers = pages.headers
    kind, encoding, chunk = headers.page_type, headers.encoding, headers.chunk
    data = (kind == DATA_PAGE) | (kind == DATA_PAGE_V2)
    dictionary = kind == DICTIONARY_PAGE
    max_def = pages.max_definition_level[chunk]
    reasons = [None] * chunks

    def mark(bad_pages, why):
        for c in np.unique(chunk[bad_pages]):
            if reasons[c] is None:
                reasons[c] = why

    # a negative count would move the pages after it before their chunk's first row (in place:
    # onto another row group's rows, or before the array); the reference names it
    mark(headers.num_values < 0, "a negative value count")
    mark(data & ~np.isin(encoding, (PLAIN, *DICTIONARY_INDEX_ENCODINGS)), "a value encoding decoded page by page")
    mark((kind == DATA_PAGE) & (max_def > 0) & (headers.definition_level_encoding != RLE), "levels not in RLE")
    mark((kind == DATA_PAGE_V2) & (headers.repetition_levels_length != 0), "repetition levels")
    mark(max_def > 1, "nested levels")
    mark(dictionary & (~np.isin(encoding, DICTIONARY_PAGE_ENCODINGS)
                       | (headers.uncompressed_size < headers.num_values * pages.itemsize[chunk])),
         "a malformed dictionary page")
    # at most one dictionary page per chunk, before its data pages; dictionary indices need it
    dictionaries = np.bincount(chunk[dictionary], minlength=chunks)
    first_data = np.full(chunks, np.iinfo(np.int64).max)
    np.minimum.at(first_data, chunk[data], np.flatnonzero(data))
    late = dictionary & (np.arange(chunk.shape[0]) > first_data[chunk])
    mark(late | (dictionary & (dictionaries[chunk] > 1)), "a dictionary page out of place")
    indexed = data & (encoding != PLAIN)
    mark(indexed & (dictionaries[chunk] == 0), "dictionary indices without a dictionary page")
    return reasons


def decode_pages(xp, pages: BatchPages, into=None) -> list:
    """Per chunk: (raw values, None) decoded here, or (None, reason) for the reference.
    ``into``: per chunk None or (array, row, rows): its values go to ``array[row:row + rows]``
    (a raw view, ``RAW`` of the chunk's width), which they must fill exactly; a chunk whose pages
    count other than ``rows`` values goes to the reference with its place untouched. The values
    returned for such a chunk are that slice. A chunk with a place that fails on a page (None and
    a reason) may have had some of its rows written there, never outside them: the caller
    overwrites them or gives the batch up."""
    steps = _steps(xp)
    chunks = pages.itemsize.shape[0]
    into = [None] * chunks if into is None else list(into)
    reasons = unsupported(pages)
    headers = pages.headers
    kind, chunk = headers.page_type, headers.chunk
    is_data = (kind == DATA_PAGE) | (kind == DATA_PAGE_V2)
    rows = np.zeros(chunks, np.int64)
    np.add.at(rows, chunk[is_data], headers.num_values[is_data])
    for c, place in enumerate(into):
        if place is not None and reasons[c] is None and rows[c] != place[2]:
            reasons[c] = "values counted other than its rows"
    taken = np.array([r is None for r in reasons], dtype=bool)
    data = np.flatnonzero(taken[chunk] & is_data)
    dicts = np.flatnonzero(taken[chunk] & (kind == DICTIONARY_PAGE))

    # where each chunk's rows and dictionary go: its value width's array of the batch's own
    # (chunks in order), or the caller's place
    entries = np.zeros(chunks, np.int64)
    np.add.at(entries, chunk[dicts], headers.num_values[dicts])
    given = np.array([p is not None for p in into], dtype=bool)
    targets, target_of, out_at = [], np.zeros(chunks, np.int64), np.zeros(chunks, np.int64)
    dictionary, dictionary_at = {}, np.zeros(chunks, np.int64)
    for size, raw in RAW.items():
        mine = np.flatnonzero(taken & (pages.itemsize == size) & ~given)
        out_at[mine] = np.cumsum(rows[mine]) - rows[mine]
        target_of[mine] = len(targets)
        targets.append(xp.empty(int(rows[mine].sum()), dtype=raw))
        mine = np.flatnonzero(taken & (pages.itemsize == size))
        dictionary_at[mine] = np.cumsum(entries[mine]) - entries[mine]
        dictionary[size] = xp.empty(int(entries[mine].sum()), dtype=raw)
    for c in np.flatnonzero(taken & given).tolist():
        array, out_at[c], _ = into[c]
        if array.dtype != RAW[int(pages.itemsize[c])]:
            raise ValueError(f"chunk {c}'s place holds {array.dtype}, not its raw {np.dtype(RAW[int(pages.itemsize[c])])}")
        target_of[c] = len(targets)
        targets.append(array)
    # a data page's first row within its chunk: the rows of the chunk's data pages before it
    n = headers.num_values[data]
    before = np.cumsum(n) - n
    first_of_chunk = np.r_[True, chunk[data][1:] != chunk[data][:-1]] if data.size else np.zeros(0, bool)
    page_row = before - before[first_of_chunk][np.cumsum(first_of_chunk) - 1]
    places = Places(targets, target_of[chunk[data]], out_at[chunk[data]] + page_row)
    size = pages.itemsize[chunk[data]]

    values_at, present, status = steps.page_levels(
        pages.body, pages.body_start[data], headers.uncompressed_size[data],
        np.where(kind[data] == DATA_PAGE_V2, 2, 1),
        pages.max_definition_level[chunk[data]], headers.definition_levels_length[data], n)
    values_end = pages.body_start[data] + headers.uncompressed_size[data]
    plain = headers.encoding[data] == PLAIN
    # a PLAIN page holds its values, perhaps followed by bytes that are ignored (decode_plain
    # says why); too few and the reference names the shortfall
    status = np.where(plain & (status == 0) & (values_end - values_at < n * size), PAGE_REFERENCE, status)

    for width in RAW:
        page = plain & (status == 0) & (size == width)
        steps.plain_copy(pages.body, values_at[page], places[page], n[page], width)
        page = pages.itemsize[chunk[dicts]] == width
        steps.plain_copy(pages.body, pages.body_start[dicts][page],
                         Places.one(dictionary[width], dictionary_at[chunk[dicts]][page]),
                         headers.num_values[dicts][page], width)

    indexed = np.flatnonzero(~plain & (status == 0))
    if indexed.size:
        at = data[indexed]
        entries_of = entries[chunk[at]]
        for width in RAW:
            mine = pages.itemsize[chunk[at]] == width
            if not mine.any():
                continue
            found = steps.dictionary_pages(pages.body, values_at[indexed][mine], values_end[indexed][mine],
                                           n[indexed][mine], entries_of[mine], dictionary[width],
                                           dictionary_at[chunk[at]][mine], places[indexed[mine]], width)
            status[indexed[mine]] = found
    failed = np.zeros(chunks, dtype=bool)
    failed[chunk[data][status != 0]] = True
    results = []
    for c in range(chunks):
        if reasons[c] is not None:
            results.append((None, reasons[c]))
        elif failed[c]:
            results.append((None, "nulls or a page the reference names"))
        else:
            results.append((targets[target_of[c]][out_at[c]:out_at[c] + rows[c]], None))
    return results


def _steps(xp):
    if xp is np:
        return HostSteps
    from kernels.parquet import gpu_pages
    return gpu_pages


class HostSteps:
    """The NumPy reference of kernels/cuda/parquet_values.cu, step for step (same inputs and
    outputs as kernels/parquet/gpu_pages.py): per-page walks in Python, per-value work whole-array."""

    @staticmethod
    def page_levels(body, body_start, body_size, version, max_def, def_length, num_values):
        """(values_at, present, status) per data page."""
        pages = body_start.shape[0]
        values_at, present = np.zeros(pages, np.int64), np.zeros(pages, np.int64)
        status = np.zeros(pages, np.int32)
        for i in range(pages):
            start, size, n = int(body_start[i]), int(body_size[i]), int(num_values[i])
            page = body[start:start + size]
            at, levels = 0, None
            if version[i] == 2:
                at = int(def_length[i])
                if at < 0 or at > size or (not max_def[i] and at):
                    status[i] = PAGE_REFERENCE
                    continue
                levels = page[:at]
            elif max_def[i]:
                if size < 4 or 4 + int.from_bytes(page[:4].tobytes(), "little") > size:
                    status[i] = PAGE_REFERENCE
                    continue
                at = 4 + int.from_bytes(page[:4].tobytes(), "little")
                levels = page[4:at]
            defined = n
            if max_def[i]:
                try:
                    defined = int((decode_hybrid(np, levels, 1, n)[0] == 1).sum())
                except PageError:
                    status[i] = PAGE_REFERENCE
                    continue
            values_at[i], present[i] = start + at, defined
            status[i] = 0 if defined == n else PAGE_REFERENCE
        return values_at, present, status

    @staticmethod
    def plain_copy(body, src_at, places: Places, counts, width) -> None:
        raw = RAW[width]
        for s, t, d, n in zip(src_at, places.which, places.row, counts):
            places.arrays[t][d:d + n] = body[s:s + n * width].view(raw)

    @staticmethod
    def dictionary_pages(body, values_at, values_end, counts, dictionary_size, dictionary, dictionary_at,
                         places: Places, width) -> np.ndarray:
        """Dictionary-encoded pages' values written to their places; status per page."""
        status = np.zeros(values_at.shape[0], np.int32)
        for i in range(values_at.shape[0]):
            runs = dictionary_run_table(body, int(values_at[i]), int(values_end[i]), int(counts[i]),
                                        int(dictionary_size[i]))
            if isinstance(runs, int):
                status[i] = runs
                continue
            bits, first, count, payload, packed = runs
            index = np.zeros(int(counts[i]), np.uint64)
            for f, c, p, k in zip(first, count, payload, packed):
                if k:
                    index[f:f + c] = unpack_bits(np, body, p + np.arange(c, dtype=np.int64) * bits,
                                                 np.full(c, bits, np.uint64))
                else:
                    index[f:f + c] = p
            if index.size and int(index.max()) >= dictionary_size[i]:
                status[i] = PAGE_BAD_INDEX
                continue
            values = dictionary[dictionary_at[i]:dictionary_at[i] + dictionary_size[i]]
            row = places.row[i]
            places.arrays[places.which[i]][row:row + counts[i]] = values[index.astype(np.int64)]
        return status


def dictionary_run_table(body, pos: int, end: int, count: int, dictionary_size: int):
    """The runs of one page's index stream as (bit width, run_first, run_count, run_payload,
    run_packed) lists (kernels/cuda/parquet_values.cu ``dictionary_runs`` says what they hold),
    or a page status when the stream is malformed or an RLE run's index is past the dictionary."""
    if pos >= end or body[pos] > 32:
        return PAGE_REFERENCE
    bits = int(body[pos])
    pos += 1
    value_bytes = (bits + 7) // 8
    first, counts, payload, packed = [], [], [], []
    have = 0
    while have < count:
        header, pos = _uleb(body, pos, end)
        if header is None:
            return PAGE_REFERENCE
        length = header >> 1
        if header & 1:
            if length == 0 or pos + length * bits > end:
                return PAGE_REFERENCE
            payload.append(pos * 8)
            pos += length * bits
            take = min(length * 8, count - have)
        else:
            if length == 0 or pos + value_bytes > end:
                return PAGE_REFERENCE
            index = int.from_bytes(body[pos:pos + value_bytes].tobytes(), "little")
            pos += value_bytes
            if index >= dictionary_size:
                return PAGE_BAD_INDEX
            payload.append(index)
            take = min(length, count - have)
        first.append(have)
        counts.append(take)
        packed.append(header & 1)
        have += take
    return bits, first, counts, payload, packed


def _uleb(body, pos: int, end: int):
    """(value, position after) of a ULEB128 of at most 10 bytes before ``end``; (None, pos)
    otherwise, as the kernels' walk refuses it."""
    try:
        value, length = read_uleb128(memoryview(body[pos:min(end, pos + 10)]), 0)
    except IndexError:
        return None, pos
    return value, pos + length
