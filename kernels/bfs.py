"""Level-synchronous, direction-optimizing breadth-first search.

Encoding:
- ``distance`` int32 [n]: hop count from the nearest source; -1 means unreached.
- ``predecessor`` int32 [n]: the BFS-tree parent; a source is its own parent; -1 when unreached.
- the frontier of level L is an int32 array of distinct vertices in ascending order (a queue);
  a bottom-up step reads it as a bool bitmap over the n vertices.

Direction policy (Beamer; ALPHA and BETA in kernels/structures.py, GAPBS's values): go bottom-up
when the frontier's out-arcs exceed the arcs still incident to unvisited vertices divided by
ALPHA; go back top-down when the frontier holds fewer than n / BETA vertices. The GPU applies the
same rule on the device (kernels/gpu_bfs.py).

Tie rule on the host (the result is deterministic): top-down, a vertex discovered by several
frontier vertices takes the lowest-numbered of them; bottom-up, it takes its first in-neighbour
(in CSR order) that is in the frontier. On the GPU distances are the same and the
parent is whichever valid one wins the race (Graph500's benign race).
"""
from __future__ import annotations

import numpy as np

from kernels.backend import is_gpu
from kernels.structures import ALPHA, BETA, BFSResult, Graph

__all__ = ["ALPHA", "BETA", "BFSResult", "bfs", "check_sources"]

# Bottom-up reads the unvisited vertices' in-neighbour lists in rounds, dropping each vertex at
# its first hit (NumPy has no per-vertex early exit): PROBES rounds of one position (most
# vertices that have a parent in the frontier find it at once), then windows of WINDOW, 2 x
# WINDOW, 4 x WINDOW... positions, so a vertex stops within about twice its first hit's position
# instead of reading its whole list (at Kron-20 a hub frontier finds hubs a few arcs in).
PROBES = 4
WINDOW = 8
# Top-down keeps, per discovered vertex, its lowest frontier position. A level with more than
# n / DENSE_CLAIM fresh arcs scatters a minimum into an n-long claim array and lists it (O(n));
# a sparser one sorts its fresh arcs (np.unique) and never touches all n. The two cost the same
# near n / 64 fresh arcs.
DENSE_CLAIM = 64


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
    """Positions starts[i] + 0..counts[i]-1 for every i, concatenated, and the owner i of each
    (int64 positions, int32 owners: ``counts`` has fewer than 2^31 entries)."""
    nonzero = np.flatnonzero(counts)
    starts, counts = starts[nonzero], counts[nonzero]
    total = int(counts.sum())
    owner = np.repeat(nonzero.astype(np.int32), counts)
    # a running sum of steps: +1 inside a range, the jump to the next range's start at its first
    # position (cheaper than gathering each position's range start and offset)
    pos = np.ones(total, dtype=np.int64)
    if total:
        first = np.cumsum(counts[:-1])
        pos[0] = starts[0]
        pos[first] = starts[1:] - (starts[:-1] + counts[:-1]) + 1
        np.cumsum(pos, out=pos)
    return pos, owner


def _top_down(out, frontier, distance, predecessor, claim, level):
    """The frontier (ascending) claims its unvisited out-neighbours; each takes its lowest
    frontier vertex. Returns the vertices found, ascending."""
    indptr, indices = out.indptr, out.indices
    starts = indptr[frontier]
    pos, owner = expand_ranges(starts, indptr[frontier + 1] - starts)
    heads = indices[pos]
    fresh = distance[heads] < 0
    heads, owner = heads[fresh], owner[fresh]
    if heads.shape[0] * DENSE_CLAIM > distance.shape[0]:
        none = np.iinfo(claim.dtype).max
        claim.fill(none)
        np.minimum.at(claim, heads, owner)
        nxt = np.flatnonzero(claim != none).astype(np.int32)
        owner = claim[nxt]
    else:
        nxt, first = np.unique(heads, return_index=True)  # first occurrence: lowest owner
        owner = owner[first]
    distance[nxt] = level + 1
    predecessor[nxt] = frontier[owner]
    return nxt


def bottom_up_parents(indptr, indices, candidates, in_frontier):
    """The bottom-up step on the host: of the vertices ``candidates`` (ascending row numbers of
    ``indptr``), those with an in-neighbour in the frontier (``in_frontier``: bool over the ids
    that ``indices`` hold), and each one's first such in-neighbour in CSR order. Returns
    ``(found, parents)``, found in no particular order."""
    start = indptr[candidates]
    end = indptr[candidates + 1]
    live = end > start
    cand, start, end = candidates[live], start[live], end[live]
    found, parents = [], []
    for _ in range(PROBES):
        if cand.shape[0] == 0:
            break
        nb = indices[start]
        hit = in_frontier[nb]
        found.append(cand[hit])
        parents.append(nb[hit])
        start += 1
        more = ~hit & (start < end)
        cand, start, end = cand[more], start[more], end[more]
    window = WINDOW
    while cand.shape[0]:
        width = np.minimum(end - start, window)
        pos, owner = expand_ranges(start, width)
        nb = indices[pos]
        hit = np.flatnonzero(in_frontier[nb])
        who = owner[hit]
        first = np.ones(who.shape[0], dtype=bool)
        first[1:] = who[1:] != who[:-1]  # owners are ascending: keep each one's first hit
        found.append(cand[who[first]])
        parents.append(nb[hit[first]])
        start += width
        more = start < end
        more[who] = False
        cand, start, end = cand[more], start[more], end[more]
        window *= 2
    if not found:
        return candidates[:0], indices[:0]
    return np.concatenate(found), np.concatenate(parents)


def _bottom_up(inc, frontier, distance, predecessor, level):
    """Every unvisited vertex looks for an in-neighbour in the frontier. Returns the vertices
    found, ascending."""
    in_frontier = np.zeros(distance.shape[0], dtype=bool)
    in_frontier[frontier] = True
    candidates = np.flatnonzero(distance < 0).astype(np.int32)
    found, parents = bottom_up_parents(inc.indptr, inc.indices, candidates, in_frontier)
    distance[found] = level + 1
    predecessor[found] = parents
    return candidates[distance[candidates] == level + 1]


def _bfs_host(graph: Graph, srcs, depth_limit, on_level):
    n = graph.n
    distance = np.full(n, -1, dtype=np.int32)
    predecessor = np.full(n, -1, dtype=np.int32)
    distance[srcs] = 0
    predecessor[srcs] = srcs
    claim = np.empty(n, dtype=np.int32)  # frontier positions: a frontier has fewer than 2^31
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
            frontier = _bottom_up(graph.inc, frontier, distance, predecessor, level)
        else:
            frontier = _top_down(graph.out, frontier, distance, predecessor, claim, level)
        steps.append("bottom-up" if bottom_up else "top-down")
        unvisited_arcs -= int(out_degree[frontier].sum())
        level += 1
        on_level(level, int(frontier.shape[0]))
    return BFSResult(distance, predecessor, level, steps)
