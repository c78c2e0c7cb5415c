"""The forest keeps its input's column names: an edge list read with --src-col source --dst-col
target --weight-col w gives mst_edges.parquet with columns source, target, w (the ids' type and
the weight's precision as with the default names), whoever wrote the input (pandas with
fastparquet, Polars, DuckDB), from the command line and from Python, with either Parquet writer
and on two partitions. Read back with pyarrow and DuckDB, checked against Kruskal's rows and
SciPy's forest weight (tests/references.py); the forest then reads back as the next run's input
with the same options. BFS results name their own columns (vertex, distance, predecessor)."""
import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from tests.helpers import random_edges, run
from tests.references import kruskal_rows, scipy_msf_weight

pytestmark = pytest.mark.usefixtures("prefect_server")

NAMED = ["--src-col", "source", "--dst-col", "target", "--weight-col", "w"]
SRC, DST, WEIGHT = random_edges(seed=11, n=25, m=90)


def by_fastparquet(path):
    pd.DataFrame({"source": SRC, "target": DST, "w": WEIGHT}).to_parquet(path, engine="fastparquet", index=False)


def by_polars(path):
    pl = pytest.importorskip("polars")
    pl.DataFrame({"source": SRC, "target": DST, "w": WEIGHT}).write_parquet(path)


def by_duckdb(path):
    with duckdb.connect() as con:
        con.execute("CREATE TABLE e (source BIGINT, target BIGINT, w DOUBLE)")
        con.executemany("INSERT INTO e VALUES (?, ?, ?)", list(zip(SRC, DST, WEIGHT)))
        con.execute(f"COPY (SELECT * FROM e) TO '{path}' (FORMAT PARQUET)")


WRITERS = {"fastparquet": by_fastparquet, "polars": by_polars, "duckdb": by_duckdb}


def assert_named_forest(path):
    """The forest at ``path``: columns source, target, w (int64, int64, double), Kruskal's rows
    in input row order, SciPy's total weight; the same through DuckDB."""
    forest = pq.read_table(path)
    assert forest.schema.names == ["source", "target", "w"]
    assert [f.type for f in forest.schema] == [pa.int64(), pa.int64(), pa.float64()]
    rows = kruskal_rows(SRC, DST, WEIGHT)
    expected = [(SRC[i], DST[i], WEIGHT[i]) for i in rows]
    assert list(zip(*(forest[c].to_pylist() for c in ("source", "target", "w")))) == expected
    total, edges = scipy_msf_weight(25, np.array(SRC), np.array(DST), np.array(WEIGHT))
    assert forest.num_rows == edges and sum(forest["w"].to_pylist()) == pytest.approx(total)
    with duckdb.connect() as con:
        assert con.execute(f"SELECT source, target, w FROM read_parquet('{path}')").fetchall() == expected


@pytest.mark.parametrize("made_by", list(WRITERS))
def test_the_forest_keeps_the_column_names_of_a_file_from_another_writer(made_by, tmp_path, capsys):
    data = tmp_path / f"{made_by}.parquet"
    WRITERS[made_by](data)
    assert pq.read_schema(data).names == ["source", "target", "w"]
    code, _, err = run(mst_cli.main, [data, *NAMED, "--output", tmp_path / "out"], capsys)
    assert code == 0, err
    assert_named_forest(tmp_path / "out" / "mst_edges.parquet")


@pytest.mark.parametrize("writer", ["host", "gpu"])
def test_both_parquet_writers_name_the_forest_alike(writer, tmp_path):
    from flows.mst import mst_flow

    by_polars(tmp_path / "edges.parquet")
    summary = mst_flow(str(tmp_path / "edges.parquet"), output=str(tmp_path / "out"), src_col="source",
                       dst_col="target", weight_col="w", writer=writer, backend="numpy")
    assert summary["writers"][0].startswith("gpu page writer" if writer == "gpu" else "host (pyarrow")
    assert_named_forest(tmp_path / "out" / "mst_edges.parquet")


@pytest.mark.parametrize("layout", ["file", "dataset"])
def test_a_partitioned_forest_keeps_the_column_names(layout, tmp_path):
    from flows.mst import mst_flow

    by_duckdb(tmp_path / "edges.parquet")
    mst_flow(str(tmp_path / "edges.parquet"), output=str(tmp_path / "out"), src_col="source", dst_col="target",
             weight_col="w", partitions=2, output_layout=layout, backend="numpy")
    assert_named_forest(tmp_path / "out" / "mst_edges.parquet")


def test_a_forest_reads_back_as_an_edge_list_with_the_same_options(tmp_path, capsys):
    by_fastparquet(tmp_path / "edges.parquet")
    assert run(mst_cli.main, [tmp_path / "edges.parquet", *NAMED, "--output", tmp_path / "one"], capsys)[0] == 0
    code, _, err = run(mst_cli.main, [tmp_path / "one" / "mst_edges.parquet", *NAMED, "--output", tmp_path / "two"],
                       capsys)
    assert code == 0, err  # a forest's forest is itself
    assert pq.read_table(tmp_path / "two" / "mst_edges.parquet").equals(
        pq.read_table(tmp_path / "one" / "mst_edges.parquet"))


def test_an_unweighted_forest_names_its_unit_weights_weight(tmp_path, capsys):
    pq.write_table(pa.table({"a": pa.array([0, 1, 2, 2], pa.int32()), "b": pa.array([1, 2, 0, 3], pa.int32())}),
                   tmp_path / "edges.parquet")
    argv = [tmp_path / "edges.parquet", "--src-col", "a", "--dst-col", "b", "--weight-col", "none"]
    assert run(mst_cli.main, [*argv, "--output", tmp_path / "out"], capsys)[0] == 0
    forest = pq.read_table(tmp_path / "out" / "mst_edges.parquet")
    assert forest.schema.names == ["a", "b", "weight"] and forest["a"].type == pa.int32()
    assert forest["weight"].to_pylist() == [1.0, 1.0, 1.0]


def test_an_id_column_named_weight_leaves_the_unit_weights_unit_weight(tmp_path, capsys):
    pq.write_table(pa.table({"weight": [0, 1, 2], "b": [1, 2, 0]}), tmp_path / "edges.parquet")
    argv = [tmp_path / "edges.parquet", "--src-col", "weight", "--dst-col", "b", "--weight-col", "none"]
    assert run(mst_cli.main, [*argv, "--output", tmp_path / "out"], capsys)[0] == 0
    assert pq.read_schema(tmp_path / "out" / "mst_edges.parquet").names == ["weight", "b", "unit_weight"]


def test_bfs_results_keep_their_own_column_names(tmp_path, capsys):
    by_polars(tmp_path / "edges.parquet")
    code, _, err = run(bfs_cli.main, [tmp_path / "edges.parquet", "--src-col", "source", "--dst-col", "target",
                                      "--source", SRC[0], "--output", tmp_path / "out"], capsys)
    assert code == 0, err
    assert pq.read_schema(tmp_path / "out" / "bfs_distances.parquet").names == ["vertex", "distance", "predecessor"]
