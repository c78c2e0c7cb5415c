"""The CSR build and renumbering on the GPU (kernels/cuda/graph.cu), kernels/graph.py's CuPy
side; launched through kernels/gpu.py.

CSR build: count degrees with atomics, exclusive prefix sum (int64 offsets), then scatter with
per-vertex atomic cursors, reading the edge list once and writing both arcs of an edge in the
same pass. Rows come out in arrival order, not input order.
Renumbering: a presence bitmap over the id range, its rank, and a rewrite of the int32 offsets
in place (kernels/graph.py explains when the range is narrow enough, and the sorted fallback).
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu_arrays
from kernels.cuda_source import ID_TYPES, template
from kernels.gpu import launch
from kernels.structures import CSR, check_vertex_count

# ---- CSR ------------------------------------------------------------------------------------

BOTH, FORWARD, BACKWARD = 0, 1, 2


def _csr(src, dst, n: int, mode: int, skip_loops: bool) -> CSR:
    src = src.astype(cp.int32, copy=False)
    dst = dst.astype(cp.int32, copy=False)
    m = int(src.shape[0])
    degree = cp.zeros(n + 1, dtype=cp.int64)
    args = (src, dst, np.int64(m), np.int32(mode), np.int32(skip_loops))
    if m:
        launch("csr_count", m, args + (degree,))
    indptr = gpu_arrays.cumsum(degree)  # in place: degree[v + 1] becomes indptr[v + 1]
    del degree
    indices = cp.empty(int(indptr[-1]), dtype=cp.int32)
    if indices.shape[0]:
        cursor = gpu_arrays.copy(indptr[:-1])
        launch("csr_fill", m, args + (cursor, indices))
    return CSR(indptr=indptr, indices=indices, n=n)


def csr_symmetric(src, dst, n: int) -> CSR:
    """CSR of an undirected edge list: both arcs of every edge, self-loops left out."""
    return _csr(src, dst, n, BOTH, True)


def csr_one_way(src, dst, n: int) -> CSR:
    """CSR of the arcs src -> dst, self-loops left out."""
    return _csr(src, dst, n, FORWARD, True)


def csr_scatter(rows, cols, n: int) -> CSR:
    """CSR of the arcs rows[i] -> cols[i], every one kept (kernels.graph.build_csr's GPU form)."""
    return _csr(rows, cols, n, FORWARD, False)


# ---- renumbering ----------------------------------------------------------------------------

def id_bitmap(span: int):
    return cp.zeros((span + 31) // 32, dtype=cp.uint32)


def id_mark(ids, lo: int, bits, offsets) -> None:
    """Mark a chunk's ids present and write their offsets from lo (int32) into `offsets`."""
    name = ID_TYPES.get(ids.dtype.name)
    if name is None:
        ids, name = ids.astype(cp.int64), ID_TYPES["int64"]
    m = int(ids.shape[0])
    if m:
        launch(template("ids_mark", name), m, (ids, np.int64(m), np.uint64(lo % 2**64), bits, offsets))


def id_finish(bits, lo: int, span: int, dtype, arrays):
    """Dense numbers for the marked offsets in `arrays` (in place) and the ids, ascending."""
    words = int(bits.shape[0])
    prefix = cp.empty(words, dtype=cp.int64)
    launch("ids_word_counts", words, (bits, np.int64(words), prefix))
    gpu_arrays.cumsum(prefix)
    count = int(prefix[-1])
    dtype = np.dtype(dtype)
    name = ID_TYPES.get(dtype.name, ID_TYPES["int64"])
    ids = cp.empty(count, dtype=dtype if dtype.name in ID_TYPES else np.int64)
    launch(template("ids_list", name), words, (bits, np.int64(words), prefix, np.uint64(lo % 2**64), ids))
    if count < span:  # some ids of the range are absent: offsets -> ranks
        for a in arrays:
            launch("ids_rank", a.shape[0], (a, np.int64(a.shape[0]), bits, prefix))
    return ids.astype(dtype, copy=False)


def renumber_sorted(src, dst):
    """Renumbering by sorting, for ids too spread for a bitmap: the distinct ids of each column,
    then of both, then a binary search per edge. Peak: one column's sort besides the inputs."""
    ids = cp.unique(cp.concatenate([cp.unique(src), cp.unique(dst)]))
    check_vertex_count(int(ids.shape[0]))
    return (cp.searchsorted(ids, src).astype(cp.int32), cp.searchsorted(ids, dst).astype(cp.int32), ids)
