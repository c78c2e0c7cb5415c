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


def _counting_order(keys, n: int):
    """Stable permutation that sorts int32 ``keys`` in [0, n): an LSD radix sort with 16-bit
    digits, each digit a NumPy stable (radix) argsort of uint16. This is the host form of
    "scatter with per-vertex cursors": O(E) per digit, no comparison sort."""
    order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    if n > 1 << 16:
        high = (keys[order] >> 16).astype(np.uint16)
        order = order[np.argsort(high, kind="stable")]
    return order


def build_csr(rows, cols, n: int) -> CSR:
    """CSR of arcs rows[i] -> cols[i]: count degrees, exclusive prefix sum, scatter."""
    xp = array_module(rows)
    if is_gpu(rows):
        from kernels.gpu import csr_scatter

        return csr_scatter(rows, cols, n)
    degree = np.bincount(rows, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(degree, out=indptr[1:])
    indices = cols[_counting_order(rows, n)].astype(np.int32, copy=False)
    return CSR(indptr=indptr, indices=xp.asarray(indices), n=n)


def build_graph(edges: EdgeList, directed: bool = False) -> Graph:
    """Out- and in-CSR of an edge list. Undirected graphs store every edge in both directions
    once, so ``out`` is symmetric and serves as ``inc`` too."""
    xp = array_module(edges.src)
    if directed:
        out = build_csr(edges.src, edges.dst, edges.n)
        inc = build_csr(edges.dst, edges.src, edges.n)
        return Graph(out=out, inc=inc, directed=True)
    rows = xp.concatenate([edges.src, edges.dst])
    cols = xp.concatenate([edges.dst, edges.src])
    sym = build_csr(rows, cols, edges.n)
    return Graph(out=sym, inc=sym, directed=False)
