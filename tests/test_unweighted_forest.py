"""An unweighted edge list has a spanning forest too: `--weight-col none` (weight_col=None from
Python) computes the forest of unit weights, whose every spanning forest is minimum. Checked
against networkx: as many edges as vertices less components, no cycle, every edge an input
edge, the same components; on one partition and on two; the summary says it."""
import networkx as nx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tests.conftest import realgraphs_dir

pytestmark = pytest.mark.usefixtures("prefect_server")


def run(main, argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def unweighted_copy(tmp_path, name="rome99"):
    """A real road graph's src and dst columns only."""
    table = pq.read_table(realgraphs_dir() / f"{name}.parquet", columns=["src", "dst"])
    path = tmp_path / f"{name}-unweighted.parquet"
    pq.write_table(table, path)
    return path, table


def check_spanning_forest(forest: pa.Table, edges: pa.Table):
    g = nx.Graph()
    g.add_edges_from(zip(edges["src"].to_pylist(), edges["dst"].to_pylist()))
    g.remove_edges_from(nx.selfloop_edges(g))
    chosen = list(zip(forest["src"].to_pylist(), forest["dst"].to_pylist()))
    f = nx.Graph(chosen)
    assert len(chosen) == g.number_of_nodes() - nx.number_connected_components(g)
    assert nx.is_forest(f) and all(g.has_edge(u, v) for u, v in chosen)
    assert {frozenset(c) for c in nx.connected_components(g) if len(c) > 1} == \
        {frozenset(c) for c in nx.connected_components(f)}
    assert set(forest["weight"].to_pylist()) == {1.0}
    return len(chosen)


def test_the_forest_of_an_unweighted_edge_list_from_the_command_line(tmp_path, capsys):
    path, edges = unweighted_copy(tmp_path)
    code, out, err = run(mst_cli.main, [str(path), "--weight-col", "none", "--output", str(tmp_path / "out")], capsys)
    assert code == 0, err
    forest = pq.read_table(tmp_path / "out" / "mst_edges.parquet")
    count = check_spanning_forest(forest, edges)
    assert f"forest of {count:,} edges, weight {count:,}" in out and "(unweighted: every edge weighs 1)" in out


def test_without_the_option_an_unweighted_edge_list_names_the_missing_column(tmp_path, capsys):
    path, _ = unweighted_copy(tmp_path)
    code, _, err = run(mst_cli.main, [str(path), "--output", str(tmp_path / "out")], capsys)
    assert code == 1 and "weight" in err.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()


def test_weight_col_none_ignores_a_weight_column_that_is_there(tmp_path, capsys):
    code, out, err = run(pipeline_cli.main, [str(realgraphs_dir() / "netscience.parquet"), "--weight-col", "none",
                                             "--source", "0", "--output", str(tmp_path / "out")], capsys)
    assert code == 0, err
    edges = pq.read_table(realgraphs_dir() / "netscience.parquet")
    check_spanning_forest(pq.read_table(tmp_path / "out" / "mst_edges.parquet"), edges)
    assert (tmp_path / "out" / "bfs_distances.parquet").exists()


@pytest.mark.parametrize("partitions", [1, 2])
def test_the_unweighted_forest_from_python(tmp_path, partitions):
    from flows.mst import mst_flow

    path, edges = unweighted_copy(tmp_path)
    summary = mst_flow(str(path), output=str(tmp_path / "out"), weight_col=None, partitions=partitions,
                       backend="numpy")
    count = check_spanning_forest(pq.read_table(tmp_path / "out" / "mst_edges.parquet"), edges)
    assert summary["unit_weights"] is True and summary["forest_edges"] == count and summary["forest_weight"] == count
