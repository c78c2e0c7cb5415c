"""Parquet page bodies decoded into value arrays, for NumPy (host reference) or CuPy.

Every function takes ``xp`` (numpy or cupy) and arrays of that backend; kernels/ imports
numpy/cupy only, so the page headers arrive as plain integers in a ``DataPage``.

Encodings (parquet-format Encodings.md; all multi-byte integers little-endian):
- a page body is a ``uint8`` array holding the page's uncompressed bytes.
- RLE/bit-packed hybrid (levels, dictionary indices): runs, each headed by a ULEB128 varint
  h. h & 1 == 0: an RLE run of h >> 1 copies of one value stored in ceil(width / 8) bytes.
  h & 1 == 1: a bit-packed run of (h >> 1) * 8 values, ``width`` bits each, packed from the
  least significant bit of each byte upward. v1 data pages prefix their definition levels with
  a u32 byte length; v2 pages store that length in the header. Dictionary indices start with
  one byte holding their bit width.
- PLAIN fixed width: values back to back. BYTE_STREAM_SPLIT: byte k of every value, for
  k = 0 .. size-1, each stream n bytes long.
- DELTA_BINARY_PACKED: header <block size> <miniblocks per block> <total count> <first value
  (zigzag)>, then blocks of <min delta (zigzag)> <one bit-width byte per miniblock>
  <miniblocks bit-packed>; value[i] = value[i-1] + min delta + packed delta, wrapping at the
  physical type's width. Only the miniblocks holding values are stored.
- decoded values: the physical type's dtype (int32, int64, float32, float64), one per row;
  rows whose definition level is below the maximum (nulls) hold 0, and ``valid`` (bool per
  row) says which rows hold values; ``valid`` is None when no row of the page is null.

Choices: the run headers of the hybrid and DELTA's block headers are varints at positions
only the previous header tells, so this reference walks them in a Python loop (one iteration
per run or per block of 128 values, not per value) over a host copy of the page; everything
per value is whole-array: bits gathered by byte index and shift, runs expanded by repeat,
deltas summed by cumsum. The GPU reader replaces the walks by a kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.parquet.format import (BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED, DICTIONARY_INDEX_ENCODINGS,
                                    DICTIONARY_PAGE_ENCODINGS, ENCODING_NAMES, PLAIN, RLE, read_uleb128, zigzag_decode)

# The value encodings decode_data_page reads
VALUE_ENCODINGS = (PLAIN, *DICTIONARY_INDEX_ENCODINGS, DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT)


class PageError(ValueError):
    """A page body disagrees with its header or its encoding's rules (the caller names it)."""


@dataclass(frozen=True)
class DataPage:
    """The header fields decoding needs, for one data page of a flat column."""

    version: int  # 1: DATA_PAGE, 2: DATA_PAGE_V2
    num_values: int  # rows of the page, nulls included
    encoding: int
    max_definition_level: int  # 0 (REQUIRED) or 1 (OPTIONAL)
    definition_level_encoding: int = RLE  # v1 only
    definition_levels_length: int = -1  # v2 only: bytes of levels before the values
    repetition_levels_length: int = 0  # v2 only
    num_nulls: int = -1  # v2 only


def _host(data) -> np.ndarray:
    """A NumPy view or copy of ``data`` (a device array comes to the host)."""
    return data.get() if hasattr(data, "get") else np.asarray(data)


def _uleb128(host: np.ndarray, pos: int) -> tuple[int, int]:
    """read_uleb128 of a host page (uint8), running past its end refused as the page's fault."""
    try:
        return read_uleb128(memoryview(host), pos)
    except IndexError:
        raise PageError("a varint runs past the end of the page") from None


def unpack_bits(xp, data, bit_offsets, widths):
    """uint64 values of ``widths[i]`` bits (0..64) starting at bit ``bit_offsets[i]`` of
    ``data`` (uint8), least significant bit first: each value is assembled from the 9 bytes
    that can hold it, so every width and alignment takes the same whole-array steps."""
    bit_offsets = xp.asarray(bit_offsets, dtype=xp.int64)
    widths = xp.asarray(widths, dtype=xp.uint64)
    padded = xp.concatenate([data.astype(xp.uint8, copy=False), xp.zeros(9, dtype=xp.uint8)])
    first = bit_offsets >> 3
    shift = (bit_offsets & 7).astype(xp.uint64)
    low = xp.zeros(first.shape, dtype=xp.uint64)
    for k in range(8):
        low |= padded[first + k].astype(xp.uint64) << xp.uint64(8 * k)
    high = padded[first + 8].astype(xp.uint64)
    value = low >> shift
    value |= xp.where(shift > 0, high << ((xp.uint64(64) - shift) & xp.uint64(63)), xp.uint64(0))
    mask = xp.where(widths == 0, xp.uint64(0),
                    xp.uint64(0xFFFFFFFFFFFFFFFF) >> ((xp.uint64(64) - widths) & xp.uint64(63)))
    return value & mask


def decode_hybrid(xp, data, bit_width: int, count: int):
    """The first ``count`` values (uint64) of an RLE/bit-packed hybrid stream in ``data``.

    Returns (values, bytes consumed). Refuses a stream holding fewer than ``count`` values."""
    if not 0 <= bit_width <= 64:
        raise PageError(f"bit width {bit_width} outside 0..64")
    host = _host(data)
    value_bytes = (bit_width + 7) // 8
    # per run: the values this call keeps (the stream's last run may say more than ``count``: a
    # damaged length of 2**32 must not size an array)
    rle_values, rle_lengths, kinds, lengths = [], [], [], []
    packed_starts, packed_counts = [], []
    pos = 0
    have = 0
    while have < count:  # one iteration per run (see the module docstring)
        header, pos = _uleb128(host, pos)
        if header & 1:
            groups = header >> 1
            nbytes = groups * bit_width
            if groups == 0 or pos + nbytes > host.shape[0]:
                raise PageError(f"a bit-packed run of {groups * 8} values runs past the page's end")
            take = min(groups * 8, count - have)
            packed_starts.append(pos)
            packed_counts.append(take)
            kinds.append(1)
            lengths.append(take)
            pos += nbytes
            have += groups * 8
        else:
            run = header >> 1
            if run == 0 or pos + value_bytes > host.shape[0]:
                raise PageError("an RLE run is empty or runs past the page's end")
            take = min(run, count - have)
            rle_values.append(int.from_bytes(host[pos:pos + value_bytes].tobytes(), "little"))
            rle_lengths.append(take)
            kinds.append(0)
            lengths.append(take)
            pos += value_bytes
            have += run
    out = xp.zeros(count, dtype=xp.uint64)
    if not kinds:
        return out, pos
    is_packed = xp.repeat(xp.asarray(kinds, dtype=xp.bool_), xp.asarray(lengths, dtype=xp.int64))
    if rle_values:
        out[~is_packed] = xp.repeat(xp.asarray(rle_values, dtype=xp.uint64),
                                    xp.asarray(rle_lengths, dtype=xp.int64))
    if packed_starts and bit_width:
        counts = np.asarray(packed_counts, dtype=np.int64)
        # bit offset of every packed value kept: its run's start plus its place in the run
        run_of_value = np.repeat(np.arange(counts.size), counts)
        first_value = np.concatenate([[0], np.cumsum(counts)[:-1]])
        within = np.arange(run_of_value.size) - first_value[run_of_value]
        starts = np.asarray(packed_starts, dtype=np.int64) * 8
        offsets = xp.asarray(starts[run_of_value] + within * bit_width)
        widths = xp.full(offsets.shape, bit_width, dtype=xp.uint64)
        out[is_packed] = unpack_bits(xp, xp.asarray(data), offsets, widths)
    return out, pos


def decode_plain(xp, data, dtype, count: int):
    """``count`` fixed-width PLAIN values from the start of ``data``. Bytes after them are
    ignored, as Arrow and parquet-java ignore them: fastparquet ends every v1 data page with 8
    zero bytes that its header counts. Fewer bytes than the values need is an error."""
    dtype = np.dtype(dtype)
    if data.shape[0] < count * dtype.itemsize:
        raise PageError(f"{data.shape[0]} bytes of PLAIN values for {count} values of "
                        f"{dtype.itemsize} bytes")
    return data[:count * dtype.itemsize].copy().view(dtype)  # the copy is aligned for the view


def decode_byte_stream_split(xp, data, dtype, count: int):
    """``count`` BYTE_STREAM_SPLIT values: ``itemsize`` streams of ``count`` bytes each."""
    dtype = np.dtype(dtype)
    if data.shape[0] != count * dtype.itemsize:
        raise PageError(f"{data.shape[0]} bytes of BYTE_STREAM_SPLIT values for {count} values "
                        f"of {dtype.itemsize} bytes")
    return xp.ascontiguousarray(data.reshape(dtype.itemsize, count).T).view(dtype).reshape(count)


def decode_delta_binary_packed(xp, data, dtype, count: int):
    """``count`` DELTA_BINARY_PACKED integers (int32 or int64), wrapping as the spec says."""
    dtype = np.dtype(dtype)
    host = _host(data)
    block_size, pos = _uleb128(host, 0)
    miniblocks, pos = _uleb128(host, pos)
    total, pos = _uleb128(host, pos)
    first, pos = _uleb128(host, pos)
    first = zigzag_decode(first)
    if miniblocks == 0 or block_size % miniblocks or (block_size // miniblocks) % 32:
        raise PageError(f"DELTA_BINARY_PACKED block of {block_size} values in {miniblocks} "
                        "miniblocks (a miniblock must hold a multiple of 32)")
    if total != count:
        raise PageError(f"DELTA_BINARY_PACKED header holds {total} values, the page {count}")
    per_mini = block_size // miniblocks
    mini_starts, mini_widths, mini_min = [], [], []
    remaining = total - 1
    while remaining > 0:  # one iteration per block (see the module docstring)
        min_delta, pos = _uleb128(host, pos)
        min_delta = zigzag_decode(min_delta)
        if pos + miniblocks > host.shape[0]:
            raise PageError("DELTA_BINARY_PACKED bit widths run past the page's end")
        widths = host[pos:pos + miniblocks]
        pos += miniblocks
        for w in widths:
            if remaining <= 0:
                break
            w = int(w)
            if w > 64:
                raise PageError(f"DELTA_BINARY_PACKED miniblock bit width {w}")
            mini_starts.append(pos)
            mini_widths.append(w)
            mini_min.append(min_delta & 0xFFFFFFFFFFFFFFFF)
            pos += per_mini * w // 8
            remaining -= per_mini
    if pos > host.shape[0]:
        raise PageError("DELTA_BINARY_PACKED miniblocks run past the page's end")
    out = xp.empty(total, dtype=xp.uint64)
    if total == 0:
        return out.view(np.int64).astype(dtype)
    out[0] = first & 0xFFFFFFFFFFFFFFFF
    if total > 1:
        mini = np.repeat(np.arange(len(mini_starts)), per_mini)
        within = np.tile(np.arange(per_mini, dtype=np.int64), len(mini_starts))
        widths = np.asarray(mini_widths, dtype=np.int64)[mini]
        offsets = np.asarray(mini_starts, dtype=np.int64)[mini] * 8 + within * widths
        deltas = unpack_bits(xp, xp.asarray(data), xp.asarray(offsets[:total - 1]),
                             xp.asarray(widths[:total - 1]))
        deltas += xp.asarray(np.asarray(mini_min, dtype=np.uint64)[mini[:total - 1]])
        out[1:] = deltas
    values = xp.cumsum(out, dtype=xp.uint64)  # wraps modulo 2^64, as the spec's arithmetic
    return values.view(xp.int64).astype(dtype)  # int64 -> int32 keeps the low 32 bits


def decode_dictionary_indices(xp, data, count: int, dictionary_size: int):
    """``count`` indices (int64) after their one-byte bit width, each below the dictionary's size."""
    if data.shape[0] < 1:
        raise PageError("dictionary indices lack their bit-width byte")
    width = int(_host(data[:1])[0])
    if width > 32:
        raise PageError(f"dictionary index bit width {width} above 32")
    indices, _ = decode_hybrid(xp, data[1:], width, count)
    if count and int(indices.max()) >= dictionary_size:
        raise PageError(f"dictionary index {int(indices.max())} for a dictionary of "
                        f"{dictionary_size} values")
    return indices.astype(xp.int64)


def decode_data_page(xp, body, page: DataPage, dtype, dictionary=None):
    """(values, valid) of one data page: values per row in ``dtype`` (0 at nulls), ``valid``
    bool per row or None when no row is null."""
    n = page.num_values
    pos = 0
    valid = None
    if page.version == 2:
        if page.repetition_levels_length:
            raise PageError("repetition levels in a flat column")
        pos = page.definition_levels_length
        if page.max_definition_level:
            levels, _ = decode_hybrid(xp, body[:pos], 1, n)
            valid = levels == 1
        elif pos:
            raise PageError("definition levels in a REQUIRED column")
    elif page.max_definition_level:
        if page.definition_level_encoding != RLE:
            raise PageError(f"definition levels in "
                            f"{ENCODING_NAMES.get(page.definition_level_encoding, page.definition_level_encoding)}"
                            " (only RLE is read)")
        if body.shape[0] < 4:
            raise PageError("definition levels lack their length")
        length = int.from_bytes(_host(body[:4]).tobytes(), "little")
        if 4 + length > body.shape[0]:
            raise PageError(f"definition levels of {length} bytes past the page's end")
        levels, _ = decode_hybrid(xp, body[4:4 + length], 1, n)
        valid = levels == 1
        pos = 4 + length
    present = n if valid is None else int(valid.sum())
    if page.num_nulls >= 0 and n - present != page.num_nulls:
        raise PageError(f"{n - present} nulls in the definition levels, the header says "
                        f"{page.num_nulls}")
    values = body[pos:]
    encoding = page.encoding
    if encoding in DICTIONARY_INDEX_ENCODINGS:
        if dictionary is None:
            raise PageError(f"{ENCODING_NAMES[encoding]} page without a dictionary page")
        decoded = dictionary[decode_dictionary_indices(xp, values, present, dictionary.shape[0])]
    elif encoding == PLAIN:
        decoded = decode_plain(xp, values, dtype, present)
    elif encoding == BYTE_STREAM_SPLIT:
        decoded = decode_byte_stream_split(xp, values, dtype, present)
    elif encoding == DELTA_BINARY_PACKED:
        if np.dtype(dtype).kind != "i":
            raise PageError(f"DELTA_BINARY_PACKED values of type {np.dtype(dtype)}")
        decoded = decode_delta_binary_packed(xp, values, dtype, present)
    else:
        raise PageError(f"value encoding {ENCODING_NAMES.get(encoding, encoding)} is not read")
    if valid is None or present == n:
        return decoded, None
    out = xp.zeros(n, dtype=dtype)
    out[valid] = decoded
    return out, valid


def decode_dictionary_page(xp, body, encoding: int, count: int, dtype):
    """The ``count`` values of a dictionary page (PLAIN, or PLAIN_DICTIONARY: the same bytes)."""
    if encoding not in DICTIONARY_PAGE_ENCODINGS:
        raise PageError(f"dictionary page in {ENCODING_NAMES.get(encoding, encoding)}")
    return decode_plain(xp, body, dtype, count)


def first_null_row(xp, valid) -> int:
    """Index of the first False in ``valid``, or -1 (None: no nulls)."""
    if valid is None or bool(valid.all()):
        return -1
    return int(xp.argmin(valid))


def to_logical(xp, values, dtype):
    """Physical values as their logical integer type: a same-width type reinterprets the bits
    (UINT_32 in INT32, UINT_64 in INT64), a narrower one keeps the low bits (INT_8 .. UINT_16,
    whose writers store values in range)."""
    dtype = np.dtype(dtype)
    if dtype == values.dtype:
        return values
    if dtype.itemsize == values.dtype.itemsize:
        return values.view(dtype)
    return values.astype(dtype)
