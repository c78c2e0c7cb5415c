"""Artifacts published from a task's process in the background (tasks/artifacts.py), read back
from a real Prefect server: they belong to the task run that published them, arrive in the
order published, a failed call does not stop the ones after it, and the sender does not use
the caller's API client (the task engine closes that one when its task run ends)."""
import json
import logging

import pytest
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.context import get_run_context

from tasks import artifacts
from tasks.cluster import cluster_workers

pytestmark = pytest.mark.usefixtures("prefect_server")


@task(cache_policy=NO_CACHE, persist_result=False)
def publishing_task() -> dict:
    created = artifacts.publish(create_progress_artifact, 0.0, key="order-progress", description="step 0")
    for step in range(1, 6):
        artifacts.publish(lambda step=step: update_progress_artifact(created.result(), 20.0 * step,
                                                                      description=f"step {step}"))

    def failing():
        raise RuntimeError("the server said no")

    failed = artifacts.publish(failing)
    after = artifacts.publish(create_markdown_artifact, "# after the failure", key="after-failure")
    callers_client = get_client(sync_client=True)
    senders_client = artifacts.publish(lambda: get_client(sync_client=True))
    get_run_logger().info("published")
    assert artifacts.wait_until_published()
    return {"task_run_id": str(get_run_context().task_run.id), "failed": repr(failed.exception()),
            "after": after.result(), "same_client": senders_client.result() is callers_client}


@flow(persist_result=False)
def publishing_flow() -> dict:
    return publishing_task()


def test_published_artifacts_belong_to_their_task_run_in_order_past_a_failed_call(caplog):
    with caplog.at_level(logging.WARNING, logger="tasks.artifacts"):
        result = publishing_flow()

    assert result["failed"] == "RuntimeError('the server said no')"
    assert "could not publish an artifact" in caplog.text and "the server said no" in caplog.text
    assert not result["same_client"]
    with get_client(sync_client=True) as client:
        progress = client.read_latest_artifacts()
        by_key = {a.key: a for a in progress if a.key in ("order-progress", "after-failure")}
    assert by_key["order-progress"].data == 100.0  # the updates ran after the creation, in order
    assert by_key["order-progress"].description == "step 5"
    assert str(by_key["order-progress"].task_run_id) == result["task_run_id"]
    assert str(by_key["after-failure"].task_run_id) == result["task_run_id"]
    assert by_key["after-failure"].latest_id == result["after"]


def test_waiting_with_nothing_published_returns_at_once():
    assert artifacts.wait_until_published(timeout=0.0)


def test_a_wait_that_times_out_says_so_and_the_call_still_finishes(caplog):
    import threading

    release = threading.Event()
    held = artifacts.publish(release.wait)  # a call the server has not answered yet
    with caplog.at_level(logging.WARNING, logger="tasks.artifacts"):
        assert not artifacts.wait_until_published(timeout=0.05)
    assert "1 artifact(s) not yet on the server" in caplog.text
    release.set()
    assert artifacts.wait_until_published(timeout=10) and held.result() is True


@task(cache_policy=NO_CACHE, persist_result=False)
async def async_publishing_task() -> str:
    published = artifacts.publish(create_markdown_artifact, "# from an async task", key="from-async-task")
    assert artifacts.wait_until_published()
    return str(published.result())


@flow(persist_result=False)
async def async_publishing_flow() -> str:
    return await async_publishing_task()


def test_an_async_task_publishes_its_artifact():
    """In an async task's context prefect.artifacts' functions return a coroutine: the sender
    runs it rather than keeping it unawaited as the artifact's id."""
    import asyncio

    artifact_id = asyncio.run(async_publishing_flow())

    with get_client(sync_client=True) as client:
        published = {a.key: a for a in client.read_latest_artifacts()}
    assert str(published["from-async-task"].latest_id) == artifact_id


@pytest.mark.parametrize("runner", ["threads", "dask", "prefect's own thread pool"])
def test_the_runs_summary_is_on_the_server_when_the_flow_call_returns_even_from_a_slow_server(
        runner, tmp_path, monkeypatch):
    """The summary is sent in the background while Prefect records the run's end; the task
    runner waits for it as it closes, and a flow given a runner of Prefect's (not one of
    flows/runners.py, which wait) waits for it itself. A server that takes a second per
    artifact shows whether the call returns before it."""
    import time

    from distributed import LocalCluster
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.mst import mst_flow
    from flows.runners import task_runner
    real = artifacts.create_table_artifact

    def slow_server(*args, **kwargs):
        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(artifacts, "create_table_artifact", slow_server)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster:
        chosen = {"threads": lambda: task_runner("threads"),
                  "dask": lambda: task_runner(address=cluster.scheduler_address),
                  "prefect's own thread pool": ThreadPoolTaskRunner}[runner]()
        state = mst_flow.with_options(task_runner=chosen)("data/graph.parquet", output=str(tmp_path), return_state=True)
        with get_client(sync_client=True) as client:
            found = client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))
    assert state.is_completed()
    summary = [a for a in found if a.key == "mst-summary"]
    assert len(summary) == 1 and summary[0].task_run_id is None  # the flow run's own
    rows = json.loads(summary[0].data) if isinstance(summary[0].data, str) else summary[0].data
    assert {"quantity": "validation", "value": "passed"} in rows



class SlowServer:
    """An artifact call that the "server" answers when released, or after five seconds."""

    release = None
    sent = None


@task(cache_policy=NO_CACHE, persist_result=False)
def publishes_to_a_server_that_has_not_answered() -> None:
    SlowServer.sent = artifacts.publish(SlowServer.release.wait, 5.0)


@task(cache_policy=NO_CACHE, persist_result=False)
def runs_next(_) -> bool:
    """Whether this task run started while the previous one's artifact was still unsent."""
    unsent = not SlowServer.sent.done()
    SlowServer.release.set()
    return unsent


def test_a_task_on_a_dask_worker_ends_without_waiting_for_its_artifacts():
    """Prefect enters a copy of the flow's task runner around every task run on a worker: it
    must not hold the task run until the task's artifacts are sent. The next task run starts
    while the first one's artifact is still unanswered; the run's last task and the flow's own
    runner are what wait for it."""
    import threading

    from distributed import LocalCluster

    from flows.runners import task_runner

    SlowServer.release = threading.Event()

    @flow(persist_result=False)
    def two_tasks() -> bool:
        return runs_next.submit(publishes_to_a_server_that_has_not_answered.submit()).result()

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster:
        assert two_tasks.with_options(task_runner=task_runner(address=cluster.scheduler_address))() is True
    assert SlowServer.sent.result() is True  # answered by the release, not by the timeout



def _slow_markdown_on(address: str):
    """A Dask worker plugin: on the worker at ``address``, each markdown artifact of the graph
    tasks reaches the server three seconds after it is published (a busy server)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class SlowMarkdown(WorkerPlugin):
        def setup(self, worker):
            if worker.address != address:
                return
            import time

            from tasks import graph_tasks

            real = graph_tasks.create_markdown_artifact

            def busy_server(*args, **kwargs):
                time.sleep(3.0)
                return real(*args, **kwargs)

            graph_tasks.create_markdown_artifact = busy_server

    return SlowMarkdown()


def test_every_workers_artifacts_are_on_the_server_when_a_run_on_a_running_cluster_ends(tmp_path):
    """The MST recipe on a running cluster of two worker processes, the forest on one and the
    write on the other: the forest's msf-rounds table, still on its way from the first worker's
    sender when the write starts, is on the server when the flow call returns (the cluster is
    not the run's, so nothing else waits for its workers)."""
    import time

    import dask
    from distributed import Client, LocalCluster
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from flows.common import finish
    from flows.runners import task_runner
    from tasks.graph_tasks import load_edges, spanning_forest, validate_forest, write_results
    from tasks.parquet.dataset.plan import plan_input

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        forest_worker, write_worker = sorted(cluster_workers(client))
        client.register_plugin(_slow_markdown_on(forest_worker))

        @flow(persist_result=False)
        def mst_on_two_workers(input: str, output: str) -> dict:
            with dask.annotate(workers=[write_worker], allow_other_workers=False):
                prepared = load_edges.submit(plan_input(input), "numpy", ("msf",))
            with dask.annotate(workers=[forest_worker], allow_other_workers=False):
                forest = spanning_forest.submit(prepared)
            with dask.annotate(workers=[write_worker], allow_other_workers=False):
                check = validate_forest.submit(prepared, forest)
                summary = write_results.submit(prepared, [], [f"{output}/mst_edges.parquet"], forest, output,
                                               checks=[check])
            return finish("mst", input, summary, time.perf_counter(), [prepared, forest, check, summary])

        state = mst_on_two_workers.with_options(task_runner=task_runner(address=cluster.scheduler_address))(
            "data/graph.parquet", str(tmp_path), return_state=True)
        with get_client(sync_client=True) as prefect:
            found = prefect.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))
    assert state.is_completed(), state.message
    assert {"msf-rounds", "msf-validation"} <= {a.key for a in found}
