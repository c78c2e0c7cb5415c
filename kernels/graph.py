"""Edge lists, renumbering and CSR construction (encodings: kernels/structures.py).

Renumbering maps any integer vertex ids to dense int32 numbers ordered by id. Ids that span a
narrow range (fewer than 2^31 values, and at most RANGE_FACTOR x edges + RANGE_MIN on the GPU,
HOST_RANGE_FACTOR x edges + HOST_RANGE_MIN on the host) are marked present in a table over the
range and numbered by its prefix count: no sort. On the GPU the table is a bitmap with a popcount
prefix per 32-id word (its rank), so no edge-long temporary exists. Wider ids (hashes, extremes
of int64) are sorted.

``IdRange`` is the same numbering in passes over chunks, for readers that stream the edge list:
``add`` marks a chunk's ids and writes their offsets from the range's low end (int32) into the
final arrays, so the wide id columns never have to exist whole; ``finish`` turns the offsets into
dense numbers in place (nothing to do when every id of the range occurs) and returns the ids.
"""
from __future__ import annotations

import numpy as np

from kernels.backend import array_module, is_gpu
from kernels.structures import CSR, MAX_VERTICES, EdgeList, Graph, check_vertex_count

__all__ = ["CSR", "EdgeList", "Graph", "IdRange", "build_csr", "build_graph", "edge_list", "renumber"]

# On the GPU the bitmap, its word counts and its rank cost at most 1/2 byte per id of the range
# (<= 4 bytes per edge); on the host a bool table and an int64 prefix sum cost 9 bytes per id, so
# the host's range is tighter.
RANGE_FACTOR, RANGE_MIN = 8, 1 << 24
HOST_RANGE_FACTOR, HOST_RANGE_MIN = 4, 1 << 20


class IdRange:
    """Dense numbering of the ids in [lo, hi] that occur, built chunk by chunk.

    ``add(src, dst, out_src, out_dst)`` marks the chunk's ids as present and writes ``id - lo``
    (int32) into ``out_src`` / ``out_dst`` (slices of the final edge arrays); ``finish(*arrays)``
    rewrites those offsets into dense ids in place and returns ``ids`` (original id of every
    dense vertex, ascending, the input dtype). ``IdRange.fits(lo, hi, edges, xp)`` says whether the
    range is narrow enough for this (else use ``renumber``, which sorts)."""

    def __init__(self, lo: int, hi: int, xp, dtype=np.int64):
        if not self.fits(lo, hi, None, xp):
            raise ValueError(f"id range [{lo}, {hi}] is too wide for a presence bitmap")
        self.lo, self.hi, self.xp, self.dtype = int(lo), int(hi), xp, np.dtype(dtype)
        self.size = self.hi - self.lo + 1
        if xp is np:
            self.present = np.zeros(self.size, dtype=bool)
        else:
            from kernels import gpu_graph

            self.bits = gpu_graph.id_bitmap(self.size)

    @staticmethod
    def fits(lo: int, hi: int, edges: int | None, xp) -> bool:
        span = int(hi) - int(lo) + 1
        factor, least = (HOST_RANGE_FACTOR, HOST_RANGE_MIN) if xp is np else (RANGE_FACTOR, RANGE_MIN)
        return 0 < span <= MAX_VERTICES + 1 and (edges is None or span <= factor * edges + least)

    def add(self, src, dst, out_src, out_dst) -> None:
        if self.xp is np:
            for ids, out in ((src, out_src), (dst, out_dst)):
                offset = ids.astype(np.int64) - self.lo if ids.dtype.kind == "i" else (ids - np.uint64(self.lo)).astype(np.int64)
                self.present[offset] = True
                out[...] = offset
        else:
            from kernels import gpu_graph

            for ids, out in ((src, out_src), (dst, out_dst)):
                gpu_graph.id_mark(ids, self.lo, self.bits, out)

    def finish(self, *arrays):
        if self.xp is np:
            count = int(np.count_nonzero(self.present))
            check_vertex_count(count)
            # in the ids' own dtype: lo may lie beyond int64 (uint64 ids above 2**63)
            ids = np.flatnonzero(self.present).astype(self.dtype) + self.dtype.type(self.lo)
            if count < self.size:
                dense = np.cumsum(self.present, dtype=np.int64) - 1
                for a in arrays:
                    a[...] = dense[a]
            del self.present
            return ids
        from kernels import gpu_graph

        ids = gpu_graph.id_finish(self.bits, self.lo, self.size, self.dtype, arrays)
        check_vertex_count(int(ids.shape[0]))
        del self.bits
        return ids


def renumber(src, dst):
    """Dense int32 vertex numbers for integer ids, ordered by id.

    Returns ``(src_dense, dst_dense, ids)`` where ``ids`` (same backend, the input's dtype)
    holds the original id of each dense vertex in ascending order."""
    xp = array_module(src)
    m = int(src.shape[0])
    if m == 0:
        return src.astype(np.int32), dst.astype(np.int32), src[:0]
    if src.dtype.kind not in "iu":
        raise ValueError(f"vertex ids must be integers, not {src.dtype}")
    if xp is not np and src.dtype.itemsize < 8 and src.dtype != np.int32:
        src, dst = src.astype(np.int64), dst.astype(np.int64)
    lo = min(int(src.min()), int(dst.min()))
    hi = max(int(src.max()), int(dst.max()))
    if IdRange.fits(lo, hi, m, xp):
        ids = IdRange(lo, hi, xp, src.dtype)
        out_src = xp.empty(m, dtype=np.int32)
        out_dst = xp.empty(m, dtype=np.int32)
        ids.add(src, dst, out_src, out_dst)
        return out_src, out_dst, ids.finish(out_src, out_dst)
    if xp is not np:
        from kernels import gpu_graph

        return gpu_graph.renumber_sorted(src, dst)
    ids, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
    check_vertex_count(ids.shape[0])
    inverse = inverse.reshape(-1).astype(np.int32)
    return inverse[:m], inverse[m:], ids


def edge_list(src, dst, weight, n: int) -> EdgeList:
    """The edge list of dense ids: every input row in order (self-loops included), int32 ends,
    the weight in its own dtype."""
    return EdgeList(src=src.astype(np.int32, copy=False), dst=dst.astype(np.int32, copy=False),
                    weight=weight, n=n)


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
        from kernels.gpu_graph import csr_scatter

        return csr_scatter(rows, cols, n)
    return _host_csr([rows], n, lambda i, _row: cols[i])


def _symmetric_csr_host(src, dst, n: int) -> CSR:
    """Both directions of every edge without concatenating them: the arc of edge e leaving
    ``row`` ends at ``src[e] ^ dst[e] ^ row``. Neighbours come in input (edge) order."""
    other = src ^ dst
    return _host_csr([src, dst], n, lambda e, row: other[e] ^ row.astype(other.dtype))


def build_graph(edges: EdgeList, directed: bool = False) -> Graph:
    """Out- and in-CSR of an edge list, self-loops left out. Undirected graphs store every edge
    in both directions once, so ``out`` is symmetric and serves as ``inc`` too. On the GPU one
    scatter pass over the edge list writes both arcs of each edge."""
    if is_gpu(edges.src):
        from kernels import gpu_graph

        if directed:
            return Graph(out=gpu_graph.csr_one_way(edges.src, edges.dst, edges.n),
                         inc=gpu_graph.csr_one_way(edges.dst, edges.src, edges.n), directed=True)
        sym = gpu_graph.csr_symmetric(edges.src, edges.dst, edges.n)
        return Graph(out=sym, inc=sym, directed=False)
    src, dst = edges.src, edges.dst
    keep = src != dst
    if not keep.all():
        src, dst = src[keep], dst[keep]
    if directed:
        return Graph(out=build_csr(src, dst, edges.n), inc=build_csr(dst, src, edges.n), directed=True)
    sym = _symmetric_csr_host(src, dst, edges.n)
    return Graph(out=sym, inc=sym, directed=False)
