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

Path maxima for (4): O(1) lookups per edge after O(n log n) work on the forest alone, in
O(log n) rounds whatever the forest's depth (a round is a few array operations, on a GPU a few
launches and at most one host sync; ``rounds`` counts them by step).
Give the forest edges distinct ranks (by weight, ties in any order); root every tree at its
label vertex (its Euler tour, below); r(v) is the rank of v's parent edge, and a root counts as
the lower end of an edge heavier than all (rank k).
  * Heavier-ancestor tree A: the A-parent of v is its nearest proper ancestor a with
    r(a) > r(v), or the root when there is none (binary lifting over max-rank tables, as many
    levels as bits in depth + 1).
  * Order each tree's vertices by a preorder walk of A whose children go in ascending r (A's
    Euler tour, below), and set h[pos(v)] = r(v). For u, v in one tree, the heaviest forest
    edge on the path u..v is the one of rank max(h[i] for min(pos) < i <= max(pos)): one range
    maximum. And when u, v lie in different trees that range holds the later tree's root
    (rank k), which is how (3) is counted in the same pass.
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
  Euler tours: a tree of s vertices has 2 (s - 1) arcs, each edge once down and once up, and
  a walk that takes every arc once, each subtree entered through its parent edge and left
  through it after every arc inside. The forest's tour needs no root to be built: with each
  vertex's arcs in a circular list, u->v is followed by the arc after v->u in v's list; cut
  after the arc into the root from its last neighbour, it is a list starting at the root. The
  earlier of an edge's two arcs goes down, which roots the tree, and prefix sums of +1 (down)
  and -1 (up) along the tour give depths. A's tour is built from A itself: down into v, then
  down into v's lightest A-child (or up out of v at once); up out of v, then down into v's next
  heavier sibling (or up out of v's A-parent, or the end at the root). Counting for every arc
  the down arcs from it to the end of its list gives the preorder: v's position is its tree's
  first position + the tree's size - the down arcs from v's own on.
  List ranking (those counts, and the arcs left after each arc): pointer jumping, every arc
  adding the count of the arc it points to and taking over its pointer, so log2 of the longest
  tour rounds. On long lists rulers (one arc in 16, by a hash of the index) cut the passes over
  all arcs to about log2(16 log n): pointers jump only to the next ruler, then the rulers'
  list is ranked on its own.
  Range maxima: blocks of 64 positions; a range across blocks is a suffix, a prefix and a
  sparse table over block maxima; a range inside one block a sparse table of 7 levels.

Memory: the edges are read in chunks (HOST_CHUNK / DEVICE_CHUNK) and nothing of length m is
allocated: per chunk about a dozen temporaries of the chunk's length, four of them int64.
Besides those: about ten int32/int64 arrays of n (labels, parents, parent edges, ranks, sizes,
A-parents, positions), ceil(log2(depth + 1)) int64 lifting tables of n, the range-maximum
tables (9 n int32 plus n / 64 * log2 n), the forest's k edges and, while a tour is ranked,
about eight int64 arrays of its 2k arcs; for the BFS check a few arrays of n.
"""
from __future__ import annotations

import collections
import math

import numpy as np

from kernels.backend import array_module, bincount, count_equal, count_nonfinite, count_true, float32_order_keys, scatter_min

# Edges are read in chunks so that temporaries never grow with m. Host: a chunk's dozen
# temporaries (4-8 MB each) stay close to the CPU caches. GPU: fewer, larger launches; a dozen
# temporaries of 4 M entries (four of them int64) take about 0.3 GB, whatever m is.
HOST_CHUNK = 1 << 20
DEVICE_CHUNK = 1 << 22
BLOCK_BITS = 6  # range-maximum blocks of 64 positions (see _range_maximum)
POINTER, SUM = (1 << 32) - 1, -(1 << 32)  # the halves of a pointer-jumping int64 (_list_suffix_sums)
RULER_BITS = 4  # list ranking: one ruler in about 2**RULER_BITS arcs ...
RULER_SPACING = 1 << RULER_BITS
RULED_LISTS = 1 << 16  # ... for this many arcs and more (_list_suffix_sums)
# Python-level iterations of each looping step, by step: each is a few array operations (and on
# a GPU a few launches), so these counts, not the forest's depth, set the time on deep forests.
# A diagnostic for tests and profiling (calls in several threads add up in it).
rounds = collections.Counter()


def _chunks(xp, m: int):
    step = HOST_CHUNK if xp is np else DEVICE_CHUNK
    for lo in range(0, m, step):
        yield lo, min(lo + step, m)


def connected_components(src, dst, n: int):
    """Component label (int32) of every vertex: the smallest vertex id in its component. Hook
    each root to the smallest root across an edge, then compress paths, until no edge crosses.
    O(len(src)) per round; used on forests here. O(log n) rounds, each followed by log2 (longest
    hook chain) compressions: a tree that hooks nowhere although it has neighbours, all of which
    hooked to other trees, meets a smaller root the next round, so every two rounds leave at
    most 3/4 of the trees that still have neighbours."""
    xp = array_module(src)
    label = xp.arange(n, dtype=np.int32)
    while True:
        rounds["components: hooking"] += 1
        lu, lv = label[src], label[dst]
        cross = lu != lv
        if not count_true(cross):
            return label
        lo, hi = xp.minimum(lu, lv)[cross], xp.maximum(lu, lv)[cross]
        scatter_min(label, hi, lo)
        while True:
            rounds["components: shortcuts"] += 1
            nxt = label[label]
            if count_equal(nxt, label) == n:
                break
            label = nxt


def verify_bfs(src, dst, n: int, sources, distance, predecessor, directed=False, depth_limit=None):
    """Graph500 validation of a (multi-source) BFS result over the arcs src->dst (both ways
    when undirected)."""
    xp = array_module(distance)
    if xp is not np:  # fused passes, counted on the device (kernels/gpu_verify.py)
        from kernels import gpu_verify

        return gpu_verify.verify_bfs(src, dst, n, sources, distance, predecessor, directed, depth_limit)
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


def _pointer_jump(packed, steps: int, stop_early: bool = True):
    """Pointer jumping over an int64 array whose entries pack a pointer (low 32 bits) and a sum
    (high bits): every entry adds the sum of the entry it points to and takes over its pointer,
    doubling the hops it covers, until every pointer rests on an entry that points to itself
    with sum 0 (a stop), or for ``steps`` rounds at most. One gather per round, and with
    ``stop_early`` one host sync for the test that ends the loop early. ``packed`` is reused as
    a buffer."""
    xp = array_module(packed)
    ahead, part = xp.empty_like(packed), xp.empty_like(packed)
    for _ in range(steps):
        rounds["list ranking"] += 1
        xp.bitwise_and(packed, POINTER, out=part)
        xp.take(packed, part, out=ahead)
        xp.bitwise_and(packed, SUM, out=part)
        ahead += part
        if stop_early and count_equal(ahead, packed) == packed.shape[0]:  # pointers all on stops: nothing moved
            break
        packed, ahead = ahead, packed
    return packed


def _list_suffix_sums(successor, weight, steps: int):
    """Suffix sums over linked lists: arcs 0 .. a-1, ``successor[i]`` the next arc or a (the end),
    ``weight`` non-negative ints, lists at most 2**steps arcs long. Returns, for every arc, the
    sum of the weights from it to the end of its list, in at most 2 steps + RULER_BITS rounds.

    Long lists are ranked through rulers, about one arc in RULER_SPACING (picked by a hash of
    the index, so spread along any list): pointers first jump only up to the next ruler, a few
    rounds; then the rulers' own list, a / RULER_SPACING entries, is ranked; then one gather
    adds a ruler's sum to every arc before it. That is about log2(RULER_SPACING log a) passes
    over all arcs instead of log2(a)."""
    xp = array_module(successor)
    a = int(successor.shape[0])
    packed = xp.empty(a + 1, dtype=np.int64)
    packed[:a] = (weight.astype(np.int64) << 32) | successor
    packed[a] = a  # the end is a stop
    if a < RULED_LISTS:
        return _pointer_jump(packed, steps)[:a] >> 32
    hashed = xp.arange(a, dtype=np.uint32) * np.uint32(2654435761)  # Knuth's multiplicative hash
    rulers = xp.flatnonzero(hashed >> 32 - RULER_BITS == 0)  # arc 0 among them
    del hashed
    reach = packed[rulers]  # a ruler's own weight and successor
    packed[rulers] = rulers  # rulers are stops too
    packed = _pointer_jump(packed, min(RULER_BITS, steps), stop_early=False)  # few pointers stop this soon
    # from here on only the few pointers still short of a stop jump (a stop is its own value)
    moving = xp.flatnonzero(xp.take(packed, packed & POINTER) != (packed & POINTER))
    for _ in range(steps):
        if moving.shape[0] == 0:
            break
        rounds["list ranking"] += 1
        mine = packed[moving]
        jumped = xp.take(packed, mine & POINTER) + (mine & SUM)
        packed[moving] = jumped
        moving = moving[jumped != mine]
    # each ruler's sum up to the next ruler (or the end), and that ruler as a place in the rulers' list
    reach = (reach & SUM) + xp.take(packed, reach & POINTER)
    place = xp.empty(a + 1, dtype=np.int64)
    place[rulers] = xp.arange(rulers.shape[0], dtype=np.int64)
    place[a] = rulers.shape[0]
    ruled = xp.empty(rulers.shape[0] + 1, dtype=np.int64)
    ruled[:-1] = (reach & SUM) | xp.take(place, reach & POINTER)
    ruled[-1] = rulers.shape[0]
    del place, reach
    total = xp.zeros(a + 1, dtype=np.int64)
    total[rulers] = _pointer_jump(ruled, steps)[:-1] >> 32
    return (packed[:a] >> 32) + xp.take(total, packed[:a] & POINTER)


def _tour_steps(size) -> int:
    """Pointer-jumping steps that rank every Euler tour: ceil(log2) of the longest, 2 (s - 1)
    arcs for a tree of s vertices (``size``: vertices per tree, indexed by its label)."""
    largest = int(size.max()) if size.shape[0] else 0
    return max(0, 2 * largest - 3).bit_length()


def _root_forest(fu, fv, label, size, steps: int):
    """Root every tree of the forest (fu[i], fv[i]) at its label vertex through its Euler tour.
    Arc i goes fu[i] -> fv[i], arc k + i back; sorted by tail, each vertex's arcs form a
    circular list, and the tour goes from u->v on to the arc after v->u in v's list. A tour
    starts at its root's first arc and ends at the arc into the root from the root's last
    neighbour. Of an edge's two arcs the one earlier in the tour goes down. Returns parent (a
    root is its own), parent-edge position (-1 at roots) and the forest's depth (prefix sums of
    +1 down, -1 up over the tours laid end to end)."""
    xp = array_module(fu)
    k, n = int(fu.shape[0]), int(label.shape[0])
    parent = xp.arange(n, dtype=np.int32)
    pedge = xp.full(n, -1, dtype=np.int32)
    if k == 0:
        return parent, pedge, 0
    tail = xp.concatenate([fu, fv]).astype(np.int64)
    shift = (2 * k - 1).bit_length()
    key = xp.sort((tail << shift) | xp.arange(2 * k, dtype=np.int64))  # (tail, arc) as one integer
    order = key & ((1 << shift) - 1)
    key >>= shift  # the tail of each arc in `order`
    opens = xp.ones(2 * k, dtype=bool)
    opens[1:] = key[1:] != key[:-1]
    first = xp.flatnonzero(opens)  # places in `order` where a vertex's arcs begin ...
    last = xp.empty_like(first)  # ... and end
    last[:-1] = first[1:] - 1
    last[-1] = 2 * k - 1
    following = xp.empty(2 * k, dtype=np.int64)
    following[:-1] = order[1:]
    following[last] = order[first]  # the lists are circular
    after = xp.empty(2 * k, dtype=np.int64)
    after[order] = following  # the arc after each arc in its tail's list
    del following, opens
    successor = xp.concatenate([after[k:], after[:k]])  # u->v is followed by the arc after v->u
    del after
    at_root = label[key[first]] == key[first]
    successor[(order[last[at_root]] + k) % (2 * k)] = 2 * k  # into a root from its last neighbour: the end
    del key, order, first, last
    remaining = _list_suffix_sums(successor, xp.ones(2 * k, dtype=np.int8), steps)  # arcs to the end
    del successor
    down = remaining[:k] > remaining[k:]  # fu[i] -> fv[i] comes first: fu[i] is the parent
    child = xp.where(down, fv, fu)
    parent[child] = xp.where(down, fu, fv)
    pedge[child] = xp.arange(k, dtype=np.int32)
    tour_end = xp.cumsum(xp.maximum(2 * size - 2, 0))  # tree v's tour ends at tour_end[v]
    step = xp.empty(2 * k, dtype=np.int8)
    step[tour_end[label[tail]] - remaining] = xp.where(xp.concatenate([down, ~down]), 1, -1).astype(np.int8)
    depth = int(xp.cumsum(step, dtype=np.int32).max())
    return parent, pedge, depth


def _heavier_ancestor(parent, rank, depth: int):
    """A-parent of every vertex: its nearest proper ancestor a with rank[a] > rank[v] (roots
    have rank above all, so they stop every search). Binary lifting, as many levels as bits in
    depth + 1; level j packs, for every x, the max rank over x and its next 2**j - 1 ancestors
    (high 32 bits) with its 2**j-th ancestor (low bits), so a lookup is one gather."""
    xp = array_module(parent)
    table = [(rank.astype(np.int64) << 32) | parent]
    for _ in range(1, max(1, (depth + 1).bit_length())):
        rounds["binary lifting"] += 1
        below = table[-1]
        above = xp.take(below, below & POINTER)
        table.append(xp.maximum(below & SUM, above & SUM) | (above & POINTER))
    at = parent.astype(np.int64)
    for level in reversed(table):
        rounds["binary lifting"] += 1
        entry = xp.take(level, at)
        at = xp.where(entry >> 32 < rank, entry & POINTER, at)
    return at


def _krt_leaf_order(parent, aparent, rank, label, size, steps: int):
    """Position of every vertex in a Kruskal-reconstruction-tree leaf order (module docstring):
    a preorder walk of the heavier-ancestor tree A, children in ascending rank, trees one after
    another by label. The walk is A's Euler tour, ranked by pointer jumping."""
    xp = array_module(parent)
    n = int(parent.shape[0])
    first = xp.cumsum(size) - size  # tree v's positions begin at first[v]; its root goes there
    position = first[label]
    child = xp.flatnonzero(parent != xp.arange(n, dtype=np.int32))
    k = int(child.shape[0])
    if k == 0:
        return position.astype(np.int32)
    # children sorted by (A-parent, rank) as plain values; a rank names its child (vertex_of_rank)
    vertex_of_rank = xp.empty(k, dtype=np.int64)
    vertex_of_rank[rank[child]] = child
    key = xp.sort(aparent[child].astype(np.int64) * k + rank[child])
    child = vertex_of_rank[key % k]
    group = key // k  # the A-parent
    del key, vertex_of_rank
    # A's tour: arc j goes down into child[j], arc k + j up out of it; 2k is the end
    index = xp.arange(k, dtype=np.int64)
    slot = xp.full(n, -1, dtype=np.int64)
    slot[child] = index
    opens = xp.ones(k, dtype=bool)  # child[j] is its A-parent's first (lightest) child
    opens[1:] = group[1:] != group[:-1]
    first_child = xp.full(n, -1, dtype=np.int64)
    first_child[group[opens]] = index[opens]
    below = first_child[child]
    into = xp.where(below >= 0, below, k + index)  # after going down: to the first child, or back up
    closes = xp.ones(k, dtype=bool)
    closes[:-1] = opens[1:]
    above = aparent[child]
    out = xp.where(closes, xp.where(parent[above] == above, 2 * k, k + slot[above]), index + 1)
    weight = xp.concatenate([xp.ones(k, dtype=np.int8), xp.zeros(k, dtype=np.int8)])
    later = _list_suffix_sums(xp.concatenate([into, out]), weight, steps)[:k]  # v and the rest of its tree
    position[child] += size[label[child]] - later
    return position.astype(np.int32)


def _sparse_table(values, levels: int):
    """table[j * len + i] = max(values[i : i + 2**j]) (clipped at the end) for j < levels."""
    xp = array_module(values)
    n = int(values.shape[0])
    table = xp.empty((levels, n), dtype=values.dtype)
    table[0] = values
    for j in range(1, levels):
        rounds["range maxima"] += 1
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
        rounds["range maxima"] += 1
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
    """Check that edge indices ``chosen`` form a minimum spanning forest of (src, dst, weight).
    NaN weights are refused (ValueError): no forest is minimal under them."""
    xp = array_module(src)
    if xp is not np:  # the same steps as fused launches (kernels/gpu_verify.py)
        from kernels import gpu_verify

        return gpu_verify.verify_forest(src, dst, weight, n, chosen, rounds)
    if weight.dtype.kind == "f" and count_nonfinite(weight, nan_only=True):
        raise ValueError("edge weights must not be NaN")
    m = int(src.shape[0])
    chosen = xp.asarray(chosen, dtype=np.int64)
    report = {}
    in_range = (chosen >= 0) & (chosen < m)
    chosen = chosen[in_range]
    k = int(chosen.shape[0])
    ordered = xp.sort(chosen)  # a plain sort: NumPy 2's hashing unique is 40x slower here
    repeats = count_equal(ordered[1:], ordered[:-1])
    report["edges are distinct input edges"] = int(in_range.shape[0]) - k + repeats
    fu, fv = src[chosen], dst[chosen]
    label = connected_components(fu, fv, n)
    trees = count_equal(label, xp.arange(n, dtype=np.int32))
    # n vertices, k edges and c components form a forest exactly when k = n - c
    report["acyclic"] = abs(k - (n - trees))
    if report["acyclic"]:
        # every input edge inside one tree: the trees are the graph's components
        report["one tree per component"] = sum(
            hi - lo - count_equal(xp.take(label, src[lo:hi]), xp.take(label, dst[lo:hi])) for lo, hi in _chunks(xp, m))
        report["minimum (cycle property)"] = -1  # not checkable on a non-forest
        return report
    if weight.dtype == np.float32:  # compared by their bits (kernels/backend.py says why)
        weight = float32_order_keys(weight)
    forest_weight = weight[chosen]
    by_weight = xp.argsort(forest_weight)  # ties in any order: path maxima are by weight
    # rank k (a root's) maps to -inf: it marks ranges that cross trees, never a lighter edge
    lowest = -np.inf if weight.dtype.kind == "f" else np.iinfo(weight.dtype).min
    weight_of_rank = xp.concatenate([forest_weight[by_weight], xp.full(1, lowest, dtype=weight.dtype)])
    edge_rank = xp.empty(k, dtype=np.int32)
    edge_rank[by_weight] = xp.arange(k, dtype=np.int32)
    # vertices of the tree labelled v (0 off labels)
    size = bincount(label, n)
    steps = _tour_steps(size)
    parent, pedge, depth = _root_forest(fu, fv, label, size, steps)
    rank = xp.full(n, k, dtype=np.int32)  # a root: the lower end of an edge heavier than all
    below = xp.flatnonzero(pedge >= 0)
    rank[below] = edge_rank[pedge[below]]
    aparent = _heavier_ancestor(parent, rank, depth)
    position = _krt_leaf_order(parent, aparent, rank, label, size, steps)
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
        crossing += count_true((top == k) & path)
        heavier += count_true((weight[lo:hi] < xp.take(weight_of_rank, top)) & path)
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
