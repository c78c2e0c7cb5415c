"""Flows on real Dask workers (distributed.LocalCluster worker processes): the same outputs as
the in-process runner, source sets fanned out as mapped tasks, and a worker killed mid-task."""
import os
import signal
from pathlib import Path

import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

from flows.bfs import bfs_flow
from flows.mst import mst_flow
from flows.pipeline import pipeline_flow
from flows.runners import task_runner
from tests.conftest import realgraphs_dir
from tests.references import result_tables

pytestmark = pytest.mark.usefixtures("prefect_server")


def no_temporaries(directory: Path) -> bool:
    return not [p for p in directory.rglob("*") if p.name.startswith(".")]


def test_local_cluster_of_two_workers_gives_the_default_runners_outputs(tmp_path, monkeypatch):
    graph = str(realgraphs_dir() / "rome99.parquet")
    params = dict(input=graph, source_sets=[["1"], ["7", "3000"], ["2500"]], directed=True)
    in_process = pipeline_flow.with_options(task_runner=task_runner("threads"))(output=str(tmp_path / "threads"), **params)
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "2")
    on_dask = pipeline_flow.with_options(task_runner=task_runner("dask"))(output=str(tmp_path / "dask"), **params)

    expected, got = result_tables(tmp_path / "threads"), result_tables(tmp_path / "dask")
    assert sorted(got) == ["mst_edges.parquet"] + [f"source-set-{k}/bfs_distances.parquet" for k in range(3)]
    for name, table in expected.items():
        assert got[name].equals(table), name
    assert (on_dask["reached"], on_dask["depth"]) == (in_process["reached"], in_process["depth"])
    assert on_dask["forest_edges"] == in_process["forest_edges"]
    assert no_temporaries(tmp_path)


def test_source_sets_are_separate_searches_with_one_output_each(tmp_path):
    graph = str(realgraphs_dir() / "netscience.parquet")
    runner = task_runner("threads")
    fanned = bfs_flow.with_options(task_runner=runner)(graph, source_sets=[["0"], ["5", "9"]], output=str(tmp_path / "sets"))
    for k, sources in enumerate([["0"], ["5", "9"]]):
        single = bfs_flow.with_options(task_runner=runner)(graph, source=sources, output=str(tmp_path / f"one{k}"))
        assert result_tables(tmp_path / "sets" / f"source-set-{k}") == result_tables(tmp_path / f"one{k}")
        assert (fanned["reached"][k], fanned["depth"][k]) == (single["reached"][0], single["depth"][0])
    assert fanned["source_sets"] == 2 and fanned["sources"] == 3


class KillWorkerOnce(WorkerPlugin):
    """SIGKILLs the worker process that starts executing the first task whose key contains
    ``name``; a marker file makes it once per test across all worker processes."""

    def __init__(self, marker: str, name: str):
        self.marker, self.name = marker, name

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing" or self.name not in str(key):
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("victim", ["spanning_forest", "write_results"])
def test_worker_killed_mid_task_is_retried_and_outputs_are_identical(tmp_path, victim):
    graph = str(realgraphs_dir() / "rome99.parquet")
    undisturbed = mst_flow.with_options(task_runner=task_runner("threads"))(graph, output=str(tmp_path / "calm"))
    marker = tmp_path / "killed"
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        client.register_plugin(KillWorkerOnce(str(marker), victim))
        state = mst_flow.with_options(task_runner=task_runner(address=cluster.scheduler_address))(
            graph, output=str(tmp_path / "killed-run"), return_state=True)
    assert marker.exists(), "no worker was killed: the test did not test anything"
    assert state.is_completed(), state.message
    assert state.result()["forest_edges"] == undisturbed["forest_edges"]
    assert result_tables(tmp_path / "killed-run") == result_tables(tmp_path / "calm")
    assert no_temporaries(tmp_path / "killed-run")


def test_bad_input_on_dask_workers_fails_the_flow_with_the_tasks_own_message(tmp_path, monkeypatch):
    """The first failed stage's error, fetched from the worker, is the flow's message; the
    downstream tasks that never ran do not mask it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "w": [1.0, 2.0]}), path)
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "2")
    state = mst_flow.with_options(task_runner=task_runner("dask"))(str(path), output=str(tmp_path / "o"),
                                                                   return_state=True)
    assert state.is_failed()
    assert f"{path}: column 'weight' not found (columns: src, dst, w)" in state.message
    assert not (tmp_path / "o").exists()


def test_flows_import_anywhere_and_choose_their_runner_when_they_run(monkeypatch):
    """Importing a flow builds no cluster and imports no dask_cuda (it fails without a GPU);
    the runner follows the arguments, then the environment, and is threads by default. The imports are checked in a fresh
    interpreter: in this one an earlier GPU test may have imported dask_cuda already."""
    import subprocess
    import sys

    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    from flows.runners import local_cluster

    fresh = subprocess.run(
        [sys.executable, "-c", "import sys, flows.bfs, flows.mst, flows.pipeline; "
                               "sys.exit('dask_cuda' in sys.modules)"],
        cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=120)
    assert fresh.returncode == 0, fresh.stderr or "importing the flows imported dask_cuda"
    monkeypatch.delenv("GRAPH_TASK_RUNNER", raising=False)
    assert isinstance(task_runner(), ThreadPoolTaskRunner)
    local = task_runner("dask")
    assert isinstance(local, DaskTaskRunner) and local.cluster_class is local_cluster and local.address is None
    monkeypatch.setenv("GRAPH_DASK_ADDRESS", "tcp://10.1.2.3:8786")
    assert task_runner().address == "tcp://10.1.2.3:8786"  # an address in the environment means Dask
    assert isinstance(task_runner("threads"), ThreadPoolTaskRunner)  # the argument beats the environment
    assert task_runner("threads", "tcp://10.9.9.9:8786").address == "tcp://10.9.9.9:8786"
    with pytest.raises(ValueError, match="unknown task runner 'processes'"):
        task_runner("processes")
