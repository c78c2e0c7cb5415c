"""Inputs found wanting by a third search for wrong answers, each pinned by a named case."""
import os
import socket
import subprocess
from collections import deque
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli

pytestmark = pytest.mark.usefixtures("prefect_server")

EDGES = pa.table({"src": pa.array([0, 1, 2, 3, 0], pa.int64()), "dst": pa.array([1, 2, 3, 0, 2], pa.int64()),
                  "weight": pa.array([1.0, 1.0, 2.0, 1.0, 0.5])})


def run(main, argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def listing(path: Path) -> list[Path]:
    return sorted(p.relative_to(path) for p in path.rglob("*"))


@pytest.mark.parametrize("partitions", [None, ("--partitions", "2", "--output-layout", "file"),
                                        ("--partitions", "2", "--output-layout", "dataset")],
                         ids=["one-partition", "partitioned-file", "partitioned-dataset"])
def test_a_result_written_inside_a_dataset_is_not_read_back_as_edges(tmp_path, capsys, monkeypatch, partitions):
    """A run on one file of a dataset writes its forest into a folder of the dataset (the default
    output/ when the dataset folder is the current directory). A later run on the whole dataset
    read the forest's rows as more edges, silently: the forest has the columns of an edge list."""
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(EDGES, data / "part-0.parquet")
    if partitions:
        monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")
        partitions = [*partitions, "--runner", "dask", "--backend", "numpy"]
    code, _, err = run(mst_cli.main, [data / "part-0.parquet", "--output", data / "results", *(partitions or [])], capsys)
    assert code == 0, err
    result = data / "results" / "mst_edges.parquet"
    first = sorted(result.rglob("*.parquet"))[0] if result.is_dir() else result
    before = listing(tmp_path)
    code, out, err = run(mst_cli.main, [data, "--output", tmp_path / "out"], capsys)
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert lines == [f"error: {first}: is the mst_edges.parquet result of an earlier run, but {data / 'part-0.parquet'} "
                     f"is an edge list of the same input {data}; move the result out of it, or start its name or "
                     "folder with _ to skip it"]
    assert listing(tmp_path) == before


def test_a_forest_given_as_the_input_is_an_edge_list(tmp_path, capsys):
    """Results alone (a forest file, or the folder holding only it) are read as edges: a search
    over the spanning forest is a use, not a mistake."""
    pq.write_table(EDGES, tmp_path / "g.parquet")
    assert run(mst_cli.main, [tmp_path / "g.parquet", "--output", tmp_path / "o"], capsys)[0] == 0
    forest = pq.read_table(tmp_path / "o" / "mst_edges.parquet")
    assert forest.num_rows == 3
    for given in (tmp_path / "o" / "mst_edges.parquet", tmp_path / "o"):
        code, _, err = run(bfs_cli.main, [given, "--source", "3", "--output", tmp_path / "b"], capsys)
        assert code == 0, err
        adjacent = {}
        for u, v in zip(forest["src"].to_pylist(), forest["dst"].to_pylist()):
            adjacent.setdefault(u, []).append(v)
            adjacent.setdefault(v, []).append(u)
        expected, queue = {3: 0}, deque([3])
        while queue:
            u = queue.popleft()
            for v in adjacent[u]:
                if v not in expected:
                    expected[v] = expected[u] + 1
                    queue.append(v)
        got = pq.read_table(tmp_path / "b" / "bfs_distances.parquet")
        assert dict(zip(got["vertex"].to_pylist(), got["distance"].to_pylist())) == expected


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
    assert err.strip().splitlines() == [
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


def contents(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in path.rglob("*")}


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
    assert err.strip().splitlines() == [f"error: {out / 'source-set-1'}: output directory is not writable"]
    assert contents(tmp_path) == before


def test_publish_puts_back_the_results_it_moved_when_a_later_move_fails(tmp_path):
    """A move that fails once others are done (here: a result missing from staging) undoes them."""
    from tasks.errors import OutputError
    from tasks.parquet.publish import publish

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
    from tasks.parquet.write import write_many
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
