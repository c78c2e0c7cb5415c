"""One test base for the kernels, run on every usable backend (NumPy here, CuPy on a GPU)."""
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels import backend as be
from kernels.bfs import bfs
from kernels.graph import IdRange, build_graph, edge_list, renumber
from kernels.msf import minimum_spanning_forest
from kernels.verify import kruskal, verify_bfs, verify_forest
from tests.conftest import REAL_GRAPHS, SEED_EDGES, as_np, realgraphs_dir
from tests.references import scipy_bfs_distances, scipy_msf_weight, serial_bfs


def prepared(backend, src, dst, weight=None):
    src, dst = be.to_backend(np.asarray(src), backend), be.to_backend(np.asarray(dst), backend)
    w = None if weight is None else be.to_backend(np.asarray(weight, dtype=np.float64), backend)
    s, d, ids = renumber(src, dst)
    return edge_list(s, d, w, int(ids.shape[0])), ids


def seed(backend):
    s, d, w = (np.array(c) for c in zip(*SEED_EDGES))
    return prepared(backend, s, d, w)


def all_zero(report):
    return all(v == 0 for v in report.values())


# ---- the seeds' graph: exact answers --------------------------------------------------------

def test_seed_graph_bfs_distances(backend):
    edges, _ = seed(backend)
    r = bfs(build_graph(edges), [0])
    assert as_np(r.distance)[0].tolist() == [0, 1, 1, 2, 2, 3]
    assert all_zero(verify_bfs(edges.src, edges.dst, edges.n, [0], r.distance, r.predecessor))


def test_seed_graph_mst(backend):
    edges, _ = seed(backend)
    f = minimum_spanning_forest(edges)
    chosen = sorted(tuple(sorted(SEED_EDGES[e][:2])) for e in as_np(f.edges)[0].tolist())
    assert chosen == [(0, 2), (1, 2), (1, 3), (3, 4), (4, 5)]
    assert float(as_np(edges.weight[f.edges])[0].sum()) == 13
    assert f.components == 1


def test_seed_graph_csr_is_symmetric_and_complete(backend):
    edges, _ = seed(backend)
    g = build_graph(edges)
    indptr, indices = as_np(g.out.indptr, g.out.indices)
    assert indptr.tolist() == [0, 2, 5, 9, 13, 16, 18]
    for v in range(6):
        expected = sorted([b for a, b, _ in SEED_EDGES if a == v] + [a for a, b, _ in SEED_EDGES if b == v])
        assert sorted(indices[indptr[v]:indptr[v + 1]].tolist()) == expected


def test_directed_csr_keeps_input_order_within_rows(backend):
    edges, _ = prepared(backend, [0, 1, 0, 2, 0], [3, 0, 1, 0, 2])
    g = build_graph(edges, directed=True)
    indptr, indices = as_np(g.out.indptr, g.out.indices)
    rin, iin = as_np(g.inc.indptr, g.inc.indices)
    # the host build keeps input order; GPU atomic cursors keep arrival order, any order
    order = (lambda x: x) if backend == "numpy" else sorted
    assert list(order(indices[indptr[0]:indptr[1]].tolist())) == list(order([3, 1, 2]))
    assert list(order(iin[rin[0]:rin[1]].tolist())) == [1, 2]


# ---- real graphs against scipy / networkx ---------------------------------------------------

def load_real(name):
    t = pq.read_table(realgraphs_dir() / f"{name}.parquet")
    return [t[c].to_numpy() for c in ("src", "dst", "weight")]


@pytest.mark.parametrize("name", REAL_GRAPHS)
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_real_graph_bfs_matches_scipy(backend, name, directed):
    s, d, _ = load_real(name)
    edges, _ = prepared(backend, s, d)
    g = build_graph(edges, directed=directed)
    src_h, dst_h = as_np(edges.src, edges.dst)
    degree = np.bincount(src_h, minlength=edges.n) + np.bincount(dst_h, minlength=edges.n)
    sources = [int(np.argmax(degree)), 0]
    r = bfs(g, sources)
    expected = scipy_bfs_distances(edges.n, src_h, dst_h, sources, directed=directed)
    assert np.array_equal(as_np(r.distance)[0], expected)
    assert all_zero(verify_bfs(edges.src, edges.dst, edges.n, sources, r.distance, r.predecessor, directed))


@pytest.mark.parametrize("name", REAL_GRAPHS)
def test_real_graph_msf_matches_scipy_and_kruskal(backend, name):
    s, d, w = load_real(name)
    edges, _ = prepared(backend, s, d, w)
    f = minimum_spanning_forest(edges)
    src_h, dst_h, w_h, chosen = as_np(edges.src, edges.dst, edges.weight, f.edges)
    ours = math.fsum(w_h[chosen].tolist())
    ref_total, ref_edges = kruskal(src_h, dst_h, w_h, edges.n)
    sci_total, sci_count = scipy_msf_weight(edges.n, src_h, dst_h, w_h)
    assert ours == ref_total
    assert ours == pytest.approx(sci_total, rel=1e-12, abs=1e-9)
    assert chosen.shape[0] == len(ref_edges) == sci_count
    # the documented tie rule (weight, then input order) is Kruskal's: identical edge sets
    assert np.array_equal(np.sort(chosen), ref_edges)
    assert all_zero(verify_forest(edges.src, edges.dst, edges.weight, edges.n, f.edges))


def test_netscience_forest_matches_networkx():
    nx = pytest.importorskip("networkx")
    s, d, w = load_real("netscience")
    g = nx.MultiGraph()
    g.add_weighted_edges_from((int(a), int(b), float(c)) for a, b, c in zip(s, d, w) if a != b)
    ref = sum(data["weight"] for *_, data in nx.minimum_spanning_edges(g, data=True))
    edges, _ = prepared("numpy", s, d, w)
    f = minimum_spanning_forest(edges)
    assert float(edges.weight[f.edges].sum()) == pytest.approx(ref)
    assert f.components == nx.number_connected_components(g) + (edges.n - g.number_of_nodes())


def test_luxembourg_is_high_diameter_and_level_synchronous(backend):
    s, d, _ = load_real("luxembourg_osm")
    edges, _ = prepared(backend, s, d)
    r = bfs(build_graph(edges), [0])
    dist = as_np(r.distance)[0]
    assert dist.max() > 900  # a road network: about a thousand levels
    assert r.levels == dist.max() + 1  # the last step finds nothing and ends the search


# ---- multi-source, depth limit, directed ---------------------------------------------------

def test_multiple_sources_take_the_nearest(backend):
    # a path 0-1-2-3-4-5-6 with sources at both ends
    edges, _ = prepared(backend, np.arange(6), np.arange(1, 7))
    r = bfs(build_graph(edges), [0, 6])
    assert as_np(r.distance)[0].tolist() == [0, 1, 2, 3, 2, 1, 0]


def test_depth_limit_stops_the_search(backend):
    edges, _ = prepared(backend, np.arange(6), np.arange(1, 7))
    r = bfs(build_graph(edges), [0], depth_limit=2)
    assert as_np(r.distance)[0].tolist() == [0, 1, 2, -1, -1, -1, -1]
    assert all_zero(verify_bfs(edges.src, edges.dst, edges.n, [0], r.distance, r.predecessor, False, 2))


def test_depth_limit_zero_reaches_only_sources(backend):
    edges, _ = seed(backend)
    r = bfs(build_graph(edges), [3], depth_limit=0)
    assert as_np(r.distance)[0].tolist() == [-1, -1, -1, 0, -1, -1]


def test_directed_bfs_follows_arcs_only(backend):
    edges, _ = prepared(backend, [0, 1, 3], [1, 2, 2])
    r = bfs(build_graph(edges, directed=True), [0])
    assert as_np(r.distance)[0].tolist() == [0, 1, 2, -1]


def test_isolated_source_and_self_loops(backend):
    # vertex 5 only has a self-loop: it is a vertex of the graph but has no edges
    edges, ids = prepared(backend, [0, 1, 5], [1, 2, 5])
    assert as_np(ids)[0].tolist() == [0, 1, 2, 5]
    assert edges.m == 3 and edges.self_loops() == 1  # the edge index stays the input row
    g = build_graph(edges)
    assert as_np(g.out.indptr)[0].tolist() == [0, 1, 3, 4, 4]  # the loop is not in the CSR
    r = bfs(g, [3])
    assert as_np(r.distance)[0].tolist() == [-1, -1, -1, 0]


def test_self_loops_are_never_in_the_forest_and_rows_name_input_rows(backend):
    # the lightest edge of all is a self-loop; a loop on a vertex with no other edge
    edges, _ = prepared(backend, [0, 0, 1, 3, 2], [0, 1, 2, 3, 0], [-5.0, 1.0, 1.0, -9.0, 2.0])
    f = minimum_spanning_forest(edges)
    assert as_np(f.edges)[0].tolist() == [1, 2]  # input rows 1 and 2
    assert f.components == 2  # {0, 1, 2} and the looped vertex 3


def test_bad_sources_are_rejected(backend):
    edges, _ = seed(backend)
    g = build_graph(edges)
    with pytest.raises(ValueError, match="out of range"):
        bfs(g, [6])
    with pytest.raises(ValueError, match="at least one"):
        bfs(g, [])
    with pytest.raises(ValueError, match="depth limit"):
        bfs(g, [0], depth_limit=-1)


# ---- renumbering -----------------------------------------------------------------------------

@pytest.mark.parametrize("ids", [
    np.array([-(2**63), 2**63 - 1, -5, 0, 17], dtype=np.int64),
    np.array([2**64 - 1, 2**63, 3, 0, 9], dtype=np.uint64),
    np.array([10, 10_000_000, 5, 7, 8], dtype=np.int32),
    np.array([2**63 + 12, 2**63 + 10, 2**63 + 11, 2**63 + 14, 2**63 + 13], dtype=np.uint64),
], ids=["int64-extremes", "uint64-above-2^63", "sparse-int32", "narrow-range-above-2^63"])
def test_renumber_round_trips_any_integer_ids(backend, ids):
    src, dst = ids[[0, 1, 2, 3]], ids[[1, 2, 3, 4]]
    edges, dense_ids = prepared(backend, src, dst)
    back = as_np(dense_ids)[0]
    assert np.array_equal(back, np.sort(ids))
    assert np.array_equal(back[as_np(edges.src)[0]], src) and np.array_equal(back[as_np(edges.dst)[0]], dst)


def test_dense_ids_need_no_renumbering(backend):
    edges, ids = prepared(backend, [0, 1, 2], [1, 2, 3])
    assert as_np(ids)[0].tolist() == [0, 1, 2, 3] and as_np(edges.src)[0].tolist() == [0, 1, 2]


@pytest.mark.parametrize("dense", [True, False], ids=["every-id-of-the-range", "ids-with-gaps"])
def test_renumbering_chunk_by_chunk_equals_renumbering_at_once(backend, xp, dense):
    """IdRange, fed in chunks the way a streaming reader would, gives renumber's answer."""
    rng = np.random.default_rng(5)
    values = np.arange(-1000, 1000) if dense else np.sort(rng.choice(np.arange(-10**6, 10**6), 3000, replace=False))
    src, dst = rng.choice(values, 5000), rng.choice(values, 5000)
    src[:len(values) // 2], dst[:len(values) - len(values) // 2] = values[::2], values[1::2]  # every id once
    whole = renumber(xp.asarray(src), xp.asarray(dst))
    lo, hi = int(values.min()), int(values.max())
    ids = IdRange(lo, hi, xp)
    out_src, out_dst = xp.empty(5000, dtype=np.int32), xp.empty(5000, dtype=np.int32)
    for start in range(0, 5000, 1700):
        part = slice(start, start + 1700)
        ids.add(xp.asarray(src[part]), xp.asarray(dst[part]), out_src[part], out_dst[part])
    chunked = (out_src, out_dst, ids.finish(out_src, out_dst))
    for a, b in zip(as_np(*whole), as_np(*chunked)):
        assert np.array_equal(a, b)
    assert np.array_equal(as_np(chunked[2])[0], values)


# ---- properties over random graphs ----------------------------------------------------------

@st.composite
def random_graphs(draw):
    n = draw(st.integers(1, 30))
    m = draw(st.integers(0, 90))
    ends = st.integers(0, n - 1)
    src = np.array(draw(st.lists(ends, min_size=m, max_size=m)), dtype=np.int64)
    dst = np.array(draw(st.lists(ends, min_size=m, max_size=m)), dtype=np.int64)
    # few distinct weights: heavy ties, zero and negative weights
    w = np.array(draw(st.lists(st.sampled_from([-3.0, -0.5, 0.0, 0.0, 1.0, 1.0, 2.5, 7.0]), min_size=m, max_size=m)))
    # isolated vertices: one self-loop per vertex makes every id 0..n-1 a vertex
    loops = np.arange(n)
    return np.concatenate([src, loops]), np.concatenate([dst, loops]), np.concatenate([w, np.zeros(n)]), n


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@PROPERTY
@given(g=random_graphs(), data=st.data())
def test_property_bfs_equals_serial_bfs(backend, g, data):
    src, dst, _, n = g
    directed = data.draw(st.booleans())
    limit = data.draw(st.one_of(st.none(), st.integers(0, 4)))
    sources = sorted(set(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))))
    edges, _ = prepared(backend, src, dst)
    r = bfs(build_graph(edges, directed=directed), sources, depth_limit=limit)
    s_h, d_h = as_np(edges.src, edges.dst)
    expected = serial_bfs(n, s_h, d_h, sources, directed=directed, depth_limit=limit)
    assert np.array_equal(as_np(r.distance)[0], expected)
    assert all_zero(verify_bfs(edges.src, edges.dst, n, sources, r.distance, r.predecessor, directed, limit))


@PROPERTY
@given(g=random_graphs())
def test_property_msf_equals_kruskal(backend, g):
    src, dst, w, n = g
    edges, _ = prepared(backend, src, dst, w)
    f = minimum_spanning_forest(edges)
    s_h, d_h, w_h, chosen = as_np(edges.src, edges.dst, edges.weight, f.edges)
    total, ref = kruskal(s_h, d_h, w_h, n)
    assert np.array_equal(chosen, ref)  # unique under the tie rule: identical edge sets
    assert math.fsum(w_h[chosen].tolist()) == total
    assert f.components == n - chosen.shape[0]
    assert all_zero(verify_forest(edges.src, edges.dst, edges.weight, n, f.edges))


def test_msf_bands_split_a_larger_graph(backend):
    """Enough edges that the heavy-edge filter cuts several bands; still Kruskal's forest."""
    rng = np.random.default_rng(7)
    n, m = 20_000, 400_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(0, 1000, m).astype(float)  # many ties across band boundaries
    edges, _ = prepared(backend, src, dst, w)
    f = minimum_spanning_forest(edges)
    assert f.bands > 1
    s_h, d_h, w_h, chosen = as_np(edges.src, edges.dst, edges.weight, f.edges)
    _, ref = kruskal(s_h, d_h, w_h, edges.n)
    assert np.array_equal(chosen, ref)


def test_same_answers_on_repeated_runs(backend):
    s, d, w = load_real("bitcoinalpha")
    edges, _ = prepared(backend, s, d, w)
    g = build_graph(edges)
    first_bfs, first_msf = bfs(g, [0]), minimum_spanning_forest(edges)
    for _ in range(3):
        again = bfs(g, [0])
        assert np.array_equal(as_np(again.distance)[0], as_np(first_bfs.distance)[0])
        if backend == "numpy":  # on the GPU any valid parent may win (Graph500's benign race)
            assert np.array_equal(as_np(again.predecessor)[0], as_np(first_bfs.predecessor)[0])
        assert all_zero(verify_bfs(edges.src, edges.dst, edges.n, [0], again.distance, again.predecessor))
        assert np.array_equal(as_np(minimum_spanning_forest(edges).edges)[0], as_np(first_msf.edges)[0])


def test_searches_running_at_once_in_threads_each_get_their_own_answer(backend):
    """Source sets of a flow run as tasks in threads at the same time, beside the forest: each
    search must give what it gives alone (on the GPU a search's workspace is its own)."""
    from concurrent.futures import ThreadPoolExecutor

    s, d, w = load_real("rome99")
    edges, _ = prepared(backend, s, d, w)
    g = build_graph(edges, directed=True)
    roots = [[0], [7], [100, 2000], [3000], [1], [2500]]
    alone = [as_np(bfs(g, r).distance)[0] for r in roots]
    forest = as_np(minimum_spanning_forest(edges).edges)[0]
    with ThreadPoolExecutor(max_workers=len(roots) + 1) as pool:
        for _ in range(5):
            searches = [pool.submit(bfs, g, r) for r in roots]
            msf = pool.submit(minimum_spanning_forest, edges)
            for r, search, expected in zip(roots, searches, alone):
                result = search.result()
                assert np.array_equal(as_np(result.distance)[0], expected), r
                assert all_zero(verify_bfs(edges.src, edges.dst, edges.n, r, result.distance, result.predecessor,
                                           directed=True))
            assert np.array_equal(as_np(msf.result().edges)[0], forest)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_msf_keeps_the_weight_dtype_and_the_tie_rule(backend, xp, dtype):
    """float32 weights stay float32 (exact order of their own values); -0.0 and 0.0 are one
    weight, so the lower row wins between them, as in Kruskal's order."""
    rng = np.random.default_rng(3)
    n, m = 300, 3000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.choice(np.array([-0.0, 0.0, 1e-30, 0.5, 0.5000001, 2.0]), m).astype(dtype)
    s, d, ids = renumber(xp.asarray(src), xp.asarray(dst))
    edges = edge_list(s, d, xp.asarray(w), int(ids.shape[0]))
    assert edges.weight.dtype == dtype
    f = minimum_spanning_forest(edges)
    s_h, d_h, w_h, chosen = as_np(edges.src, edges.dst, edges.weight, f.edges)
    _, ref = kruskal(s_h, d_h, w_h, edges.n)
    assert np.array_equal(chosen, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_msf_orders_subnormal_weights_and_its_verifier_sees_them(backend, xp, dtype):
    """Subnormal weights (CuPy compiles its kernels with -ftz=true, which reads a subnormal
    float32 as 0 in any float comparison): the forest is Kruskal's, and a forest heavier only
    by subnormals fails the cycle property."""
    tiny = np.finfo(dtype).smallest_subnormal
    rng = np.random.default_rng(5)
    n, m = 200, 2000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = (rng.choice(np.array([-3, -1, 0, 1, 2, 3, 5]), m) * tiny).astype(dtype)
    s, d, ids = renumber(xp.asarray(src), xp.asarray(dst))
    edges = edge_list(s, d, xp.asarray(w), int(ids.shape[0]))
    f = minimum_spanning_forest(edges)
    s_h, d_h, w_h, chosen = as_np(edges.src, edges.dst, edges.weight, f.edges)
    _, ref = kruskal(s_h, d_h, w_h, edges.n)
    assert np.array_equal(chosen, ref)
    # the triangle 0-1 (tiny), 1-2 (2 tiny), 0-2 (3 tiny) with its heaviest edge in the forest
    tri = [xp.asarray(np.array(a)) for a in ([0, 1, 0], [1, 2, 2])]
    weight = xp.asarray(np.array([1, 2, 3], dtype) * tiny)
    assert verify_forest(*tri, weight, 3, xp.asarray(np.array([0, 1])))["minimum (cycle property)"] == 0
    assert verify_forest(*tri, weight, 3, xp.asarray(np.array([0, 2])))["minimum (cycle property)"] == 1


def test_float32_order_keys_are_exact_on_every_kind_of_value(xp):
    """On the GPU as on the host: random bit patterns (subnormals, zeros of both signs, the
    largest floats, infinities) keep their order as keys."""
    bits = np.random.default_rng(9).integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0.0, -0.0, 1e-45, -1e-45, 2e-45, 1.17e-38, 3.4e38, -3.4e38, np.inf, -np.inf], np.float32)
    values = np.concatenate([bits.view(np.float32), special])
    values = values[~np.isnan(values)]
    (keys,) = as_np(be.float32_order_keys(xp.asarray(values)))
    wide = values.astype(np.float64)  # NumPy widens exactly
    order = np.argsort(keys, kind="stable")
    assert np.array_equal(wide[order], np.sort(wide))
    assert np.array_equal(keys[values == 0], np.zeros(int((values == 0).sum())))


def test_bfs_through_narrow_wide_narrow_frontiers(backend):
    """A long path into a hub of 5000 leaves, each leaf on a second hub, then a long path: one
    and many vertices per level alternate (on the GPU: the one-block kernel, the grid kernel in
    both directions and edge-parallel steps, back and forth)."""
    path = np.arange(200)
    leaves = np.arange(1000, 6000)
    src = np.concatenate([path[:-1], np.full(5000, 199), leaves, [7000], 7001 + np.arange(299)])
    dst = np.concatenate([path[1:], leaves, np.full(5000, 7000), [7001], 7002 + np.arange(299)])
    edges, _ = prepared(backend, src, dst)
    s_h, d_h = as_np(edges.src, edges.dst)
    for directed in (False, True):
        r = bfs(build_graph(edges, directed=directed), [0])
        expected = serial_bfs(edges.n, s_h, d_h, [0], directed=directed)
        assert np.array_equal(as_np(r.distance)[0], expected)
        assert r.levels == expected.max() + 1 and len(r.steps) == r.levels
        assert all_zero(verify_bfs(edges.src, edges.dst, edges.n, [0], r.distance, r.predecessor, directed))


def test_msf_needs_weights(backend):
    edges, _ = prepared(backend, [0], [1])
    with pytest.raises(ValueError, match="weights"):
        minimum_spanning_forest(edges)


@pytest.mark.parametrize("nan_share, m", [(1 / 3, 3), (0.9, 1 << 18)], ids=["one NaN", "mostly NaN, several bands"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_msf_and_its_verifier_refuse_nan_weights(backend, xp, dtype, nan_share, m):
    """NaN orders against no weight. Mostly-NaN weights over several bands made the band's
    sampled threshold NaN and every band empty: the rounds never ended. (The Parquet reader
    refuses NaN; this is the kernels' own contract.)"""
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 1000, m), rng.integers(0, 1000, m)
    weight = rng.random(m).astype(dtype)
    weight[rng.random(m) < nan_share] = np.nan
    weight[0] = np.nan
    edges = edge_list(xp.asarray(src), xp.asarray(dst), xp.asarray(weight), 1000)
    with pytest.raises(ValueError, match="NaN"):
        minimum_spanning_forest(edges)
    with pytest.raises(ValueError, match="NaN"):
        verify_forest(edges.src, edges.dst, edges.weight, edges.n, xp.arange(0, dtype=np.int64))


# ---- the host's tie rule --------------------------------------------------------------------

@pytest.mark.parametrize("claim", ["sorted", "dense"])
def test_host_top_down_parent_is_the_lowest_numbered_frontier_vertex(claim):
    """Ten level-1 vertices all reach 100 and 101; their arcs from the source come in
    descending id order, so discovery order and id order differ. The parent is vertex 10, the
    lowest-numbered, on the sorted path (a long unreached chain makes the level sparse: fewer
    than n / DENSE_CLAIM fresh arcs) and on the dense one (an unreached clique keeps the level
    top-down in a small graph)."""
    from kernels.bfs import DENSE_CLAIM

    middle = np.arange(19, 9, -1)
    src = [np.zeros(10, dtype=np.int64), middle, middle]
    dst = [middle, np.full(10, 100), np.full(10, 101)]
    if claim == "sorted":
        src.append(1000 + np.arange(5000))
        dst.append(1001 + np.arange(5000))
    else:
        a, b = np.triu_indices(40, 1)
        src.append(1000 + a)
        dst.append(1000 + b)
    edges, ids = prepared("numpy", np.concatenate(src), np.concatenate(dst))
    r = bfs(build_graph(edges), [0])
    assert r.steps[:2] == ["top-down", "top-down"]
    assert (20 * DENSE_CLAIM > edges.n) == (claim == "dense")
    parent = ids[r.predecessor[np.searchsorted(ids, [100, 101])]]
    assert parent.tolist() == [10, 10]


@pytest.mark.parametrize("degree", [1, 4, 5, 12, 13, 29, 60, 200])
def test_host_bottom_up_takes_the_first_frontier_in_neighbour_at_any_position(degree):
    """Each candidate's in-list holds frontier vertices from one position on (a few, spaced);
    every position of every list length is tried, across the single probes and the windows
    that follow them. The parent is the first frontier vertex in CSR order, as a plain loop
    over the list finds it; a list without one finds none."""
    from kernels.bfs import bottom_up_parents

    rng = np.random.default_rng(degree)
    n_frontier, n_other = 50, 500
    in_frontier = np.zeros(n_frontier + n_other, dtype=bool)
    in_frontier[:n_frontier] = True
    lists = []
    for first in [*range(degree), None]:
        row = rng.integers(n_frontier, n_frontier + n_other, degree)
        if first is not None:
            row[first::3] = rng.integers(0, n_frontier, row[first::3].shape[0])
        lists.append(row)
    lists.append(np.empty(0, dtype=np.int64))  # no in-neighbours at all
    indptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=indptr[1:])
    indices = np.concatenate(lists).astype(np.int32)
    candidates = np.arange(len(lists), dtype=np.int32)
    found, parents = bottom_up_parents(indptr, indices, candidates, in_frontier)
    got = dict(zip(found.tolist(), parents.tolist()))
    expected = {}
    for v, row in enumerate(lists):
        hits = [int(u) for u in row if in_frontier[u]]
        if hits:
            expected[v] = hits[0]
    assert len(got) == found.shape[0] and got == expected


# ---- the verifiers catch wrong answers ------------------------------------------------------

def test_no_duplicate_vertices_in_any_frontier(backend):
    """Each vertex is discovered once: every level's vertex count adds up to the reached total,
    and a large skewed graph exercises the concurrent discovery path."""
    from data.generators import kronecker

    xp = be.module(backend)
    s, d, _ = kronecker(xp, 14, weighted=False)
    edges, _ = prepared(backend, be.to_host(s), be.to_host(d))
    r = bfs(build_graph(edges), [0])
    dist = as_np(r.distance)[0]
    levels = np.bincount(dist[dist >= 0])
    assert levels.sum() == (dist >= 0).sum() and (levels > 0).all()
    assert all_zero(verify_bfs(edges.src, edges.dst, edges.n, [0], r.distance, r.predecessor))


def test_bfs_verifier_catches_wrong_results(backend, xp):
    edges, _ = seed(backend)
    r = bfs(build_graph(edges), [0])
    check = lambda dist, pred: verify_bfs(edges.src, edges.dst, edges.n, [0], dist, pred)
    dist = r.distance.copy(); dist[5] = 2  # too close
    assert not all_zero(check(dist, r.predecessor))
    pred = r.predecessor.copy(); pred[5] = 1  # 1-5 is not an edge
    assert check(r.distance, pred)["tree edges are input edges"] > 0
    dist = r.distance.copy(); pred = r.predecessor.copy(); dist[5] = -1; pred[5] = -1  # not spanning
    assert check(dist, pred)["input edges span at most one level"] > 0
    pred = r.predecessor.copy(); pred[0] = 1  # root is not its own parent
    assert check(r.distance, pred)["tree rooted at the sources"] > 0


def test_forest_verifier_catches_wrong_forests(backend, xp):
    edges, _ = seed(backend)
    good = minimum_spanning_forest(edges).edges
    check = lambda chosen: verify_forest(edges.src, edges.dst, edges.weight, edges.n, xp.asarray(chosen))
    g = as_np(good)[0].tolist()
    assert all_zero(check(g))
    assert check(g[:-1])["one tree per component"] > 0  # not spanning
    assert check(g + [6])["acyclic"] > 0  # (2,4,10) closes a cycle
    assert check(g[:-1] + [g[-2]])["edges are distinct input edges"] > 0
    heavier = [e for e in g if e != 4] + [1]  # swap (0,2,1) for (0,1,4): spanning, not minimum
    assert check(heavier)["minimum (cycle property)"] > 0


def star(n):
    return np.zeros(n - 1, np.int32), np.arange(1, n, dtype=np.int32), n


def path_beside_a_dense_core(n, core=150, chords=12000):
    """A dense core of `core` vertices (bottom-up pays there) with a path of n - core vertices
    hanging from vertex 0 (top-down again)."""
    rng = np.random.default_rng(6)
    path = np.arange(core, n, dtype=np.int32)
    src = np.concatenate([rng.integers(0, core, chords), [0], path[:-1]]).astype(np.int32)
    dst = np.concatenate([rng.integers(0, core, chords), [core], path[1:]]).astype(np.int32)
    return src, dst, n


def two_stars_with_loops_and_twins(n):
    half = n // 2
    src = np.concatenate([np.zeros(half - 2), np.ones(n - half), [0, 0, 5, 5]]).astype(np.int32)
    dst = np.concatenate([np.arange(2, half), np.arange(half, n), [1, 1, 5, 5]]).astype(np.int32)
    return src, dst, n


@pytest.mark.parametrize("shape, sources", [
    (lambda: star(4000), [0]), (lambda: star(4000), [7]), (lambda: star(4000), [7, 9, 0]),
    (lambda: path_beside_a_dense_core(2500), [2499]), (lambda: path_beside_a_dense_core(2500), [5]),
    (lambda: two_stars_with_loops_and_twins(5000), [4]), (lambda: two_stars_with_loops_and_twins(5000), [4, 3000, 5]),
], ids=["star-from-the-centre", "star-from-a-leaf", "star-from-leaves-and-centre", "path-end-into-a-core",
        "core-out-along-a-path", "two-stars", "two-stars-several-sources"])
@pytest.mark.parametrize("directed, limit", [(False, None), (True, None), (False, 2), (True, 1)])
def test_direction_switching_searches_equal_the_queue_bfs(shape, sources, directed, limit):
    src, dst, n = shape()
    result = bfs(build_graph(edge_list(src, dst, None, n), directed), sources, limit)
    assert result.distance.tolist() == serial_bfs(n, src, dst, sources, directed, limit).tolist()
    report = verify_bfs(src, dst, n, sources, result.distance, result.predecessor, directed, limit)
    assert not any(report.values()), report


def test_the_shapes_above_do_switch_direction():
    """A star's leaf goes top-down then bottom-up; the core goes bottom-up and back top-down
    along the path."""
    steps = bfs(build_graph(edge_list(*star(4000)[:2], None, 4000), False), [7]).steps
    assert steps[0] == "top-down" and "bottom-up" in steps, steps
    src, dst, n = path_beside_a_dense_core(2500)
    steps = bfs(build_graph(edge_list(src, dst, None, n), False), [5]).steps
    assert "top-down" in steps[steps.index("bottom-up"):], steps
