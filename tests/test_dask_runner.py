"""The Dask task runner's worker threads keep Prefect's settings and API client between task runs
(flows/dask_runner.py): each task run must still see the settings of the flow run that
submitted it, and report its logs and artifacts to that flow run's server."""
import time

import pytest
from distributed import LocalCluster
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterTaskRunId, LogFilter, LogFilterTaskRunId
from prefect.context import get_run_context
from prefect.settings import PREFECT_FLOWS_DEFAULT_RETRIES, PREFECT_TASKS_DEFAULT_RETRIES, get_current_settings, temporary_settings

from flows.runners import task_runner

pytestmark = pytest.mark.usefixtures("prefect_server")


@task(cache_policy=NO_CACHE, persist_result=False)
def report(label: str) -> tuple:
    """This task run's id and the setting it sees; logs a line and publishes an artifact."""
    get_run_logger().warning("reporting %s", label)  # the tests log at WARNING and above
    create_markdown_artifact(key=f"runner-{label}", markdown=f"# {label}")
    return str(get_run_context().task_run.id), get_current_settings().tasks.default_retries


@flow(persist_result=False)
def two_reports(label: str) -> list:
    first = report.submit(f"{label}-a")
    second = report.submit(f"{label}-b", wait_for=[first])
    return [first.result(), second.result()]


def test_task_runs_on_one_worker_thread_see_their_own_flows_settings_and_reach_the_server():
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address="127.0.0.1:0") as cluster:
        runs = {}
        for label, retries in [("three", 3), ("five", 5), ("three-again", 3)]:
            with temporary_settings({PREFECT_TASKS_DEFAULT_RETRIES: retries}):
                runs[label] = two_reports.with_options(task_runner=task_runner(address=cluster.scheduler_address))(label)
        default = two_reports.with_options(task_runner=task_runner(address=cluster.scheduler_address))("default")

    assert [r[1] for r in runs["three"]] == [3, 3]
    assert [r[1] for r in runs["five"]] == [5, 5]
    assert [r[1] for r in runs["three-again"]] == [3, 3]
    assert [r[1] for r in default] == [get_current_settings().tasks.default_retries] * 2
    task_run_ids = [r[0] for results in [*runs.values(), default] for r in results]
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(task_run_id=ArtifactFilterTaskRunId(any_=task_run_ids)))
        assert len({str(a.task_run_id) for a in artifacts}) == len(task_run_ids) == 8
        # workers send their logs in batches, every few seconds: wait for them, not for a time
        deadline = time.monotonic() + 60
        while True:
            logs = client.read_logs(log_filter=LogFilter(task_run_id=LogFilterTaskRunId(any_=task_run_ids)))
            logged = {str(log.task_run_id) for log in logs if log.message.startswith("reporting ")}
            if logged == set(task_run_ids) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    assert logged == set(task_run_ids)


def test_equal_settings_entered_again_are_not_serialized_again_and_changed_ones_are():
    """A script that enters the same temporary settings around every flow call gets a new
    settings object each time: the submits reuse the last serialized form when they are equal."""
    from prefect.context import SettingsContext

    from flows import dask_runner

    seen = []
    for retries in (3, 3, 5):
        with temporary_settings({PREFECT_TASKS_DEFAULT_RETRIES: retries}):
            with dask_runner._settings_serialized_once() as digest:
                sent = SettingsContext.get().serialize()  # what serialize_context sends the workers
                seen.append((digest, dask_runner._serialized_settings[1], sent))
    (first, first_form, first_sent), (again, again_form, _), (changed, _, changed_sent) = seen
    assert again == first and again_form is first_form
    assert changed != first
    assert first_sent["settings"]["tasks"]["default_retries"] == 3
    assert changed_sent["settings"]["tasks"]["default_retries"] == 5


@task(cache_policy=NO_CACHE, persist_result=False)
def flow_retries_seen() -> int:
    return get_current_settings().flows.default_retries


@flow(persist_result=False)
def report_flow_retries() -> int:
    return flow_retries_seen.submit().result()


def test_a_setting_entered_at_its_default_value_reaches_workers_whose_environment_says_otherwise():
    """Edge case: settings that compare equal but differ in what was set. The workers take a
    setting the flow process left unset from their own environment (as Prefect's Dask runner
    does); one entered with temporary_settings is sent, even at its default value, so a run
    after a run without it must not reuse the serialized form that lacks it."""
    default = get_current_settings().flows.default_retries
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address="127.0.0.1:0",
                      env={"PREFECT_FLOWS_DEFAULT_RETRIES": str(default + 2)}) as cluster:
        runner = task_runner(address=cluster.scheduler_address)
        left_unset = report_flow_retries.with_options(task_runner=runner)()
        with temporary_settings({PREFECT_FLOWS_DEFAULT_RETRIES: default}):
            entered = report_flow_retries.with_options(task_runner=runner)()
    assert left_unset == default + 2  # the workers' own
    assert entered == default


@flow(persist_result=False)
def one_report(label: str) -> tuple:
    return report.submit(label).result()


def test_a_cluster_the_flow_run_starts_is_closed_at_once_with_its_workers_logs_sent_and_no_process_left(monkeypatch):
    """The run's own cluster is closed without its workers' interpreter teardown
    (flows/dask_runner.py): what they logged still reaches the server, the run is Completed, and
    no worker process outlives the flow call."""
    import psutil

    monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")
    monkeypatch.setenv("GRAPH_BACKEND", "numpy")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    state = one_report.with_options(task_runner=task_runner("dask"))("own-cluster", return_state=True)
    # multiprocessing's resource tracker, started by this process's first worker spawn, stays
    # until the process ends: it is not a worker
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(p.cmdline())]

    assert state.is_completed()
    assert left == []
    task_run_id = state.result()[0]
    with get_client(sync_client=True) as client:
        deadline = time.monotonic() + 60  # the server stores what it was sent in batches
        while True:
            logs = client.read_logs(log_filter=LogFilter(task_run_id=LogFilterTaskRunId(any_=[task_run_id])))
            if any(log.message == "reporting own-cluster" for log in logs) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(task_run_id=ArtifactFilterTaskRunId(any_=[task_run_id])))
    assert any(log.message == "reporting own-cluster" for log in logs)
    assert len(artifacts) == 1


@task(cache_policy=NO_CACHE, persist_result=False)
def scheduler_address() -> str:
    from distributed import get_worker

    return get_worker().scheduler.address


@flow(persist_result=False)
def where_tasks_run() -> str:
    return scheduler_address.submit().result()


@flow(persist_result=False)
def submits_nothing() -> int:
    return 1


def _new_processes(before: set) -> list:
    import psutil

    return [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(p.cmdline())]


def _closes(cluster, before: set, seconds: float = 30) -> bool:
    """Whether the cluster is closed and its workers are gone within ``seconds``."""
    deadline = time.monotonic() + seconds
    while cluster.status.name != "closed" or _new_processes(before):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.fixture
def runner_started_early(monkeypatch):
    """A Dask runner of one CPU worker whose cluster is starting; the future of that cluster;
    and the child processes this test process had before."""
    import psutil

    monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")
    monkeypatch.setenv("GRAPH_BACKEND", "numpy")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    runner = task_runner("dask")
    runner.start_cluster_early()
    return runner, runner._early, before


def test_a_cluster_started_early_is_the_one_the_flow_run_uses_and_closes(runner_started_early):
    """start_cluster_early: the workers start while the flow run is created; the run's
    duplicate of the runner waits for that cluster at its first submit, runs its tasks there and
    closes it."""
    runner, early, before = runner_started_early
    state = where_tasks_run.with_options(task_runner=runner)(return_state=True)
    runner.discard_early_cluster()  # nothing left to discard: the run took it
    assert state.is_completed()
    assert state.result() == early.result().scheduler_address
    assert early.result().status.name == "closed"
    assert _new_processes(before) == []


def test_a_cluster_started_early_that_no_task_took_is_closed(runner_started_early):
    """A run that submits nothing, and a runner whose flow never ran, leave no worker behind:
    each cluster is closed once it has started, without holding up the caller."""
    runner, early, before = runner_started_early
    state = submits_nothing.with_options(task_runner=runner)(return_state=True)
    assert state.is_completed()
    assert _closes(early.result(timeout=120), before)
    unused = task_runner("dask")
    unused.start_cluster_early()
    early = unused._early
    unused.discard_early_cluster()  # while it starts
    assert _closes(early.result(timeout=120), before)


def test_the_projects_tasks_pickle_by_reference_and_its_flows_by_value_without_their_tasks():
    """What a submit sends for every task run (tasks/pickling.py): each task of the project
    pickles with the standard pickle, whose functions go by name only, and comes back as the same
    function; cloudpickle, Dask's fallback, sends no task function's code either. A flow's own
    function goes by value, with its tasks by reference inside it."""
    import pickle

    import cloudpickle

    from flows.bfs import bfs_flow
    from flows.mst import mst_flow
    from flows.pipeline import pipeline_flow
    from tasks import graph_tasks, partitioned_tasks

    found = [obj for module in (graph_tasks, partitioned_tasks) for obj in vars(module).values()
             if hasattr(obj, "submit") and hasattr(obj, "fn")]
    assert len(found) >= 9  # the seven pipeline tasks and the partitioned ones
    for obj in found:
        assert pickle.loads(pickle.dumps(obj)).fn is obj.fn, obj.name
        assert b"_make_function" not in cloudpickle.dumps(obj), obj.name  # cloudpickle's by-value marker
    for obj in (pipeline_flow, bfs_flow, mst_flow):
        assert cloudpickle.dumps(obj).count(b"_make_function") == 1, obj.name  # the flow's function only


def test_a_flow_loaded_from_its_deployment_entrypoint_unpickles_where_flows_is_not_on_the_path(tmp_path):
    """A deployment's run loads flows/mst.py by path, as module `mst`; a Dask scheduler and
    workers started elsewhere (GRAPH_DASK_ADDRESS) cannot import `mst`, so the flow goes by value."""
    import subprocess
    import sys

    import cloudpickle
    from prefect.flows import load_flow_from_entrypoint

    from tests.conftest import ROOT

    loaded = load_flow_from_entrypoint(str(ROOT / "flows" / "mst.py") + ":mst_flow")
    code = "import sys, cloudpickle; print(cloudpickle.loads(sys.stdin.buffer.read()).name)"
    done = subprocess.run([sys.executable, "-c", code], input=cloudpickle.dumps(loaded), capture_output=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and done.stdout.decode().split()[-1] == "mst", done.stderr.decode()[-500:]


def test_a_flow_served_or_deployed_from_python_gets_an_entrypoint_that_loads():
    """flow.serve / to_deployment build the entrypoint from the flow function's __qualname__."""
    from prefect.flows import load_flow_from_entrypoint

    from flows.mst import mst_flow
    from tests.conftest import ROOT

    deployment = mst_flow.to_deployment(name="from-python")

    assert deployment.entrypoint == "flows/mst.py:mst_flow"
    assert load_flow_from_entrypoint(str(ROOT / deployment.entrypoint)).name == "mst"
