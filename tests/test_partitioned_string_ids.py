"""Partitioned runs of edge lists whose vertex ids are strings (tasks/partitioned/vertex_ids.py):
with 2 and 3 partitions, on real Parquet files whose id columns are string, large_string or
dictionary-encoded, ids with Unicode (composed and decomposed forms kept apart), spaces, commas
and the empty string, over several row groups cut by the ranks' shares. Compared with the
one-partition run of the same file (the forest file identical, distances by vertex identical),
with networkx (distances, forest weight and size) and with the serial references of
tests/references.py (Kruskal's rows under (weight, input row), a queue BFS with parents checked
as valid). Then: sources given as strings (a missing one refused with the one-partition run's
line, an integer taken as its text), duplicate edges and self-loops, a directed search, the
dataset layout's parts ascending by the ids' bytes, and the string hash that picks owners
against a plain Python one. The cluster is tests/conftest.py's `cpu_cluster`."""
import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kernels.partitioned as kp
from flows.pipeline import pipeline_flow
from kernels.partitioned import string_owner
from tasks.errors import InputError
from tasks.partitioned.driver import count_partitions, run_partitioned
from tests.helpers import STRING_IDS, string_graph, write_edges
from tests.references import assert_distances, assert_forest

pytestmark = pytest.mark.usefixtures("prefect_server")  # before the cluster: its workers find the server

SOURCES = ["", "\u00e9", "vertex-5"]


def networkx_graph(src, dst, weight, directed=False):
    g = (nx.MultiDiGraph if directed else nx.MultiGraph)()
    g.add_nodes_from(src + dst)
    g.add_weighted_edges_from(zip(src, dst, weight))
    return g


def assert_like_networkx(out, src, dst, weight, sources, directed=False):
    g = networkx_graph(src, dst, weight, directed)
    hops = nx.multi_source_dijkstra_path_length(g, set(sources), weight=lambda u, v, e: 1)
    table = pq.read_table(out / "bfs_distances.parquet")
    assert dict(zip(table["vertex"].to_pylist(), table["distance"].to_pylist())) == {v: hops.get(v) for v in g}
    if not directed:
        forest = pq.read_table(out / "mst_edges.parquet")
        reference = nx.minimum_spanning_tree(g)
        assert forest.num_rows == reference.number_of_edges()
        assert sum(forest["weight"].to_pylist()) == pytest.approx(reference.size(weight="weight"))


def by_vertex(path):
    return pq.read_table(path).sort_by("vertex")


@pytest.fixture(scope="module")
def one_partition_runs(tmp_path_factory):
    """Each id column type's graph and its one-partition pipeline run (written once per module)."""
    runs = {}
    for kind in ("string", "large_string", "dictionary"):
        folder = tmp_path_factory.mktemp(kind)
        path, src, dst, w = string_graph(folder / "g.parquet", kind)
        pipeline_flow(str(path), source=SOURCES, output=str(folder / "one"), backend="numpy")
        runs[kind] = path, src, dst, w, folder / "one"
    return runs


@pytest.mark.parametrize("partitions", [2, 3])
@pytest.mark.parametrize("kind", ["string", "large_string", "dictionary"])
def test_string_ids_give_the_one_partition_results(client, tmp_path, one_partition_runs, kind, partitions):
    path, src, dst, w, one = one_partition_runs[kind]
    out = tmp_path / "many"
    summary = run_partitioned(str(path), str(out), partitions, source=SOURCES, client=client)
    assert summary["partitions"] == partitions
    # the forest: the same input rows with the same string ends, in input row order
    assert pq.read_table(out / "mst_edges.parquet").equals(pq.read_table(one / "mst_edges.parquet"))
    assert_forest(out / "mst_edges.parquet", src, dst, w)
    # distances: every vertex once, as one partition found them; parents valid (any valid parent is correct)
    many, single = by_vertex(out / "bfs_distances.parquet"), by_vertex(one / "bfs_distances.parquet")
    assert many.schema == single.schema and many.schema.field("vertex").type == pa.large_string()
    assert many.select(["vertex", "distance"]).equals(single.select(["vertex", "distance"]))
    assert_distances(out / "bfs_distances.parquet", src, dst, SOURCES)
    assert_like_networkx(out, src, dst, w, SOURCES)


def test_a_larger_string_graph_on_three_partitions(client, tmp_path):
    """Thousands of ids per rank, each rank's share cutting many row groups."""
    path, src, dst, w = string_graph(tmp_path / "g.parquet", "large_string", seed=7, n=4000, m=16000)
    summary = run_partitioned(str(path), str(tmp_path / "o"), 3, source=SOURCES, client=client)
    assert summary["vertices"] == len(set(src + dst))
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, SOURCES)
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, w)
    assert_like_networkx(tmp_path / "o", src, dst, w, SOURCES)


def test_each_part_lists_its_vertices_in_byte_order(client, tmp_path):
    path, src, dst, w = string_graph(tmp_path / "g.parquet", "string", seed=5)
    out = tmp_path / "out"
    run_partitioned(str(path), str(out), 3, source=["a"], client=client, output_layout="dataset")
    parts = sorted((out / "bfs_distances.parquet").iterdir())
    vertices = [pq.read_table(p)["vertex"].to_pylist() for p in parts]
    assert len(parts) == 3 and sorted(v for part in vertices for v in part) == sorted(set(src + dst))
    for part in vertices:
        assert part == sorted(part, key=lambda v: v.encode())
    assert_distances(out / "bfs_distances.parquet", src, dst, ["a"])
    assert_forest(out / "mst_edges.parquet", src, dst, w)


@pytest.mark.parametrize("partitions", [2, 3])
def test_a_missing_string_source_is_refused_as_one_partition_refuses_it(client, tmp_path, partitions):
    path, *_ = string_graph(tmp_path / "g.parquet", "large_string")
    expected = f"{path}: source 'vertex-99' is not a vertex of the graph"
    state = pipeline_flow(str(path), source=["a", "vertex-99"], output=str(tmp_path / "one"), backend="numpy",
                          return_state=True)
    with pytest.raises(InputError) as one:
        state.result()
    assert str(one.value) == expected
    with pytest.raises(InputError) as many:
        run_partitioned(str(path), str(tmp_path / "many"), partitions, source=["a", "vertex-99"], client=client)
    assert str(many.value) == expected
    assert not (tmp_path / "many").exists() and not (tmp_path / "one").exists()


def test_integer_sources_are_taken_as_their_text(client, tmp_path):
    """A source of a graph of string ids is matched as text, as one partition matches it: 7 is
    the id "7", and "007" another vertex."""
    path, src, dst, w = string_graph(tmp_path / "g.parquet", "string")
    run_partitioned(str(path), str(tmp_path / "o"), 2, source_sets=[[7], ["007"]], forest=False, client=client)
    assert_distances(tmp_path / "o" / "source-set-0" / "bfs_distances.parquet", src, dst, ["7"])
    assert_distances(tmp_path / "o" / "source-set-1" / "bfs_distances.parquet", src, dst, ["007"])


@pytest.mark.parametrize("partitions", [2, 3])
def test_duplicate_edges_and_self_loops_of_string_ids(client, tmp_path, partitions):
    """Parallel edges (the lower row wins a tie), an edge given both ways, self-loops (kept as
    rows, never in the forest, counted; the empty-string id has only a self-loop), a vertex
    first seen in the last row, and a vertex whose only edge is a self-loop."""
    rows = [("x", "y", 1.0), ("x", "y", 1.0), ("y", "x", 1.0), ("y", "y", 0.0), ("", "", -1.0), ("y", "z", 2.0),
            ("z", "x", 2.0), ("z", "z", 0.5), ("x", "y", 0.5), ("solo", "solo", 0.0), ("z", "é", 3.0)]
    src, dst, w = (list(c) for c in zip(*rows))
    path = write_edges(tmp_path / "g.parquet", src, dst, w, row_group_size=3)
    one = pipeline_flow(str(path), source=["x"], output=str(tmp_path / "one"), backend="numpy")
    summary = run_partitioned(str(path), str(tmp_path / "many"), partitions, source=["x"], client=client)
    figures = ("self_loops", "vertices", "forest_edges")
    assert [summary[k] for k in figures] == [one[k] for k in figures] == [4, 6, 3]
    forest = pq.read_table(tmp_path / "many" / "mst_edges.parquet")
    assert forest.equals(pq.read_table(tmp_path / "one" / "mst_edges.parquet"))
    assert forest.to_pylist() == [{"src": "y", "dst": "z", "weight": 2.0}, {"src": "x", "dst": "y", "weight": 0.5},
                                  {"src": "z", "dst": "é", "weight": 3.0}]
    assert_forest(tmp_path / "many" / "mst_edges.parquet", src, dst, w)
    assert_distances(tmp_path / "many" / "bfs_distances.parquet", src, dst, ["x"])
    assert by_vertex(tmp_path / "many" / "bfs_distances.parquet").select(["vertex", "distance"]).equals(
        by_vertex(tmp_path / "one" / "bfs_distances.parquet").select(["vertex", "distance"]))


def test_a_directed_search_over_string_ids(client, tmp_path):
    path, src, dst, w = string_graph(tmp_path / "g.parquet", "dictionary", seed=11)
    run_partitioned(str(path), str(tmp_path / "o"), 3, source=SOURCES, directed=True, client=client)
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, SOURCES, directed=True)
    assert_like_networkx(tmp_path / "o", src, dst, w, SOURCES, directed=True)
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, w)  # the forest is undirected


def test_string_ids_are_counted_for_partitions_without_a_refusal(client, tmp_path):
    path, *_ = string_graph(tmp_path / "g.parquet", "string")
    assert count_partitions(str(path), 3, client=client) == 3


@pytest.mark.parametrize("batch", [kp.STRING_HASH_BATCH, 1, 7])
def test_the_string_hash_is_fnv_polynomial_then_the_finalizer(monkeypatch, batch):
    """string_owner against the same hash in plain Python, one string at a time, whatever the
    batch size the vectorized hash cuts the bytes in (a batch smaller than a string included)."""
    names = pa.array(STRING_IDS + ["x" * 5000, "\0", "\0a"], pa.large_string())
    offsets = np.frombuffer(names.buffers()[1], dtype=np.int64)[: len(names) + 1]
    data = np.frombuffer(names.buffers()[2], dtype=np.uint8)
    monkeypatch.setattr(kp, "STRING_HASH_BATCH", batch)
    mask = 2**64 - 1

    def owner(text: str, size: int) -> int:
        h = 0
        for byte in text.encode():
            h = (h * 0x100000001B3 + byte) & mask
        h ^= (len(text.encode()) * 0x9E3779B97F4A7C15) & mask
        for mult in (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53):
            h = ((h ^ (h >> 33)) * mult) & mask
        return (h ^ (h >> 33)) % size

    for size in (2, 3, 8):
        assert string_owner(offsets, data, size).tolist() == [owner(t, size) for t in names.to_pylist()]
