"""Snappy streams checked for well-formedness before nvCOMP decodes them, on the host (the
reference) and on the GPU (kernels/cuda/parquet_values.cu ``snappy_check``, which states the
rules): nvCOMP's Snappy decoder traps on a damaged stream, ending the process's CUDA context, so
tasks.parquet.codec.decompress sends it only streams that pass, and the host's codec names the
fault of the others.

A Snappy stream (the SNAPPY codec's pages, Compression.md) starts with its uncompressed size as a
ULEB128 of at most 5 bytes, then elements: literals and back-references. A stream passes when
every element lies inside the input, every copy reaches back no further than the bytes produced
so far, and the output is exactly the declared size. A fault is 1 + the stream's byte where the
walk fails; 0 means well-formed.

NumPy only at the host's entry points; CuPy is imported by the GPU's when it is called.
"""
from __future__ import annotations

import numpy as np

from kernels.parquet.format import read_uleb128

PREAMBLE_BYTES = 5  # the longest ULEB128 of a 32-bit size
WARPS = 4  # warps per block of the GPU walk (the kernel's SNAPPY_WARPS): one stream per warp


def preamble(stream) -> tuple[int, int] | None:
    """(the uncompressed size a stream states, the preamble's length), or None where its first
    PREAMBLE_BYTES bytes hold no whole ULEB128."""
    try:
        return read_uleb128(stream[:PREAMBLE_BYTES], 0)
    except IndexError:
        return None


def stream_fault(stream: bytes, declared: int) -> int:
    """0 when ``stream`` is a well-formed Snappy stream of exactly ``declared`` bytes; else 1 +
    the byte where it fails."""
    end = len(stream)
    found = preamble(stream)
    if found is None:
        return 1 + min(end, PREAMBLE_BYTES)
    size, pos = found
    if size > 0xFFFFFFFF or size != declared:
        return 1 + pos
    produced = 0
    while pos < end:
        at, tag = pos, stream[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:
            length = tag >> 2
            if length >= 60:
                extra = length - 59
                if pos + extra > end:
                    return 1 + at
                length = int.from_bytes(stream[pos:pos + extra], "little")
                pos += extra
            length += 1
            if pos + length > end or produced + length > size:
                return 1 + at
            pos += length
            produced += length
            continue
        need = (1, 2, 4)[kind - 1]
        if pos + need > end:
            return 1 + at
        if kind == 1:
            length, offset = 4 + ((tag >> 2) & 7), ((tag >> 5) << 8) | stream[pos]
        else:
            length, offset = (tag >> 2) + 1, int.from_bytes(stream[pos:pos + need], "little")
        pos += need
        if offset == 0 or offset > produced or produced + length > size:
            return 1 + at
        produced += length
    return 0 if produced == size else 1 + end


def stream_faults(data, starts, lengths, declared) -> np.ndarray:
    """``stream_fault`` of each stream ``data[starts[i] : starts[i] + lengths[i]]`` (host uint8),
    int64: the NumPy reference of ``stream_faults_on_gpu``."""
    return np.array([stream_fault(bytes(data[s:s + n]), d) for s, n, d in zip(starts, lengths, declared)],
                    dtype=np.int64)


def stream_faults_on_gpu(data, starts, lengths, declared) -> np.ndarray:
    """``stream_faults`` of streams in a device buffer (CuPy uint8; host offset arrays), by one
    launch of the kernel; the statuses come back to the host."""
    import cupy as cp

    from kernels import gpu, gpu_arrays

    streams = len(starts)
    status = cp.empty(max(streams, 1), dtype=cp.int64)
    if streams:
        blocks = min(-(-streams // WARPS), 1 << 20)
        ranges = gpu_arrays.upload(*(np.asarray(a, dtype=np.int64) for a in (starts, lengths, declared)))
        gpu.kernel("snappy_check")((blocks,), (WARPS * 32,), (data, *ranges, np.int64(streams), status))
    return status[:streams].get()
