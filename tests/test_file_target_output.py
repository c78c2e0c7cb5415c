"""An --output (the flows' ``output``) ending in .parquet, .parq or .pq names the run's one result
file: `mst in.parquet --output /x/forest.parquet` writes the forest to exactly that file, with
the publishing guarantees of a result (written whole, nothing beside it, the output checks), and
so does a BFS of one search. For several results (the pipeline, several source sets) it is one
error line before anything runs. A partitioned run writes the file too, or in the dataset layout
a folder of parts of that name. A trailing / keeps such a path a folder."""
import duckdb
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tasks.parquet.write.results import RESULT_KEY
from tests.helpers import error_line, random_edges, run, write_edges
from tests.references import assert_distances, assert_forest

pytestmark = pytest.mark.usefixtures("prefect_server")

SRC, DST, WEIGHT = random_edges(seed=5, n=20, m=60)


def edges(tmp_path):
    return write_edges(tmp_path / "in.parquet", SRC, DST, WEIGHT)


@pytest.mark.parametrize("name", ["forest.parquet", "forest.PQ", "forest.parq"])
def test_mst_writes_the_forest_to_the_file_output_names(name, tmp_path, capsys):
    target = tmp_path / "x" / name
    code, out, err = run(mst_cli.main, [edges(tmp_path), "--output", target], capsys)
    assert code == 0, err
    assert target.is_file() and sorted(p.name for p in target.parent.iterdir()) == [name]
    assert f"wrote {target}" in out
    assert_forest(target, SRC, DST, WEIGHT)
    assert pq.read_metadata(target).metadata[RESULT_KEY] == b"mst_edges.parquet"  # the footer names the result
    with duckdb.connect() as con:
        assert con.execute(f"SELECT count(*) FROM read_parquet('{target}')").fetchone()[0] == pq.read_metadata(
            target).num_rows


def test_a_rerun_replaces_the_file_and_leaves_its_neighbours(tmp_path, capsys):
    target = tmp_path / "forest.parquet"
    (tmp_path / "notes.txt").write_text("mine")
    for _ in range(2):
        assert run(mst_cli.main, [edges(tmp_path), "--output", target], capsys)[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forest.parquet", "in.parquet", "notes.txt"]
    assert_forest(target, SRC, DST, WEIGHT)


@pytest.mark.parametrize("sources", [["--source", "0"], ["--source-set", "0,1"]], ids=["source", "one-source-set"])
def test_bfs_of_one_search_writes_the_file_output_names(sources, tmp_path, capsys):
    target = tmp_path / "distances.parquet"
    code, _, err = run(bfs_cli.main, [edges(tmp_path), *sources, "--output", target], capsys)
    assert code == 0, err
    assert_distances(target, SRC, DST, [int(s) for s in sources[1].split(",")])


@pytest.mark.parametrize("main, extra, results", [
    (pipeline_cli.main, ["--source", "0"], "2 results (bfs_distances.parquet, mst_edges.parquet)"),
    (bfs_cli.main, ["--source-set", "0", "--source-set", "1"],
     "2 results (source-set-0/bfs_distances.parquet, source-set-1/bfs_distances.parquet)"),
], ids=["pipeline", "several-source-sets"])
def test_a_file_for_several_results_is_one_error_line_before_anything_runs(main, extra, results, tmp_path, capsys):
    target = tmp_path / "out" / "r.parquet"
    code, out, err = run(main, [edges(tmp_path), *extra, "--output", target], capsys)
    assert code == 1 and out == ""
    assert err.strip() == f"error: --output {target} names one Parquet file, but this run writes {results}; " \
                          "give a directory"
    assert not (tmp_path / "out").exists()


def test_the_python_flow_takes_a_file_output_and_refuses_one_for_several_results(tmp_path):
    from flows.mst import mst_flow
    from flows.pipeline import pipeline_flow

    target = tmp_path / "f.parquet"
    summary = mst_flow(str(edges(tmp_path)), output=str(target), backend="numpy")
    assert summary["outputs"] == [str(target)]
    assert_forest(target, SRC, DST, WEIGHT)
    state = pipeline_flow(str(tmp_path / "in.parquet"), source=[0], output=str(tmp_path / "p.parquet"),
                          return_state=True)
    assert state.is_failed() and "names one Parquet file, but this run writes 2 results" in state.message
    assert not (tmp_path / "p.parquet").exists()


def test_a_trailing_slash_keeps_a_parquet_name_a_folder(tmp_path, capsys):
    folder = tmp_path / "results.parquet"
    assert run(mst_cli.main, [edges(tmp_path), "--output", f"{folder}/"], capsys)[0] == 0
    assert_forest(folder / "mst_edges.parquet", SRC, DST, WEIGHT)


def test_a_folder_at_the_file_path_is_refused_with_a_hint(tmp_path, capsys):
    (tmp_path / "forest.parquet").mkdir()
    (tmp_path / "forest.parquet" / "mine.txt").write_text("x")
    code, _, err = run(mst_cli.main, [edges(tmp_path), "--output", tmp_path / "forest.parquet"], capsys)
    assert code == 1
    assert error_line(err) == (
        f"error: {tmp_path / 'forest.parquet'}: output path exists and is not a regular file; an output ending in "
        ".parquet names the result file: end it with / to write into that folder")


def test_a_file_output_inside_the_input_dataset_is_refused(tmp_path, capsys):
    write_edges(tmp_path / "data" / "part-0.parquet", SRC, DST, WEIGHT)
    code, _, err = run(mst_cli.main, [tmp_path / "data", "--output", tmp_path / "data" / "forest.parquet"], capsys)
    assert code == 1 and "output folder is inside the input dataset" in err
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["part-0.parquet"]


def test_a_file_output_that_is_the_input_is_refused(tmp_path, capsys):
    path = edges(tmp_path)
    code, _, err = run(mst_cli.main, [path, "--output", path], capsys)
    assert code == 1 and "the result would replace the input file" in err
    assert pq.read_table(path).num_rows == len(SRC)


@pytest.mark.parametrize("layout", ["file", "dataset"])
def test_a_partitioned_run_writes_the_file_or_a_folder_of_parts_of_that_name(layout, tmp_path):
    from flows.mst import mst_flow

    target = tmp_path / "x" / "forest.parquet"
    mst_flow(str(edges(tmp_path)), output=str(target), partitions=2, output_layout=layout, backend="numpy")
    assert target.is_file() if layout == "file" else sorted(p.name for p in target.iterdir()) == [
        "part-00000.parquet", "part-00001.parquet"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["forest.parquet"]  # no staging left
    assert_forest(target, SRC, DST, WEIGHT)
