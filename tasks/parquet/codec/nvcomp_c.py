"""nvCOMP's batched C API (libnvcomp.so.6 of the ``nvidia-libnvcomp-cu13`` wheel) called through
ctypes: the page reader's decompression and the page writer's compression.

Why not nvCOMP's Python module: its ``decode`` takes one Python object per page (``as_arrays``
over lists of CuPy slices), which at 41 k pages costs about a second of host time; the C API
takes device arrays of pointers and sizes, which CuPy builds from one base address and
offset arrays without a Python object per page. The C API also returns each page's status
and decompressed size, so a page decoding to fewer bytes than its header declares is found.

Written against nvCOMP 6.0's headers (include/nvcomp/{snappy,zstd,lz4,gzip}.h):
``nvcompBatched<A>DecompressGetTempSize(num_chunks, max_uncompressed_chunk_bytes, opts,
&temp_bytes, max_total_uncompressed_bytes, stream)`` and ``nvcompBatched<A>DecompressAsync(
compressed_ptrs, compressed_bytes, uncompressed_buffer_bytes, uncompressed_actual_bytes,
num_chunks, temp_ptr, temp_bytes, uncompressed_ptrs, opts, statuses, stream)``; each
algorithm's options struct is 64 bytes, all zero meaning the defaults (backend DEFAULT). It runs
on the GPU machine only. Compression: ``nvcompBatched<A>CompressGetMaxOutputChunkSize(
max_uncompressed_chunk_bytes, opts, &max_compressed_chunk_bytes)``, ``...CompressGetTempSize``
(as for decompression) and ``...CompressAsync(uncompressed_ptrs, uncompressed_bytes,
max_uncompressed_chunk_bytes, num_chunks, temp_ptr, temp_bytes, compressed_ptrs,
compressed_bytes, opts, statuses, stream)``, 64-byte options, zero for the defaults.
"""
from __future__ import annotations

import ctypes
import threading
from pathlib import Path

import numpy as np

ALGORITHMS = ("Snappy", "Zstd", "LZ4", "Gzip")
ENCODERS = ("Snappy", "Zstd", "LZ4")  # nvCOMP has no Gzip encoder
_lib = None
_lock = threading.Lock()


class _Options(ctypes.Structure):
    """Any algorithm's 64-byte decompression options, zeroed: the defaults."""

    _fields_ = [("backend", ctypes.c_int), ("reserved", ctypes.c_char * 60)]


_P, _N = ctypes.c_void_p, ctypes.c_size_t
_SIZE_QUERY = [_N, _N, _Options, ctypes.POINTER(_N), _N, _P]  # chunks, largest, options, &bytes, total, stream
# function name (algorithm in braces) -> (algorithms, argument types), as the headers declare them
_SIGNATURES = {
    "nvcompBatched{}DecompressGetTempSize": (ALGORITHMS, _SIZE_QUERY),
    "nvcompBatched{}DecompressAsync": (ALGORITHMS, [_P, _P, _P, _P, _N, _P, _N, _P, _Options, _P, _P]),
    "nvcompBatched{}CompressGetMaxOutputChunkSize": (ENCODERS, [_N, _Options, ctypes.POINTER(_N)]),
    "nvcompBatched{}CompressGetTempSize": (ENCODERS, _SIZE_QUERY),
    "nvcompBatched{}CompressAsync": (ENCODERS, [_P, _P, _N, _N, _P, _N, _P, _P, _Options, _P, _P]),
}


def library():
    """libnvcomp.so.6 from the wheel beside nvCOMP's Python module, loaded once."""
    global _lib
    with _lock:
        if _lib is None:
            from nvidia import libnvcomp  # noqa: the wheel that ships the shared library

            folders = [Path(p) / "lib64" for p in libnvcomp.__path__]
            path = next(str(f / "libnvcomp.so.6") for f in folders if (f / "libnvcomp.so.6").exists())
            lib = ctypes.CDLL(path)
            for name, (algorithms, argtypes) in _SIGNATURES.items():
                for a in algorithms:
                    function = getattr(lib, name.format(a))
                    function.restype, function.argtypes = ctypes.c_int, argtypes
            _lib = lib
    return _lib


def decompress(algorithm: str, source, src_at, src_bytes, dest, dst_at, dst_bytes):
    """Streams source[src_at[i]:src_at[i] + src_bytes[i]] decompressed into
    dest[dst_at[i]:dst_at[i] + dst_bytes[i]] (CuPy uint8 arrays; host int64 offset arrays), in
    one call on the current stream. Returns per stream (nvCOMP status, bytes decompressed), host
    arrays, after the stream is synchronized."""
    import cupy

    from kernels import gpu_arrays

    lib = library()
    n = len(src_at)
    stream = cupy.cuda.get_current_stream().ptr
    options = _Options()
    in_ptrs, out_ptrs, in_bytes, out_bytes = gpu_arrays.upload(
        np.asarray(src_at, np.uint64) + np.uint64(source.data.ptr),
        np.asarray(dst_at, np.uint64) + np.uint64(dest.data.ptr),
        np.asarray(src_bytes, np.uint64), np.asarray(dst_bytes, np.uint64))
    actual = cupy.zeros(n, dtype=cupy.uint64)
    statuses = cupy.zeros(n, dtype=cupy.int32)
    temp_bytes = ctypes.c_size_t(0)
    largest, total = int(np.max(dst_bytes)), int(np.sum(dst_bytes))
    code = getattr(lib, f"nvcompBatched{algorithm}DecompressGetTempSize")(
        n, largest, options, ctypes.byref(temp_bytes), total, stream)
    if code != 0:
        raise RuntimeError(f"nvCOMP {algorithm}: temporary size query failed (status {code})")
    temp = cupy.empty(max(temp_bytes.value, 1), dtype=cupy.uint8)
    code = getattr(lib, f"nvcompBatched{algorithm}DecompressAsync")(
        in_ptrs.data.ptr, in_bytes.data.ptr, out_bytes.data.ptr, actual.data.ptr, n, temp.data.ptr,
        temp_bytes.value, out_ptrs.data.ptr, options, statuses.data.ptr, stream)
    if code != 0:
        raise RuntimeError(f"nvCOMP {algorithm}: decompression could not start (status {code})")
    return statuses.get(), actual.get().astype(np.int64)


def compress(algorithm: str, pointers, sizes, alignment: int = 8):
    """Device buffers (addresses ``pointers``, byte counts ``sizes``; host arrays) compressed in
    one call on the current stream. Returns (one CuPy uint8 buffer holding the compressed
    streams back to back, host int64 offsets of each stream in it, plus the end), after the
    stream is synchronized; raises RuntimeError when nvCOMP refuses one."""
    import cupy

    from kernels import gpu_arrays
    from kernels.parquet import gpu_pages

    lib = library()
    n = len(sizes)
    stream = cupy.cuda.get_current_stream().ptr
    options = _Options()
    largest, total = int(np.max(sizes)), int(np.sum(sizes))
    bound = ctypes.c_size_t(0)
    temp_bytes = ctypes.c_size_t(0)
    for code in (getattr(lib, f"nvcompBatched{algorithm}CompressGetMaxOutputChunkSize")(
                     largest, options, ctypes.byref(bound)),
                 getattr(lib, f"nvcompBatched{algorithm}CompressGetTempSize")(
                     n, largest, options, ctypes.byref(temp_bytes), total, stream)):
        if code != 0:
            raise RuntimeError(f"nvCOMP {algorithm}: size query failed (status {code})")
    slot = -(-bound.value // alignment) * alignment  # each stream's room, aligned as nvCOMP wants
    room = cupy.empty(max(n * slot, 1), dtype=cupy.uint8)
    out_at = np.arange(n, dtype=np.int64) * slot
    out_ptrs, in_ptrs, in_bytes = gpu_arrays.upload(
        out_at.astype(np.uint64) + np.uint64(room.data.ptr), np.asarray(pointers, np.uint64),
        np.asarray(sizes, np.uint64))
    out_bytes = cupy.zeros(n, dtype=cupy.uint64)
    statuses = cupy.zeros(n, dtype=cupy.int32)
    temp = cupy.empty(max(temp_bytes.value, 1), dtype=cupy.uint8)
    code = getattr(lib, f"nvcompBatched{algorithm}CompressAsync")(
        in_ptrs.data.ptr, in_bytes.data.ptr, largest, n, temp.data.ptr, temp_bytes.value, out_ptrs.data.ptr,
        out_bytes.data.ptr, options, statuses.data.ptr, stream)
    if code != 0 or statuses.get().any():  # a few statuses: read on the host
        raise RuntimeError(f"nvCOMP {algorithm}: compression failed (status {code})")
    lengths = out_bytes.get().astype(np.int64)
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=starts[1:])
    packed = cupy.empty(max(int(starts[-1]), 1), dtype=cupy.uint8)
    gpu_pages.copy_segments(room, out_at, packed, starts[:-1], lengths)
    return packed, starts
