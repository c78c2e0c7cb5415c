"""The batched Parquet page steps on the GPU: the driver of kernels/cuda/parquet_values.cu, with
the inputs and outputs of kernels.parquet.batch.HostSteps (its NumPy reference): per-page
arguments come as host NumPy arrays and go up in one copy per step; statuses come back to the
host, the only copies back."""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu, gpu_arrays
from kernels.cuda_source import VALUE_TYPES, template

# one block per page: a page holds up to ~1 M values, far more than a block's threads
PAGE_BLOCK = 256


def _up(*columns):
    """Per-page argument columns (host; int64 unless given as (values, dtype)) in one upload."""
    return gpu_arrays.upload(*(np.asarray(c[0], c[1]) if isinstance(c, tuple) else np.asarray(c, np.int64)
                               for c in columns))


def copy_segments(src, src_at, dst, dst_at, lengths) -> None:
    """Byte ranges of ``src`` copied into ``dst`` (device uint8 arrays; host offset arrays)."""
    segments = len(src_at)
    if segments:
        d_src_at, d_dst_at, d_lengths = _up(src_at, dst_at, lengths)
        gpu.kernel("copy_segments")((min(segments, 1 << 20),), (PAGE_BLOCK,),
                                    (src, d_src_at, dst, d_dst_at, d_lengths, np.int64(segments)))


def page_levels(body, body_start, body_size, version, max_def, def_length, num_values):
    """(values_at, present, status) per data page, host arrays."""
    pages = body_start.shape[0]
    if not pages:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32)
    values_at, present = cp.empty(pages, dtype=cp.int64), cp.empty(pages, dtype=cp.int64)
    status = cp.empty(pages, dtype=cp.int32)
    columns = _up(body_start, body_size, (version, np.int32), (max_def, np.int32), def_length, num_values)
    gpu.launch("page_levels", pages, (body, *columns, np.int64(pages), values_at, present, status))
    return values_at.get(), present.get(), status.get()


def _addresses(array, index, width):
    """Device addresses of ``array``'s elements at ``index`` (host int64), a host column."""
    return array.data.ptr + np.asarray(index, dtype=np.int64).astype(np.uint64) * np.uint64(width), np.uint64


def _place_addresses(places, width):
    """Device addresses of each page's first value (kernels.parquet.batch.Places), a host column."""
    bases = np.array([a.data.ptr for a in places.arrays], np.uint64)
    return bases[places.which] + places.row.astype(np.uint64) * np.uint64(width), np.uint64


def plain_copy(body, src_at, places, counts, width) -> None:
    """Page i's counts[i] values of ``width`` bytes, from body byte src_at[i] to its place
    (kernels.parquet.batch.Places)."""
    pages = src_at.shape[0]
    if not pages:
        return
    blocks = min(pages, 1 << 20)
    d_src_at, d_dst, d_counts = _up(src_at, _place_addresses(places, width), counts)
    gpu.kernel(template("plain_copy", VALUE_TYPES[width]))(
        (blocks,), (PAGE_BLOCK,), (body, d_src_at, d_dst, d_counts, np.int64(pages)))


def dictionary_pages(body, values_at, values_end, counts, dictionary_size, dictionary, dictionary_at, places,
                     width) -> np.ndarray:
    """Dictionary-encoded pages' values written to their places; status per page (host)."""
    pages = values_at.shape[0]
    d_values_at, d_values_end, d_counts, d_dictionary_size, d_dictionary, d_out = _up(
        values_at, values_end, counts, dictionary_size, _addresses(dictionary, dictionary_at, width),
        _place_addresses(places, width))
    args = (body, d_values_at, d_values_end, d_counts, d_dictionary_size, np.int64(pages))
    runs = cp.empty(pages, dtype=cp.int64)
    width_of = cp.empty(pages, dtype=cp.int32)
    status = cp.empty(pages, dtype=cp.int32)
    null = np.uint64(0)
    gpu.launch("dictionary_runs", pages, args + (null, runs, width_of, status, null, null, null, null, null))
    sums = gpu_arrays.exclusive_sums(runs)
    first, total = sums[:pages], int(sums[pages])
    if total:
        run_page, run_first, run_count, run_payload = (cp.empty(total, dtype=cp.int64) for _ in range(4))
        run_packed = cp.empty(total, dtype=cp.uint8)
        gpu.launch("dictionary_runs", pages, args + (first, runs, width_of, status, run_page, run_first, run_count,
                                                     run_payload, run_packed))
        gpu.launch(template("dictionary_expand", VALUE_TYPES[width]), total * 32,
                   (body, run_page, run_first, run_count, run_payload, run_packed, np.int64(total), width_of,
                    d_dictionary, d_dictionary_size, d_out, status))
    return status.get()
