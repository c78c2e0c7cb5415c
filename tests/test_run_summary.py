"""The run's summary says what the results hold, in its three forms (the terminal line, the
summary table artifact and the summary dict, the run's persisted result): per source set the
vertices reached and the farthest one's distance in hops, as networkx's hop distances on the same
file give them; the forest's weight with every digit of the exact sum (networkx's forest, summed
by math.fsum); and a source that a --filter removed named as such. Inputs are written by pandas
(fastparquet), Polars and DuckDB."""
import math
from pathlib import Path

import duckdb
import fastparquet
import networkx as nx
import pandas as pd
import pyarrow as pa
import pytest

from flows import bfs as bfs_cli
from flows import pipeline as pipeline_cli
from tasks.errors import InputError
from tasks.partitioned.driver import run_partitioned
from tests.helpers import artifacts_of, error_line, run, table_rows, write_edges

pytestmark = pytest.mark.usefixtures("prefect_server")


def write_with(writer: str, path: Path, src, dst, weight) -> Path:
    """An edge file written by another Parquet writer than the project's own (pyarrow)."""
    if writer == "fastparquet":
        fastparquet.write(str(path), pd.DataFrame({"src": src, "dst": dst, "weight": weight}), write_index=False)
    elif writer == "polars":
        pl = pytest.importorskip("polars")
        pl.DataFrame({"src": src, "dst": dst, "weight": weight},
                     schema={"src": pl.Int64, "dst": pl.Int64, "weight": pl.Float64}).write_parquet(path)
    else:
        table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()),
                          "weight": pa.array(weight, pa.float64())})
        with duckdb.connect() as db:
            db.register("edges", table)
            db.execute(f"COPY edges TO '{path}' (FORMAT parquet)")
    return path


def networkx_search(src, dst, sources) -> tuple[int, int]:
    """(vertices reached, farthest distance in hops) from the nearest of ``sources``."""
    graph = nx.Graph()
    graph.add_nodes_from(src + dst)
    graph.add_edges_from(zip(src, dst))
    nearest: dict = {}
    for s in sources:
        for v, hops in nx.single_source_shortest_path_length(graph, s).items():
            nearest[v] = min(hops, nearest.get(v, hops))
    return len(nearest), max(nearest.values())


def networkx_forest_weight(src, dst, weight) -> float:
    """The minimum spanning forest's weight: its weights (the same multiset for every minimum
    forest) summed exactly and rounded once."""
    graph = nx.Graph()
    graph.add_nodes_from(src + dst)
    for a, b, w in zip(src, dst, weight):
        if a != b and (not graph.has_edge(a, b) or graph[a][b]["weight"] > w):
            graph.add_edge(a, b, weight=w)
    return math.fsum(d["weight"] for _, _, d in nx.minimum_spanning_edges(graph, weight="weight"))


def shown(total: float) -> str:
    """A weight as Python's format writes every digit of it, with separators (no '.0')."""
    return f"{total:,}".removesuffix(".0")


# (src, dst, weight, source sets): graphs whose farthest distance is not their level count
GRAPHS = {
    "path-of-three-hops": ([0, 1, 2], [1, 2, 3], [1_209_764.7, 1_209_764.7, 0.25], [[0]]),
    "a-source-in-a-self-loop-only": ([5, 0, 1], [5, 1, 2], [3.0, 4.0, 5.0], [[5], [0]]),
    "disconnected": ([0, 1, 2, 10, 11], [1, 2, 0, 11, 12], [0.1, 0.2, 0.3, 1e-5, 2.5], [[10], [0, 11]]),
    "several-sources-in-one-set": ([0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                                   [[0, 6], [3], [0, 1, 2, 3, 4, 5, 6]]),
}


@pytest.mark.parametrize("writer", ["fastparquet", "polars", "duckdb"])
@pytest.mark.parametrize("graph", GRAPHS, ids=list(GRAPHS))
def test_the_summary_reports_reached_vertices_depth_and_the_exact_weight(tmp_path, capsys, graph, writer):
    src, dst, weight, sets = GRAPHS[graph]
    path = write_with(writer, tmp_path / "g.parquet", src, dst, weight)
    argv = [path, "--output", tmp_path / "o"] + [a for s in sets for a in ("--source-set", ",".join(map(str, s)))]
    code, out, err = run(pipeline_cli.main, argv, capsys)
    assert code == 0, err
    expected = [networkx_search(src, dst, s) for s in sets]
    total = networkx_forest_weight(src, dst, weight)
    from prefect.client.orchestration import get_client

    run_id = next(line.rsplit("/", 1)[1] for line in out.splitlines() if line.startswith("run: "))
    with get_client(sync_client=True) as client:
        summary = client.read_flow_run(run_id).state.result()
    assert list(zip(summary["reached"], summary["depth"])) == expected and "levels" not in summary
    assert summary["forest_weight"] == total
    line = out.splitlines()[0]
    for k, (reached, depth) in enumerate(expected):
        hops = "1 hop" if depth == 1 else f"{depth} hops"
        vertices = "1 vertex" if reached == 1 else f"{reached:,} vertices"
        label = "BFS" if len(sets) == 1 else f"BFS source set {k}"  # (one set: one search, as --source)
        assert f"; {label}: {vertices} reached, farthest {hops};" in line, line
    assert f", weight {shown(total)}, " in line, line
    rows = dict(table_rows(next(a for a in artifacts_of(run_id) if a["key"] == "pipeline-summary")))
    n = len(set(src) | set(dst))
    for k, (reached, depth) in enumerate(expected):
        assert rows["BFS" if len(sets) == 1 else f"BFS (source set {k})"].startswith(f"reached {reached:,} of {n:,} vertices, farthest {depth}")
    assert f"total weight {shown(total)}" in rows["forest"]


@pytest.mark.parametrize("weights, text", [
    ([1_209_764.7, 1_209_764.7], "2,419,529.4"),  # rounded to 2,419,529 before
    ([3.0, 4.0, 5.0], "12"),  # a whole number stays one
    ([0.1] * 10, "1"),  # the exact sum rounded once (a float64 sum in that order is 0.9999999999999999)
    ([1e16, 1.0, 1.0, -1e16], "2"),
    ([2.0 / 3.0, 1.0 / 3.0, 1e-3], "1.001"),
])
def test_the_forest_weight_has_every_digit_of_its_exact_sum(tmp_path, capsys, weights, text):
    n = len(weights)
    path = write_edges(tmp_path / "p.parquet", list(range(n)), list(range(1, n + 1)), weights)
    code, out, err = run(pipeline_cli.main, [path, "--source", "0", "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    assert shown(math.fsum(weights)) == text
    line = out.splitlines()[0]
    assert f"forest of {n} edges, weight {text}, 1 component;" in line, line
    assert f"BFS: {n + 1} vertices reached, farthest {n} hops;" in line, line


def test_a_source_the_filter_removed_is_named_with_the_filter(tmp_path, capsys):
    """Vertex 7's edges all weigh at most 3: with --filter 'weight > 3' it is not a vertex of
    the rows read, and the error says the filter removed it, not that the graph lacks it."""
    path = write_with("polars", tmp_path / "g.parquet", [0, 1, 7, 7], [1, 2, 0, 2], [5.0, 4.0, 1.0, 3.0])
    code, out, err = run(bfs_cli.main, [path, "--source", "7", "--filter", "weight > 3",
                                        "--output", tmp_path / "o"], capsys)
    assert code == 1 and out == ""
    assert error_line(err) == f"error: {path}: source '7' is not a vertex of the rows the filter 'weight > 3' kept"
    assert not (tmp_path / "o").exists()
    code, out, err = run(bfs_cli.main, [path, "--source", "9", "--output", tmp_path / "o"], capsys)
    assert code == 1 and error_line(err) == f"error: {path}: source '9' is not a vertex of the graph"
    code, out, err = run(bfs_cli.main, [path, "--source", "7", "--output", tmp_path / "o"], capsys)  # unfiltered
    assert code == 0, err


def test_a_partitioned_run_reports_the_same_figures_and_the_filter(tmp_path):
    src, dst, weight, sets = GRAPHS["several-sources-in-one-set"]
    path = write_with("duckdb", tmp_path / "g.parquet", src, dst, weight)
    summary = run_partitioned(str(path), str(tmp_path / "o"), 2, source_sets=[[str(s) for s in ids] for ids in sets],
                              backend="numpy")
    assert list(zip(summary["reached"], summary["depth"])) == [networkx_search(src, dst, s) for s in sets]
    assert summary["forest_weight"] == networkx_forest_weight(src, dst, weight) and "levels" not in summary
    with pytest.raises(InputError, match=r"^.*: source '0' is not a vertex of the rows the filter 'weight > 1' kept$"):
        run_partitioned(str(path), str(tmp_path / "p"), 2, source=["0"], filter="weight > 1", backend="numpy")
