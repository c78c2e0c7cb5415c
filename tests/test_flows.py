"""Flows and the command line, end to end on real Parquet files under a real Prefect server."""
import logging
import math
import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from flows.mst import mst_flow
from flows.pipeline import pipeline_flow
from kernels import backend as be
from kernels.backend import resolve
from tests.conftest import ROOT, realgraphs_dir
from tests.helpers import artifacts_of, child_pythonpath, forest_less_one_edge, random_edges, run, table_rows, write_edges, write_seed
from tests.references import assert_distances, assert_forest, scipy_bfs_distances, scipy_msf_weight

pytestmark = pytest.mark.usefixtures("prefect_server")


def test_mst_cli_on_seed_graph(tmp_path, capsys):
    code, out, err = run(mst_cli.main, [str(write_seed(tmp_path / "seed.parquet")), "--output", str(tmp_path / "out")], capsys)
    assert code == 0, err
    t = pq.read_table(tmp_path / "out" / "mst_edges.parquet")
    assert t.column_names == ["src", "dst", "weight"]
    assert sorted(tuple(sorted(p)) for p in zip(t["src"].to_pylist(), t["dst"].to_pylist())) == [
        (0, 2), (1, 2), (1, 3), (3, 4), (4, 5)]
    assert sum(t["weight"].to_pylist()) == 13
    assert f"wrote {tmp_path / 'out' / 'mst_edges.parquet'}" in out


def test_bfs_cli_on_seed_graph(tmp_path, capsys):
    code, _, err = run(bfs_cli.main, [str(write_seed(tmp_path / "seed.parquet")), "--source", "0", "--output", str(tmp_path / "o")], capsys)
    assert code == 0, err
    t = pq.read_table(tmp_path / "o" / "bfs_distances.parquet")
    assert t.column_names == ["vertex", "distance", "predecessor"]
    assert t["vertex"].to_pylist() == [0, 1, 2, 3, 4, 5]
    assert t["distance"].to_pylist() == [0, 1, 1, 2, 2, 3]
    assert t["predecessor"].to_pylist()[0] is None


def test_default_output_is_output_slash_stem(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(mst_cli.main, [str(write_seed(tmp_path / "my_graph.parquet"))], capsys)
    assert code == 0, err
    assert (tmp_path / "output" / "my_graph" / "mst_edges.parquet").exists()


def test_an_empty_output_path_is_refused_not_taken_for_the_default(tmp_path, capsys, monkeypatch):
    """`--output "$DIR"` with DIR unset: the command and the flow both refuse it, writing nothing."""
    monkeypatch.chdir(tmp_path)
    graph = str(write_seed(tmp_path / "g.parquet"))
    code, _, err = run(mst_cli.main, [graph, "--output", ""], capsys)
    assert code == 1 and "argument --output: an empty path" in err, err
    state = mst_flow(graph, output="", return_state=True)
    assert state.is_failed() and "output: an empty path" in state.message, state.message
    assert not (tmp_path / "output").exists()


def test_a_rerun_leaves_no_bfs_result_of_an_earlier_run_beside_its_own(tmp_path, capsys):
    """Three source sets, then a single search, then two sets, into one folder: each time only
    this run's BFS results are there, so a job reading OUTPUT/source-set-* never mixes runs. The
    forest of a pipeline run and a file of the user's own in a set folder stay."""
    graph, out = str(write_seed(tmp_path / "seed.parquet")), tmp_path / "out"

    def results():
        return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())

    code, _, err = run(pipeline_cli.main, [graph, "--source-set", "0", "--source-set", "1,2", "--source-set", "5",
                                           "--output", str(out)], capsys)
    assert code == 0, err
    (out / "source-set-2" / "notes.txt").write_text("mine")
    assert results() == ["mst_edges.parquet", "source-set-0/bfs_distances.parquet",
                         "source-set-1/bfs_distances.parquet", "source-set-2/bfs_distances.parquet",
                         "source-set-2/notes.txt"]
    code, _, err = run(bfs_cli.main, [graph, "--source", "3", "--output", str(out)], capsys)
    assert code == 0, err
    assert results() == ["bfs_distances.parquet", "mst_edges.parquet", "source-set-2/notes.txt"]
    assert not (out / "source-set-0").exists() and not (out / "source-set-1").exists()
    code, _, err = run(bfs_cli.main, [graph, "--source-set", "4", "--source-set", "0,5", "--output", str(out)], capsys)
    assert code == 0, err
    assert results() == ["mst_edges.parquet", "source-set-0/bfs_distances.parquet",
                         "source-set-1/bfs_distances.parquet", "source-set-2/notes.txt"]
    distances = pq.read_table(out / "source-set-1" / "bfs_distances.parquet")
    assert dict(zip(distances["vertex"].to_pylist(), distances["distance"].to_pylist()))[0] == 0


@pytest.mark.parametrize("name", ["bitcoinalpha", "email_eu_core"])
def test_pipeline_cli_on_real_graph_matches_scipy(tmp_path, capsys, name):
    path = str(realgraphs_dir() / f"{name}.parquet")
    code, _, err = run(pipeline_cli.main, [path, "--source", "1", "--source", "7", "--output", str(tmp_path)], capsys)
    assert code == 0, err
    t = pq.read_table(path)
    s, d, w = (t[c].to_numpy() for c in ("src", "dst", "weight"))
    ids = np.unique(np.concatenate([s, d]))
    si, di = np.searchsorted(ids, s), np.searchsorted(ids, d)
    dist = pq.read_table(tmp_path / "bfs_distances.parquet")
    assert dist["vertex"].to_pylist() == ids.tolist()
    expected = scipy_bfs_distances(ids.size, si, di, np.searchsorted(ids, [1, 7]))
    got = np.array([-1 if x is None else x for x in dist["distance"].to_pylist()])
    assert np.array_equal(got, expected)
    forest = pq.read_table(tmp_path / "mst_edges.parquet")
    total, count = scipy_msf_weight(ids.size, si, di, w)
    assert forest.num_rows == count
    assert sum(forest["weight"].to_pylist()) == pytest.approx(total)
    # id columns are written without a dictionary (one distinct value per row: the dictionary
    # would only be built and dropped); distances and weights keep theirs
    for result, plain, coded in (("bfs_distances", ("vertex", "predecessor"), ("distance",)),
                                 ("mst_edges", ("src", "dst"), ("weight",))):
        group = pq.ParquetFile(tmp_path / f"{result}.parquet").metadata.row_group(0)
        encodings = {group.column(k).path_in_schema: group.column(k).encodings for k in range(group.num_columns)}
        assert all("RLE_DICTIONARY" not in encodings[c] for c in plain), encodings
        assert all("RLE_DICTIONARY" in encodings[c] for c in coded), encodings


def test_directed_depth_limited_bfs_and_unreached_nulls(tmp_path, capsys):
    path = str(write_edges(tmp_path / "g.parquet", src=pa.array([0, 1, 2, 9]), dst=pa.array([1, 2, 3, 0])))
    code, _, err = run(bfs_cli.main, [path, "--source", "0", "--directed", "--depth-limit", "2",
                                      "--output", str(tmp_path / "o")], capsys)
    assert code == 0, err
    t = pq.read_table(tmp_path / "o" / "bfs_distances.parquet")
    assert t["vertex"].to_pylist() == [0, 1, 2, 3, 9]
    assert t["distance"].to_pylist() == [0, 1, 2, None, None]
    assert t["predecessor"].to_pylist() == [None, 0, 1, None, None]


def test_string_ids_round_trip(tmp_path, capsys):
    path = str(write_edges(tmp_path / "s.parquet", src=pa.array(["paris", "lyon", "nice", "lyon"]),
                               dst=pa.array(["lyon", "nice", "paris", "lille"]), weight=pa.array([3.0, 1.0, 2.0, 5.0])))
    code, _, err = run(pipeline_cli.main, [path, "--source", "paris", "--output", str(tmp_path / "o")], capsys)
    assert code == 0, err
    dist = pq.read_table(tmp_path / "o" / "bfs_distances.parquet").to_pylist()
    assert {r["vertex"]: (r["distance"], r["predecessor"]) for r in dist} == {
        "paris": (0, None), "lyon": (1, "paris"), "nice": (1, "paris"), "lille": (2, "lyon")}
    forest = pq.read_table(tmp_path / "o" / "mst_edges.parquet").to_pylist()
    assert sorted((r["src"], r["dst"], r["weight"]) for r in forest) == [
        ("lyon", "lille", 5.0), ("lyon", "nice", 1.0), ("nice", "paris", 2.0)]


def test_huge_and_negative_integer_ids_round_trip(tmp_path, capsys):
    big, small = 2**63 - 1, -(2**63)
    path = str(write_edges(tmp_path / "h.parquet", src=pa.array([big, small, -5], pa.int64()),
                               dst=pa.array([small, -5, 7], pa.int64()), weight=pa.array([1.0, 2.0, 3.0])))
    code, _, err = run(bfs_cli.main, [path, "--source", str(big), "--output", str(tmp_path / "o")], capsys)
    assert code == 0, err
    rows = pq.read_table(tmp_path / "o" / "bfs_distances.parquet").to_pylist()
    assert rows == [{"vertex": small, "distance": 1, "predecessor": big},
                    {"vertex": -5, "distance": 2, "predecessor": small},
                    {"vertex": 7, "distance": 3, "predecessor": -5},
                    {"vertex": big, "distance": 0, "predecessor": None}]


def test_flow_returns_summary_and_completes(tmp_path):
    state = mst_flow(str(write_seed(tmp_path / "seed.parquet")), output=str(tmp_path / "o"), return_state=True)
    assert state.is_completed()
    summary = state.result()
    assert summary["forest_edges"] == 5 and summary["components"] == 1 and summary["backend"] == resolve(None)


def test_failed_validation_publishes_nothing_and_keeps_previous_outputs(tmp_path, monkeypatch):
    out = tmp_path / "o"
    assert mst_flow(str(write_seed(tmp_path / "seed.parquet")), output=str(out))["forest_edges"] == 5
    before = (out / "mst_edges.parquet").read_bytes()
    import tasks.graph_tasks as gt

    monkeypatch.setattr(gt, "minimum_spanning_forest", forest_less_one_edge)
    state = mst_flow(str(write_seed(tmp_path / "seed.parquet")), output=str(out), return_state=True)
    assert state.is_failed()
    assert "failed validation" in state.message or "failed validation" in str(state.result(raise_on_failure=False))
    assert (out / "mst_edges.parquet").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["mst_edges.parquet"]


def test_cli_process_exit_codes_and_one_line_errors(tmp_path):
    """The real `python -m flows.mst` process: exit 0 and a wrote line; exit 1 and exactly one
    stderr line for a missing file, with nothing created."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()}
    ok = subprocess.run([sys.executable, "-m", "flows.mst", str(write_seed(tmp_path / "seed.parquet")), "--output", str(tmp_path / "o")],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "wrote" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "flows.mst", str(tmp_path / "missing.parquet"), "--output",
                          str(tmp_path / "o2")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [f"error: {tmp_path / 'missing.parquet'}: input not found"]
    assert not (tmp_path / "o2").exists()


def test_flow_called_from_a_script_without_main_guard_completes(tmp_path):
    """A plain script calls a flow at module level, with no server configured: Prefect starts
    one temporary server, the run completes once, and nothing re-runs the script."""
    script = tmp_path / "nightly.py"
    script.write_text("from flows.mst import mst_flow\n"
                      f"summary = mst_flow({str(ROOT / 'data' / 'graph.parquet')!r}, output={str(tmp_path / 'out')!r})\n"
                      "print('forest weight', summary['forest_weight'])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPH_"))}
    env.update(PREFECT_HOME=str(tmp_path / "home"), PYTHONPATH=child_pythonpath(), PREFECT_LOGGING_LEVEL="INFO")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["forest weight 13.0"]
    assert done.stderr.count("Starting temporary server") == 1, done.stderr
    assert "Traceback" not in done.stderr
    import sqlite3

    with sqlite3.connect(tmp_path / "home" / "prefect.db") as db:
        runs = db.execute("SELECT name, state_type FROM flow_run").fetchall()
    assert runs == [("mst-graph", "COMPLETED")]
    assert pq.read_table(tmp_path / "out" / "mst_edges.parquet").num_rows == 5


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_output_files_are_as_readable_as_the_umask_says(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        mst_flow(str(write_seed(tmp_path / "seed.parquet")), output=str(tmp_path / "o"))
    finally:
        os.umask(previous)
    assert (tmp_path / "o" / "mst_edges.parquet").stat().st_mode & 0o777 == mode


# Partitioned runs through the flows: the same results as one partition (distances compared
# with the rows sorted by vertex, since a partitioned file lists each partition's vertices in
# turn; predecessors checked by Graph500's rules, since any valid parent is correct), the same
# summary, and a killed rank failing the run cleanly.

def assert_partitioned_results_match(one: Path, many: Path, graph: Path, source_sets: list[list[int]], directed: bool):
    from tests.test_partitioned import check_bfs_output, one_partition, read_columns

    src, dst, weight = read_columns(graph)
    expected = pq.read_table(one / "mst_edges.parquet")
    assert pq.read_table(many / "mst_edges.parquet").equals(expected)  # input row order in both
    for k, sources in enumerate(source_sets):
        where = f"source-set-{k}/" if len(source_sets) > 1 else ""
        by_vertex = [pq.read_table(d / where / "bfs_distances.parquet").sort_by("vertex") for d in (one, many)]
        assert by_vertex[1].select(["vertex", "distance"]).equals(by_vertex[0].select(["vertex", "distance"]))
        ids, dense, search, _, s, d = one_partition(src, dst, weight, sources, directed)
        check_bfs_output(many / where / "bfs_distances.parquet", ids, dense, search, s, d, directed)


def summary_line(out: str) -> str:
    """The CLI's summary line without its timing."""
    return out.splitlines()[0].rsplit(" (", 1)[0]


def test_two_partitions_on_dask_give_the_one_partition_results(tmp_path, capsys, monkeypatch):
    graph = realgraphs_dir() / "rome99.parquet"
    sets = [[1], [7, 3000]]
    argv = [str(graph), "--directed", *(a for s in sets for a in ("--source-set", ",".join(map(str, s))))]
    code, one_out, err = run(pipeline_cli.main, [*argv, "--output", str(tmp_path / "one")], capsys)
    assert code == 0, err
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")  # --partitions 2 asks for two CPU workers
    code, out, err = run(pipeline_cli.main, [*argv, "--partitions", "2", "--runner", "dask", "--backend", "numpy",
                                             "--output-layout", "dataset", "--output", str(tmp_path / "two")], capsys)
    assert code == 0, err
    assert summary_line(out) == summary_line(one_out)
    assert [line for line in out.splitlines() if line.startswith("wrote")] == [
        f"wrote {tmp_path / 'two' / f'source-set-{k}' / 'bfs_distances.parquet'}" for k in range(2)] + [
        f"wrote {tmp_path / 'two' / 'mst_edges.parquet'}"]
    assert sorted(p.name for p in (tmp_path / "two" / "mst_edges.parquet").iterdir()) == [
        "part-00000.parquet", "part-00001.parquet"]
    assert_partitioned_results_match(tmp_path / "one", tmp_path / "two", graph, sets, directed=True)
    assert not [p for p in (tmp_path / "two").rglob(".*")]  # no staging or temporary file left


def test_three_partitions_on_a_real_graph_give_the_one_partition_results(tmp_path, capsys, monkeypatch):
    graph = realgraphs_dir() / "bitcoinalpha.parquet"  # negative weights, heavy ties, 5 components
    argv = [str(graph), "--source", "1", "--source", "7"]
    code, one_out, err = run(pipeline_cli.main, [*argv, "--output", str(tmp_path / "one")], capsys)
    assert code == 0, err
    monkeypatch.setenv("GRAPH_PARTITIONS", "3")
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")
    monkeypatch.setenv("GRAPH_BACKEND", "numpy")  # three CPU ranks, also where two GPUs would be found
    code, out, err = run(pipeline_cli.main, [*argv, "--output", str(tmp_path / "three")], capsys)
    assert code == 0, err
    assert summary_line(out) == summary_line(one_out)
    assert (tmp_path / "three" / "mst_edges.parquet").is_file()
    assert_partitioned_results_match(tmp_path / "one", tmp_path / "three", graph, [[1, 7]], directed=False)


def test_auto_partitions_on_the_cpu_run_the_one_partition_recipe(tmp_path):
    graph = str(realgraphs_dir() / "netscience.parquet")
    auto = pipeline_flow(graph, source=["0"], output=str(tmp_path / "auto"), partitions="auto", output_layout="dataset")
    one = pipeline_flow(graph, source=["0"], output=str(tmp_path / "one"))
    assert "partitions" not in auto and auto["forest_edges"] == one["forest_edges"]
    for name in ("bfs_distances.parquet", "mst_edges.parquet"):
        assert (tmp_path / "auto" / name).is_file()  # one file each: the layout concerns partitioned runs
        assert pq.read_table(tmp_path / "auto" / name).equals(pq.read_table(tmp_path / "one" / name))


@pytest.mark.parametrize("params, named", [({"partitions": 0}, "partitions"), ({"partitions": "all"}, "partitions"),
                                           ({"output_layout": "parts"}, "output_layout")])
def test_partition_parameters_are_checked_before_anything_runs(tmp_path, params, named):
    state = mst_flow(str(write_seed(tmp_path / "seed.parquet")), output=str(tmp_path / "o"), return_state=True, **params)
    assert state.is_failed() and "invalid parameters" in state.message and named in state.message, state.message
    assert not (tmp_path / "o").exists()


def artifacts_by_key(state) -> dict:
    return {a["key"]: a for a in artifacts_of(state.state_details.flow_run_id) if a["key"]}


def test_partitioned_flow_artifacts_layouts_and_a_killed_rank(tmp_path):
    """On a running cluster of two workers: a run's summary and validation artifacts, a rerun
    in the other layout replacing each result whole, and a run whose rank is killed failing
    with one line, its summary artifact saying so, nothing written."""
    from distributed import Client, LocalCluster

    from flows.runners import task_runner
    from tests.test_partitioned import KillRankAt

    graph = str(realgraphs_dir() / "netscience.parquet")
    out = tmp_path / "out"
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address="127.0.0.1:0",
                      env={"GRAPH_BACKEND": "numpy"}) as cluster, Client(cluster) as client:
        flow = pipeline_flow.with_options(task_runner=task_runner(address=cluster.scheduler_address))
        state = flow(graph, source=["0"], output=str(out), partitions=2, output_layout="dataset", return_state=True)
        assert state.is_completed(), state.message
        summary = state.result()
        assert summary["partitions"] == 2 and summary["layout"] == "dataset" and summary["validation"] == "passed"
        artifacts = artifacts_by_key(state)
        assert {"pipeline-summary", "bfs-validation", "msf-validation"} <= set(artifacts)
        rows = dict(table_rows(artifacts["pipeline-summary"]))
        assert rows["validation"] == "passed" and rows["backend"].endswith(", 2 partitions")
        assert rows["forest"].startswith(f"{summary['forest_edges']:,} edges, total weight ")
        assert "| pass |" in artifacts["msf-validation"]["data"] and "FAIL" not in artifacts["msf-validation"]["data"]
        dataset = pq.read_table(out / "mst_edges.parquet")
        assert (out / "mst_edges.parquet").is_dir()

        state = flow(graph, source=["0"], output=str(out), partitions=2, return_state=True)
        assert state.is_completed(), state.message
        assert (out / "mst_edges.parquet").is_file() and pq.read_table(out / "mst_edges.parquet").equals(dataset)
        assert sorted(p.name for p in out.iterdir()) == ["bfs_distances.parquet", "mst_edges.parquet"]

        marker = tmp_path / "killed"
        client.register_plugin(KillRankAt(str(marker), r"rank \d+: csr \(", spare_driver=True), name="kill-rank")
        try:
            state = flow(graph, source=["0"], output=str(tmp_path / "killed-run"), partitions=2, return_state=True)
        finally:
            client.unregister_worker_plugin("kill-rank")
    assert marker.exists(), "no rank was killed: the test did not test anything"
    assert state.is_failed()
    assert "\n" not in state.message.strip() and "died; nothing was written" in state.message, state.message
    rows = dict(table_rows(artifacts_by_key(state)["pipeline-summary"]))
    assert rows["validation"] == "not reached" and "died; nothing was written" in rows["error"]
    assert not (tmp_path / "killed-run").exists()


def test_the_search_log_counts_every_vertex_reached(tmp_path, capsys, backend):
    """A GPU search runs several levels per launch and reports once per launch: the log's
    reached count comes from the distances (a path of 40 and a separate edge: 40 of 42)."""
    chain = np.arange(40)
    path = str(write_edges(tmp_path / "g.parquet", src=pa.array(np.append(chain[:-1], 100)), dst=pa.array(np.append(chain[1:], 101))))
    logger, messages = logging.getLogger("prefect.task_runs"), []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: messages.append(record.getMessage())
    level = logger.level
    logger.setLevel(logging.INFO)  # the tests' Prefect logs only warnings
    logger.addHandler(handler)
    try:
        code, _, err = run(bfs_cli.main, [path, "--source", "0", "--backend", backend, "--output", str(tmp_path / "o")], capsys)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert code == 0, err
    searches = [m for m in messages if ", reached " in m]
    assert len(searches) == 1 and re.search(r"reached 40 of 42 vertices in [0-9.]+ s$", searches[0]), searches


def test_source_set_ids_keep_their_spaces(tmp_path, capsys):
    """String ids " a" and "a" are different vertices: a set names each as written. An integer
    id written with a space is refused, naming it."""
    path = str(write_edges(tmp_path / "s.parquet", src=pa.array([" a", "a", "b"]), dst=pa.array(["b", "c", "d"])))
    code, _, err = run(bfs_cli.main, [path, "--source-set", " a", "--source-set", "a,d", "--output", str(tmp_path / "o")], capsys)
    assert code == 0, err
    first = pq.read_table(tmp_path / "o" / "source-set-0" / "bfs_distances.parquet").to_pylist()
    second = pq.read_table(tmp_path / "o" / "source-set-1" / "bfs_distances.parquet").to_pylist()
    assert {r["vertex"]: r["distance"] for r in first} == {" a": 0, "a": None, "b": 1, "c": None, "d": 2}
    assert {r["vertex"]: r["distance"] for r in second} == {" a": 2, "a": 0, "b": 1, "c": 1, "d": 0}
    ints = str(write_edges(tmp_path / "i.parquet", src=pa.array([1, 2]), dst=pa.array([2, 3])))
    code, out, err = run(bfs_cli.main, [ints, "--source-set", "1, 2", "--output", str(tmp_path / "p")], capsys)
    assert code == 1 and out == "" and "' 2'" in err, err
    assert not (tmp_path / "p").exists()


def test_a_reader_that_closes_its_end_early_does_not_fail_a_finished_run(tmp_path):
    """`python -m flows.bfs ... | head -1`: the results are written and the run Completed, so
    the command exits 0 although the rest of its lines found no reader."""
    path = str(write_edges(tmp_path / "g.parquet", src=pa.array([0, 1]), dst=pa.array([1, 2])))
    read, written = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "flows.bfs", path, "--source", "0", "--output", str(tmp_path / "o")],
                              stdout=written, stderr=subprocess.PIPE, text=True, timeout=300, cwd=ROOT)
    finally:
        os.close(written)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert pq.read_table(tmp_path / "o" / "bfs_distances.parquet")["distance"].to_pylist() == [0, 1, 2]


@pytest.mark.parametrize("weights, total", [([1e16, 1.0, 1.0, -1e16], "2"), ([1e16, *[1.0] * 7, -1e16], "7"),
                                            ([1.7e308, 1.7e308, -1e308], "≈2.3999999999999999e+308")],
                         ids=["large-weights-cancel", "seven-small-between-two-large", "partial-sums-beyond-float64"])
def test_the_forest_weight_reported_is_the_exact_sum_rounded(tmp_path, capsys, weights, total):
    """The forest of a path is the whole path: its reported weight is the sum of all its weights,
    which a float64 sum loses where large weights cancel or partial sums overflow."""
    n = len(weights)
    path = str(write_edges(tmp_path / "p.parquet", src=pa.array(range(n)), dst=pa.array(range(1, n + 1)), weight=pa.array(weights)))
    code, out, err = run(mst_cli.main, [path, "--output", str(tmp_path / "o")], capsys)
    assert code == 0, err
    assert f"forest of {n} edges, weight {total}, " in out, out


def test_the_summary_line_writes_a_large_weight_as_the_counts_beside_it(tmp_path, capsys):
    """'forest of 114,598 edges, weight 1.18639e+06': a weight of a million was printed in
    scientific notation beside counts with thousands separators, and then rounded to six digits
    (1,186,391); it has every digit of its sum now; and one of anything is singular."""
    path = write_edges(tmp_path / "p.parquet", [0, 1], [1, 2], [1_000_000.25, 186_390.5])
    code, out, err = run(mst_cli.main, [str(path), "--output", str(tmp_path / "o")], capsys)
    assert code == 0, err
    assert "forest of 2 edges, weight 1,186,390.75, 1 component;" in out, out


def _weights(kind: str) -> np.ndarray:
    rng = np.random.default_rng(5)
    if kind == "uniform":  # a Kron graph's weights, past several chunks of the host's sum
        return rng.random(5 * (1 << 16) + 3)
    if kind == "every-magnitude-and-sign":
        return rng.standard_normal(1 << 17) * 10.0 ** rng.integers(-300, 300, 1 << 17)
    if kind == "subnormals-and-cancelling":
        return np.array([5e-324, 2.5e-320, 1e300, 1.0, -1e300, -5e-324, 0.1, -0.0] * 1000)
    return np.array([1e-45, 3.4e38, 0.1, -3.4e38, 2e-40] * 1000, dtype=np.float32)  # float32 subnormals


@pytest.mark.parametrize("kind", ["uniform", "every-magnitude-and-sign", "subnormals-and-cancelling", "float32"])
def test_the_reported_forest_weight_is_the_exact_sum_rounded_once(kind, backend):
    """The forest's weight is the exact sum of its weights rounded once to float64 (math.fsum's
    answer, and Fraction's sum rounded), however the weights cancel or how small they are, on
    the GPU as on the host."""
    from tasks.forest_weight import reported_total

    weights = _weights(kind)
    as_float64 = [float(w) for w in weights.tolist()]

    total = reported_total(be.to_backend(weights, backend))

    assert total == math.fsum(as_float64) == float(sum(map(Fraction, as_float64)))


@pytest.mark.parametrize("src, dst, weight, sources, options", [
    ([5, 7, 9], [5, 7, 9], [1.0, 2.0, 3.0], [7], []),
    ([0, 0, 0, 1, 1], [1, 1, 1, 0, 0], [3.0, 1.0, 2.0, 0.5, 0.75], [0], []),
    ([0, 1, 2], [1, 2, 3], [1.0, 1.0, 1.0], [3], ["--directed"]),
    ([0, 1, 2], [1, 2, 3], [1.0, 1.0, 1.0], [1], ["--depth-limit", "0"]),
    ([0, 1, 2], [1, 2, 3], [1.0, 1.0, 1.0], [1, 1, 2, 1], ["--directed", "--depth-limit", "1"]),
], ids=["self-loops-only", "parallel-edges-the-lightest-wins", "source-only-a-destination-directed",
        "depth-limit-0", "duplicate-sources"])
def test_small_graphs_give_the_reference_results(tmp_path, capsys, src, dst, weight, sources, options):
    pq.write_table(pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight}),
                   tmp_path / "g.parquet")
    argv = [tmp_path / "g.parquet", *[a for s in sources for a in ("--source", s)], *options, "--output", tmp_path / "o"]
    code, _, err = run(pipeline_cli.main, argv, capsys)
    assert code == 0, err
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, weight)
    limit = int(options[options.index("--depth-limit") + 1]) if "--depth-limit" in options else None
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, sources, "--directed" in options, limit)


@pytest.mark.parametrize("directed, limit", [(False, None), (True, 1)])
def test_overlapping_source_sets_each_give_the_reference_distances(tmp_path, capsys, directed, limit):
    src, dst, weight = random_edges(seed=5, n=25, m=60)
    pq.write_table(pa.table({"src": src, "dst": dst}), tmp_path / "g.parquet")
    sets = [[src[0]], [src[0], src[0]], [src[1], src[0]], [dst[3]] * 5]
    argv = [tmp_path / "g.parquet", *[a for s in sets for a in ("--source-set", ",".join(map(str, s)))],
            *(["--directed"] if directed else []), *(["--depth-limit", limit] if limit is not None else []),
            "--output", tmp_path / "o"]
    code, _, err = run(bfs_cli.main, argv, capsys)
    assert code == 0, err
    for k, sources in enumerate(sets):
        assert_distances(tmp_path / "o" / f"source-set-{k}" / "bfs_distances.parquet", src, dst, sources, directed, limit)


def twins(weight_type):
    """Thirty parallel edges 0-1 of one weight, and a triangle of equal weights: rows decide."""
    src, dst = [0] * 30 + [1, 2, 3], [1] * 30 + [2, 3, 1]
    return src, dst, pa.array([2.0] * 30 + [2.0, 2.0, 2.0], weight_type)


WEIGHT_CASES = {
    "ties-across-thirty-parallel-edges-float64": lambda: twins(pa.float64()),
    "ties-across-thirty-parallel-edges-float32": lambda: twins(pa.float32()),
    "integer-weights-one-float64-step-apart-near-2-pow-60": lambda: (
        [0, 1, 0, 2, 3], [1, 2, 2, 3, 0], pa.array([2**60 + 256, 2**60, 2**60 + 512, 2**60 + 256, 2**60], pa.int64())),
    "integers-beyond-2-pow-53-with-zero-low-bits": lambda: (
        [0, 1, 0], [1, 2, 2], pa.array([2**62, 2**62 + 2**10, -(2**63)], pa.int64())),
    "float32-weights-one-ulp-apart": lambda: (
        [0, 1, 0], [1, 2, 2], pa.array(np.array([1.0, np.nextafter(np.float32(1), np.float32(2)), 1.0], np.float32))),
    "isolated-vertices-only-in-self-loops-and-many-components": lambda: (
        [0, 2, 4, 6, 8, 9, 9, 10], [1, 3, 5, 7, 8, 9, 10, 10], pa.array([1.0, -1.0, 0.0, -0.0, 5.0, 5.0, 3.0, 1.0])),
}


@pytest.mark.parametrize("case", WEIGHT_CASES, ids=list(WEIGHT_CASES))
def test_forests_and_summaries_agree_with_the_references_and_the_files(tmp_path, capsys, case):
    src, dst, weight = WEIGHT_CASES[case]()
    write_edges(tmp_path / "g.parquet", src, dst, weight)
    summary = pipeline_flow(str(tmp_path / "g.parquet"), source_sets=[[str(src[0])], [str(dst[-1]), str(src[1])]],
                            output=str(tmp_path / "o"))
    as_float = [float(w) for w in weight.to_pylist()]
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, as_float)
    forest = pq.read_table(tmp_path / "o" / "mst_edges.parquet")
    assert forest.schema.field("weight").type == (pa.float32() if weight.type == pa.float32() else pa.float64())
    vertices = len(set(src) | set(dst))
    assert summary["vertices"] == vertices and summary["edges"] == len(src)
    assert summary["self_loops"] == sum(a == b for a, b in zip(src, dst))
    assert summary["forest_edges"] == forest.num_rows and summary["components"] == vertices - forest.num_rows
    exact = sum(Fraction(w) for w in forest["weight"].to_pylist())
    assert summary["forest_weight"] == float(exact)
    searches = [pq.read_table(tmp_path / "o" / f"source-set-{k}" / "bfs_distances.parquet") for k in range(2)]
    assert summary["reached"] == [t.num_rows - t["distance"].null_count for t in searches]
    assert all(t.num_rows == vertices for t in searches)
    assert summary["outputs"] == [str(tmp_path / "o" / f"source-set-{k}" / "bfs_distances.parquet") for k in range(2)] + \
        [str(tmp_path / "o" / "mst_edges.parquet")]


def test_parameters_sent_as_json_text_give_the_typed_runs_results(tmp_path):
    """The UI sends what its form holds: numbers as text, booleans as text; the run equals the
    one given Python values."""
    src, dst = [0, 1, 2, 3, 4], [1, 2, 3, 4, 0]
    path = write_edges(tmp_path / "g.parquet", src, dst, [1.0] * 5)
    typed = pipeline_flow(str(path), source_sets=[["0"], ["3", "0"]], output=str(tmp_path / "a"), directed=True,
                          depth_limit=2, partitions=1)
    sent = pipeline_flow(**{"input": str(path), "source_sets": [["0"], ["3", "0"]], "output": str(tmp_path / "b"),
                            "directed": "true", "depth_limit": "2", "partitions": "1"})
    timing = ("outputs", "gteps", "edges_per_second")
    assert {k: v for k, v in typed.items() if not k.endswith("seconds") and k not in timing} == \
        {k: v for k, v in sent.items() if not k.endswith("seconds") and k not in timing}
    for k, sources in enumerate([[0], [3, 0]]):
        for out in ("a", "b"):
            assert_distances(tmp_path / out / f"source-set-{k}" / "bfs_distances.parquet", src, dst, sources, True, 2)
