"""A run's results are Prefect assets: the task that publishes them materializes one asset per
result file (keyed by its file:// or object-store URI) with the input as its upstream asset, as
the server's events record; results whose path Prefect cannot hold as a key are still written."""
import json
import os
import time
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.lineage import asset_key
from tests.conftest import ROOT, SEED_EDGES

pytestmark = pytest.mark.usefixtures("prefect_server")

SAMPLE = str(ROOT / "data" / "graph.parquet")
SUCCEEDED = "prefect.asset.materialization.succeeded"


def asset_events(flow_run_id, expected: int, seconds: float = 30) -> list[dict]:
    """The materialization events of one flow run, once ``expected`` of them reached the server."""
    url = os.environ["PREFECT_API_URL"]
    body = {"filter": {"event": {"prefix": ["prefect.asset."]},
                       "related": {"id": [f"prefect.flow-run.{flow_run_id}"]}}, "limit": 50}
    deadline = time.monotonic() + seconds
    while True:
        request = urllib.request.Request(f"{url}/events/filter", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            events = [e for e in json.loads(response.read())["events"] if e["event"] == SUCCEEDED]
        if len(events) >= expected or time.monotonic() > deadline:
            return events
        time.sleep(0.5)


def lineage(events) -> dict:
    """result asset key -> the asset keys the event names as its upstream"""
    return {e["resource"]["prefect.resource.id"]:
            sorted(r["prefect.resource.id"] for r in e["related"] if r.get("prefect.resource.role") == "asset")
            for e in events}


def test_asset_keys_are_uris_and_paths_prefect_cannot_key_are_none(tmp_path):
    assert asset_key(tmp_path / "out" / "mst_edges.parquet") == f"file://{tmp_path}/out/mst_edges.parquet"
    assert asset_key("s3://bucket/graphs/out/mst_edges.parquet") == "s3://bucket/graphs/out/mst_edges.parquet"
    assert asset_key("relative/edges.parquet") == "file://" + os.path.abspath("relative/edges.parquet")
    for awkward in ("with space", "100%", "hash#tag"):
        assert asset_key(tmp_path / awkward / "mst_edges.parquet") is None


def test_a_pipeline_run_materializes_every_result_from_its_input(tmp_path):
    from flows.pipeline import pipeline_flow

    output = tmp_path / "out"
    state = pipeline_flow(SAMPLE, source_sets=[["0"], ["3"]], output=str(output), return_state=True)
    assert state.is_completed()
    results = [output / "source-set-0" / "bfs_distances.parquet", output / "source-set-1" / "bfs_distances.parquet",
               output / "mst_edges.parquet"]
    assert all(path.exists() for path in results)
    found = lineage(asset_events(state.state_details.flow_run_id, expected=3))
    assert found == {f"file://{path}": [f"file://{SAMPLE}"] for path in results}


def test_a_partitioned_run_materializes_its_results(tmp_path):
    from flows.mst import mst_flow

    output = tmp_path / "out"
    state = mst_flow(SAMPLE, output=str(output), partitions=2, backend="numpy", return_state=True)
    assert state.is_completed()
    found = lineage(asset_events(state.state_details.flow_run_id, expected=1))
    assert found == {f"file://{output}/mst_edges.parquet": [f"file://{SAMPLE}"]}


def test_a_result_path_prefect_cannot_key_is_written_without_an_asset(tmp_path):
    from flows.mst import mst_flow

    edges = tmp_path / "my graphs" / "edges.parquet"
    edges.parent.mkdir()
    s, d, w = zip(*SEED_EDGES)
    pq.write_table(pa.table({"src": list(s), "dst": list(d), "weight": [float(x) for x in w]}), edges)
    output = tmp_path / "my results"
    state = mst_flow(str(edges), output=str(output), return_state=True)
    assert state.is_completed()
    assert pq.read_table(output / "mst_edges.parquet").num_rows == 5
    assert asset_events(state.state_details.flow_run_id, expected=1, seconds=3) == []


def test_a_failed_run_materializes_nothing(tmp_path):
    from flows.mst import mst_flow

    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "weight": [1.0, float("nan")]}), bad)
    state = mst_flow(str(bad), output=str(tmp_path / "out"), return_state=True)
    assert state.is_failed()
    assert not Path(tmp_path / "out" / "mst_edges.parquet").exists()
    assert asset_events(state.state_details.flow_run_id, expected=1, seconds=3) == []
