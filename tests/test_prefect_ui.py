"""What a Prefect user sees of a run, read back through the API of a real server: the run's
name and tags, its artifacts (the flow-level summary first, tables per BFS level and Boruvka
round, keys per source set), its log lines, its parameters' checks and descriptions, and its
persisted result."""
import json
import logging
import math
import os
import time
import urllib.request
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow.parquet as pq
import pytest

from flows import mst as mst_cli
from flows.bfs import bfs_flow
from flows.mst import mst_flow
from flows.pipeline import pipeline_flow
from tasks import graph_tasks, report
from tests.conftest import ROOT, realgraphs_dir
from tests.helpers import artifacts_of, forest_less_one_edge, table_rows, write_seed

pytestmark = pytest.mark.usefixtures("prefect_server")

SAMPLE = str(ROOT / "data" / "graph.parquet")


def api(path: str, body=None):
    url = os.environ["PREFECT_API_URL"]
    request = urllib.request.Request(f"{url}{path}", method="POST" if body is not None else "GET",
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_summary_artifact_is_the_flow_runs_own_readable_table(tmp_path):
    graph = str(realgraphs_dir() / "rome99.parquet")
    state = pipeline_flow(graph, source=["1"], output=str(tmp_path / "out"), return_state=True)
    assert state.is_completed()
    artifacts = artifacts_of(state.state_details.flow_run_id)
    # (an artifact without a type is the record of the persisted result, not shown in the tab)
    flow_level = [a for a in artifacts if a["task_run_id"] is None and a["type"] is not None]
    assert [(a["key"], a["type"]) for a in flow_level] == [("pipeline-summary", "table")]  # first in the tab
    rows = table_rows(flow_level[0])
    values = dict(rows)
    summary = state.result()
    assert values["validation"] == "passed"
    assert values["input"] == graph and Path(values["input"]).is_absolute()
    assert values["vertices"] == "3,353"  # thousands separators
    assert values["edges"] == "8,870 input rows (0 self-loops, ignored)"
    assert values["components"] == f"{summary['components']:,}"
    # the forest's weight: the file's weights summed exactly, rounded once (math.fsum), every digit
    forest = pq.read_table(tmp_path / "out" / "mst_edges.parquet")
    total = math.fsum(forest["weight"].to_pylist())
    assert values["forest"] == f"{forest.num_rows:,} edges, total weight {total:,}".removesuffix(".0")
    # the search: networkx's hop distances on the input's edges
    edges = pq.read_table(graph)
    hops = nx.single_source_shortest_path_length(
        nx.Graph(zip(edges["src"].to_pylist(), edges["dst"].to_pylist())), 1)
    assert values["BFS"] == f"reached {len(hops):,} of 3,353 vertices, farthest {max(hops.values()):,} hops"
    assert values["BFS rate"].endswith("GTEPS (1 source in 1 search)")
    assert values["Boruvka"].startswith(f"{summary['rounds']} rounds,") and values["Boruvka"].endswith("edges/s")
    for stage in ("load", "renumber", "CSR build", "BFS", "MSF", "validation", "write", "total"):
        assert values[f"{stage} time"].endswith(" s"), stage
    outputs = [value for quantity, value in rows if quantity == "output"]
    assert outputs == [str(tmp_path / "out" / "bfs_distances.parquet"), str(tmp_path / "out" / "mst_edges.parquet")]
    assert summary["outputs"] == outputs
    kinds = {a["key"]: a["type"] for a in artifacts if a["task_run_id"] is not None}
    assert kinds == {"bfs-levels": "markdown", "bfs-validation": "markdown", "msf-rounds": "markdown",
                     "msf-validation": "markdown"}
    rounds = next(a["data"] for a in artifacts if a["key"] == "msf-rounds")
    assert rounds.count("\n| ") == summary["rounds"] + 1  # header + one row per round


def test_each_source_set_has_its_own_artifact_keys(tmp_path):
    graph = str(realgraphs_dir() / "rome99.parquet")
    state = bfs_flow(graph, source_sets=[["1"], ["7", "3000"], ["2500"]], output=str(tmp_path), return_state=True)
    assert state.is_completed()
    keys = [a["key"] for a in artifacts_of(state.state_details.flow_run_id) if a["type"] is not None]
    expected = {"bfs-summary"} | {f"bfs-{kind}-source-set-{k}" for kind in ("levels", "validation") for k in range(3)}
    assert sorted(keys) == sorted(expected)  # each once: none overwrote another
    values = dict(table_rows(next(a for a in artifacts_of(state.state_details.flow_run_id) if a["key"] == "bfs-summary")))
    assert {f"BFS (source set {k})" for k in range(3)} <= set(values)


def test_bfs_log_line_summarizes_a_thousand_levels(tmp_path):
    """luxembourg_osm takes about a thousand levels: one short line, and a table of at most
    TABLE_ROWS rows in the artifact, not one entry per level."""
    graph = realgraphs_dir() / "luxembourg_osm.parquet"
    first = str(pq.read_table(graph, columns=["src"])["src"][0].as_py())
    records = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append
    logger = logging.getLogger("prefect.task_runs")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        state = bfs_flow(str(graph), source=[first], output=str(tmp_path), return_state=True)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert state.is_completed()
    lines = [r.getMessage() for r in records if r.getMessage().startswith("BFS: ")]
    assert len(lines) == 1 and len(lines[0]) < 300, lines
    depth = state.result()["depth"][0]  # the farthest vertex's hops; the search's last step finds nothing
    assert depth > 900 and f"BFS: {depth + 1:,} levels: " in lines[0]
    table = next(a["data"] for a in artifacts_of(state.state_details.flow_run_id) if a["key"] == "bfs-levels")
    assert table.count("\n| ") <= report.TABLE_ROWS + 1


def test_parameters_are_checked_before_any_task_runs(tmp_path):
    for params, expected in [({"backend": "gpu"}, "backend: Input should be 'auto', 'numpy' or 'cupy'"),
                             ({"depth_limit": -1}, "depth_limit: Input should be greater than or equal to 0")]:
        state = bfs_flow(SAMPLE, source=["0"], output=str(tmp_path / "o"), return_state=True, **params)
        assert state.is_failed() and expected in state.message, state.message
        runs = api("/task_runs/filter", {"task_runs": {"flow_run_id": {"any_": [str(state.state_details.flow_run_id)]}}})
        assert runs == []
    assert not (tmp_path / "o").exists()


def test_every_parameter_is_described_for_the_deployment_form():
    for flow in (mst_flow, bfs_flow, pipeline_flow):
        schema = flow.parameters.model_dump()
        missing = [name for name, spec in schema["properties"].items() if not spec.get("description")]
        assert not missing, (flow.name, missing)
        assert flow.timeout_seconds and flow.timeout_seconds >= 3600


def test_command_line_run_is_named_tagged_and_keeps_its_summary(tmp_path, capsys):
    assert mst_cli.main([SAMPLE, "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "mst: 6 vertices, 9 edges; forest of 5 edges, weight 13, 1 component; validation passed" in out
    flow_run_id = next(line.rsplit("/", 1)[1] for line in out.splitlines() if line.startswith("run: "))
    run = api(f"/flow_runs/{flow_run_id}")
    assert run["name"] == "mst-graph"
    assert {"graph", "mst", "cli"} <= set(run["tags"])
    # the summary is the run's persisted result, readable after the process that ran it is gone
    from prefect.client.schemas.objects import FlowRun

    persisted = FlowRun.model_validate(run).state.result()
    assert persisted["forest_edges"] == 5 and persisted["forest_weight"] == 13 and persisted["validation"] == "passed"


def test_failed_run_summary_says_what_failed(tmp_path, monkeypatch):
    monkeypatch.setattr(graph_tasks, "minimum_spanning_forest", forest_less_one_edge)
    state = mst_flow(SAMPLE, output=str(tmp_path / "o"), return_state=True)
    assert state.is_failed()
    summary = next(a for a in artifacts_of(state.state_details.flow_run_id) if a["key"] == "mst-summary")
    values = dict(table_rows(summary))
    assert summary["task_run_id"] is None and values["validation"] == "FAILED"
    assert "MSF result failed validation" in values["error"] and values["input"] == SAMPLE
    assert not (tmp_path / "o").exists()
    # the task's own report, published before its failure ends the run, says which check failed
    report = next(a for a in artifacts_of(state.state_details.flow_run_id) if a["key"] == "msf-validation")
    assert report["data"].startswith("# MSF validation: FAILED") and "| FAIL |" in report["data"]


def test_a_failed_runs_log_holds_one_error_line_with_the_message_and_the_traceback_at_debug(tmp_path):
    """A bad input row used to give a run's log four ERROR lines for one error: the failing
    task's, one 'NotReady ... did not reach a COMPLETED state' per task downstream of it, and
    the flow's with a traceback. Read back from the server: the run and its task runs log one
    ERROR line, the message itself."""
    import pyarrow as pa
    from prefect.logging.handlers import APILogWorker

    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"src": [0, 1, 2], "dst": [1, None, 0], "weight": [1.0, 2.0, 3.0]}), path)
    state = pipeline_flow(str(path), source=["0"], output=str(tmp_path / "o"), return_state=True)
    assert state.is_failed()
    APILogWorker.drain_all(timeout=30)
    logs = api("/logs/filter", {"logs": {"flow_run_id": {"any_": [str(state.state_details.flow_run_id)]}}})
    shown = [log for log in logs if log["level"] >= logging.INFO]
    errors = [log["message"] for log in shown if log["level"] >= logging.ERROR]
    assert errors == [f"{path}: column 'dst' is null at row 1"], errors
    assert not any("NotReady" in log["message"] or "Traceback" in log["message"] for log in shown), shown


def test_task_runs_are_named_after_what_they_do(tmp_path):
    """Task runs had Prefect's default names (load_edges-5ed, breadth_first_search-a3c): which
    search was which could not be told in the UI."""
    state = pipeline_flow(SAMPLE, source_sets=[["0"], ["3"]], output=str(tmp_path / "o"), return_state=True)
    assert state.is_completed()
    expected = sorted(["load-graph", "csr", "bfs-source-set-0", "bfs-source-set-1", "validate-bfs-source-set-0",
                       "validate-bfs-source-set-1", "msf", "validate-msf", "write"])
    # the server records task runs from the client's events, after the flow has returned: the
    # last tasks' runs may be missing, or still under a name of their first event, for a moment
    deadline = time.monotonic() + 30
    while True:
        runs = api("/task_runs/filter", {"flow_runs": {"id": {"any_": [str(state.state_details.flow_run_id)]}}})
        names = sorted(run["name"] for run in runs)
        if names == expected or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert names == expected


def levels_table(markdown: str) -> list[tuple[str, int]]:
    """(levels, frontier) of each row of a bfs-levels table."""
    rows = [line.split("|")[1:-1] for line in markdown.splitlines() if line.startswith("| ") and "---" not in line]
    return [(cells[0].strip(), int(cells[2].strip().replace(",", ""))) for cells in rows[1:]]


def test_a_partitioned_run_publishes_each_searchs_levels(tmp_path, monkeypatch):
    """Each search publishes a `bfs-levels` table (level, direction, frontier size and seconds
    per level), keyed by the set's number with `--source-set`, and the log has one line per
    stage with its counts and seconds (`BFS source set 0: 6 levels: ...`), whatever the number
    of partitions. A partitioned run used to publish only its summary and validation reports: its searches' levels,
    which every rank records, reached neither the page nor the log."""
    from flows.pipeline import pipeline_flow

    monkeypatch.setenv("GRAPH_BACKEND", "numpy")
    graph = str(write_seed(tmp_path / "g.parquet"))
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
