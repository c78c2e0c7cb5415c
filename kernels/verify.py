"""Independent verifiers. Written apart from the kernels they check and kept simple: they
test properties of an answer against the raw edge list, never compare with another fast code.

- ``verify_bfs``: Graph500's five rules for a BFS tree (several sources, depth limit and
  directed graphs included). O(E) vector operations, any backend.
- ``verify_forest``: edges are distinct input edges; the forest is acyclic and has one tree per
  connected component of the input (edge count = n - components); and it is minimum by the
  cycle property (every non-forest edge weighs at least the heaviest forest edge on the path
  between its ends), checked with binary-lifting path maxima in O((n + m) log n).
- ``kruskal``: the sequential reference of seed 25.1 (sort, then union-find), serial Python; for
  tests and small graphs.
Each returns a dict ``check name -> number of violations`` (0 means the check passed).
"""
from __future__ import annotations

import math

import numpy as np

from kernels.backend import array_module, scatter_min, segment_owner


def connected_components(src, dst, n: int):
    """Component label of every vertex (the smallest vertex id in its component): hook each
    root to the smallest root across an edge, then compress paths, until no edge crosses."""
    xp = array_module(src)
    label = xp.arange(n, dtype=np.int64)
    while True:
        lu, lv = label[src], label[dst]
        cross = lu != lv
        if not bool(cross.any()):
            return label
        lo, hi = xp.minimum(lu, lv)[cross], xp.maximum(lu, lv)[cross]
        scatter_min(label, hi, lo)
        while True:
            nxt = label[label]
            if bool((nxt == label).all()):
                break
            label = nxt


def verify_bfs(src, dst, n: int, sources, distance, predecessor, directed=False, depth_limit=None):
    """Graph500 validation of a (multi-source) BFS result over the arcs src->dst."""
    xp = array_module(distance)
    sources = xp.asarray(np.asarray(sources), dtype=np.int64)
    reached = distance >= 0
    is_source = xp.zeros(n, dtype=bool)
    is_source[sources] = True
    report = {}
    # (1) a tree rooted at the sources: sources at level 0 and their own parent; every other
    #     reached vertex has a reached parent; unreached vertices have none.
    bad = (distance[sources] != 0) | (predecessor[sources] != sources)
    bad_other = (~is_source & (distance == 0)) | (~reached & (predecessor != -1))
    nonroot = xp.flatnonzero(reached & ~is_source)
    par = predecessor[nonroot]
    par_ok = (par >= 0) & (par < n)
    report["tree rooted at the sources"] = int(bad.sum() + bad_other.sum() + (~par_ok).sum())
    # (2) each tree edge joins levels that differ by exactly one
    par = xp.where(par_ok, par, 0)
    report["tree edges span one level"] = int((distance[par] != distance[nonroot] - 1).sum())
    # (3)+(4) every arc leaving a reached vertex (below the depth limit) reaches a vertex at most
    #     one level further; undirected edges are checked both ways. With no depth limit this
    #     also says the tree spans exactly the sources' component.
    pairs = [(src, dst)] if directed else [(src, dst), (dst, src)]
    violations = 0
    for a, b in pairs:
        da, db = distance[a], distance[b]
        live = da >= 0
        if depth_limit is not None:
            live &= da < depth_limit
        violations += int((live & ((db < 0) | (db > da + 1))).sum())
    report["input edges span at most one level"] = violations
    if depth_limit is not None:
        report["depth limit respected"] = int((distance > depth_limit).sum())
    # (5) every vertex and its parent are joined by an input edge
    joined = xp.zeros(n, dtype=bool)
    for a, b in pairs:
        hit = predecessor[b] == a
        joined[b[hit]] = True
    report["tree edges are input edges"] = int((~joined[nonroot]).sum())
    return report


def _root_forest(fu, fv, n: int):
    """Parent, parent-edge position and depth of every vertex in the forest (fu[i], fv[i]),
    each tree rooted at its smallest vertex (a plain level-by-level search)."""
    xp = array_module(fu)
    a = xp.concatenate([fu, fv]).astype(np.int64)
    b = xp.concatenate([fv, fu]).astype(np.int64)
    eidx = xp.concatenate([xp.arange(fu.shape[0]), xp.arange(fu.shape[0])])
    order = xp.argsort(a, kind="stable")
    a, b, eidx = a[order], b[order], eidx[order]
    start = xp.searchsorted(a, xp.arange(n + 1))
    label = connected_components(fu, fv, n)
    parent = xp.full(n, -1, dtype=np.int64)
    pedge = xp.full(n, -1, dtype=np.int64)
    depth = xp.full(n, -1, dtype=np.int64)
    frontier = xp.flatnonzero(label == xp.arange(n))
    depth[frontier] = 0
    parent[frontier] = frontier
    d = 0
    while frontier.shape[0]:
        cnt = start[frontier + 1] - start[frontier]
        seg = segment_owner(cnt)
        owner = frontier[seg]
        pos = xp.arange(seg.shape[0]) - (xp.cumsum(cnt) - cnt)[seg] + start[frontier][seg]
        nb, ne = b[pos], eidx[pos]
        new = depth[nb] < 0  # a forest reaches each vertex through one edge only
        nb, ne, owner = nb[new], ne[new], owner[new]
        d += 1
        depth[nb], parent[nb], pedge[nb] = d, owner, ne
        frontier = nb
    return parent, pedge, depth, label


def _path_max(parent, pweight, depth, a, b):
    """Heaviest forest edge on the path a..b for each query pair (same tree)."""
    xp = array_module(parent)
    up, mx = [parent], [pweight]
    levels = max(1, int(depth.max()).bit_length())
    for _ in range(1, levels):
        up.append(up[-1][up[-1]])
        mx.append(xp.maximum(mx[-1], mx[-1][up[-2]]))
    best = xp.full(a.shape[0], -np.inf)
    swap = depth[a] < depth[b]
    a, b = xp.where(swap, b, a), xp.where(swap, a, b)
    diff = depth[a] - depth[b]
    for j in range(levels):
        step = ((diff >> j) & 1).astype(bool)
        best = xp.where(step, xp.maximum(best, mx[j][a]), best)
        a = xp.where(step, up[j][a], a)
    for j in reversed(range(levels)):
        split = up[j][a] != up[j][b]
        best = xp.where(split, xp.maximum(best, xp.maximum(mx[j][a], mx[j][b])), best)
        a = xp.where(split, up[j][a], a)
        b = xp.where(split, up[j][b], b)
    last = a != b
    return xp.where(last, xp.maximum(best, xp.maximum(pweight[a], pweight[b])), best)


def _mask(xp, m, chosen):
    mask = xp.zeros(m, dtype=bool)
    mask[chosen] = True
    return mask


def verify_forest(src, dst, weight, n: int, chosen):
    """Check that edge indices ``chosen`` form a minimum spanning forest of (src, dst, weight)."""
    xp = array_module(src)
    m = int(src.shape[0])
    chosen = xp.asarray(chosen, dtype=np.int64)
    report = {}
    in_range = (chosen >= 0) & (chosen < m)
    distinct = xp.unique(chosen[in_range]).shape[0]
    report["edges are distinct input edges"] = int((~in_range).sum()) + int(in_range.sum()) - int(distinct)
    chosen = chosen[in_range]
    fu, fv = src[chosen], dst[chosen]
    graph_label = connected_components(src, dst, n)
    forest_label = connected_components(fu, fv, n)
    graph_components = int((graph_label == xp.arange(n)).sum())
    forest_components = int((forest_label == xp.arange(n)).sum())
    # n vertices, k edges and c components form a forest exactly when k = n - c
    report["acyclic"] = abs(int(chosen.shape[0]) - (n - forest_components))
    report["one tree per component"] = abs(forest_components - graph_components)
    if report["acyclic"] or report["one tree per component"]:
        report["minimum (cycle property)"] = -1  # not checkable on a non-spanning forest
        return report
    rest = xp.flatnonzero(~_mask(xp, m, chosen))
    if rest.shape[0] == 0:
        report["minimum (cycle property)"] = 0  # every edge is in the forest
        return report
    parent, pedge, depth, _ = _root_forest(fu, fv, n)
    pweight = xp.where(pedge >= 0, weight[chosen][xp.maximum(pedge, 0)], -np.inf)
    worst = _path_max(parent, pweight, depth, src[rest].astype(np.int64), dst[rest].astype(np.int64))
    report["minimum (cycle property)"] = int((weight[rest] < worst).sum())
    return report


def kruskal(src, dst, weight, n: int):
    """Seed 25.1: walk edges cheapest first, accept an edge whose ends are in different trees.
    Returns (total weight, accepted edge indices). Serial; host arrays."""
    src, dst, weight = np.asarray(src), np.asarray(dst), np.asarray(weight)
    order = np.lexsort((np.arange(src.shape[0]), weight))
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    accepted = []
    for e in order.tolist():
        ru, rv = find(int(src[e])), find(int(dst[e]))
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
            accepted.append(e)
    return math.fsum(weight[accepted].tolist()), np.array(sorted(accepted), dtype=np.int64)
