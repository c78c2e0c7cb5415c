"""What the command line answers, and when: an input the footers refuse (a column missing, a CSV
named .parquet, a BFS source outside the ids' range, a source that is not an integer on an
integer graph) is one error line before Prefect is imported or a server started, whichever
writer made the file (pandas+fastparquet, Polars, DuckDB); a run that fails after it started
prints its run's page as a completed one does; `--json` prints the summary a downstream step
reads; `--version` says what is installed; and "none" means an unweighted edge list wherever
a weight column is given as text (the command line, Python, a deployment's or the UI's
parameters)."""
import json
import os
from importlib import metadata
import subprocess
import sys

import duckdb
import networkx as nx
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import __version__
from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from flows.mst import mst_flow
from tests.conftest import ROOT
from tests.helpers import child_pythonpath, wait_for

SAMPLE = ROOT / "data" / "graph.parquet"


def sample_frame(**names) -> pd.DataFrame:
    """The bundled sample's edges, its columns renamed as ``names`` says (src= ..., dst= ...)."""
    frame = pq.read_table(SAMPLE).to_pandas()
    return frame.rename(columns={k: v for k, v in names.items()})


def write_fastparquet(path, frame):
    pytest.importorskip("fastparquet").write(str(path), frame, compression="SNAPPY")


def write_polars(path, frame):
    pytest.importorskip("polars").from_pandas(frame).write_parquet(path)


def write_duckdb(path, frame):
    with duckdb.connect() as db:
        db.register("frame", frame)
        db.execute(f"COPY frame TO '{path}' (FORMAT parquet)")


WRITERS = [write_fastparquet, write_polars, write_duckdb]


def before_prefect(argv: list[str], kind: str = "mst") -> subprocess.CompletedProcess:
    """`python -m flows.KIND ARGV` in a process of its own (the command line's main, as
    flows/KIND.py's __main__ calls it), no server configured; it reports whether Prefect was
    imported by the time main() returned."""
    script = (f"import sys; from flows.cli import main; code = main({kind!r}, {argv!r}); "
              "print('prefect imported' if 'prefect' in sys.modules else 'prefect not imported', file=sys.stderr); "
              "sys.exit(code)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPH_"))}
    return subprocess.run([sys.executable, "-c", script], env={**env, "PYTHONPATH": child_pythonpath()},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("writer", WRITERS, ids=[w.__name__ for w in WRITERS])
def test_a_column_the_file_lacks_is_one_line_before_prefect_starts(tmp_path, writer):
    path = tmp_path / "edges.parquet"
    writer(path, sample_frame(src="source", dst="target", weight="w"))
    done = before_prefect([str(path)])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: {path}: column 'src' not found (columns: source, target, w)", "prefect not imported"]
    assert not (tmp_path / "output").exists()


@pytest.mark.parametrize("case, argv, expected", [
    ("csv-named-parquet", lambda p: [str(p / "edges.parquet")], "not a readable Parquet file"),
    ("weight-not-numeric", lambda p: [str(p / "labels.parquet"), "--weight-col", "label"],
     "weight column 'label' has type string; weights must be numeric"),
    ("ids-of-two-kinds", lambda p: [str(p / "labels.parquet"), "--dst-col", "label", "--weight-col", "none"],
     "column 'src' is integer but 'label' is string; ids must share one type"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_what_the_footers_refuse_is_one_line_before_prefect_starts(tmp_path, case, argv, expected):
    (tmp_path / "edges.parquet").write_text("src,dst,weight\n0,1,2.5\n")
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "label": ["a", "b"]}), tmp_path / "labels.parquet")
    done = before_prefect(argv(tmp_path))
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 2 and lines[0].startswith("error: ") and expected in lines[0], lines
    assert lines[1] == "prefect not imported"


@pytest.mark.parametrize("source, expected", [
    ("99", "source '99' is not a vertex of the graph"),  # past the ids' range by the statistics
    ("-1", "source '-1' is not a vertex of the graph"),
    ("abc", "source 'abc' is not an integer vertex id"),
    ("1.5", "source '1.5' is not an integer vertex id"),
])
def test_a_source_the_footers_rule_out_is_one_line_before_prefect_starts(tmp_path, source, expected):
    done = before_prefect([str(SAMPLE), "--source", source, "--output", str(tmp_path / "out")], "bfs")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"error: {SAMPLE}: {expected}", "prefect not imported"]


def test_a_source_inside_the_range_but_absent_fails_the_run_which_prints_its_page(tmp_path, capsys, prefect_server):
    """Ids 0, 2 and 5: source 3 lies inside the range, so the search finds it missing; the run
    fails, and with a server configured the command prints the failed run's page too."""
    path = tmp_path / "gaps.parquet"
    pq.write_table(pa.table({"src": [0, 2], "dst": [2, 5]}), path)
    code = bfs_cli.main([str(path), "--source", "3", "--output", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 1 and out == ""
    assert len(lines) == 2 and lines[0].startswith("run: http") and "/runs/flow-run/" in lines[0], lines
    assert lines[1] == f"error: {path}: source '3' is not a vertex of the graph"
    from prefect import get_client

    run_id = lines[0].rsplit("/", 1)[1]
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(run_id).state.type.value == "FAILED"


def test_a_source_found_missing_at_load_stops_the_forest_before_it_starts(tmp_path, capsys, prefect_server):
    """The pipeline with a source inside the ids' range that is no vertex: the load fails on it,
    so the run fails without the CSR, the search, the forest or their validations ever running."""
    path = tmp_path / "gaps.parquet"
    pq.write_table(pa.table({"src": [0, 2, 5], "dst": [2, 5, 0], "weight": [1.0, 2.0, 3.0]}), path)
    code = pipeline_cli.main([str(path), "--source", "3", "--output", str(tmp_path / "out")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and lines[-1] == f"error: {path}: source '3' is not a vertex of the graph"
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    run_id = lines[0].rsplit("/", 1)[1]
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(run_id).state.type.value == "FAILED"

        def task_runs_once_the_load_has_failed():
            # The server records task runs from the events the client sends in the background, so
            # they can settle after the flow run's own state: read them until the load's is in.
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id])))
            loads = [run for run in runs if run.name == "load-gaps"]
            return runs if loads and loads[0].state and loads[0].state.is_final() else None

        runs = wait_for(task_runs_once_the_load_has_failed, "the load's task run recorded as final", seconds=60)
    (load,) = [run for run in runs if run.name == "load-gaps"]
    assert load.state.type.value == "FAILED"
    assert all(run.start_time is None for run in runs if run is not load)
    assert not (tmp_path / "out").exists()


def test_json_prints_the_summary_a_downstream_step_reads(tmp_path, capsys, prefect_server):
    frame = sample_frame()
    code = mst_cli.main([str(SAMPLE), "--output", str(tmp_path / "out"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    (line,) = out.splitlines()
    summary = json.loads(line)
    graph = nx.Graph()
    graph.add_weighted_edges_from(zip(frame["src"], frame["dst"], frame["weight"]))
    assert summary["validation"] == "passed" and summary["vertices"] == graph.number_of_nodes()
    assert summary["forest_edges"] == graph.number_of_nodes() - 1
    assert summary["forest_weight"] == nx.minimum_spanning_tree(graph).size(weight="weight")
    assert summary["outputs"] == [str(tmp_path / "out" / "mst_edges.parquet")]
    assert summary["run"].endswith(f"/runs/flow-run/{summary['run'].rsplit('/', 1)[1]}")
    assert pq.read_table(summary["outputs"][0]).num_rows == summary["forest_edges"]


def test_version_names_the_installed_distribution(capsys):
    with pytest.raises(SystemExit) as exit:
        mst_cli.main(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out.strip() == f"parquet-graph-pipeline {__version__}"
    try:  # the installed distribution takes its version from the same place
        assert metadata.version("parquet-graph-pipeline") == __version__
    except metadata.PackageNotFoundError:  # a checkout on PYTHONPATH, not installed
        pass


@pytest.mark.parametrize("spelling", [None, "none", "None", "NONE"])
def test_none_means_an_unweighted_edge_list_however_it_arrives(tmp_path, spelling, prefect_server):
    """A deployment's parameters and the UI's form can only send text: "none" in any case is
    the command line's `--weight-col none`, as Python's None is. The sample's weight column is
    there and ignored: the forest weighs one per edge."""
    summary = mst_flow(str(SAMPLE), output=str(tmp_path / "out"), weight_col=spelling)
    assert summary["unit_weights"] and summary["forest_weight"] == 5
    forest = pq.read_table(tmp_path / "out" / "mst_edges.parquet")
    assert forest["weight"].to_pylist() == [1.0] * 5
