"""Where results are written and what they replace, on the CPU: a result path that would
replace an input file (itself, through a link, or a partitioned run's folder of parts read as
the input) is refused before reading; a folder of the user's at a result path is refused, an
earlier run's result folder is replaced; results written together replace all the earlier ones
or none (one that cannot be written, or moved, leaves every old one in place); a run replaces
only what it computes; the distance rows come in a stated order. Older outputs are compared
byte for byte before and after."""
import os
import socket
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tests.helpers import EDGES, contents, error_line, listing, run, write_seed
from tests.references import assert_distances

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.mark.parametrize("layout", ["file", "dataset"])
def test_a_partitioned_run_refuses_a_folder_of_yours_at_a_result_path(tmp_path, capsys, monkeypatch, layout):
    """A folder at mst_edges.parquet that holds more than a partitioned run's part files is the
    user's: the run is refused before reading. It used to succeed, replacing the folder whole
    and deleting what the user kept in it."""
    pq.write_table(EDGES, tmp_path / "g.parquet")
    out = tmp_path / "o"
    (out / "mst_edges.parquet" / "mine").mkdir(parents=True)
    (out / "mst_edges.parquet" / "mine" / "notes.txt").write_text("keep me")
    (out / "mst_edges.parquet" / "part-00000.parquet").write_bytes(b"an older part")
    before = listing(tmp_path)
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")
    code, out_text, err = run(mst_cli.main, [tmp_path / "g.parquet", "--output", out, "--partitions", "2",
                                             "--output-layout", layout, "--runner", "dask", "--backend", "numpy"], capsys)
    assert code == 1 and out_text == ""
    assert [error_line(err)] == [
        f"error: {out / 'mst_edges.parquet'}: output path is a folder that holds more than a partitioned run's "
        "part files, so it is taken to be yours; remove it or write the results elsewhere"]
    assert listing(tmp_path) == before
    assert (out / "mst_edges.parquet" / "mine" / "notes.txt").read_text() == "keep me"


def test_a_partitioned_run_replaces_an_earlier_result_folder_or_an_empty_one(tmp_path, capsys, monkeypatch):
    pq.write_table(EDGES, tmp_path / "g.parquet")
    out = tmp_path / "o"
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")
    argv = [tmp_path / "g.parquet", "--output", out, "--partitions", "2", "--runner", "dask", "--backend", "numpy"]
    (out / "mst_edges.parquet").mkdir(parents=True)  # empty: nothing of anyone's is lost
    assert run(mst_cli.main, [*argv, "--output-layout", "dataset"], capsys)[0] == 0
    assert sorted(p.name for p in (out / "mst_edges.parquet").iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    code, _, err = run(mst_cli.main, [*argv, "--output-layout", "file"], capsys)
    assert code == 0, err
    assert pq.read_table(out / "mst_edges.parquet").num_rows == 3


@pytest.fixture
def unwritable():
    """Makes a folder unwritable, also for root (whose writes file permissions do not stop): by
    the immutable attribute there, by its mode otherwise. Undone at the end of the test."""
    made = []

    def make(folder: Path) -> None:
        if os.geteuid() == 0:
            if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
                pytest.skip("root, and chattr +i is not available to make a folder unwritable")
        else:
            folder.chmod(0o555)
        made.append(folder)

    yield make
    for folder in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        else:
            folder.chmod(0o755)


def test_a_partitioned_run_replaces_all_its_results_or_none(tmp_path, capsys, monkeypatch, unwritable):
    """The second source set's folder cannot be written: the run fails naming it, and the first
    set's result, which was moved into place first, is not replaced either."""
    pq.write_table(EDGES, tmp_path / "g.parquet")
    out = tmp_path / "o"
    argv = [tmp_path / "g.parquet", "--output", out]
    code, _, err = run(bfs_cli.main, [*argv, "--source-set", "0", "--source-set", "1"], capsys)
    assert code == 0, err
    before = contents(tmp_path)
    unwritable(out / "source-set-1")
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")
    code, out_text, err = run(bfs_cli.main, [*argv, "--source-set", "2", "--source-set", "3", "--partitions", "2",
                                             "--runner", "dask", "--backend", "numpy"], capsys)
    assert code == 1 and out_text == ""
    assert error_line(err) == f"error: {out / 'source-set-1'}: output directory is not writable"
    assert contents(tmp_path) == before


def test_publish_puts_back_the_results_it_moved_when_a_later_move_fails(tmp_path):
    """A move that fails once others are done (here: a result missing from staging) undoes them."""
    from tasks.errors import OutputError
    from tasks.parquet.publish.publish import publish

    staging, output = tmp_path / "o" / ".staging", tmp_path / "o"
    (staging / "source-set-0").mkdir(parents=True)
    (staging / "source-set-0" / "bfs_distances.parquet").write_bytes(b"new 0")
    (staging / "mst_edges.parquet").write_bytes(b"new forest")
    (output / "source-set-0").mkdir()
    (output / "source-set-0" / "bfs_distances.parquet").write_bytes(b"old 0")
    with pytest.raises(OutputError, match="no result was replaced"):
        publish(staging, output, ["source-set-0/bfs_distances.parquet", "mst_edges.parquet",
                                  "source-set-1/bfs_distances.parquet"])
    assert (output / "source-set-0" / "bfs_distances.parquet").read_bytes() == b"old 0"
    assert not (output / "mst_edges.parquet").exists()


def test_results_written_together_replace_all_or_none(tmp_path):
    """Results are written at once; the distances' file cannot be created (its temporary's path
    is too long for the system, as a full disk would fail it), while the forest's can. The
    forest used to replace the old one all the same, leaving two runs' results mixed."""
    from tasks.parquet.write.result_files import write_many
    from tasks.errors import OutputError

    # the distances' temporary is 18 characters longer than the forest's: PATH_MAX falls between
    temporary = len(f"/.bfs_distances.parquet~{socket.gethostname()}~{os.getpid()}~12345678.tmp")
    length = os.pathconf("/", "PC_PATH_MAX") - temporary - len("/source-set-0") + 5
    out = tmp_path
    while len(str(out)) < length - 200:
        out = out / ("d" * 190)
    out = out / ("d" * (length - len(str(out)) - 1))
    (out / "source-set-0").mkdir(parents=True)
    (out / "mst_edges.parquet").write_bytes(b"an older forest")
    (out / "source-set-0" / "bfs_distances.parquet").write_bytes(b"older distances")
    before = contents(tmp_path)
    with pytest.raises(OutputError, match="bfs_distances.parquet: cannot write results \\(File name too long\\)"):
        write_many({out / "mst_edges.parquet": EDGES, out / "source-set-0" / "bfs_distances.parquet": EDGES})
    assert contents(tmp_path) == before
    write_many({out / "mst_edges.parquet": EDGES})  # alone, it fits
    assert pq.read_table(out / "mst_edges.parquet").equals(EDGES)


@pytest.mark.parametrize("layout", ["same-file", "input-is-a-link-to-the-result", "dataset-part-linked-to-the-result",
                                    "input-is-a-result-folder"])
@pytest.mark.parametrize("main, result, argv", [
    (mst_cli.main, "mst_edges.parquet", []),
    (bfs_cli.main, "bfs_distances.parquet", ["--source", "0"]),
    (pipeline_cli.main, "bfs_distances.parquet", ["--source", "0"]),
], ids=["mst", "bfs", "pipeline"])
def test_a_result_path_that_is_an_input_file_is_refused(tmp_path, capsys, layout, main, result, argv):
    """The output folder holds the input under a result's name (the file itself, the file a
    link given as the input points to, a dataset's part reached by a link, or a partitioned
    run's folder of parts read as the input): the run wrote its result over the input and
    reported success, the edge list lost. Now it is refused before reading."""
    edges = pa.table({"src": pa.array([0, 1, 2, 0], pa.int64()), "dst": pa.array([1, 2, 0, 2], pa.int64()),
                      "weight": [1.0, 2.0, 3.0, 0.5]})
    out = tmp_path / "out"
    out.mkdir()
    if layout == "input-is-a-result-folder":
        (out / result).mkdir()
        lost = out / result / "part-00000.parquet"
    else:
        lost = out / result
    pq.write_table(edges, lost)
    given = {"same-file": out / result, "input-is-a-result-folder": out / result,
             "input-is-a-link-to-the-result": tmp_path / "edges.parquet", "dataset-part-linked-to-the-result": tmp_path / "data"}[layout]
    if layout == "input-is-a-link-to-the-result":
        given.symlink_to(out / result)
        lost = given  # named as the user gave it
    if layout == "dataset-part-linked-to-the-result":
        given.mkdir()
        pq.write_table(edges, given / "part-0.parquet")
        (given / "part-1.parquet").symlink_to(out / result)
        lost = given / "part-1.parquet"
    before = contents(tmp_path)
    code, text, err = run(main, [given, *argv, "--output", out], capsys)
    assert code == 1 and text == ""
    assert error_line(err) == \
        f"error: {out / result}: the result would replace the input file {lost}; write the results elsewhere"
    assert contents(tmp_path) == before


@pytest.mark.parametrize("main", [bfs_cli.main, pipeline_cli.main], ids=["bfs", "pipeline"])
def test_an_input_at_an_earlier_search_result_path_is_not_removed_as_one(tmp_path, capsys, main):
    """An edge list at OUTPUT/bfs_distances.parquet, searched with source sets into OUTPUT: the
    run wrote OUTPUT/source-set-0/ and then deleted its own input as an earlier run's single
    search. Only files whose footer names them a result are removed now."""
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "weight": [1.0, 2.0]}), out / "bfs_distances.parquet")
    before = (out / "bfs_distances.parquet").read_bytes()
    code, _, err = run(main, [out / "bfs_distances.parquet", "--source-set", "0", "--output", out], capsys)
    assert code == 0, err
    assert (out / "bfs_distances.parquet").read_bytes() == before
    assert_distances(out / "source-set-0" / "bfs_distances.parquet", [0, 1], [1, 2], [0])


def test_a_link_at_the_result_path_to_the_input_is_replaced_not_followed(tmp_path, capsys):
    """The other way round is fine: a link at the result's path is replaced by the result, and
    the input it pointed to is left as it was."""
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "weight": [1.0, 2.0]}), tmp_path / "g.parquet")
    before = (tmp_path / "g.parquet").read_bytes()
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "mst_edges.parquet").symlink_to(tmp_path / "g.parquet")
    code, _, err = run(mst_cli.main, [tmp_path / "g.parquet", "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    assert not (tmp_path / "o" / "mst_edges.parquet").is_symlink()
    assert (tmp_path / "g.parquet").read_bytes() == before


def test_distance_rows_come_in_the_documented_order(tmp_path, capsys):
    """The distance rows hold every vertex once: integer ids in ascending order, string ids in
    the order they first appear (down the `src` column, then down `dst`). A job that joins the distances to
    another table by position relies on it; flows/bfs.py said "ascending vertex order" of
    string ids too, which they never were."""
    pq.write_table(pa.table({"src": pa.array([7, -3, 2**40], pa.int64()), "dst": pa.array([0, 7, -9], pa.int64())}),
                   tmp_path / "ints.parquet")
    code, _, err = run(bfs_cli.main, [tmp_path / "ints.parquet", "--source", "7", "--output", tmp_path / "i"], capsys)
    assert code == 0, err
    assert pq.read_table(tmp_path / "i" / "bfs_distances.parquet")["vertex"].to_pylist() == [-9, -3, 0, 7, 2**40]
    data = tmp_path / "names"
    data.mkdir()
    dictionary = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()), pa.array(["q", "p"]))
    pq.write_table(pa.table({"src": dictionary, "dst": pa.array(["z", "p", "y"]).dictionary_encode()}),
                   data / "a.parquet")
    pq.write_table(pa.table({"src": ["m", "q"], "dst": ["b", "a"]}), data / "b.parquet")
    code, _, err = run(bfs_cli.main, [data, "--source", "p", "--output", tmp_path / "s"], capsys)
    assert code == 0, err
    assert pq.read_table(tmp_path / "s" / "bfs_distances.parquet")["vertex"].to_pylist() == list("pqmzyba")


def test_an_mst_run_after_a_pipeline_run_leaves_its_distances(tmp_path, capsys):
    """A run replaces only what it computes: `mst_edges.parquet` stays when a BFS-only run
    follows a pipeline run, the BFS results stay when an `mst` run follows."""
    graph, out = write_seed(tmp_path / "g.parquet"), tmp_path / "out"
    code, _, err = run(pipeline_cli.main, [graph, "--source", "0", "--output", out], capsys)
    assert code == 0, err
    distances = pq.read_table(out / "bfs_distances.parquet")
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "weight": [5.0, 6.0]}), tmp_path / "other.parquet")
    code, _, err = run(mst_cli.main, [tmp_path / "other.parquet", "--output", out], capsys)
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["bfs_distances.parquet", "mst_edges.parquet"]
    assert pq.read_table(out / "bfs_distances.parquet").equals(distances)
    assert pq.read_table(out / "mst_edges.parquet")["weight"].to_pylist() == [5.0, 6.0]
