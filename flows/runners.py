"""Where the compute tasks run, chosen when a flow runs, never when it is imported.

- ``threads``: tasks run in threads of the flow's own process. The default for flows called
  from Python (a script or a notebook) and for deployment runs: nothing is started, and a
  script without an ``if __name__ == "__main__":`` guard is not re-run by worker processes.
- ``dask``: a ``dask_cuda.LocalCUDACluster`` (one worker per GPU) when a GPU is usable, else a
  ``distributed.LocalCluster`` of single-threaded worker processes; the cluster is created by
  the flow run and closed with it.
- an address (``tcp://host:8786``): an existing Dask scheduler; its workers need this checkout
  on their PYTHONPATH and PREFECT_API_URL pointing at the same server as the flow.
- ``auto`` (the command line's default): threads below ``dask_min_edges()`` input edges, Dask
  above when the machine has workers enough to give Dask (several GPUs, or at least
  ``MIN_CPU_WORKERS`` CPU workers), decided from the run's input plan (the Parquet footers) by
  flows/runner_choice.py, before the run starts, and handed to it (flows.inputs.handed_over).

The environment picks the default (deployments set it per work pool or job):
GRAPH_TASK_RUNNER=dask|threads, GRAPH_DASK_ADDRESS, GRAPH_DASK_WORKERS (LocalCluster size),
GRAPH_DASK_MIN_EDGES (the ``auto`` threshold). A partitioned run (flows' ``partitions`` > 1)
runs one rank per worker of the flow's Dask cluster.

A Dask runner's task runs reuse their worker thread's Prefect settings and API client
(flows/dask_runner.py): rebuilt for every task run, they cost each hop between tasks ~0.1-0.2 s.
A cluster of this machine's workers import the task modules as they start (flows/worker_start.py),
and one that a flow run started is closed without waiting for its worker processes' teardown.
prefect_dask and distributed are imported only when a Dask runner is asked for: they cost about
half a second of every command's start.
"""
from __future__ import annotations

import importlib.util
import logging
import os
from contextlib import contextmanager

from prefect.task_runners import ThreadPoolTaskRunner

from tasks import artifacts, cluster
from tasks.parameters import RUNNERS

def local_cluster(**kwargs):
    """The Dask cluster of this machine for a flow run (tasks.cluster.local_cluster): its workers
    report task runs to the server this flow run uses (without PREFECT_API_URL each worker
    process would start a temporary server of its own) and import the task modules as they
    start, not in the first task (flows/worker_start.py)."""
    kwargs["env"] = {"PREFECT_API_URL": _api_url(), **kwargs.get("env", {})}
    kwargs.setdefault("preload", ["flows.worker_start"])
    return cluster.local_cluster(**kwargs)


def _api_url() -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return str(client.api_url).rstrip("/")


class _NoDashboardLink(logging.Filter):
    """prefect-dask logs the scheduler's dashboard link; without bokeh that page is a 404."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("The Dask dashboard is available")


def task_runner(kind: str | None = None, address: str | None = None):
    """The task runner for one flow run. An address argument means that cluster; otherwise the
    kind (argument, else GRAPH_TASK_RUNNER, else dask if GRAPH_DASK_ADDRESS is set, else
    threads); a Dask run uses GRAPH_DASK_ADDRESS if set, else a cluster of this machine.
    ``auto`` is resolved by the command line, which knows the input's size; here it means
    threads."""
    if address:
        return _dask_runner(address=address)
    if not kind and os.environ.get("GRAPH_TASK_RUNNER", "").strip():
        kind = os.environ["GRAPH_TASK_RUNNER"].strip()
        if kind not in RUNNERS:
            raise ValueError(f"GRAPH_TASK_RUNNER={kind}: choose {', '.join(RUNNERS)}")
    kind = kind or ("dask" if os.environ.get("GRAPH_DASK_ADDRESS") else "threads")
    if kind not in RUNNERS:
        raise ValueError(f"unknown task runner {kind!r} (choose from {', '.join(RUNNERS)})")
    if kind != "dask":
        return ThreadsTaskRunner()
    address = os.environ.get("GRAPH_DASK_ADDRESS")
    return _dask_runner(address=address) if address else _dask_runner(cluster_class=local_cluster)


def _dask_runner(**kwargs):
    from flows.dask_runner import ReusingDaskTaskRunner

    if importlib.util.find_spec("bokeh") is None:
        logging.getLogger("prefect.task_runner.dask").addFilter(_NoDashboardLink())
    return ReusingDaskTaskRunner(**kwargs)


class ThreadsTaskRunner(ThreadPoolTaskRunner):
    """Prefect's thread pool, closed once the artifacts the run published from this process are
    on the server: the run's summary is sent while Prefect records the run's end, and the flow
    call returns after both."""

    waits_for_published_artifacts = True  # tasks.artifacts.publish_summary relies on it

    def __exit__(self, *exc_info) -> None:
        super().__exit__(*exc_info)
        artifacts.wait_until_published()


class ChosenAtRunStart(ThreadsTaskRunner):
    """The flows' own task runner: task_runner() as the environment says when a run starts, not
    when the flow's module was imported. Prefect enters a duplicate of a flow's task runner for
    each run, so the choice is made there: a script or notebook that sets GRAPH_TASK_RUNNER
    after its imports gets what it set, and a bad value fails the run, not the import."""

    def duplicate(self):
        try:
            return task_runner()
        except ValueError as exc:  # raised here it would escape the run and leave it Running
            return _Refused(exc)


class _Refused(ThreadsTaskRunner):
    """The runner of a run whose environment names a runner that does not exist: its first task
    fails with that error, so the run ends Failed with it as its message."""

    def __init__(self, error: ValueError):
        super().__init__()
        self.error = error

    def submit(self, *args, **kwargs):
        raise self.error


def uses_dask(runner) -> bool:
    return not isinstance(runner, ThreadPoolTaskRunner)


@contextmanager
def cluster_started_early(runner):
    """While the flow run is created inside this block, the cluster a Dask runner would start
    for it is already starting (flows.dask_runner.ReusingDaskTaskRunner.start_cluster_early);
    one the run did not take is closed on the way out."""
    if not uses_dask(runner):
        yield
        return
    runner.start_cluster_early()
    try:
        yield
    finally:
        runner.discard_early_cluster()
