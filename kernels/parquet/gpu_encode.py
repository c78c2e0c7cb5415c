"""Result columns' hybrid and dictionary encodings on the GPU: the driver of
kernels/cuda/parquet_encode.cu, called by kernels/parquet/encode.py for CuPy arrays. The bytes
are encode.py's own (its NumPy code is the reference); only page boundaries and the few sizes
that decide an allocation come back to the host."""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu, gpu_arrays
from kernels.cuda_source import BIT_PATTERN_TYPES, HYBRID_TYPES, template


def _last(values) -> int:
    return int(values[-1:].get()[0])


def hybrid(values, starts, group_offsets, bit_width: int):
    """encode.hybrid for a bool or uint32 CuPy array: ``starts`` and ``group_offsets`` are its
    host page tables (pages + 1 entries each), with at least one group. Returns (bytes, offsets)."""
    values = cp.ascontiguousarray(values)
    if values.dtype.name not in HYBRID_TYPES:
        raise TypeError(f"no hybrid encoder for {values.dtype}")
    v = HYBRID_TYPES[values.dtype.name]
    pages, groups = int(starts.shape[0]) - 1, int(group_offsets[-1])
    page_args = (values, *gpu_arrays.upload(starts, group_offsets), np.int64(pages))
    run_id = cp.empty(groups, dtype=cp.int64)
    gpu.launch(template("hybrid_run_flags", v), groups, page_args + (np.int64(groups), run_id))
    runs = _last(gpu_arrays.cumsum(run_id))
    run_start = cp.empty(runs, dtype=cp.int64)
    gpu.launch("hybrid_run_starts", groups, (run_id, np.int64(groups), run_start))
    header, run_offset = cp.empty(runs, dtype=cp.uint64), cp.zeros(runs + 1, dtype=cp.int64)
    width = np.int32(bit_width)
    gpu.launch(template("hybrid_run_lengths", v), runs,
               page_args + (np.int64(groups), run_start, np.int64(runs), width, header, run_offset))
    out = cp.zeros(_last(gpu_arrays.cumsum(run_offset)), dtype=cp.uint8)
    gpu.launch(template("hybrid_write_runs", v), runs,
               page_args + (run_start, np.int64(runs), width, header, run_offset, out))
    gpu.launch(template("hybrid_write_groups", v), groups,
               page_args + (np.int64(groups), run_id, run_start, width, header, run_offset, out))
    offsets = cp.empty(pages + 1, dtype=cp.int64)
    gpu.launch("hybrid_page_offsets", pages + 1, (page_args[2], np.int64(pages), run_id, run_offset, offsets))
    return out, offsets.get()


def _bit_patterns(values):
    bits = cp.ascontiguousarray(values).view(BIT_PATTERN_TYPES[values.dtype.itemsize][0])
    return bits, BIT_PATTERN_TYPES[values.dtype.itemsize][1]


def _sorted_patterns(values):
    bits, t = _bit_patterns(values)
    ordered = gpu_arrays.copy(bits)
    ordered.sort()  # in place (cupy.sort copies first, with a kernel of its own)
    return bits, ordered, t


def dictionary(values):
    """encode.dictionary for a CuPy array of 4- or 8-byte values: (distinct values ascending by
    bit pattern read as a signed integer, uint32 index of each value)."""
    n = int(values.shape[0])
    bits, ordered, t = _sorted_patterns(values)
    number = cp.empty(n, dtype=cp.int64)
    index = cp.empty(n, dtype=cp.uint32)
    if not n:
        return values[:0], index
    gpu.launch(template("dictionary_flags", t), n, (ordered, np.int64(n), number))
    entries = _last(gpu_arrays.cumsum(number))
    distinct = cp.empty(entries, dtype=bits.dtype)
    gpu.launch(template("dictionary_distinct", t), n, (ordered, np.int64(n), number, distinct))
    del number, ordered
    gpu.launch(template("dictionary_index", t), n, (bits, np.int64(n), distinct, np.int64(entries), index))
    return distinct.view(values.dtype), index


def distinct_count(values) -> int:
    """Distinct bit patterns among a CuPy array of 4- or 8-byte values."""
    n = int(values.shape[0])
    if n < 2:
        return n
    _, ordered, _ = _sorted_patterns(values)
    return n - gpu_arrays.count_equal(ordered[1:], ordered[:-1])
