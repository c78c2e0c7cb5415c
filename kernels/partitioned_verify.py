"""Verifiers for partitioned results: the checks of kernels.verify, spread over the ranks and
written apart from the partitioned kernels. They read each rank's share of the raw input edges
(never the CSR the kernels built) and return, on every rank, the same dict
``check name -> number of violations`` (0 means passed; -1 means not checkable).

Encodings are those of kernels.partitioned: ``src``/``dst``/``weight`` are this rank's share of
the input rows (dense ids, self-loops included), the edge at index i being global row
``row_offset + i``; BFS arrays cover the owned vertices [lo, hi).

- ``verify_bfs_partitioned``: Graph500's five rules. Distances and parents are gathered onto
  every rank (8 bytes per vertex), each rank checks its own vertices and its own input edges,
  and "parent joined by an input edge" is an OR over the ranks' edges.
- ``verify_forest_partitioned``: the forest's edges are looked up in the raw input by row and
  gathered onto every rank; each rank checks, with kernels.verify.verify_forest, the forest plus
  its own non-forest edges. The forest is one tree per component of the whole graph exactly
  when no rank's edges join two of its trees, and minimum exactly when every rank's non-forest
  edges satisfy the cycle property; acyclicity and distinct rows are checked once, on the
  gathered forest. Up to ``kruskal_limit`` input edges, rank 0 also runs the serial Kruskal on
  the whole gathered edge list and compares total weight and edge count.
"""
from __future__ import annotations

import numpy as np

from kernels.backend import array_module, to_host
from kernels.verify import kruskal, verify_forest

# checks computed on data every rank holds whole: the same count on every rank, not a sum
_REPLICATED = ("acyclic",)


def _summed(comm, xp, report: dict, replicated=()) -> dict:
    """One report for all ranks: counts summed (or taken once where every rank computed the
    same one); a check any rank could not make stays -1."""
    names = list(report)
    values = xp.asarray([report[k] for k in names], dtype=np.int64)
    total = to_host(comm.allreduce(xp.maximum(values, 0), "sum"))
    most = to_host(comm.allreduce(values, "max"))
    least = to_host(comm.allreduce(values, "min"))
    out = {}
    for i, name in enumerate(names):
        if least[i] < 0:
            out[name] = -1
        else:
            out[name] = int(most[i]) if name in replicated else int(total[i])
    return out


def verify_bfs_partitioned(comm, bounds, src, dst, sources, distance, predecessor,
                           directed: bool = False, depth_limit: int | None = None) -> dict:
    """Graph500 validation of a partitioned BFS result (``sources``: dense ids, host)."""
    xp = array_module(distance)
    lo, hi, n = int(bounds[comm.rank]), int(bounds[comm.rank + 1]), int(bounds[-1])
    every_distance, _ = comm.allgatherv(distance)
    every_parent, _ = comm.allgatherv(predecessor)
    sources = np.unique(np.asarray(sources, dtype=np.int64))
    mine = xp.asarray(sources[(sources >= lo) & (sources < hi)] - lo)
    is_source = xp.zeros(hi - lo, dtype=bool)
    is_source[mine] = True
    reached = distance >= 0
    report = {}
    # (1) a tree rooted at the sources
    bad = (distance[mine] != 0) | (predecessor[mine] != mine + lo)
    bad_other = (~is_source & (distance == 0)) | (~reached & (predecessor != -1))
    nonroot = xp.flatnonzero(reached & ~is_source)
    parent = predecessor[nonroot].astype(np.int64)
    parent_ok = (parent >= 0) & (parent < n)
    report["tree rooted at the sources"] = int(bad.sum() + bad_other.sum() + (~parent_ok).sum())
    # (2) tree edges join consecutive levels
    parent = xp.where(parent_ok, parent, 0)
    report["tree edges span one level"] = int((every_distance[parent] != distance[nonroot] - 1).sum())
    # (3)+(4) every input edge from a reached vertex (below the depth limit) reaches at most one
    #     level further; undirected edges both ways
    pairs = [(src, dst)] if directed else [(src, dst), (dst, src)]
    violations = 0
    for a, b in pairs:
        da, db = every_distance[a], every_distance[b]
        live = da >= 0
        if depth_limit is not None:
            live &= da < depth_limit
        violations += int((live & ((db < 0) | (db > da + 1))).sum())
    report["input edges span at most one level"] = violations
    if depth_limit is not None:
        report["depth limit respected"] = int((distance > depth_limit).sum())
    # (5) every vertex and its parent are joined by an input edge of some rank
    joined = xp.zeros(n, dtype=np.uint8)
    for a, b in pairs:
        hit = every_parent[b] == a
        joined[b[hit]] = 1
    joined = comm.allreduce(joined, "max")[lo:hi]
    report["tree edges are input edges"] = int((joined[nonroot] == 0).sum())
    return _summed(comm, xp, report)


def verify_forest_partitioned(comm, src, dst, weight, n: int, row_offset: int, rows_total: int, forest_rows,
                              kruskal_limit: int = 0) -> dict:
    """Check that the input rows ``forest_rows`` (every rank passes the same) form a minimum
    spanning forest of the whole input."""
    xp = array_module(src)
    m = int(src.shape[0])
    rows = xp.asarray(forest_rows, dtype=np.int64)
    in_range = (rows >= 0) & (rows < rows_total)
    distinct = xp.unique(rows[in_range])
    duplicates = int((~in_range).sum()) + int(in_range.sum()) - int(distinct.shape[0])
    local = distinct[(distinct >= row_offset) & (distinct < row_offset + m)] - row_offset
    fu, _ = comm.allgatherv(src[local])
    fv, _ = comm.allgatherv(dst[local])
    fw, _ = comm.allgatherv(weight[local])
    rest = xp.ones(m, dtype=bool)
    rest[local] = False
    k = int(fu.shape[0])
    report = verify_forest(xp.concatenate([fu, src[rest]]), xp.concatenate([fv, dst[rest]]),
                           xp.concatenate([fw, weight[rest]]), n, xp.arange(k, dtype=np.int64))
    report["edges are distinct input edges"] = duplicates
    report = _summed(comm, xp, report, replicated=_REPLICATED + ("edges are distinct input edges",))
    if rows_total <= kruskal_limit:
        every_src, _ = comm.allgatherv(src)
        every_dst, _ = comm.allgatherv(dst)
        every_weight, _ = comm.allgatherv(weight)
        verdict = xp.zeros(2, dtype=np.int64)
        if comm.rank == 0:
            weights = to_host(every_weight)
            # Kruskal walks the edges by (weight, row); given each edge's rank in that order it
            # accepts the same edges, and sums ranks, which weights near 1e308 cannot overflow.
            # Every minimum spanning forest has the same multiset of weights, so comparing the
            # sorted weights compares the totals exactly.
            rank = np.empty(weights.shape[0])
            rank[np.lexsort((np.arange(weights.shape[0]), weights))] = np.arange(weights.shape[0])
            _, ref_edges = kruskal(to_host(every_src), to_host(every_dst), rank, n)
            same = np.array_equal(np.sort(weights[ref_edges]), np.sort(to_host(fw)))
            verdict = xp.asarray([0 if same else 1, abs(len(ref_edges) - k)], dtype=np.int64)
        verdict = to_host(comm.broadcast(verdict, 0))
        report["total weight equals Kruskal's"] = int(verdict[0])
        report["edge count equals Kruskal's"] = int(verdict[1])
    return report
