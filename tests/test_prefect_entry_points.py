"""Prefect's own entry points run the flows: `flow.serve()`, `prefect flow serve`, `flow.deploy()`
from Python, and flow calls from Python with integer vertex ids. Each against a real
`prefect server` on a loopback port (tests/test_deployment.py's fixture); served and deployed
runs are triggered through the server and their state and output are read back."""
import json
import subprocess
import sys
import textwrap
import time
import urllib.error

import networkx as nx
import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, SEED_EDGES
from tests.helpers import child_pythonpath, wait_for
from tests.test_deployment import api, prefect, server, stop  # noqa: F401  (server is a fixture)

SAMPLE = str(ROOT / "data" / "graph.parquet")
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def seed_distances(sources) -> dict:
    """Hop distances from the nearest of SOURCES in the sample graph, by networkx."""
    g = nx.Graph((u, v) for u, v, _ in SEED_EDGES)
    each = [nx.single_source_shortest_path_length(g, s) for s in sources]
    return {v: min(d[v] for d in each) for v in g}


def deployment_id(url, name):
    found = api(url, "/deployments/filter", {"deployments": {"name": {"any_": [name]}}})
    return found[0]["id"] if found else None


def run_deployment(url, name, parameters) -> dict:
    """Create a run of deployment NAME through the API and wait until it is terminal."""
    dep = wait_for(lambda: deployment_id(url, name), f"deployment {name} registered")
    run = wait_for(lambda: api(url, f"/deployments/{dep}/create_flow_run", {"parameters": parameters}),
                   f"a run of {name} created")
    return wait_for(lambda: (r := api(url, f"/flow_runs/{run['id']}"))["state"]["type"] in TERMINAL and r,
                    f"flow run of {name} finished", seconds=300)


SERVE_SCRIPT = textwrap.dedent("""
    from flows.mst import mst_flow

    if __name__ == "__main__":
        mst_flow.serve(name="mst-served")
""")


@pytest.mark.server
@pytest.mark.parametrize("how", ["flow.serve()", "prefect flow serve"])
def test_a_served_flow_completes_runs_triggered_through_the_server(server, tmp_path, how):  # noqa: F811
    url, env = server
    env = {**env, "PYTHONPATH": child_pythonpath(),
           "GRAPH_TASK_RUNNER": "threads"}
    if how == "flow.serve()":
        script = tmp_path / "serve_mst.py"
        script.write_text(SERVE_SCRIPT)
        command = [sys.executable, str(script)]
    else:
        command = [sys.executable, "-m", "prefect", "flow", "serve", "flows/mst.py:mst_flow", "--name", "mst-served"]
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        for k in range(2):  # a served process keeps taking runs
            output = tmp_path / f"out-{k}"
            run = run_deployment(url, "mst-served", {"input": SAMPLE, "output": str(output)})
            assert run["state"]["type"] == "COMPLETED", (run["state"], log.read_text())
            forest = pq.read_table(output / "mst_edges.parquet")
            assert forest.num_rows == 5 and sum(forest["weight"].to_pylist()) == 13
        bad = run_deployment(url, "mst-served", {"input": str(tmp_path / "missing.parquet"),
                                                  "output": str(tmp_path / "out-bad")})
        assert bad["state"]["type"] == "FAILED"
        assert not (tmp_path / "out-bad").exists()
        process.terminate()  # SIGTERM to the served process alone, as a service manager stops it
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the served flow did not stop on SIGTERM within 60 s:\n{log.read_text()}")
    finally:
        if process.poll() is None:
            stop(process)
    assert "is not fully defined" not in log.read_text()


DEPLOY_SCRIPT = textwrap.dedent("""
    import sys
    from flows.bfs import bfs_flow

    bfs_flow.from_source(source=sys.argv[1], entrypoint="flows/bfs.py:bfs_flow").deploy(
        name="bfs-from-python", work_pool_name=sys.argv[2],
        parameters={"source": [0, 3]}, tags=["from-python"])
""")


@pytest.mark.server
def test_flow_deploy_from_python_runs_on_a_process_worker_with_integer_sources(server, tmp_path):  # noqa: F811
    url, env = server
    env = {**env, "PYTHONPATH": child_pythonpath(),
           "GRAPH_TASK_RUNNER": "threads"}
    prefect(env, "work-pool", "create", "python-pool", "--type", "process")
    script = tmp_path / "deploy_bfs.py"
    script.write_text(DEPLOY_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(ROOT), "python-pool"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr

    output = tmp_path / "out"
    dep = deployment_id(url, "bfs-from-python")
    run = api(url, f"/deployments/{dep}/create_flow_run", {"parameters": {"input": SAMPLE, "output": str(output)}})
    worker_log = prefect(env, "worker", "start", "--pool", "python-pool", "--run-once", timeout=600, both=True)
    state = api(url, f"/flow_runs/{run['id']}")["state"]
    assert state["type"] == "COMPLETED", (state, worker_log)
    assert api(url, f"/flow_runs/{run['id']}")["parameters"]["source"] == [0, 3]
    distances = pq.read_table(output / "bfs_distances.parquet").to_pydict()
    assert dict(zip(distances["vertex"], distances["distance"])) == seed_distances([0, 3])


@pytest.mark.usefixtures("prefect_server")
def test_python_calls_take_integer_vertex_ids(tmp_path):
    from flows.bfs import bfs_flow
    from flows.pipeline import pipeline_flow

    summary = bfs_flow(SAMPLE, source=[0], output=str(tmp_path / "ints"))
    assert summary["validation"] == "passed"
    as_ints = pq.read_table(tmp_path / "ints" / "bfs_distances.parquet")
    bfs_flow(SAMPLE, source=["0"], output=str(tmp_path / "text"))
    assert as_ints.equals(pq.read_table(tmp_path / "text" / "bfs_distances.parquet"))
    distances = as_ints.to_pydict()
    assert dict(zip(distances["vertex"], distances["distance"])) == seed_distances([0])

    pipeline_flow(SAMPLE, source_sets=[[0], [3, "5"]], output=str(tmp_path / "sets"))
    for k, sources in enumerate([[0], [3, 5]]):
        table = pq.read_table(tmp_path / "sets" / f"source-set-{k}" / "bfs_distances.parquet").to_pydict()
        assert dict(zip(table["vertex"], table["distance"])) == seed_distances(sources)


@pytest.mark.usefixtures("prefect_server")
@pytest.mark.parametrize("source, wrong", [([True], "source.0"), ([1.5], "source.0"), ([[0]], "source.0")])
def test_python_calls_refuse_sources_that_are_not_vertex_ids(tmp_path, source, wrong):
    from prefect.exceptions import ParameterTypeError

    from flows.bfs import bfs_flow

    with pytest.raises(ParameterTypeError, match=wrong):
        bfs_flow(SAMPLE, source=source, output=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    json.dumps(source)  # the cases are what a deployment's JSON parameters can carry
