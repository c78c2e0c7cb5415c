"""Whole-array steps on the GPU with no run-time compilation: the driver of
kernels/cuda/arrays.cu. CuPy's own ``arange``, ``full``, ``astype``, comparisons and reductions
compile a kernel with NVRTC on first use in a process whose CuPy cache lacks it, which every
fresh container pays for again; the pipeline's path calls these instead. Imported only when
arrays live on a GPU; kernels/backend.py holds the backend-neutral forms.
"""
from __future__ import annotations

import cupy as cp
import numpy as np
from cupy.cuda import cub

from kernels import gpu
from kernels.cuda_source import ARRAY_CASTS, ARRAY_TYPES, EDGE_TYPES, FLOAT_BITS, INTEGER_TYPES, template


def _element(dtype) -> str:
    name = np.dtype(dtype).name
    if name not in ARRAY_TYPES:
        raise TypeError(f"no array kernel for {name}")
    return ARRAY_TYPES[name]


def upload(*arrays) -> tuple:
    """Host arrays (NumPy, any dtypes and shapes) as device arrays of the same dtypes and shapes,
    by one copy on the current stream: views of one device buffer in which each array starts at
    a multiple of 8 bytes.

    The copy is from pageable memory, which the driver stages before the call returns, so the
    host arrays may be dropped at once. One copy for a launch's arguments, where
    ``cupy.asarray`` stages each array through a block of CuPy's pinned pool and records an
    event per block."""
    host = [np.ascontiguousarray(a) for a in arrays]
    at, end = [], 0
    for a in host:
        end = -(-end // 8) * 8
        at.append(end)
        end += a.nbytes
    packed = np.empty(max(end, 8), dtype=np.uint8)
    for a, start in zip(host, at):
        packed[start:start + a.nbytes] = a.reshape(-1).view(np.uint8)
    device = cp.empty(packed.shape[0], dtype=cp.uint8)
    device.set(packed)
    return tuple(device[start:start + a.nbytes].view(a.dtype).reshape(a.shape) for a, start in zip(host, at))


def arange(n: int, dtype):
    """0, 1, ..., n - 1 (int32, int64, uint32 or uint64)."""
    if np.dtype(dtype).name not in INTEGER_TYPES:
        raise TypeError(f"no array_iota for {np.dtype(dtype).name}")
    out = cp.empty(n, dtype=dtype)
    if n:
        gpu.launch(template("array_iota", _element(dtype)), n, (out, np.int64(n)))
    return out


def full(n: int, value, dtype):
    """n copies of ``value`` (int32, int64, uint32, uint64, float32 or float64)."""
    out = cp.empty(n, dtype=dtype)
    if n:
        gpu.launch(template("array_fill", _element(dtype)), n, (out, np.int64(n), np.dtype(dtype).type(value)))
    return out


def astype(values, dtype):
    """``values`` (contiguous) as ``dtype``: itself when it has that type, else an int32 <-> int64
    conversion."""
    dtype = np.dtype(dtype)
    if values.dtype == dtype:
        return values
    if (values.dtype.name, dtype.name) not in ARRAY_CASTS:
        raise TypeError(f"no array_cast from {values.dtype} to {dtype}")
    values = cp.ascontiguousarray(values)
    out = cp.empty(values.shape, dtype=dtype)
    n = int(values.size)
    if n:
        gpu.launch(template("array_cast", _element(values.dtype), _element(dtype)), n, (values, out, np.int64(n)))
    return out


def copy(values):
    """A copy of a contiguous array, by memcpy (``ndarray.copy`` launches a kernel of CuPy's)."""
    values = cp.ascontiguousarray(values)
    out = cp.empty_like(values)
    if values.nbytes:
        out.data.copy_from_device_async(values.data, values.nbytes)
    return out


def bincount(values, length: int):
    """int64 counts of each value in [0, length) among int32 or int64 ``values`` (all in range)."""
    values = cp.ascontiguousarray(values)
    counts = cp.zeros(length, dtype=cp.uint64)
    if values.shape[0]:
        gpu.launch(template("array_bincount", EDGE_TYPES[values.dtype.name]), values.shape[0],
                   (values, np.int64(values.shape[0]), counts))
    return counts.view(cp.int64)


def cumsum(values):
    """Inclusive prefix sums of a contiguous int64 array, in place, by CUB's scan as CuPy ships
    it compiled (``cupy.cumsum`` copies its input first with a kernel of its own)."""
    if values.shape[0] and cub.cub_scan(values, cub.CUPY_CUB_CUMSUM) is None:
        raise TypeError(f"CUB cannot scan {values.dtype} here")
    return values


def exclusive_sums(values):
    """n + 1 int64 sums: out[i] = values[0] + ... + values[i - 1]; out[n] is the total."""
    out = cp.zeros(values.shape[0] + 1, dtype=cp.int64)
    values = astype(cp.ascontiguousarray(values), np.int64)
    if values.shape[0]:
        out[1:].data.copy_from_device_async(values.data, values.nbytes)
        cumsum(out)
    return out


def take(values, index):
    """values[index] for an int64 ``index`` whose entries are all in range."""
    values, index = cp.ascontiguousarray(values), cp.ascontiguousarray(astype(index, np.int64))
    out = cp.empty(index.shape[0], dtype=values.dtype)
    if out.shape[0]:
        gpu.launch(template("array_take", _element(values.dtype)), out.shape[0],
                   (values, index, np.int64(out.shape[0]), out))
    return out


def mask_counts(mask):
    """int64 counts of the True entries of a bool array before each place (n + 1 entries)."""
    mask = cp.ascontiguousarray(mask)
    counts = cp.zeros(mask.shape[0] + 1, dtype=cp.int64)
    if mask.shape[0]:
        gpu.launch("mask_counts", mask.shape[0], (mask, np.int64(mask.shape[0]), counts))
        cumsum(counts)
    return counts


def compress(values, mask, counts):
    """values[mask] for contiguous ``values`` and ``mask``; ``counts`` is mask_counts(mask)."""
    out = cp.empty(int(counts[-1:].get()[0]), dtype=values.dtype)
    if out.shape[0]:
        gpu.launch(template("array_compress", _element(values.dtype)), values.shape[0],
                   (cp.ascontiguousarray(values), cp.ascontiguousarray(mask), counts, np.int64(values.shape[0]), out))
    return out


EXACT_SLOTS = 2098  # arrays.cu's exact sums: slots of binary exponents (tasks/forest_weight.py)


def exact_slot_sums(values):
    """Host int64 (hi, lo) sums per slot of float32 or float64 values (arrays.cu, exact_slot_sums)."""
    values = cp.ascontiguousarray(values)
    sums = cp.zeros(2 * EXACT_SLOTS + 1, dtype=cp.uint64)
    if values.shape[0]:
        gpu.launch(template("exact_slot_sums", *FLOAT_BITS[values.dtype.name]), values.shape[0],
                   (values, np.int64(values.shape[0]), sums))
    sums = sums.get().view(np.int64)
    if sums[-1]:
        raise ValueError(f"{sums[-1]} values are NaN or infinite: no exact sum")
    return sums[:EXACT_SLOTS], sums[EXACT_SLOTS:-1]


def _counted(name: str, n: int, args: tuple) -> int:
    count = cp.zeros(1, dtype=cp.uint64)
    if n:
        gpu.launch(name, n, args + (count,))
    return int(count.get()[0])


def count_true(mask) -> int:
    """True entries of a bool array."""
    mask = cp.ascontiguousarray(mask)
    return _counted("count_true", int(mask.size), (mask, np.int64(mask.size)))


def count_equal(a, b) -> int:
    """Places where two int32 or int64 arrays of one length hold the same value."""
    if a.dtype != b.dtype:
        a, b = astype(a, np.int64), astype(b, np.int64)
    a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
    return _counted(template("count_equal", EDGE_TYPES[a.dtype.name]), int(a.size), (a, b, np.int64(a.size)))


def count_at_least(values, low: int) -> int:
    """Entries of an int32 or int64 array at or above ``low``."""
    values = cp.ascontiguousarray(values)
    return _counted(template("count_at_least", EDGE_TYPES[values.dtype.name]), int(values.size),
                    (values, np.int64(values.size), values.dtype.type(low)))


def count_ends_reached(distance, ends) -> int:
    """Entries of ``ends`` (int32 or int64) whose int32 ``distance`` is at least 0."""
    distance, ends = cp.ascontiguousarray(distance), cp.ascontiguousarray(ends)
    return _counted(template("count_ends_reached", EDGE_TYPES[ends.dtype.name]), int(ends.shape[0]),
                    (distance, ends, np.int64(ends.shape[0])))


def count_nonfinite(values, nan_only: bool = False) -> int:
    """NaN and infinite entries of a float32 or float64 array (NaN alone with ``nan_only``)."""
    values = cp.ascontiguousarray(values)
    return _counted(template("count_nonfinite", *FLOAT_BITS[values.dtype.name]), int(values.size),
                    (values, np.int64(values.size), np.int32(nan_only)))
