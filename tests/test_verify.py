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
from kernels.verify import kruskal, verify_bfs, verify_forest

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


def test_directed_bfs_follows_arcs_only(backend):
    """0 -> 1 -> 2 and 3 -> 2: vertex 3 is unreachable from 0, and 2 may not claim 3's arc."""
    src, dst = np.array([0, 1, 3], np.int32), np.array([1, 2, 2], np.int32)
    dist, pred = scipy_bfs_tree(src, dst, 4, [0], directed=True)
    assert dist.tolist() == [0, 1, 2, -1]
    check = lambda d, p: check_bfs(backend, src, dst, 4, [0], d, p, True)
    assert all_zero(check(dist, pred))
    d, p = dist.copy(), pred.copy(); d[3], p[3] = 3, 2  # 2 -> 3 is no arc
    assert check(d, p)["tree edges are input edges"] == 1
