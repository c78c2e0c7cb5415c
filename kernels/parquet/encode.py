"""Result columns encoded into Parquet page bodies, for NumPy (host reference) or CuPy.

The writing twin of kernels/parquet/decode.py: every function takes ``xp`` (numpy or cupy) and
arrays of that backend; kernels/ imports numpy/cupy only. A page's bytes come out as ``uint8``
arrays; a stream of several pages as (bytes, offsets), ``offsets`` a host int64 array of
pages + 1 entries (page p is bytes[offsets[p]:offsets[p + 1]]).

Encodings (parquet-format Encodings.md; all multi-byte integers little-endian):
- PLAIN fixed width: the non-null values' bytes back to back.
- RLE/bit-packed hybrid (definition levels, dictionary indices): runs headed by a ULEB128
  varint h; h = count << 1: an RLE run of ``count`` copies of one value in ceil(width / 8)
  bytes; h = groups << 1 | 1: ``groups`` x 8 values bit-packed, ``width`` bits each, from the
  least significant bit of each byte upward. This encoder cuts a page's values into groups of
  8 (the last one padded with its page's last value): consecutive groups holding one and the
  same value 8 times make one RLE run, consecutive other groups one bit-packed run; runs never
  cross a page. So a column without nulls costs 2-6 bytes of levels per page, and a
  dictionary column of long runs (distances of a BFS in vertex order) stores each run once.
- dictionary: the distinct values of a column chunk, compared by bit pattern (so 0.0 and -0.0,
  or two NaN payloads, stay apart and read back exactly as given), in ascending bit-pattern
  order; the indices are hybrid-encoded after one byte holding their bit width (at least 1).

Choices: everything is whole-array (gathers, cumulative sums, scatters), one call per column
chunk over all its pages; nothing walks the runs in Python. Bit-packing goes through a
(groups, 8 x width) bit matrix, cut into slices of PACK_GROUPS groups to bound its memory.
On a GPU, ``hybrid``, ``dictionary`` and ``distinct_count`` hand CuPy arrays to
kernels/parquet/gpu_encode.py: the same bytes from the ahead-of-time module's kernels, where
this code as CuPy would compile some thirty kernels at run time in every fresh process.
"""
from __future__ import annotations

import numpy as np

from kernels.backend import count_nonfinite
from kernels.parquet.format import uleb128

PACK_GROUPS = 1 << 18  # groups of 8 values bit-packed per slice (2 Mi values)

_INT_VIEW = {4: np.int32, 8: np.int64}


def plain(xp, values):
    """PLAIN: the values' little-endian bytes (uint8)."""
    return xp.ascontiguousarray(values).view(xp.uint8)


def dictionary(xp, values):
    """(dictionary values, uint32 index of each value): distinct by bit pattern, ascending."""
    if xp is not np:
        from kernels.parquet import gpu_encode

        return gpu_encode.dictionary(values)
    bits = xp.ascontiguousarray(values).view(_INT_VIEW[values.dtype.itemsize])
    distinct, index = xp.unique(bits, return_inverse=True)
    return distinct.view(values.dtype), index.reshape(-1).astype(xp.uint32)


def distinct_count(xp, values) -> int:
    """How many entries ``dictionary`` would give ``values``."""
    if xp is not np:
        from kernels.parquet import gpu_encode

        return gpu_encode.distinct_count(values)
    return int(np.unique(np.ascontiguousarray(values).view(_INT_VIEW[values.dtype.itemsize])).shape[0])


def index_bit_width(entries: int) -> int:
    """Bits per dictionary index: enough for entries - 1, at least 1."""
    return max(1, int(entries - 1).bit_length())


def min_max(xp, values):
    """(min, max) as host NumPy scalars of the values' dtype, or None when there is no value to
    order. Floats: NaN is left out, and a zero minimum is -0.0 and a zero maximum +0.0
    (parquet-format's rule for statistics of floats)."""
    if values.dtype.kind == "f" and count_nonfinite(values, nan_only=True):
        values = values[~xp.isnan(values)]
    if values.shape[0] == 0:
        return None
    low, high = (np.asarray(v.get() if hasattr(v, "get") else v) for v in (values.min(), values.max()))
    if values.dtype.kind == "f":
        low = -np.abs(low) if low == 0 else low
        high = np.abs(high) if high == 0 else high
    return low.astype(values.dtype)[()], high.astype(values.dtype)[()]


def _varint_length(xp, h):
    length = xp.ones(h.shape, dtype=xp.int64)
    for k in range(1, 10):
        length += (h >= (1 << (7 * k))).astype(xp.int64)
    return length


def hybrid(xp, values, starts, bit_width: int):
    """RLE/bit-packed hybrid of ``values`` (unsigned integers below 2**bit_width; bool or uint32
    on a GPU, kernels/parquet/gpu_encode.py) cut into pages
    at ``starts`` (host int64, pages + 1 entries, from 0 to len(values)). Returns (bytes,
    offsets). A page of no values has no bytes."""
    starts = np.asarray(starts, dtype=np.int64)
    pages = starts.shape[0] - 1
    counts = np.diff(starts)
    page_groups = -(-counts // 8)
    group_offsets = np.zeros(pages + 1, np.int64)
    np.cumsum(page_groups, out=group_offsets[1:])
    total_groups = int(group_offsets[-1])
    if total_groups == 0:
        return xp.zeros(0, dtype=xp.uint8), np.zeros(pages + 1, np.int64)
    if xp is not np:
        from kernels.parquet import gpu_encode

        return gpu_encode.hybrid(values, starts, group_offsets, bit_width)
    values = values.astype(xp.uint64, copy=False)
    # each group's page, first value and last value of its page
    g = xp.arange(total_groups, dtype=xp.int64)
    page = xp.searchsorted(xp.asarray(group_offsets[1:]), g, side="right")
    page_start = xp.asarray(starts[:-1])[page]
    page_end = xp.asarray(starts[1:])[page]
    first = page_start + 8 * (g - xp.asarray(group_offsets[:-1])[page])
    index = xp.minimum(first[:, None] + xp.arange(8, dtype=xp.int64)[None, :], (page_end - 1)[:, None])
    grouped = values[index]  # (groups, 8), the last group of a page padded with its last value
    uniform = (grouped == grouped[:, :1]).all(axis=1)
    lead = grouped[:, 0]
    # a run starts at a page's first group, where uniformity changes, or where a uniform
    # group's value differs from the previous uniform group's
    new_run = xp.ones(total_groups, dtype=bool)
    if total_groups > 1:
        new_run[1:] = ((page[1:] != page[:-1]) | (uniform[1:] != uniform[:-1])
                       | (uniform[1:] & (lead[1:] != lead[:-1])))
    run_start = xp.flatnonzero(new_run)
    runs = int(run_start.shape[0])
    run_end = xp.concatenate([run_start[1:], xp.asarray([total_groups], dtype=run_start.dtype)])
    run_groups = (run_end - run_start).astype(xp.int64)
    rle = uniform[run_start]
    # an RLE run holds the values it covers (its page's last one may be short); a bit-packed
    # run holds whole groups, the padding after the page's values ignored by the reader
    covered = xp.minimum(first[run_start] + 8 * run_groups, page_end[run_start]) - first[run_start]
    header = xp.where(rle, covered << 1, (run_groups << 1) | 1)
    header_length = _varint_length(xp, header)
    value_bytes = (bit_width + 7) // 8
    run_length = header_length + xp.where(rle, value_bytes, run_groups * bit_width)
    run_offset = xp.zeros(runs + 1, dtype=xp.int64)
    run_offset[1:] = xp.cumsum(run_length)
    out = xp.zeros(int(run_offset[-1]), dtype=xp.uint8)
    header = header.astype(xp.uint64)
    for k in range(int(header_length.max())):
        byte = (header >> xp.uint64(7 * k)) & xp.uint64(0x7F)
        byte |= xp.where(header_length > k + 1, xp.uint64(0x80), xp.uint64(0))
        at = xp.flatnonzero(header_length > k)
        out[run_offset[at] + k] = byte[at].astype(xp.uint8)
    rle_runs = xp.flatnonzero(rle)
    value = lead[run_start[rle_runs]]
    for b in range(value_bytes):
        out[run_offset[rle_runs] + header_length[rle_runs] + b] = (
            (value >> xp.uint64(8 * b)) & xp.uint64(0xFF)).astype(xp.uint8)
    # bit-packed groups (runs never mix uniform and other groups): each one's bytes land after
    # its run's header
    run_of_group = xp.cumsum(new_run.astype(xp.int64)) - 1
    packed = xp.flatnonzero(~uniform)
    if packed.shape[0]:
        r = run_of_group[packed]
        where = run_offset[r] + header_length[r] + (packed - run_start[r]) * bit_width
        shifts = xp.arange(bit_width, dtype=xp.uint64)
        weights = (xp.uint64(1) << xp.arange(8, dtype=xp.uint64)).astype(xp.uint8)
        for s in range(0, int(packed.shape[0]), PACK_GROUPS):
            part = packed[s:s + PACK_GROUPS]
            # bits[i, j * width + b]: bit b of value j of group i, least significant first
            bits = ((grouped[part][:, :, None] >> shifts[None, None, :]) & xp.uint64(1)).astype(xp.uint8)
            bits = bits.reshape(part.shape[0], bit_width, 8)
            group_bytes = (bits * weights[None, None, :]).sum(axis=2, dtype=xp.uint8)
            target = where[s:s + PACK_GROUPS][:, None] + xp.arange(bit_width, dtype=xp.int64)[None, :]
            out[target.reshape(-1)] = group_bytes.reshape(-1)
    # a page's bytes start at its first run (an empty page's at the next page's)
    page_first_run = np.searchsorted(_host(run_start), group_offsets, side="left")
    offsets = _host(run_offset)[page_first_run].astype(np.int64)
    return out, offsets


def interleave(xp, streams):
    """Page p of the result: page p of every stream in turn. ``streams``: (bytes, offsets)
    pairs of the same page count. Returns (bytes, offsets). NumPy copies page by page, CuPy
    every page in one launch."""
    sizes = np.stack([np.diff(np.asarray(o, np.int64)) for _, o in streams], axis=1)  # (pages, streams)
    pages = sizes.shape[0]
    placed = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes.reshape(-1), out=placed[1:])
    out = xp.empty(int(placed[-1]), dtype=xp.uint8)
    for s, (data, offsets) in enumerate(streams):
        offsets = np.asarray(offsets, np.int64)
        if int(offsets[-1]) == 0:
            continue
        at = placed[np.arange(pages) * sizes.shape[1] + s]  # where page p's part goes
        if xp is np:  # memcpy each
            for p in np.flatnonzero(sizes[:, s]):
                out[at[p]:at[p] + sizes[p, s]] = data[offsets[p]:offsets[p + 1]]
            continue
        # on a GPU one launch copies every page's part (a copy per page would be a launch per page)
        from kernels.parquet import gpu_pages

        filled = sizes[:, s] > 0
        gpu_pages.copy_segments(xp.ascontiguousarray(data), offsets[:-1][filled], out, at[filled],
                                  sizes[filled, s])
    return out, placed[::sizes.shape[1]].copy() if sizes.shape[1] else np.zeros(pages + 1, np.int64)


def present_levels(xp, counts):
    """``hybrid`` of all-ones definition levels (a column without nulls), pages of ``counts``
    rows (host int64), built on the host: each page is one RLE run, ULEB128(rows << 1) then the
    value 1 in one byte; a page of no rows has no bytes. Returns (bytes on xp, offsets)."""
    return host_stream(xp, [uleb128(n << 1) + b"\x01" if n else b"" for n in np.asarray(counts).tolist()])


def host_stream(xp, parts):
    """A small per-page stream built on the host (length prefixes, bit-width bytes): ``parts``
    is one bytes object per page. Returns (bytes on xp, offsets)."""
    offsets = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return xp.asarray(np.frombuffer(b"".join(parts), np.uint8)), offsets


def _host(array) -> np.ndarray:
    return array.get() if hasattr(array, "get") else np.asarray(array)
