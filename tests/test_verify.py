"""The verifiers on their own: they accept every correct answer that independent references
(scipy, networkx, the serial Kruskal) produce, and they catch each kind of wrong answer.
Run on every usable backend (NumPy here, CuPy on a GPU)."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

from kernels import backend as be
from kernels import verify
from kernels.bfs import bfs
from kernels.graph import build_graph, edge_list
from kernels.msf import minimum_spanning_forest
from kernels.verify import kruskal, verify_bfs, verify_forest
from tests.references import kruskal_rows, serial_bfs

nx = pytest.importorskip("networkx")

SEEDS = range(12)


def random_graph(seed, weight_dtype=np.float64):
    """A few components (vertices split in groups, edges only inside a group), isolated
    vertices, heavy weight ties, parallel edges (some with equal weights) and self-loops, in
    shuffled order. Returns host arrays src, dst (int32), weight and n."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 60))
    group = rng.integers(0, 3, n)
    group[rng.choice(n, 2, replace=False)] = 3 + np.arange(2)  # two isolated vertices
    src, dst = [], []
    for g in range(3):
        members = np.flatnonzero(group == g)
        if members.size < 2:
            continue
        count = int(rng.integers(members.size, 4 * members.size))
        src.append(rng.choice(members, count))
        dst.append(rng.choice(members, count))
    src, dst = np.concatenate(src), np.concatenate(dst)
    weight = rng.choice([-1.0, 0.0, 0.5, 1.0, 1.0, 2.0, 3.25], src.size)
    twins = rng.choice(src.size, src.size // 5)  # parallel edges
    loops = rng.choice(n, 4)
    src = np.concatenate([src, src[twins], loops])
    dst = np.concatenate([dst, dst[twins], loops])
    weight = np.concatenate([weight, weight[twins] + rng.integers(0, 2, twins.size), np.full(4, -5.0)])
    order = rng.permutation(src.size)
    return src[order].astype(np.int32), dst[order].astype(np.int32), weight[order].astype(weight_dtype), n


def on(backend, *arrays):
    return [be.to_backend(np.asarray(a), backend) for a in arrays]


def all_zero(report):
    return all(v == 0 for v in report.values())


def check_forest(backend, src, dst, weight, n, chosen):
    return verify_forest(*on(backend, src, dst, weight), n, be.to_backend(np.asarray(chosen, dtype=np.int64), backend))


def check_bfs(backend, src, dst, n, sources, dist, pred, directed=False, limit=None):
    return verify_bfs(*on(backend, src, dst), n, sources, *on(backend, dist, pred), directed, limit)


# ---- reference forests ----------------------------------------------------------------------

def networkx_forest(src, dst, weight, n, algorithm):
    g = nx.MultiGraph()
    g.add_nodes_from(range(n))
    for e, (a, b, w) in enumerate(zip(src.tolist(), dst.tolist(), weight.tolist())):
        g.add_edge(a, b, key=e, weight=w)
    return np.array(sorted(k for _, _, k in nx.minimum_spanning_edges(g, algorithm=algorithm, keys=True, data=False)),
                    dtype=np.int64)


def scipy_forest(src, dst, weight, n):
    """scipy's forest mapped back to edge indices: scipy sums parallel edges and drops zeros, so
    it gets the lightest edge of each pair, weights shifted to be positive."""
    keep = np.flatnonzero(src != dst)
    a, b = np.minimum(src, dst)[keep], np.maximum(src, dst)[keep]
    order = np.lexsort((weight[keep], b, a))
    first = np.ones(order.size, dtype=bool)
    first[1:] = (a[order][1:] != a[order][:-1]) | (b[order][1:] != b[order][:-1])
    pick = keep[order[first]]
    w = weight[pick].astype(np.float64)
    tree = csgraph.minimum_spanning_tree(sp.csr_matrix((w - w.min() + 1.0, (np.minimum(src, dst)[pick],
                                                                             np.maximum(src, dst)[pick])),
                                                       shape=(n, n))).tocoo()
    index = {(int(x), int(y)): int(e) for x, y, e in zip(np.minimum(src, dst)[pick], np.maximum(src, dst)[pick], pick)}
    return np.array(sorted(index[(int(x), int(y))] for x, y in zip(tree.row, tree.col)), dtype=np.int64)


def forests(src, dst, weight, n):
    return {"kruskal": kruskal(src, dst, weight, n)[1],
            "networkx-kruskal": networkx_forest(src, dst, weight, n, "kruskal"),
            "networkx-prim": networkx_forest(src, dst, weight, n, "prim"),
            "scipy": scipy_forest(src, dst, weight, n)}


# ---- correct forests pass -------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_forests_from_every_reference_pass(backend, seed, dtype):
    """Ties, parallel edges, self-loops, isolated vertices, several components: every
    reference's forest (they differ under ties) passes, and their totals agree."""
    src, dst, weight, n = random_graph(seed, dtype)
    totals = set()
    for name, chosen in forests(src, dst, weight, n).items():
        report = check_forest(backend, src, dst, weight, n, chosen)
        assert all_zero(report), (name, report)
        totals.add(math.fsum(weight[chosen].tolist()))
    assert len(totals) == 1


def test_float32_weights_are_compared_in_float32(backend):
    """Two weights that differ in float64 but round to one float32 value tie in float32: either
    edge closes the triangle's forest minimally."""
    a, b = 1.0, 1.0 + 2.0 ** -30  # equal as float32
    src, dst = np.array([0, 1, 0], np.int32), np.array([1, 2, 2], np.int32)
    weight = np.array([0.5, a, b], dtype=np.float32)
    for chosen in ([0, 1], [0, 2]):
        assert all_zero(check_forest(backend, src, dst, weight, 3, chosen))
    weight64 = np.array([0.5, a, b])
    assert check_forest(backend, src, dst, weight64, 3, [0, 2])["minimum (cycle property)"] == 1


def test_self_loops_are_never_needed_and_never_violations(backend):
    """Self-loops stay in the edge list (edge index = input row), lighter than every edge."""
    src = np.array([0, 0, 1, 1, 2], np.int32)
    dst = np.array([0, 1, 1, 2, 2], np.int32)
    weight = np.array([-9.0, 1.0, -9.0, 2.0, -9.0])
    assert all_zero(check_forest(backend, src, dst, weight, 3, [1, 3]))
    report = check_forest(backend, src, dst, weight, 3, [0, 1, 3])
    assert report["acyclic"] == 1  # a self-loop in the forest is a cycle


def test_empty_graphs(backend):
    empty = np.zeros(0, np.int32)
    for n in (0, 1, 5):
        assert all_zero(check_forest(backend, empty, empty, np.zeros(0), n, []))


@pytest.mark.parametrize("shape", ["path rising", "path falling", "caterpillar", "random tree"])
def test_deep_forests(backend, shape):
    """Forests thousands of levels deep (road networks' forests are): a tree with chords; the
    tree is the minimum forest when every chord outweighs the tree path it closes."""
    rng = np.random.default_rng(11)
    n = 3000
    v = np.arange(1, n)
    if shape == "caterpillar":  # a spine 0..n/2 - 1, one leg on each spine vertex
        parent = np.where(v < n // 2, v - 1, v - n // 2)
    elif shape == "random tree":
        parent = np.array([rng.integers(max(0, v - 4), v) for v in range(1, n)])
    else:
        parent = v - 1
    tree_w = {"path rising": np.arange(n - 1.0), "path falling": -np.arange(n - 1.0)}.get(
        shape, rng.integers(0, 50, n - 1).astype(float))
    perm = rng.permutation(n)  # ids unrelated to depth
    a, b = rng.choice(n, 4000), rng.choice(n, 4000)
    a, b = a[a != b], b[a != b]
    src = np.concatenate([perm[v], perm[a]]).astype(np.int32)
    dst = np.concatenate([perm[parent], perm[b]]).astype(np.int32)
    weight = np.concatenate([tree_w, np.full(a.size, 1e9)])  # chords outweigh every tree edge
    tree = np.arange(n - 1)
    assert all_zero(check_forest(backend, src, dst, weight, n, tree))
    # one chord made lighter than every tree edge: the tree is no longer minimum
    light = weight.copy()
    light[n - 1 + 7] = -1e9
    assert check_forest(backend, src, dst, light, n, tree)[
        "minimum (cycle property)"] == 1
    assert all_zero(check_forest(backend, src, dst, light, n, kruskal(src, dst, light, n)[1]))


def test_results_do_not_depend_on_the_chunk_size(backend, monkeypatch):
    """Edges read in many small chunks give the same reports as one chunk."""
    src, dst, weight, n = random_graph(3)
    _, good = kruskal(src, dst, weight, n)
    dist, pred = scipy_bfs_tree(src, dst, n, [0], directed=False)
    far = int(np.argmax(dist))
    dist_bad, pred_bad = dist.copy(), pred.copy()
    dist_bad[far], pred_bad[far] = -1, -1

    def reports():
        forest = [check_forest(backend, src, dst, weight, n, c) for c in (good, good[:-1])]
        search = [check_bfs(backend, src, dst, n, [0], d, p) for d, p in ((dist, pred), (dist_bad, pred_bad))]
        return forest + search

    expected = reports()
    monkeypatch.setattr(verify, "HOST_CHUNK", 7)
    monkeypatch.setattr(verify, "DEVICE_CHUNK", 7)
    assert reports() == expected
    assert all_zero(expected[0]) and expected[1]["one tree per component"] > 0
    assert all_zero(expected[2]) and expected[3]["input edges span at most one level"] > 0


# ---- wrong forests are caught ---------------------------------------------------------------

def path_maximum_edge(src, dst, weight, chosen, u, v):
    """The heaviest forest edge on the forest path u..v, by a plain graph walk."""
    g = nx.Graph()
    for e in chosen.tolist():
        g.add_edge(int(src[e]), int(dst[e]), edge=e)
    path = nx.shortest_path(g, int(u), int(v))
    edges = [g.edges[a, b]["edge"] for a, b in zip(path, path[1:])]
    return max(edges, key=lambda e: weight[e])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_forest_mutations_are_caught(backend, seed, dtype):
    src, dst, weight, n = random_graph(seed, dtype)
    _, good = kruskal(src, dst, weight, n)
    check = lambda chosen: check_forest(backend, src, dst, weight, n, chosen)
    outside = [e for e in range(src.size) if e not in set(good.tolist()) and src[e] != dst[e]]
    # dropping an edge splits a tree: edges now join two trees
    report = check(good[1:])
    assert report["one tree per component"] > 0 and report["acyclic"] == 0
    # adding a non-forest edge closes a cycle
    assert check(np.append(good, outside[0]))["acyclic"] > 0
    # a repeated edge, an index out of range
    assert check(np.append(good, good[0]))["edges are distinct input edges"] == 1
    assert check(np.append(good, src.size))["edges are distinct input edges"] == 1
    # swap a forest edge for a strictly heavier edge across the same cut: spanning, not minimum
    swaps = 0
    for e in outside:
        f = path_maximum_edge(src, dst, weight, good, src[e], dst[e])
        if weight[e] > weight[f]:
            report = check(np.append(good[good != f], e))
            assert report["acyclic"] == 0 and report["one tree per component"] == 0
            assert report["minimum (cycle property)"] >= 1
            swaps += 1
            if swaps == 3:
                break
    assert swaps > 0


# ---- BFS: correct trees pass ----------------------------------------------------------------

def scipy_bfs_tree(src, dst, n, sources, directed, depth_limit=None):
    """Distances and predecessors of scipy's BFS from a virtual vertex n joined to every source
    (a multi-source BFS); a depth limit cuts the tree below that level."""
    rows = np.concatenate([src, np.full(len(sources), n)])
    cols = np.concatenate([dst, sources])
    a = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n + 1, n + 1))
    if not directed:
        a = a + sp.csr_matrix((np.ones(src.size), (dst, src)), shape=(n + 1, n + 1))
    order, pred = csgraph.breadth_first_order(a, n, directed=True, return_predecessors=True)
    dist = np.full(n + 1, -1)
    dist[n] = 0
    for v in order[1:]:  # BFS order: a parent comes before its children
        dist[v] = dist[pred[v]] + 1
    dist, pred = dist[:n] - 1, pred[:n].astype(np.int64)
    dist[dist < 0] = -1
    pred[dist < 0] = -1
    pred[pred == n] = np.flatnonzero(pred == n)  # sources are their own parents
    if depth_limit is not None:
        cut = dist > depth_limit
        dist[cut], pred[cut] = -1, -1
    return dist.astype(np.int32), pred.astype(np.int32)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_bfs_trees_from_scipy_pass(backend, seed, directed):
    src, dst, _, n = random_graph(seed)
    rng = np.random.default_rng(seed)
    sources = np.unique(rng.choice(n, int(rng.integers(1, 4))))
    for limit in (None, 0, 1, 2):
        dist, pred = scipy_bfs_tree(src, dst, n, sources, directed, limit)
        report = check_bfs(backend, src, dst, n, sources, dist, pred, directed, limit)
        assert all_zero(report), (limit, report)


# ---- BFS: wrong trees are caught ------------------------------------------------------------

def test_bfs_mutations_are_caught(backend):
    """A path 0-1-2-3-4 with a chord 1-3 and a separate edge 5-6."""
    src = np.array([0, 1, 2, 3, 1, 5], np.int32)
    dst = np.array([1, 2, 3, 4, 3, 6], np.int32)
    n = 7
    dist, pred = scipy_bfs_tree(src, dst, n, [0], directed=False)
    assert dist.tolist() == [0, 1, 2, 2, 3, -1, -1]
    check = lambda d, p, limit=None: check_bfs(backend, src, dst, n, [0], d, p, False, limit)
    assert all_zero(check(dist, pred))
    p = pred.copy(); p[4] = 1  # wrong parent: 1-4 is not an edge (and 1 is two levels up)
    assert check(dist, p)["tree edges are input edges"] == 1
    p = pred.copy(); p[3] = 2  # wrong parent: an edge, but within one level
    assert check(dist, p)["tree edges span one level"] == 1
    d = dist.copy(); d[4] = 4  # wrong level: 3-4 spans two levels
    assert check(d, pred)["input edges span at most one level"] > 0
    d = dist.copy(); d[2] = 1  # wrong level: the tree edge 1-2 joins two vertices of level 1
    assert check(d, pred)["tree edges span one level"] == 1
    d, p = dist.copy(), pred.copy(); d[4], p[4] = -1, -1  # a reachable vertex left out
    assert check(d, p)["input edges span at most one level"] == 1
    d, p = dist.copy(), pred.copy(); d[5], p[5] = 1, 0  # an unreachable vertex put in the tree
    assert check(d, p)["tree edges are input edges"] == 1
    p = pred.copy(); p[0] = 1  # the source is not its own parent
    assert check(dist, p)["tree rooted at the sources"] == 1
    p = pred.copy(); p[6] = 5  # an unreached vertex with a parent
    assert check(dist, p)["tree rooted at the sources"] == 1
    assert check(dist, pred, 1)["depth limit respected"] == 3  # vertices 2, 3 and 4


def serial_bfs_report(src, dst, n, sources, dist, pred, directed, limit):
    """Graph500's rules counted one source, one vertex and one arc at a time: the violations
    verify_bfs reports, rule by rule (a parent out of range is read as vertex 0)."""
    dist, pred = [int(d) for d in dist], [int(p) for p in pred]
    arcs = list(zip(src.tolist(), dst.tolist()))
    if not directed:
        arcs += [(y, x) for x, y in arcs]
    is_source = set(int(s) for s in sources)
    rooted = sum(dist[s] != 0 or pred[s] != s for s in sources)
    joined = {y for x, y in arcs if pred[y] == x}
    levels = tree_edges = deeper = 0
    for v in range(n):
        d, p = dist[v], pred[v]
        rooted += (v not in is_source and d == 0) or (d < 0 and p != -1)
        if d >= 0 and v not in is_source:
            if not 0 <= p < n:
                rooted, p = rooted + 1, 0
            levels += dist[p] != d - 1
            tree_edges += v not in joined
        deeper += limit is not None and d > limit
    arc_levels = sum(dist[x] >= 0 and (limit is None or dist[x] < limit) and (dist[y] < 0 or dist[y] > dist[x] + 1)
                     for x, y in arcs)
    report = {"tree rooted at the sources": rooted, "tree edges span one level": levels,
              "input edges span at most one level": arc_levels, "depth limit respected": deeper,
              "tree edges are input edges": tree_edges}
    if limit is None:
        del report["depth limit respected"]
    return report


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_every_bfs_rule_counts_each_violation_as_a_serial_check_does(backend, seed, directed, dtype):
    """Damaged search results (levels off by a few, parents out of range or unrelated, unreached
    vertices with parents, repeated sources), with and without a depth limit, int32 and int64:
    each rule's count equals a count made one vertex and one arc at a time."""
    src, dst, _, n = random_graph(seed)
    rng = np.random.default_rng(100 + seed)
    sources = rng.choice(n, int(rng.integers(1, 4)))  # repeats allowed: each is counted
    for limit in (None, 1, 3):
        dist, pred = scipy_bfs_tree(src, dst, n, np.unique(sources), directed, limit)
        dist, pred = dist.astype(np.int64), pred.astype(np.int64)
        hit = rng.choice(n, int(rng.integers(1, 6)))
        dist[hit] = rng.integers(-1, int(dist.max()) + 3, hit.size)
        hit = rng.choice(n, int(rng.integers(1, 6)))
        pred[hit] = rng.integers(-2, n + 2, hit.size)
        report = check_bfs(backend, src.astype(dtype), dst.astype(dtype), n, sources, dist.astype(dtype),
                           pred.astype(dtype), directed, limit)
        assert report == serial_bfs_report(src, dst, n, sources, dist, pred, directed, limit), limit


def test_directed_bfs_follows_arcs_only(backend):
    """0 -> 1 -> 2 and 3 -> 2: vertex 3 is unreachable from 0, and 2 may not claim 3's arc."""
    src, dst = np.array([0, 1, 3], np.int32), np.array([1, 2, 2], np.int32)
    dist, pred = scipy_bfs_tree(src, dst, 4, [0], directed=True)
    assert dist.tolist() == [0, 1, 2, -1]
    check = lambda d, p: check_bfs(backend, src, dst, 4, [0], d, p, True)
    assert all_zero(check(dist, pred))
    d, p = dist.copy(), pred.copy(); d[3], p[3] = 3, 2  # 2 -> 3 is no arc
    assert check(d, p)["tree edges are input edges"] == 1


# ---- deep forests: rounds grow with log n, not with the depth -------------------------------

def round_budget(n):
    """Rounds (Python-level iterations, kernels.verify.rounds) allowed on n vertices: about
    8 log2 n are taken; a loop over the levels of these forests would take thousands."""
    return 10 * math.log2(max(n, 2)) + 40


def verify_counting_rounds(backend, src, dst, weight, n, chosen):
    verify.rounds.clear()
    report = check_forest(backend, src, dst, weight, n, chosen)
    return report, sum(verify.rounds.values())


def scipy_tree_edges(src, dst, weight, n):
    """scipy's minimum spanning forest as edge indices, for graphs without parallel edges or
    self-loops (weights shifted to be positive)."""
    w = weight.astype(np.float64)
    tree = csgraph.minimum_spanning_tree(sp.csr_matrix((w - w.min() + 1.0, (src, dst)), shape=(n, n))).tocoo()
    key = src.astype(np.int64) * n + dst
    order = np.argsort(key)
    return np.sort(order[np.searchsorted(key[order], tree.row.astype(np.int64) * n + tree.col)])


def test_path_of_100000_vertices_gives_brute_force_verdicts(backend):
    """A path 100,000 vertices deep (ids shuffled, random weights) with chords a little lighter
    than, as heavy as, or a little heavier than the heaviest path edge they span: the verifier
    counts exactly the lighter ones, in O(log n) rounds."""
    rng = np.random.default_rng(5)
    n = 100_000
    along = rng.permutation(n)  # along[i] is the i-th vertex of the path
    path_w = rng.random(n - 1)
    a = rng.integers(0, n, 300)
    b = np.minimum(a + rng.integers(1, 2000, 300), n - 1)  # path places a < b (short spans too)
    a, b = a[a < b], b[a < b]
    span_max = np.array([path_w[x:y].max() for x, y in zip(a, b)])
    chord_w = span_max + rng.choice([-0.01, 0.0, 0.01], a.size)  # equal to the maximum: no violation
    lighter = int((chord_w < span_max).sum())
    src = np.concatenate([along[:-1], along[a], along[:3]]).astype(np.int32)
    dst = np.concatenate([along[1:], along[b], along[:3]]).astype(np.int32)  # and three self-loops
    weight = np.concatenate([path_w, chord_w, np.full(3, -1.0)])
    path = np.arange(n - 1)
    report, rounds = verify_counting_rounds(backend, src, dst, weight, n, path)
    assert report == {"edges are distinct input edges": 0, "acyclic": 0, "one tree per component": 0,
                      "minimum (cycle property)": lighter}
    assert rounds <= round_budget(n)
    heavy = weight.copy()
    heavy[n - 1:n - 1 + a.size] = 2.0  # every chord heavier than every path edge
    assert all_zero(check_forest(backend, src, dst, heavy, n, path))


@pytest.mark.parametrize("side", [512, 1024])
def test_grid_forests(backend, side):
    """Minimum spanning trees of square grids (random weights) run thousands of levels deep."""
    from data.generators import grid

    src, dst, weight = grid(np, side)
    src, dst, n = src.astype(np.int32), dst.astype(np.int32), side * side
    tree = scipy_tree_edges(src, dst, weight, n)
    report, rounds = verify_counting_rounds(backend, src, dst, weight, n, tree)
    assert all_zero(report) and rounds <= round_budget(n)
    if side > 512:
        return
    # one edge outside the tree made lighter than all: exactly that edge breaks the cycle property
    outside = np.setdiff1d(np.arange(src.size), tree)[side]
    light = weight.copy()
    light[outside] = -1.0
    assert check_forest(backend, src, dst, light, n, tree)["minimum (cycle property)"] == 1
    # a tree edge dropped: the grid's edges across that cut now join two trees
    assert check_forest(backend, src, dst, weight, n, tree[1:])["one tree per component"] >= 1


def test_luxembourg_road_network(backend):
    """A real road network (its forest thousands of levels deep; ids with gaps, so isolated
    vertices): scipy's and Kruskal's forests pass; one lighter edge is caught."""
    import pyarrow.parquet as pq

    from tests.conftest import realgraphs_dir

    table = pq.read_table(realgraphs_dir() / "luxembourg_osm.parquet")
    src, dst = (table[c].to_numpy().astype(np.int32) for c in ("src", "dst"))
    weight = table["weight"].to_numpy()
    n = int(max(src.max(), dst.max())) + 1
    forest = scipy_forest(src, dst, weight, n)
    report, rounds = verify_counting_rounds(backend, src, dst, weight, n, forest)
    assert all_zero(report) and rounds <= round_budget(n)
    assert all_zero(check_forest(backend, src, dst, weight, n, kruskal(src, dst, weight, n)[1]))
    outside = np.setdiff1d(np.flatnonzero(src != dst), forest)[::997]
    light = weight.copy()
    light[outside] = weight.min() - 1.0
    assert check_forest(backend, src, dst, light, n, forest)["minimum (cycle property)"] == outside.size


def test_several_deep_components_with_self_loops_and_float32_ties(backend):
    """A 20,000-vertex path with chords, a 100x100 grid, a star and isolated vertices under
    shuffled ids, self-loops, float32 weights from a few values (ties everywhere): both
    references' forests pass; swapping a forest edge for an equally heavy edge across its cut
    passes, for a heavier one fails."""
    rng = np.random.default_rng(8)
    pieces, base = [], 0
    path = np.arange(19_999)
    chords = rng.integers(0, 20_000, (2, 3000))
    pieces.append(np.concatenate([np.stack([path, path + 1]), chords], axis=1))
    base += 20_000
    cell = np.arange(100 * 100).reshape(100, 100)
    right = np.stack([cell[:, :-1].ravel(), cell[:, 1:].ravel()])
    down = np.stack([cell[:-1].ravel(), cell[1:].ravel()])
    pieces.append(base + np.concatenate([right, down], axis=1))
    base += 10_000
    pieces.append(base + np.stack([np.zeros(499, int), np.arange(1, 500)]))
    base += 500
    n = base + 50  # 50 isolated vertices
    ends = np.concatenate(pieces, axis=1)
    loops = rng.integers(0, n, 40)
    ends = np.concatenate([ends, np.stack([loops, loops])], axis=1)
    ids = rng.permutation(n)
    order = rng.permutation(ends.shape[1])
    src, dst = ids[ends[0][order]].astype(np.int32), ids[ends[1][order]].astype(np.int32)
    weight = rng.choice(np.array([0.25, 0.5, 1.0, 1.5, 2.0], np.float32), src.size)
    weight[src == dst] = -1.0
    forest = kruskal(src, dst, weight, n)[1]
    for chosen in (forest, scipy_forest(src, dst, weight, n)):
        report, rounds = verify_counting_rounds(backend, src, dst, weight, n, chosen)
        assert all_zero(report) and rounds <= round_budget(n)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for e in forest.tolist():
        g.add_edge(int(src[e]), int(dst[e]), edge=e)
    in_forest = set(forest.tolist())
    kept = {"equal": 0, "heavier": 0}
    for e in rng.permutation(src.size).tolist():
        if e in in_forest or src[e] == dst[e]:
            continue
        walk = nx.shortest_path(g, int(src[e]), int(dst[e]))
        f = max((g.edges[a, b]["edge"] for a, b in zip(walk, walk[1:])), key=lambda x: weight[x])
        kind = "equal" if weight[e] == weight[f] else "heavier"
        if kept[kind] == 3:
            continue
        report = check_forest(backend, src, dst, weight, n, np.append(forest[forest != f], e))
        if kind == "equal":
            assert all_zero(report)
        else:
            assert report["minimum (cycle property)"] >= 1 and report["one tree per component"] == 0
        kept[kind] += 1
        if min(kept.values()) == 3:
            break
    assert kept == {"equal": 3, "heavier": 3}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_verdicts_match_brute_force_path_maxima(backend, seed, dtype):
    """Small random forests (several trees, deep and bushy) with query edges of tied and
    untied weights: the verifier counts exactly the queries lighter than the heaviest forest
    edge on the path a plain graph walk finds, and exactly the queries that join two trees."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 80))
    parent = [int(rng.integers(max(0, v - 3), v)) if rng.random() < 0.9 else -1 for v in range(1, n)]
    fs = np.array([v for v, p in zip(range(1, n), parent) if p >= 0], dtype=np.int64)
    fd = np.array([p for p in parent if p >= 0], dtype=np.int64)
    fw = rng.choice([0.5, 1.0, 1.0, 2.0, 3.0], fs.size)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_weighted_edges_from(zip(fs.tolist(), fd.tolist(), fw.tolist()))
    qa, qb = rng.integers(0, n, 60), rng.integers(0, n, 60)
    qw = rng.choice([0.25, 0.5, 1.0, 2.0, 3.0, 4.0], 60)
    joined = np.array([nx.has_path(g, a, b) for a, b in zip(qa.tolist(), qb.tolist())], dtype=bool)
    lighter = 0
    for a, b, w in zip(qa[joined].tolist(), qb[joined].tolist(), qw[joined].tolist()):
        walk = nx.shortest_path(g, a, b)  # [a] for a self-loop: never lighter than an empty path
        lighter += int(a != b and w < max(g.edges[x, y]["weight"] for x, y in zip(walk, walk[1:])))
    ids = rng.permutation(n)  # ids unrelated to the forest's shape
    for queries, crossing in ((joined, 0), (np.ones(60, bool), int((~joined).sum()))):
        src = ids[np.concatenate([fs, qa[queries]])].astype(np.int32)
        dst = ids[np.concatenate([fd, qb[queries]])].astype(np.int32)
        weight = np.concatenate([fw, qw[queries]]).astype(dtype)
        report = check_forest(backend, src, dst, weight, n, np.arange(fs.size))
        assert report == {"edges are distinct input edges": 0, "acyclic": 0, "one tree per component": crossing,
                          "minimum (cycle property)": -1 if crossing else lighter}


@pytest.mark.parametrize("lengths", [[1], [1, 2, 1, 5, 3], [70_000], [3] * 20_000 + [1, 100_000]],
                         ids=["one arc", "short lists", "one long list", "many lists and a long one"])
def test_list_suffix_sums(xp, lengths):
    """Pointer jumping (with rulers on long lists) against a running sum along each list, its
    arcs scattered over the array; within 2 log2(longest) + RULER_BITS rounds."""
    rng = np.random.default_rng(len(lengths))
    a = sum(lengths)
    walk = rng.permutation(a)  # the lists, one after another: walk[i] is the i-th arc
    last = np.cumsum(lengths) - 1
    successor = np.empty(a, dtype=np.int64)
    successor[walk[:-1]] = walk[1:]
    successor[walk[last]] = a
    weight = rng.integers(0, 4, a).astype(np.int8)
    running = np.cumsum(weight[walk].astype(np.int64))
    which = np.repeat(np.arange(len(lengths)), lengths)
    expected = np.empty(a, dtype=np.int64)
    expected[walk] = running[last][which] - running + weight[walk]
    steps = (max(lengths) - 1).bit_length()
    verify.rounds.clear()
    got = verify._list_suffix_sums(xp.asarray(successor), xp.asarray(weight), steps)
    assert np.array_equal(be.to_host(got), expected)
    assert verify.rounds["list ranking"] <= 2 * steps + verify.RULER_BITS


def valid_bfs_answer(src, dst, n, sources, directed, limit, distance, predecessor) -> bool:
    """Distances equal the queue BFS's, and every reached non-source has a parent one level
    closer joined to it by an arc (sources are their own parents, unreached vertices have none)."""
    expected = serial_bfs(n, src, dst, sources, directed, limit)
    if distance.tolist() != expected.tolist():
        return False
    arcs = set(zip(src.tolist(), dst.tolist())) | (set() if directed else set(zip(dst.tolist(), src.tolist())))
    for v in range(n):
        p = int(predecessor[v])
        if expected[v] < 0 or expected[v] == 0:
            if p != (-1 if expected[v] < 0 else v):
                return False
        elif not (0 <= p < n and expected[p] == expected[v] - 1 and (p, v) in arcs):
            return False
    return True


def valid_forest(src, dst, weight, n, chosen) -> bool:
    """Distinct rows, no self-loop, no cycle (union-find), as many edges and as light as Kruskal's."""
    if len(set(chosen)) != len(chosen) or any(not 0 <= e < len(src) for e in chosen):
        return False
    parent = list(range(n))

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for e in chosen:
        a, b = root(int(src[e])), root(int(dst[e]))
        if a == b:
            return False
        parent[a] = b
    best = kruskal_rows(src.tolist(), dst.tolist(), weight.tolist())
    return len(chosen) == len(best) and sorted(weight[chosen].tolist()) == sorted(weight[best].tolist())


@pytest.mark.parametrize("seed", range(4))
def test_mutated_answers_are_refused_exactly_when_wrong(seed):
    """Random small multigraphs (self-loops, twins, ties, float32 and float64), directed or not,
    depth-limited or not, several sources; each correct answer is mutated at random and the
    verifier must report a violation exactly when an independent check finds the answer wrong."""
    rng = np.random.default_rng(seed)
    shown = {"bfs": 0, "forest": 0}
    for _ in range(150):
        n, m = int(rng.integers(1, 10)), int(rng.integers(0, 20))
        src, dst = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
        weight = rng.integers(-1, 3, m).astype(rng.choice([np.float32, np.float64]))
        directed, limit = bool(rng.integers(0, 2)), (None if rng.random() < 0.5 else int(rng.integers(0, 3)))
        sources = rng.integers(0, n, int(rng.integers(1, 3)))
        search = bfs(build_graph(edge_list(src, dst, None, n), directed), sources, limit)
        for _ in range(4):
            distance, predecessor = search.distance.copy(), search.predecessor.copy()
            v, u = rng.integers(0, n, 2)
            kind = int(rng.integers(0, 4))
            if kind == 0:
                distance[v] = max(-1, distance[v] + int(rng.choice([-2, -1, 1, 2])))
            elif kind == 1:
                predecessor[v] = int(rng.integers(-1, n))
            elif kind == 2:
                distance[v], predecessor[v] = int(rng.integers(-1, 4)), int(rng.integers(-1, n))
            else:
                distance[[v, u]], predecessor[[v, u]] = distance[[u, v]], predecessor[[u, v]]
            report = verify_bfs(src, dst, n, sources, distance, predecessor, directed, limit)
            wrong = not valid_bfs_answer(src, dst, n, sources, directed, limit, distance, predecessor)
            assert any(report.values()) == wrong, (src, dst, sources, directed, limit, distance, predecessor, report)
            shown["bfs"] += wrong
        forest = minimum_spanning_forest(edge_list(src, dst, weight, n)).edges.tolist()
        for _ in range(4):
            chosen = list(forest)
            kind = int(rng.integers(0, 3))
            if kind == 0 and chosen:
                chosen.pop(int(rng.integers(0, len(chosen))))
            elif kind == 1 and m:
                chosen.append(int(rng.integers(0, m)))
            elif m and chosen:
                chosen[int(rng.integers(0, len(chosen)))] = int(rng.integers(0, m))
            report = verify_forest(src, dst, weight, n, np.array(chosen, dtype=np.int64))
            wrong = not valid_forest(src, dst, weight, n, chosen)
            assert any(report.values()) == wrong, (src, dst, weight, chosen, forest, report)
            shown["forest"] += wrong
    assert shown["bfs"] > 100 and shown["forest"] > 100, shown


@pytest.mark.skipif(not be.cupy_usable(), reason="compares the GPU's forest checks with the host's")
def test_the_gpu_forest_checks_count_every_rule_as_the_host_checks_do():
    """Random multigraphs (self-loops, twins, ties, -0.0 beside 0.0; float32, float64, int32 and
    int64 weights; int32 and int64 ends) with their minimum forest, a forest edge dropped, an
    edge added, one swapped for a random edge, for a cut-crossing heavier edge, or an index out
    of range: the GPU's report equals the host's, count for count."""
    import cupy as cp

    rng = np.random.default_rng(21)
    kinds = set()
    for case in range(160):
        n = int(rng.integers(1, 400))
        m = int(rng.integers(0, 4 * n))
        ends = rng.choice([np.int32, np.int64])
        src, dst = rng.integers(0, n, m).astype(ends), rng.integers(0, n, m).astype(ends)
        weight = (rng.integers(-4, 5, m) * 0.5).astype(rng.choice([np.float32, np.float64, np.int32, np.int64]))
        if weight.dtype.kind == "f":
            weight[weight == 0] = rng.choice([0.0, -0.0])
        _, forest = kruskal(src, dst, weight, n)
        chosen = list(forest)
        kind = case % 6
        if kind == 1 and chosen:
            chosen.pop(int(rng.integers(0, len(chosen))))
        elif kind == 2 and m:
            chosen.append(int(rng.integers(0, m)))
        elif kind == 3 and m and chosen:
            chosen[int(rng.integers(0, len(chosen)))] = int(rng.integers(0, m))
        elif kind == 4 and chosen:  # swap a forest edge for another edge across the cut it leaves
            drop = int(rng.integers(0, len(chosen)))
            rest = chosen[:drop] + chosen[drop + 1:]
            label = verify.connected_components(src[rest], dst[rest], n)
            a, b = label[src[chosen[drop]]], label[dst[chosen[drop]]]
            across = np.flatnonzero(((label[src] == a) & (label[dst] == b)) | ((label[src] == b) & (label[dst] == a)))
            chosen = rest + [int(rng.choice(across))]
        elif kind == 5:
            chosen.append(int(rng.choice([-1, m, m + 7])))
        chosen = np.array(chosen, dtype=np.int64)
        want = verify_forest(src, dst, weight, n, chosen)
        got = verify_forest(cp.asarray(src), cp.asarray(dst), cp.asarray(weight), n, cp.asarray(chosen))
        assert got == want, (case, n, m, weight.dtype, chosen)
        kinds.update(name for name, count in want.items() if count > 0)
    assert kinds == {"edges are distinct input edges", "acyclic", "one tree per component", "minimum (cycle property)"}
