"""Level-synchronous, direction-optimizing breadth-first search.

Encoding:
- ``distance`` int32 [n]: hop count from the nearest source; -1 means unreached.
- ``predecessor`` int32 [n]: the BFS-tree parent; a source is its own parent; -1 when unreached.
- the frontier of level L is an int32 array of distinct vertices (a queue) in top-down steps and
  a bool bitmap in bottom-up steps; each step converts what it needs.

Direction policy (Beamer; ALPHA and BETA in kernels/structures.py, GAPBS's values): go bottom-up
when the frontier's out-arcs exceed the arcs still incident to unvisited vertices divided by
ALPHA; go back top-down when the frontier holds fewer than n / BETA vertices. The GPU applies the
same rule on the device (kernels/gpu_bfs.py).

Tie rule on the host (the result is deterministic): top-down, a vertex discovered by several
frontier vertices takes the one that comes first in frontier order; bottom-up, it takes its first
in-neighbour (in CSR order) that is in the frontier. On the GPU distances are the same and the
parent is whichever valid one wins the race (Graph500's benign race).
"""
from __future__ import annotations

import numpy as np

from kernels.backend import is_gpu
from kernels.structures import ALPHA, BETA, BFSResult, Graph

__all__ = ["ALPHA", "BETA", "BFSResult", "bfs", "check_sources"]

# Bottom-up probes each unvisited vertex's first PROBES in-neighbours one position at a time
# (cheap early exit for the many vertices that find a parent at once), then scans the rest of
# the survivors' lists in one segmented pass.
PROBES = 4


def check_sources(sources, n: int):
    """Sources as distinct int32 dense ids; raises on an id outside [0, n)."""
    src = np.unique(np.asarray(sources, dtype=np.int64))
    if src.size == 0:
        raise ValueError("at least one BFS source is required")
    if src.min() < 0 or src.max() >= n:
        raise ValueError(f"source vertex out of range [0, {n})")
    return src.astype(np.int32)


def bfs(graph: Graph, sources, depth_limit: int | None = None, on_level=None) -> BFSResult:
    """BFS from every vertex in ``sources`` (dense ids) at once, up to ``depth_limit`` hops.
    ``on_level(levels_done, frontier_size)``, if given, is called after each step (the GPU's
    fused steps run several levels at once and report once)."""
    srcs = check_sources(sources, graph.n)
    if depth_limit is not None and depth_limit < 0:
        raise ValueError("depth limit must be >= 0")
    if is_gpu(graph.out.indptr):
        from kernels.gpu_bfs import bfs_gpu

        return bfs_gpu(graph, srcs, depth_limit, on_level or _ignore)
    return _bfs_host(graph, srcs, depth_limit, on_level or _ignore)


def _ignore(*_):
    pass


def expand_ranges(starts, counts):
    """Positions starts[i] + 0..counts[i]-1 for every i, concatenated, and the owner i of each."""
    total = int(counts.sum())
    owner = np.repeat(np.arange(counts.shape[0]), counts)
    first = np.cumsum(counts) - counts
    pos = np.arange(total, dtype=np.int64) - first[owner] + starts[owner]
    return pos, owner


def _top_down(out, frontier, distance, predecessor, claim, level):
    indptr, indices = out.indptr, out.indices
    starts = indptr[frontier]
    pos, owner = expand_ranges(starts, indptr[frontier + 1] - starts)
    nbr = indices[pos]
    fresh = distance[nbr] < 0
    nbr, parent = nbr[fresh], frontier[owner[fresh]]
    # the host analogue of atomicCAS discovery: the lowest claim index wins each vertex
    slot = np.arange(nbr.shape[0], dtype=np.int64)
    claim[nbr] = np.iinfo(np.int64).max
    np.minimum.at(claim, nbr, slot)
    won = claim[nbr] == slot
    nxt = nbr[won]
    distance[nxt] = level + 1
    predecessor[nxt] = parent[won]
    return nxt


def bottom_up_parents(indptr, indices, candidates, in_frontier):
    """The bottom-up step on the host: of the vertices ``candidates`` (ascending row numbers of
    ``indptr``), those with an in-neighbour in the frontier (``in_frontier``: bool over the ids
    that ``indices`` hold), and each one's first such in-neighbour in CSR order. Returns
    ``(found, parents)``."""
    start = indptr[candidates]
    count = indptr[candidates + 1] - start
    live = count > 0
    cand, start, count = candidates[live], start[live], count[live]
    found, parents = [], []
    for k in range(PROBES):
        if cand.shape[0] == 0:
            break
        nb = indices[start + k]
        hit = in_frontier[nb]
        found.append(cand[hit])
        parents.append(nb[hit])
        more = ~hit & (count > k + 1)
        cand, start, count = cand[more], start[more], count[more]
    if cand.shape[0]:
        pos, owner = expand_ranges(start + PROBES, count - PROBES)
        nb = indices[pos]
        hit = np.flatnonzero(in_frontier[nb])
        who = owner[hit]
        first = np.ones(who.shape[0], dtype=bool)
        first[1:] = who[1:] != who[:-1]  # owners are ascending: keep each one's first hit
        found.append(cand[who[first]])
        parents.append(nb[hit[first]])
    if not found:
        return candidates[:0], indices[:0]
    return np.concatenate(found), np.concatenate(parents)


def _bottom_up(inc, in_frontier, distance, predecessor, level):
    nxt, parents = bottom_up_parents(inc.indptr, inc.indices, np.flatnonzero(distance < 0).astype(np.int32), in_frontier)
    distance[nxt] = level + 1
    predecessor[nxt] = parents
    return nxt


def _bfs_host(graph: Graph, srcs, depth_limit, on_level):
    n = graph.n
    distance = np.full(n, -1, dtype=np.int32)
    predecessor = np.full(n, -1, dtype=np.int32)
    distance[srcs] = 0
    predecessor[srcs] = srcs
    claim = np.empty(n, dtype=np.int64)
    out_degree = graph.out.degree()
    unvisited_arcs = int(out_degree.sum()) - int(out_degree[srcs].sum())
    frontier, level, steps = srcs, 0, []
    bottom_up = False
    while frontier.shape[0] and (depth_limit is None or level < depth_limit):
        frontier_arcs = int(out_degree[frontier].sum())
        if not bottom_up and frontier_arcs > unvisited_arcs / ALPHA:
            bottom_up = True
        elif bottom_up and frontier.shape[0] < n / BETA:
            bottom_up = False
        if bottom_up:
            in_frontier = np.zeros(n, dtype=bool)
            in_frontier[frontier] = True
            frontier = _bottom_up(graph.inc, in_frontier, distance, predecessor, level)
        else:
            frontier = _top_down(graph.out, frontier, distance, predecessor, claim, level)
        steps.append("bottom-up" if bottom_up else "top-down")
        unvisited_arcs -= int(out_degree[frontier].sum())
        level += 1
        on_level(level, int(frontier.shape[0]))
    return BFSResult(distance, predecessor, level, steps)
