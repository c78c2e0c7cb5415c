"""Independent verifiers. Written apart from the kernels they check and kept simple: they
test properties of an answer against the raw edge list, never compare with another fast code.
Each returns a dict ``check name -> number of violations`` (0 means the check passed).

Inputs: ``src``, ``dst`` dense vertex ids in [0, n) (int32 or int64), one entry per input edge
(an edge's index is its position; self-loops and parallel edges allowed); ``weight`` float32 or
float64, compared in its own precision. Any backend: arrays go through ``xp = array_module(...)``
and kernels.backend helpers only, so the same code runs on NumPy and on CuPy.

- ``verify_bfs``: Graph500's five rules for a BFS tree (several sources, depth limit and
  directed graphs included), in one pass over the edges.
- ``verify_forest``: (1) edges are distinct input edges; (2) acyclic: the components of the
  forest's own k edges number exactly n - k; (3) one tree per component: every input edge joins
  two vertices of one tree, which with (2) makes the forest's trees the graph's components (no
  components of the whole graph are computed); (4) minimum by the cycle property: every input
  edge weighs at least the heaviest forest edge on the path between its ends (forest edges and
  self-loops pass by definition). The report of (3) counts the edges that join two trees.
- ``kruskal``: the sequential reference of seed 25.1 (sort, then union-find), serial Python; for
  tests and small graphs.

Path maxima for (4): O(1) lookups per edge after O(n log n) work on the forest alone.
Give the forest edges distinct ranks (by weight, ties in any order); root every tree with a
level-synchronous search; r(v) is the rank of v's parent edge, and a root counts as the lower
end of an edge heavier than all (rank k).
  * Heavier-ancestor tree A: the A-parent of v is its nearest proper ancestor a with
    r(a) > r(v), or the root when there is none (binary lifting over max-rank tables).
  * Order each tree's vertices by a preorder walk of A whose children go in ascending r (A's
    subtree sizes bottom-up, then positions top-down, one step per level of the forest), and
    set h[pos(v)] = r(v). For u, v in one tree, the heaviest forest edge on the path u..v is
    the one of rank max(h[i] for min(pos) < i <= max(pos)): one range maximum. And when u, v
    lie in different trees that range holds the later tree's root (rank k), which is how (3)
    is counted in the same pass.
  Why: this order lists the leaves of the Kruskal reconstruction tree (KRT: edges merged in rank
  order, each merge a node over the two clusters it joins; the path maximum of u, v is their
  lowest common KRT ancestor). Leaves of every KRT subtree are contiguous in any of its leaf
  orders, so the LCA of leaves i < j is the highest LCA among neighbouring leaves between
  them: a range maximum over h. Why this is a KRT leaf order: take v with parent edge g. The
  KRT cluster hanging from g on v's side is v plus the edges below v reachable through edges
  lighter than g; its heaviest edge is v's heaviest A-child c1 (nothing between a cluster's
  heaviest edge and v outweighs it). Splitting at c1 leaves the part below c1 (the same shape
  one level down) and the rest, whose heaviest edge is the next A-child c2, and so on: the
  cluster's KRT is the chain c1 > c2 > ... > cr ending at leaf v. Listing at each chain node
  v's side first gives v, then the blocks of cr, ..., c1 in ascending rank: the preorder walk.
  The leaf that opens block ci is ci itself, and its left neighbour lies on the chain's rest,
  so their LCA is ci's edge: h[pos(ci)] = r(ci).
  Range maxima: blocks of 64 positions; a range across blocks is a suffix, a prefix and a
  sparse table over block maxima; a range inside one block a sparse table of 7 levels.

Memory: the edges are read in chunks (HOST_CHUNK / DEVICE_CHUNK) and nothing of length m is
allocated: per chunk about a dozen temporaries of the chunk's length, four of them int64.
Besides those: about ten int32/int64 arrays of n (labels, parents, parent edges, ranks,
A-parents, sizes, offsets, positions), 2 * ceil(log2(depth + 1)) int32 lifting tables of n,
the range-maximum tables (9 n int32 plus n / 64 * log2 n), the forest's k edges with sorted
copies and an adjacency of 2k arcs; for the BFS check a few arrays of n.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.backend import array_module, scatter_add, scatter_min, segment_owner

# Edges are read in chunks so that temporaries never grow with m. Host: a chunk's dozen
# temporaries (4-8 MB each) stay close to the CPU caches. GPU: fewer, larger launches; a dozen
# temporaries of 4 M entries (four of them int64) take about 0.3 GB, whatever m is.
HOST_CHUNK = 1 << 20
DEVICE_CHUNK = 1 << 22
BLOCK_BITS = 6  # range-maximum blocks of 64 positions (see _range_maximum)


def _chunks(xp, m: int):
    step = HOST_CHUNK if xp is np else DEVICE_CHUNK
    for lo in range(0, m, step):
        yield lo, min(lo + step, m)


def _order_by(keys):
    """Stable permutation that sorts int32 ``keys`` (fewer than 2**32 of them): one sort of the
    keys packed with their positions (on the host NumPy's SIMD sort is twice as fast as argsort)."""
    xp = array_module(keys)
    shift = max(1, (int(keys.shape[0]) - 1).bit_length())
    packed = xp.sort((keys.astype(np.int64) << shift) | xp.arange(keys.shape[0], dtype=np.int64))
    return packed & ((1 << shift) - 1)


def connected_components(src, dst, n: int):
    """Component label (int32) of every vertex: the smallest vertex id in its component. Hook
    each root to the smallest root across an edge, then compress paths, until no edge crosses.
    O(len(src)) per round; used on forests here."""
    xp = array_module(src)
    label = xp.arange(n, dtype=np.int32)
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
    """Graph500 validation of a (multi-source) BFS result over the arcs src->dst (both ways
    when undirected)."""
    xp = array_module(distance)
    sources = xp.asarray(np.asarray(sources), dtype=np.int64)
    reached = distance >= 0
    is_source = xp.zeros(n, dtype=bool)
    is_source[sources] = True
    report = {}
    # (1) a tree rooted at the sources: sources at level 0 and their own parent; every other
    #     reached vertex has a parent in range; unreached vertices have none.
    bad = (distance[sources] != 0) | (predecessor[sources] != sources)
    bad_other = (~is_source & (distance == 0)) | (~reached & (predecessor != -1))
    nonroot = xp.flatnonzero(reached & ~is_source)
    par = predecessor[nonroot]
    par_ok = (par >= 0) & (par < n)
    report["tree rooted at the sources"] = int(bad.sum() + bad_other.sum() + (~par_ok).sum())
    # (2) each tree edge joins levels that differ by exactly one (so parents are reached)
    par = xp.where(par_ok, par, 0)
    report["tree edges span one level"] = int((distance[par] != distance[nonroot] - 1).sum())
    # (3)+(4) every arc leaving a reached vertex (below the depth limit) reaches a vertex at most
    #     one level further; undirected edges are checked both ways. With no depth limit this
    #     also says the tree spans exactly the sources' component.
    # (5) every vertex and its parent are joined by an input edge: mark the vertices whose
    #     parent is the far end of one of their edges.
    joined = xp.zeros(n, dtype=bool)
    violations = 0
    for lo, hi in _chunks(xp, int(src.shape[0])):
        a, b = src[lo:hi], dst[lo:hi]
        da, db = xp.take(distance, a), xp.take(distance, b)
        arcs = [(a, b, da, db)] if directed else [(a, b, da, db), (b, a, db, da)]
        for x, y, dx, dy in arcs:
            live = dx >= 0
            if depth_limit is not None:
                live &= dx < depth_limit
            violations = violations + xp.count_nonzero(live & ((dy < 0) | (dy > dx + 1)))
            joined[y[xp.take(predecessor, y) == x]] = True
    report["input edges span at most one level"] = int(violations)
    if depth_limit is not None:
        report["depth limit respected"] = int((distance > depth_limit).sum())
    report["tree edges are input edges"] = int((~joined[nonroot]).sum())
    return report


def _root_forest(fu, fv, label, n: int):
    """Root every tree of the forest (fu[i], fv[i]) at its label vertex by a level-synchronous
    search. Returns parent (a root is its own), parent-edge position (-1 at roots) and the list
    of levels (level 0: the roots)."""
    xp = array_module(fu)
    k = int(fu.shape[0])
    ends = xp.concatenate([fu, fv]).astype(np.int32)
    order = _order_by(ends)
    far = xp.concatenate([fv, fu]).astype(np.int32)[order]
    edge = (order % max(k, 1)).astype(np.int32)
    start = xp.zeros(n + 1, dtype=np.int64)
    start[1:] = xp.cumsum(xp.bincount(ends, minlength=n))
    parent = xp.full(n, -1, dtype=np.int32)
    pedge = xp.full(n, -1, dtype=np.int32)
    frontier = xp.flatnonzero(label == xp.arange(n, dtype=np.int32)).astype(np.int32)
    parent[frontier] = frontier
    levels = [frontier]
    while True:
        count = start[frontier + 1] - start[frontier]
        seg = segment_owner(count)
        if seg.shape[0] == 0:
            return parent, pedge, levels
        owner = frontier[seg]
        at = xp.arange(seg.shape[0]) - (xp.cumsum(count) - count)[seg] + start[frontier][seg]
        child = far[at]
        new = child != parent[owner]  # in a forest every other neighbour is a child
        child, owner, at = child[new], owner[new], at[new]
        if child.shape[0] == 0:
            return parent, pedge, levels
        parent[child], pedge[child] = owner, edge[at]
        levels.append(child)
        frontier = child


def _heavier_ancestor(parent, rank, depth_levels: int):
    """A-parent of every vertex: its nearest proper ancestor a with rank[a] > rank[v] (roots
    have rank above all, so they stop every search). Binary lifting over max-rank tables."""
    xp = array_module(parent)
    up, top = [parent], [rank]  # top[j][x]: max rank over x and its next 2**j - 1 ancestors
    for _ in range(1, max(1, depth_levels.bit_length())):
        up.append(up[-1][up[-1]])
        top.append(xp.maximum(top[-1], top[-1][up[-2]]))
    at = parent.copy()
    for j in reversed(range(len(up))):
        jump = top[j][at] < rank
        at = xp.where(jump, up[j][at], at)
    return at


def _krt_leaf_order(parent, rank, levels, n: int):
    """Position of every vertex in a Kruskal-reconstruction-tree leaf order (module docstring):
    a preorder walk of the heavier-ancestor tree, children in ascending rank."""
    xp = array_module(parent)
    aparent = _heavier_ancestor(parent, rank, len(levels))
    size = xp.ones(n, dtype=np.int32)  # vertices in v's A-subtree; A-children are deeper
    for level in reversed(levels[1:]):
        scatter_add(size, aparent[level], size[level])
    # offset of each A-child among its siblings: the sizes of its lighter siblings. Children
    # sorted by (A-parent, rank) as plain values; a rank names its child (vertex_of_rank).
    child = xp.flatnonzero(parent != xp.arange(n, dtype=np.int32))
    k = int(child.shape[0])
    vertex_of_rank = xp.empty(k, dtype=np.int64)
    vertex_of_rank[rank[child]] = child
    key = xp.sort(aparent[child].astype(np.int64) * k + rank[child])
    child = vertex_of_rank[key % max(k, 1)]
    grouped = key // max(k, 1)
    first = xp.ones(child.shape[0], dtype=bool)
    first[1:] = grouped[1:] != grouped[:-1]
    before = xp.cumsum(size[child], dtype=np.int64) - size[child]
    offset = xp.zeros(n, dtype=np.int64)
    offset[child] = before - before[xp.flatnonzero(first)][xp.cumsum(first) - 1]
    roots = levels[0]
    position = xp.zeros(n, dtype=np.int64)
    position[roots] = xp.cumsum(size[roots], dtype=np.int64) - size[roots]
    for level in levels[1:]:  # A-parents are shallower: already placed
        position[level] = position[aparent[level]] + 1 + offset[level]
    return position.astype(np.int32)


def _sparse_table(values, levels: int):
    """table[j * len + i] = max(values[i : i + 2**j]) (clipped at the end) for j < levels."""
    xp = array_module(values)
    n = int(values.shape[0])
    table = xp.empty((levels, n), dtype=values.dtype)
    table[0] = values
    for j in range(1, levels):
        span = 1 << (j - 1)
        table[j] = table[j - 1]
        if span < n:
            table[j, : n - span] = xp.maximum(table[j - 1, : n - span], table[j - 1, span:])
    return table.reshape(-1)


def _range_maximum(h):
    """A function (begin, last) -> max(h[begin..last]) for int32 arrays with begin <= last.
    Blocks of 2**BLOCK_BITS positions: a range over several blocks is the suffix of its first
    block, the prefix of its last, and the whole blocks between (a sparse table of block
    maxima); a range inside one block uses a sparse table of BLOCK_BITS + 1 levels. A typical
    query touches only arrays of n int32 and the small block table, where a full n log n
    sparse table (54 MB at Kron-20) would cost two cache misses."""
    xp = array_module(h)
    n = int(h.shape[0])
    width = 1 << BLOCK_BITS
    blocks = -(-n // width)
    prefix = xp.full((blocks, width), -1, dtype=np.int32)
    prefix.reshape(-1)[:n] = h
    suffix = prefix.copy()
    step = 1
    while step < width:  # in-block scans, log2(width) steps
        prefix[:, step:] = xp.maximum(prefix[:, step:], prefix[:, :-step])
        suffix[:, :-step] = xp.maximum(suffix[:, :-step], suffix[:, step:])
        step *= 2
    inner = _sparse_table(h, BLOCK_BITS + 1)
    # block table: one row per power of two, a -1 column on each side, and a last row of -1
    # that ranges with no whole block in between (blocks apart by 0 or 1) read instead
    levels = max(1, blocks.bit_length())
    columns = blocks + 2
    outer = xp.full((levels + 1, columns), -1, dtype=np.int32)
    outer[:levels, 1:-1] = _sparse_table(prefix[:, -1].copy(), levels).reshape(levels, blocks)
    outer = outer.reshape(-1)
    floor_log2 = np.zeros(max(blocks, width) + 1, dtype=np.int64)
    for j in range(1, floor_log2.shape[0].bit_length()):
        floor_log2[1 << j:] += 1
    # by blocks apart d = last_block - first_block: whole blocks first+1 .. last-1, d - 1 of them
    apart = np.arange(blocks + 1)
    power = np.where(apart >= 2, floor_log2[np.maximum(apart - 1, 0)], 0)
    row = np.where(apart >= 2, power * columns, levels * columns)
    step_left = xp.asarray(row + 2)  # column of block first+1
    step_right = xp.asarray(np.where(apart >= 2, row + 1 - (1 << power), row + 1))  # of last - 2**j
    prefix, suffix = prefix.reshape(-1), suffix.reshape(-1)
    floor_log2 = xp.asarray(floor_log2[: width + 1])

    def query(begin, last):
        first_block, last_block = begin >> BLOCK_BITS, last >> BLOCK_BITS
        apart = last_block - first_block
        top = xp.maximum(xp.take(suffix, begin), xp.take(prefix, last))
        top = xp.maximum(top, xp.maximum(xp.take(outer, xp.take(step_left, apart) + first_block),
                                          xp.take(outer, xp.take(step_right, apart) + last_block)))
        same = xp.flatnonzero(apart == 0)
        if same.shape[0]:
            b, e = begin[same], last[same]
            j = xp.take(floor_log2, e - b + 1)
            top[same] = xp.maximum(xp.take(inner, j * n + b), xp.take(inner, j * n + e - (1 << j) + 1))
        return top

    return query


def verify_forest(src, dst, weight, n: int, chosen):
    """Check that edge indices ``chosen`` form a minimum spanning forest of (src, dst, weight)."""
    xp = array_module(src)
    m = int(src.shape[0])
    chosen = xp.asarray(chosen, dtype=np.int64)
    report = {}
    in_range = (chosen >= 0) & (chosen < m)
    chosen = chosen[in_range]
    k = int(chosen.shape[0])
    ordered = xp.sort(chosen)  # a plain sort: NumPy 2's hashing unique is 40x slower here
    repeats = int(xp.count_nonzero(ordered[1:] == ordered[:-1]))
    report["edges are distinct input edges"] = int(in_range.shape[0]) - k + repeats
    fu, fv = src[chosen], dst[chosen]
    label = connected_components(fu, fv, n)
    trees = int((label == xp.arange(n, dtype=np.int32)).sum())
    # n vertices, k edges and c components form a forest exactly when k = n - c
    report["acyclic"] = abs(k - (n - trees))
    if report["acyclic"]:
        # every input edge inside one tree: the trees are the graph's components
        report["one tree per component"] = sum(
            int(xp.count_nonzero(xp.take(label, src[lo:hi]) != xp.take(label, dst[lo:hi])))
            for lo, hi in _chunks(xp, m))
        report["minimum (cycle property)"] = -1  # not checkable on a non-forest
        return report
    forest_weight = weight[chosen]
    by_weight = xp.argsort(forest_weight)  # ties in any order: path maxima are by weight
    # rank k (a root's) maps to -inf: it marks ranges that cross trees, never a lighter edge
    lowest = -np.inf if weight.dtype.kind == "f" else np.iinfo(weight.dtype).min
    weight_of_rank = xp.concatenate([forest_weight[by_weight], xp.full(1, lowest, dtype=weight.dtype)])
    edge_rank = xp.empty(k, dtype=np.int32)
    edge_rank[by_weight] = xp.arange(k, dtype=np.int32)
    parent, pedge, levels = _root_forest(fu, fv, label, n)
    rank = xp.full(n, k, dtype=np.int32)  # a root: the lower end of an edge heavier than all
    below = xp.flatnonzero(pedge >= 0)
    rank[below] = edge_rank[pedge[below]]
    position = _krt_leaf_order(parent, rank, levels, n)
    h = xp.empty(n, dtype=np.int32)
    h[position] = rank
    range_max = _range_maximum(h)
    crossing = heavier = 0
    for lo, hi in _chunks(xp, m):
        pu, pv = xp.take(position, src[lo:hi]), xp.take(position, dst[lo:hi])
        first, last = xp.minimum(pu, pv), xp.maximum(pu, pv)
        path = first != last  # a self-loop has an empty path: it passes
        top = range_max(xp.minimum(first + 1, last), last)
        # the range after u's position up to v's holds a root exactly when u, v lie in two trees
        crossing = crossing + xp.count_nonzero((top == k) & path)
        heavier = heavier + xp.count_nonzero((weight[lo:hi] < xp.take(weight_of_rank, top)) & path)
    # every input edge inside one tree: the trees are the graph's components
    report["one tree per component"] = int(crossing)
    report["minimum (cycle property)"] = -1 if int(crossing) else int(heavier)
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
