"""The scheduled-deployment path, as a user runs it: a real `prefect server` on a free port of
127.0.0.1 in a temporary PREFECT_HOME, a process work pool, `prefect deploy --all` from the real
prefect.yaml, a deployment run triggered with parameters, and a worker that runs it on Dask
workers. Everything started here is stopped here."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import networkx as nx
import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import ROOT

POOL = "graph-pool"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prefect(env, *args, timeout=180, cwd=ROOT, both=False):
    done = subprocess.run([sys.executable, "-m", "prefect", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr if both else done.stdout


def api(url, path, body=None):
    request = urllib.request.Request(f"{url}{path}", method="POST" if body is not None else "GET",
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture
def server(tmp_path):
    """A real Prefect server: yields (api_url, env for the prefect CLI and the worker)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPH_"))}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_API_URL=url,
               PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_SERVER_LOGGING_LEVEL="WARNING",
               PREFECT_CLI_PROMPT="false")
    log = open(tmp_path / "server.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if api(url, "/health") is True:
                    break
            except OSError:
                pass
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, "prefect server did not start in 120 s"
            time.sleep(0.5)
        yield url, env
    finally:
        stop(process)
        log.close()


def stop(process) -> None:
    """End a process started in a session of its own, and everything it started."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_deploy_from_prefect_yaml_and_run_on_a_process_worker(server, tmp_path):
    url, env = server
    yaml_before = (ROOT / "prefect.yaml").read_text()
    prefect(env, "work-pool", "create", POOL, "--type", "process")
    prefect(env, "--no-prompt", "deploy", "--all")
    assert (ROOT / "prefect.yaml").read_text() == yaml_before, "deploy rewrote prefect.yaml"

    flows = {f["id"]: f["name"] for f in api(url, "/flows/filter", {})}
    deployments = {f"{flows[d['flow_id']]}/{d['name']}": d for d in api(url, "/deployments/filter", {})}
    assert sorted(deployments) == ["bfs/bfs-nightly", "mst/mst-nightly", "mst/mst-nightly-s3", "pipeline/pipeline-nightly"]
    crons = {spec["name"]: spec["schedules"][0]["cron"] for spec in yaml.safe_load(yaml_before)["deployments"]}
    for name, d in deployments.items():
        flow = name.split("/")[0]
        assert d["work_pool_name"] == POOL
        assert [s["schedule"]["cron"] for s in d["schedules"]] == [crons[d["name"]]]
        # the store example needs a bucket: deployed with its schedule paused
        assert [s["active"] for s in d["schedules"]] == [d["name"] != "mst-nightly-s3"], name
        assert set(d["tags"]) == {"graph", flow, "nightly"}
        # the UI's run form shows each parameter's description and offers the backends
        properties = d["parameter_openapi_schema"]["properties"]
        assert all(p.get("description") for p in properties.values()), name
        assert {"enum": ["auto", "numpy", "cupy"], "type": "string"} in properties["backend"]["anyOf"]

    output = tmp_path / "out"
    params = {"input": "data/graph.parquet", "source_sets": [["0"], ["3", "5"]], "source": None,
              "output": str(output)}
    run = prefect(env, "deployment", "run", "pipeline/pipeline-nightly", "--params", json.dumps(params))
    flow_run_id = next(line.split()[-1] for line in run.splitlines() if "UUID" in line)

    # tasks on Dask workers the run starts, as a deployment on a GPU node would be configured
    worker_env = {**env, "GRAPH_TASK_RUNNER": "dask", "GRAPH_DASK_WORKERS": "2", "GRAPH_PROGRESS_MIN_EDGES": "0"}
    worker_log = prefect(worker_env, "worker", "start", "--pool", POOL, "--run-once", timeout=600, both=True)
    assert "Traceback" not in worker_log and "CommClosedError" not in worker_log, worker_log

    flow_run = api(url, f"/flow_runs/{flow_run_id}")
    assert flow_run["state"]["type"] == "COMPLETED", flow_run["state"]
    assert flow_run["parameters"]["source_sets"] == [["0"], ["3", "5"]]
    assert flow_run["name"] == "pipeline-graph" and {"graph", "pipeline", "nightly"} <= set(flow_run["tags"])

    forest = pq.read_table(output / "mst_edges.parquet")
    assert forest.num_rows == 5 and sum(forest["weight"].to_pylist()) == 13
    for k in range(2):
        distances = pq.read_table(output / f"source-set-{k}" / "bfs_distances.parquet")
        assert distances.column_names == ["vertex", "distance", "predecessor"] and distances.num_rows == 6

    artifacts = api(url, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})
    keys = {(a["key"], a["type"], a["task_run_id"] is None) for a in artifacts if a["type"] is not None}
    per_set = {(f"bfs-{kind}-source-set-{k}", kind_type, False) for k in range(2)
               for kind, kind_type in (("levels", "markdown"), ("validation", "markdown"), ("progress", "progress"))}
    assert keys == {("pipeline-summary", "table", True), ("msf-validation", "markdown", False),
                    ("msf-rounds", "markdown", False), ("msf-progress", "progress", False)} | per_set
    summary = next(json.loads(a["data"]) if isinstance(a["data"], str) else a["data"]
                   for a in artifacts if a["key"] == "pipeline-summary")
    values = {row["quantity"]: row["value"] for row in summary}
    assert values["validation"] == "passed" and values["forest"] == "5 edges, total weight 13"
    assert [row["value"] for row in summary if row["quantity"] == "output"] == [
        str(output / "source-set-0" / "bfs_distances.parquet"), str(output / "source-set-1" / "bfs_distances.parquet"),
        str(output / "mst_edges.parquet")]
    assert all(a["data"] == 100 for a in artifacts if a["type"] == "progress")


def test_every_deployment_deploy_all_schedules_completes_on_a_worker(server, tmp_path):
    """What `deploy --all` schedules runs here as declared: each deployment with an active
    schedule, run with its own parameters (only the output moved to a temporary folder) on a
    process worker, completes with the sample's answers; the store example is not scheduled."""
    url, env = server
    prefect(env, "work-pool", "create", POOL, "--type", "process")
    prefect(env, "--no-prompt", "deploy", "--all")
    flows = {f["id"]: f["name"] for f in api(url, "/flows/filter", {})}
    deployments = {f"{flows[d['flow_id']]}/{d['name']}": d for d in api(url, "/deployments/filter", {})}
    scheduled = sorted(name for name, d in deployments.items() if any(s["active"] for s in d["schedules"]))
    assert scheduled == ["bfs/bfs-nightly", "mst/mst-nightly", "pipeline/pipeline-nightly"]

    runs = {}
    for name in scheduled:
        output = tmp_path / name.replace("/", "-")
        run = prefect(env, "deployment", "run", name, "--params", json.dumps({"output": str(output)}))
        runs[name] = (next(line.split()[-1] for line in run.splitlines() if "UUID" in line), output)
    worker_log = prefect(env, "worker", "start", "--pool", POOL, "--run-once", timeout=600, both=True)
    assert "Traceback" not in worker_log, worker_log

    sample = pq.read_table(ROOT / "data" / "graph.parquet").to_pydict()
    graph = nx.Graph()
    graph.add_weighted_edges_from(zip(sample["src"], sample["dst"], sample["weight"]))
    hops = nx.single_source_shortest_path_length(graph, 0)
    for name, (flow_run_id, output) in runs.items():
        flow_run = api(url, f"/flow_runs/{flow_run_id}")
        assert flow_run["state"]["type"] == "COMPLETED", (name, flow_run["state"])
        assert flow_run["parameters"]["input"] == "data/graph.parquet"
        flow = name.split("/")[0]
        if flow in ("mst", "pipeline"):
            forest = pq.read_table(output / "mst_edges.parquet")
            assert forest.num_rows == graph.number_of_nodes() - 1
            assert sum(forest["weight"].to_pylist()) == nx.minimum_spanning_tree(graph).size(weight="weight")
        if flow in ("bfs", "pipeline"):
            distances = pq.read_table(output / "bfs_distances.parquet").to_pydict()
            assert dict(zip(distances["vertex"], distances["distance"])) == hops
