"""Parquet page headers parsed and page CRC32s computed on a GPU, many column chunks per launch:
the driver of kernels/cuda/parquet_headers.cu (encodings and the walk's rules there).

``page_headers`` gives, for column chunks lying back to back in one device buffer, the page table
its host twin ``kernels.parquet.headers.page_headers`` gives (a ``PageTable``: one int64 column
per ``PAGE_FIELDS`` name, one row per page, offsets relative to the chunk's start), and a status
per chunk instead of an exception: the kernel refuses exactly the chunks the host walk refuses,
and the caller re-parses a refused chunk on the host to name the fault (one source of error
messages). ``crc32_pages``
gives zlib's CRC-32 of many byte ranges of a device buffer.

This module imports CuPy only when a function that launches is called, so the field order and
the CRC tables can be checked on a machine without it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.parquet.format import PAGE_FIELDS
from kernels.parquet.headers import PageTable

# Chunk status (the PH_* codes of the kernel). Only OK versus not OK is exact: where a chunk has
# several faults, the code says which one the walk met first, as the host parser would.
OK = 0
UNPARSABLE = 1  # a header read past the chunk's end, or a Thrift type that does not exist
BAD_SIZE = 2  # compressed_size negative or missing, page_type negative or missing, a page past the chunk
VALUE_COUNT = 3  # the data pages' num_values do not add up to the expected count
TOO_DEEP = 4  # Thrift containers nested deeper than 32: refused here, read by the host parser
TOO_LARGE = 5  # a field's value beyond int64: the host parser fails on it with an OverflowError
STATUS_NAMES = {OK: "ok", UNPARSABLE: "header cannot be parsed", BAD_SIZE: "bad page size or type",
                VALUE_COUNT: "value count", TOO_DEEP: "nested too deeply", TOO_LARGE: "value beyond int64"}

CRC_SEGMENT = 4096  # bytes per thread (the kernel's CRC_SEGMENT)
CRC_POLY = 0xEDB88320  # zlib's polynomial, bits reflected
HEADER_THREADS = 64  # one chunk per thread: small blocks spread the walks over more SMs


@dataclass(frozen=True)
class PageHeaders:
    """The page table of the chunks whose status is OK (the host walk's table of the same
    chunks), and every chunk's status: what the host walk raises as an exception."""

    pages: PageTable  # chunks in input order, pages in file order
    status: np.ndarray  # int64 [chunks]: OK or a code above
    where: np.ndarray  # int64 [chunks]: chunk byte of the refused page's header (the chunk's size for
    # VALUE_COUNT); -1 for an OK chunk

    def refused(self) -> np.ndarray:
        """Indices of the chunks that are not OK: re-parse each on the host for its message."""
        return np.flatnonzero(self.status != OK)


def _chunk_arrays(buffer_size: int, starts, sizes, values=None):
    """Host int64 copies, checked to lie inside the buffer (a caller's error, not the file's)."""
    arrays = [np.asarray(a, dtype=np.int64).reshape(-1) for a in (starts, sizes, values) if a is not None]
    if len({a.shape[0] for a in arrays}) != 1:
        raise ValueError(f"ranges: {', '.join(str(a.shape[0]) for a in arrays)} entries; the counts must agree")
    starts, sizes = arrays[0], arrays[1]
    outside = np.flatnonzero((starts < 0) | (sizes < 0) | (starts > buffer_size - sizes))
    if outside.shape[0]:
        i = int(outside[0])
        raise ValueError(f"range {i}: [{starts[i]}, {starts[i] + sizes[i]}) is not inside the "
                         f"{buffer_size}-byte buffer")
    return arrays


def page_headers(buffer, starts, sizes, num_values) -> PageHeaders:
    """Every page header of the chunks ``buffer[starts[c] : starts[c] + sizes[c]]`` (``buffer``
    a CuPy uint8 array; the others host or device int64, one entry per chunk); ``num_values``
    is each chunk's value count from the footer, which its data pages must add up to.

    A chunk that is not OK contributes no rows: the caller names its fault by running
    ``kernels.parquet.headers.page_headers`` on that chunk alone, which raises for every
    chunk refused here except one nested deeper than the kernel reads (TOO_DEEP), whose table
    it returns instead. Costs three small copies to the host and one of the table.
    """
    import cupy as cp

    from kernels import gpu, gpu_arrays

    buffer = cp.asarray(buffer).view(cp.uint8).reshape(-1)
    starts, sizes, num_values = _chunk_arrays(buffer.shape[0], cp.asnumpy(starts), cp.asnumpy(sizes),
                                              cp.asnumpy(num_values))
    chunks = starts.shape[0]
    empty = {name: np.zeros(0, dtype=np.int64) for name in PAGE_FIELDS}
    if chunks == 0:
        return PageHeaders(PageTable(empty), np.zeros(0, np.int64), np.zeros(0, np.int64))
    d_starts, d_sizes, d_values = gpu_arrays.upload(starts, sizes, num_values)
    info = cp.empty((3, chunks), dtype=cp.int64)  # status, where, pages
    args = (buffer, d_starts, d_sizes, d_values, np.int64(chunks))
    gpu.launch("page_headers_count", chunks, args + (info,), threads=HEADER_THREADS)
    status, where, pages = info.get()
    first = np.zeros(chunks, dtype=np.int64)
    np.cumsum(pages[:-1], out=first[1:])
    total = int(pages.sum())
    if total == 0:
        return PageHeaders(PageTable(empty), status, where)
    table = cp.empty((len(PAGE_FIELDS), total), dtype=cp.int64)
    gpu.launch("page_headers_fill", chunks, args + (info, *gpu_arrays.upload(first), np.int64(total), table),
               threads=HEADER_THREADS)
    host = table.get()
    return PageHeaders(PageTable({name: host[i] for i, name in enumerate(PAGE_FIELDS)}), status, where)


def _times(a: int, b: int) -> int:
    """a * b mod P, both reflected (bit 31 is x^0): the kernel's crc_times."""
    p = 0
    for i in range(32):
        if a >> (31 - i) & 1:
            p ^= b
        b = (b >> 1) ^ (CRC_POLY if b & 1 else 0)
    return p


def crc32_powers() -> np.ndarray:
    """uint32 [256]: x^(8 d 16^k) mod P at 16k + d (k, d < 16), reflected; the kernel multiplies
    a page's terms by x^(8n) for any 64-bit n with at most 16 of them."""
    out = np.zeros(256, dtype=np.uint32)
    base = 1 << 23  # x^8
    for k in range(16):
        power = 1 << 31  # x^0
        for d in range(16):
            out[16 * k + d] = power
            power = _times(power, base)
        base = power  # x^(8 * 16^(k+1))
    return out


_device_powers: dict = {}


def crc32_pages(buffer, starts, lengths):
    """zlib's CRC-32 of each range ``buffer[starts[i] : starts[i] + lengths[i]]`` (a CuPy
    uint8 buffer; host or device int64 ranges) as a CuPy uint32 array; 0 for an empty range.

    Each page is cut into 4 KiB segments, one thread each (a long page is spread over many
    threads, a short one over few); the kernel explains how the segments' CRCs are combined.
    """
    import cupy as cp

    from kernels import gpu, gpu_arrays

    buffer = cp.asarray(buffer).view(cp.uint8).reshape(-1)
    starts, lengths = _chunk_arrays(buffer.shape[0], cp.asnumpy(starts), cp.asnumpy(lengths))
    pages = starts.shape[0]
    crc = gpu_arrays.full(pages, 0xFFFFFFFF, cp.uint32)  # the complement; each segment xors its term in
    if pages == 0:
        return crc
    segments = np.zeros(pages + 1, dtype=np.int64)
    np.cumsum(np.maximum(1, -(-lengths // CRC_SEGMENT)), out=segments[1:])
    device = cp.cuda.Device().id
    if device not in _device_powers:
        _device_powers[device] = cp.asarray(crc32_powers())
    gpu.launch("crc32_segments", int(segments[-1]), (
        buffer, *gpu_arrays.upload(starts, lengths, segments), np.int64(pages),
        _device_powers[device], crc))
    return crc
