"""README.md's promises, checked against what the commands and flows do on the CPU: the settings
read from the environment, table formats and unfinished writes below a dataset's top folder,
the runner `auto` picks, when the task runner is chosen, what a partitioned run's page shows,
the order of the distance rows, and what a run into a folder that holds another flow's results
leaves there. Each test quotes the sentence it holds to."""
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from flows.mst import mst_flow
from flows.runners import edge_count, resolve_auto
from tests.conftest import ROOT, SEED_EDGES

pytestmark = pytest.mark.usefixtures("prefect_server")


def run(main, argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def seed(path: Path) -> Path:
    src, dst, weight = zip(*SEED_EDGES)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"src": list(src), "dst": list(dst), "weight": [float(w) for w in weight]}), path)
    return path


def artifacts_of(flow_run_id) -> list[dict]:
    request = urllib.request.Request(
        f"{os.environ['PREFECT_API_URL']}/artifacts/filter", method="POST",
        data=json.dumps({"artifacts": {"flow_run_id": {"any_": [str(flow_run_id)]}}}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return sorted(json.loads(response.read()), key=lambda a: a["created"])


# Settings from the environment


@pytest.mark.parametrize("name, value", [
    ("GRAPH_BACKEND", "gpu"),
    ("GRAPH_DASK_MIN_EDGES", "10M"),
    ("GRAPH_DASK_WORKERS", "two"),
    ("GRAPH_DASK_WORKERS", "0"),
    ("GRAPH_PROGRESS_MIN_EDGES", "1e6"),
    ("GRAPH_FLOW_TIMEOUT_SECONDS", "6h"),
    ("GRAPH_FLOW_TIMEOUT_SECONDS", "0"),
    ("GRAPH_COMM_TIMEOUT", "15m"),
], ids=["backend", "dask-min-edges", "dask-workers", "no-dask-workers", "progress-min-edges", "flow-timeout",
        "zero-flow-timeout", "comm-timeout"])
def test_a_bad_setting_in_the_environment_is_one_line_naming_it(tmp_path, capsys, monkeypatch, name, value):
    """README: "On any failure, a wrong argument included, one line `error: ...` on stderr and
    exit 1", and every bad argument "gets one line naming the ... argument". The GRAPH_*
    variables are the arguments' defaults (`--backend`, else `$GRAPH_BACKEND`; "`GRAPH_DASK_MIN_EDGES`
    moves the threshold"; "`GRAPH_PROGRESS_MIN_EDGES` changes that"). A value that is not a
    number gave `error: invalid literal for int() with base 10: '10M'`, naming no variable, or
    (GRAPH_DASK_WORKERS, GRAPH_COMM_TIMEOUT) passed unchecked until a Dask run read it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(name, value)
    code, out, err = run(mst_cli.main, [seed(tmp_path / "g.parquet"), "--output", tmp_path / "out"], capsys)
    assert code == 1 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {name}={value}: "), err
    assert not (tmp_path / "out").exists()


def test_a_bad_setting_fails_a_run_from_python_naming_it_and_an_empty_one_is_the_default(tmp_path, monkeypatch):
    """README: "`GRAPH_PROGRESS_MIN_EDGES` changes that" (the size from which progress bars are
    published). A run from Python or a deployment reads the variable in its task: a value that
    is not a number failed the run with `invalid literal for int()`; set but empty (`VAR=` in
    a job's environment) it failed too, while every other GRAPH_* variable left empty means its
    default."""
    graph = seed(tmp_path / "g.parquet")
    monkeypatch.setenv("GRAPH_PROGRESS_MIN_EDGES", "1e6")
    state = mst_flow(str(graph), output=str(tmp_path / "out"), return_state=True)
    assert state.is_failed() and "GRAPH_PROGRESS_MIN_EDGES=1e6" in state.message, state.message
    assert not (tmp_path / "out").exists()
    monkeypatch.setenv("GRAPH_PROGRESS_MIN_EDGES", "")
    state = mst_flow(str(graph), output=str(tmp_path / "out"), return_state=True)
    assert state.is_completed(), state.message


# Input datasets


@pytest.mark.parametrize("marker, expected", [
    ({"_temporary/0/task_1/part-00001.parquet": True}, "_temporary: a Spark/Hadoop write that did not finish"),
    ({"_delta_log/00000000000000000000.json": False}, "is a Delta Lake table (_delta_log/)"),
    ({"metadata/v1.metadata.json": False}, "is an Apache Iceberg table (metadata/*.metadata.json)"),
], ids=["unfinished-spark-write", "delta-lake", "iceberg"])
def test_a_table_format_or_unfinished_write_below_the_dataset_is_refused(tmp_path, capsys, marker, expected):
    """README, refused with one line naming the path: "a Delta Lake (`_delta_log/`) or Iceberg
    (`metadata/*.metadata.json`) table, whose folders also hold files of older versions; a
    `_temporary/` folder without `_SUCCESS` beside it (a Spark/Hadoop write that did not
    finish)". Only the dataset's own folder was looked at: one day's folder of a dataset of
    daily Spark outputs (`edges/day=2/`, still being written), or a Delta table below the
    folder given, was read silently, older versions' files and half a write included."""
    data = tmp_path / "edges"
    seed(data / "day=1" / "part-00000.parquet")
    (data / "day=1" / "_SUCCESS").write_text("")
    table = data / "day=2"
    seed(table / "part-00000.parquet")
    for name, parquet in marker.items():
        if parquet:
            seed(table / name)
        else:
            (table / name).parent.mkdir(parents=True, exist_ok=True)
            (table / name).write_text("{}")
    code, out, err = run(mst_cli.main, [data, "--output", tmp_path / "out"], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"error: {table}") and expected in lines[0], err
    assert not (tmp_path / "out").exists()


# Where the tasks run


def test_auto_counts_the_edges_of_a_dataset_that_holds_other_files(tmp_path, monkeypatch):
    """README: "`--runner auto` (the default): threads below 16,000,000 input edges (read from
    the Parquet footers before the run), Dask above", and "Other files (a README, notes) are not
    Parquet, so not data: they are skipped". The count was pyarrow.dataset's, which fails on a
    README beside the parts: the count was then unknown and `auto` ran threads whatever the
    graph's size."""
    data = tmp_path / "data"
    for k in range(3):
        seed(data / f"part-{k}.parquet")
    (data / "README.md").write_text("nightly export of the edges\n")
    assert edge_count(str(data)) == 3 * len(SEED_EDGES)
    monkeypatch.setenv("GRAPH_DASK_MIN_EDGES", str(3 * len(SEED_EDGES)))
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "2")
    monkeypatch.setenv("GRAPH_BACKEND", "numpy")
    assert resolve_auto("auto", str(data)) == "dask"


def test_the_task_runner_is_chosen_when_a_run_starts(tmp_path, monkeypatch):
    """README: "the task runner is chosen when a run starts, never at import, so every flow
    imports on any machine", and "The default otherwise: `$GRAPH_TASK_RUNNER`". The flows took
    their default runner from the environment at import: a notebook that set
    GRAPH_TASK_RUNNER=dask after `import flows.pipeline` ran in threads, and a bad value made
    the import itself fail."""
    imported = subprocess.run([sys.executable, "-c", "import flows.mst, flows.bfs, flows.pipeline"], cwd=ROOT,
                              env={**os.environ, "GRAPH_TASK_RUNNER": "processes"}, capture_output=True, text=True,
                              timeout=120)
    assert imported.returncode == 0, imported.stderr
    monkeypatch.setenv("GRAPH_TASK_RUNNER", "processes")  # after the import: the run reads it
    state = mst_flow(str(seed(tmp_path / "g.parquet")), output=str(tmp_path / "out"), return_state=True)
    assert state.is_failed() and "GRAPH_TASK_RUNNER=processes" in state.message, state.message
    assert not (tmp_path / "out").exists()


# Outputs


def test_distance_rows_come_in_the_documented_order(tmp_path, capsys):
    """README: "every vertex once, integer ids in ascending order, string ids in the order they
    first appear (down the `src` column, then down `dst`)". A job that joins the distances to
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


# What a run shows in the Prefect UI


def levels_table(markdown: str) -> list[tuple[str, int]]:
    """(levels, frontier) of each row of a bfs-levels table."""
    rows = [line.split("|")[1:-1] for line in markdown.splitlines() if line.startswith("| ") and "---" not in line]
    return [(cells[0].strip(), int(cells[2].strip().replace(",", ""))) for cells in rows[1:]]


def test_a_partitioned_run_publishes_each_searchs_levels(tmp_path, monkeypatch):
    """README: "Then, per task: `bfs-levels` (level, direction, frontier size and seconds per
    level ...)", "With `--source-set`, BFS keys end in the set's number", and the log has "one
    line per stage with its counts and seconds, e.g. `BFS source set 0: 6 levels: ...`". A
    partitioned run published only its summary and validation reports: its searches' levels,
    which every rank records, reached neither the page nor the log."""
    from flows.pipeline import pipeline_flow

    monkeypatch.setenv("GRAPH_BACKEND", "numpy")
    graph = str(seed(tmp_path / "g.parquet"))
    sets = [["0"], ["5", "1"]]
    tables = {}
    for partitions in (1, 2):
        state = pipeline_flow(graph, source_sets=sets, output=str(tmp_path / f"out{partitions}"),
                              partitions=partitions, return_state=True)
        assert state.is_completed(), state.message
        found = {a["key"]: a["data"] for a in artifacts_of(state.state_details.flow_run_id)}
        tables[partitions] = {k: levels_table(found[f"bfs-levels-source-set-{k}"]) for k in range(len(sets))}
    # the frontier of each level is the same set of vertices however the graph is split
    assert tables[2] == tables[1] and all(tables[1].values()), tables


def test_an_mst_run_after_a_pipeline_run_leaves_its_distances(tmp_path, capsys):
    """README: "A run replaces only what it computes: `mst_edges.parquet` stays when a BFS-only
    run follows a pipeline run, the BFS results stay when an `mst` run follows"."""
    graph, out = seed(tmp_path / "g.parquet"), tmp_path / "out"
    code, _, err = run(pipeline_cli.main, [graph, "--source", "0", "--output", out], capsys)
    assert code == 0, err
    distances = pq.read_table(out / "bfs_distances.parquet")
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "weight": [5.0, 6.0]}), tmp_path / "other.parquet")
    code, _, err = run(mst_cli.main, [tmp_path / "other.parquet", "--output", out], capsys)
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["bfs_distances.parquet", "mst_edges.parquet"]
    assert pq.read_table(out / "bfs_distances.parquet").equals(distances)
    assert pq.read_table(out / "mst_edges.parquet")["weight"].to_pylist() == [5.0, 6.0]
