"""Edge lists, renumbering and CSR construction.

Array encodings (all on one backend, NumPy or CuPy):
- vertex ids inside the kernels are dense int32 in [0, n); ``ids[i]`` is vertex i's original id
  (host array of any integer dtype, or of string codes mapped back by the I/O layer).
- ``EdgeList``: one entry per input edge that survived self-loop removal. ``src[e]``, ``dst[e]``
  (int32), ``weight[e]`` (float64 or None) and ``row[e]`` (int64, the edge's row in the input
  table, kept so results and error messages can name it).
- ``CSR``: ``indptr`` int64 [n+1] (exclusive prefix sum of degrees), ``indices`` int32 [nnz];
  the neighbours of v are ``indices[indptr[v]:indptr[v+1]]`` in input order.
- ``Graph``: ``out`` is the CSR of arcs src->dst (both directions when undirected); ``inc`` is
  the CSR of arcs reversed (the same object when undirected). Bottom-up BFS reads ``inc``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.backend import array_module, is_gpu

MAX_VERTICES = 2**31 - 1  # vertex ids are int32 inside the kernels
# Ids in [0, LOOKUP_SLACK * edges + LOOKUP_MIN) are renumbered through a presence table (O(E))
# instead of a sort; beyond that the table would cost more memory than sorting.
LOOKUP_SLACK = 4
LOOKUP_MIN = 1 << 20


@dataclass
class EdgeList:
    src: object
    dst: object
    weight: object | None
    row: object
    n: int

    @property
    def m(self) -> int:
        return int(self.src.shape[0])


@dataclass
class CSR:
    indptr: object
    indices: object
    n: int

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])

    def degree(self):
        return self.indptr[1:] - self.indptr[:-1]


@dataclass
class Graph:
    out: CSR
    inc: CSR
    directed: bool

    @property
    def n(self) -> int:
        return self.out.n


def renumber(src, dst):
    """Dense int32 vertex numbers for integer ids, ordered by id.

    Returns ``(src_dense, dst_dense, ids)`` where ``ids`` (same backend) holds the original id of
    each dense vertex in ascending order. Non-negative ids below a bound go through a presence
    table and a prefix sum (no sort); others through a sort-based unique.
    """
    xp = array_module(src)
    m = int(src.shape[0])
    if m == 0:
        return src.astype(np.int32), dst.astype(np.int32), src[:0]
    lo = min(int(src.min()), int(dst.min()))
    hi = max(int(src.max()), int(dst.max()))
    if src.dtype.kind in "iu" and lo >= 0 and hi < LOOKUP_SLACK * m + LOOKUP_MIN:
        present = xp.zeros(hi + 1, dtype=np.bool_)
        present[src] = True
        present[dst] = True
        ids = xp.flatnonzero(present)
        if ids.shape[0] == hi + 1:  # already dense 0..n-1: no renumbering at all
            return src.astype(np.int32), dst.astype(np.int32), ids
        if ids.shape[0] > MAX_VERTICES:
            raise ValueError(f"{ids.shape[0]} distinct vertex ids: more than {MAX_VERTICES} are not supported")
        dense = xp.cumsum(present, dtype=np.int64) - 1
        return dense[src].astype(np.int32), dense[dst].astype(np.int32), ids
    ids, inverse = xp.unique(xp.concatenate([src, dst]), return_inverse=True)
    if ids.shape[0] > MAX_VERTICES:
        raise ValueError(f"{ids.shape[0]} distinct vertex ids: more than {MAX_VERTICES} are not supported")
    inverse = inverse.reshape(-1).astype(np.int32)
    return inverse[:m], inverse[m:], ids


def edge_list(src, dst, weight, n: int) -> EdgeList:
    """Drop self-loops (they never lie on a shortest path or in a spanning forest)."""
    xp = array_module(src)
    keep = src != dst
    row = xp.flatnonzero(keep).astype(np.int64)
    return EdgeList(
        src=src[keep], dst=dst[keep], weight=None if weight is None else weight[keep], row=row, n=n
    )


# The host CSR sorts one 64-bit key per arc, ``row << shift | i`` with i the arc's position in
# its input array. Keys differ in i, so NumPy's unstable SIMD quicksort (AVX2 / AVX-512) yields
# the stable order by row, i.e. each row's neighbours in input order; at Kron-20 (33.5 M arcs)
# it beats both a two-digit stable radix argsort and scipy's COO -> CSR. Keys are packed and
# decoded HOST_CHUNK arcs at a time, so the only temporary spanning all arcs is the key array.
HOST_CHUNK = 1 << 20


def _sorted_row_keys(row_parts, n: int):
    """Sorted keys ``row << shift | i`` of the arcs whose rows are the arrays ``row_parts`` laid
    end to end (i: position within its part). Returns (keys uint64, shift)."""
    shift = max(1, (max(int(p.shape[0]) for p in row_parts) - 1).bit_length())
    if max(1, n - 1).bit_length() + shift > 64:
        raise ValueError(f"{n} vertices and {max(p.shape[0] for p in row_parts)} arcs do not fit a 64-bit CSR key")
    keys = np.empty(sum(int(p.shape[0]) for p in row_parts), dtype=np.uint64)
    start = 0
    for part in row_parts:
        for lo in range(0, part.shape[0], HOST_CHUNK):
            hi = min(lo + HOST_CHUNK, part.shape[0])
            chunk = keys[start + lo:start + hi]
            chunk[:] = part[lo:hi]
            chunk <<= np.uint64(shift)
            chunk |= np.arange(lo, hi, dtype=np.uint64)
        start += part.shape[0]
    keys.sort()
    return keys, shift


def _host_csr(row_parts, n: int, neighbour) -> CSR:
    """CSR on the host from sorted row keys; ``neighbour(i, row)`` gives the arcs' other ends."""
    degree = np.bincount(row_parts[0], minlength=n)
    for part in row_parts[1:]:
        degree += np.bincount(part, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(degree, out=indptr[1:])
    keys, shift = _sorted_row_keys(row_parts, n)
    low = np.uint64((1 << shift) - 1)
    indices = np.empty(keys.shape[0], dtype=np.int32)
    for lo in range(0, keys.shape[0], HOST_CHUNK):
        chunk = keys[lo:lo + HOST_CHUNK]
        indices[lo:lo + chunk.shape[0]] = neighbour((chunk & low).astype(np.intp), chunk >> np.uint64(shift))
    return CSR(indptr=indptr, indices=indices, n=n)


def build_csr(rows, cols, n: int) -> CSR:
    """CSR of arcs rows[i] -> cols[i]: count degrees, exclusive prefix sum, scatter."""
    if is_gpu(rows):
        from kernels.gpu import csr_scatter

        return csr_scatter(rows, cols, n)
    return _host_csr([rows], n, lambda i, _row: cols[i])


def _symmetric_csr_host(src, dst, n: int) -> CSR:
    """Both directions of every edge without concatenating them: the arc of edge e leaving
    ``row`` ends at ``src[e] ^ dst[e] ^ row``. Neighbours come in input (edge) order."""
    other = src ^ dst
    return _host_csr([src, dst], n, lambda e, row: other[e] ^ row.astype(other.dtype))


def build_graph(edges: EdgeList, directed: bool = False) -> Graph:
    """Out- and in-CSR of an edge list. Undirected graphs store every edge in both directions
    once, so ``out`` is symmetric and serves as ``inc`` too."""
    xp = array_module(edges.src)
    if directed:
        out = build_csr(edges.src, edges.dst, edges.n)
        inc = build_csr(edges.dst, edges.src, edges.n)
        return Graph(out=out, inc=inc, directed=True)
    if not is_gpu(edges.src):
        sym = _symmetric_csr_host(edges.src, edges.dst, edges.n)
        return Graph(out=sym, inc=sym, directed=False)
    rows = xp.concatenate([edges.src, edges.dst])
    cols = xp.concatenate([edges.dst, edges.src])
    sym = build_csr(rows, cols, edges.n)
    return Graph(out=sym, inc=sym, directed=False)
