"""Where the compute tasks run, chosen when a flow runs, never when it is imported.

- ``dask`` (the default): a ``dask_cuda.LocalCUDACluster`` (one worker per GPU) when a GPU is
  usable, else a ``distributed.LocalCluster`` of single-threaded worker processes; the cluster is
  created by the flow run and closed with it.
- an address (``tcp://host:8786``): an existing Dask scheduler; its workers need this checkout
  on their PYTHONPATH and PREFECT_API_URL pointing at the same server as the flow.
- ``threads``: tasks run in the flow's own process, for small graphs and quick runs.

The environment picks the default (deployments set it per work pool or job):
GRAPH_TASK_RUNNER=dask|threads, GRAPH_DASK_ADDRESS, GRAPH_DASK_WORKERS (LocalCluster size).
"""
from __future__ import annotations

import os

from prefect.task_runners import ThreadPoolTaskRunner
from prefect_dask import DaskTaskRunner

from kernels import backend as be

RUNNERS = ("dask", "threads")


def local_cluster(**kwargs):
    """The Dask cluster of this machine: GPU workers when there is a GPU. Imported here, inside
    the flow run, because dask_cuda fails to import or start on a machine without one."""
    kwargs.setdefault("dashboard_address", None)  # no port to collide with other runs
    if be.cupy_usable():
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(**kwargs)
    from distributed import LocalCluster

    workers = int(os.environ.get("GRAPH_DASK_WORKERS") or min(4, os.cpu_count() or 1))
    # one thread per worker: the NumPy kernels are single-threaded, and a second thread would
    # only hold a second copy of a large graph in the same process
    return LocalCluster(n_workers=workers, threads_per_worker=1, **kwargs)


def task_runner(kind: str | None = None, address: str | None = None):
    """The task runner for one flow run. An address argument means that cluster; otherwise the
    kind (argument, else GRAPH_TASK_RUNNER, else dask); a Dask run uses GRAPH_DASK_ADDRESS if
    set, else a cluster of this machine."""
    if address:
        return DaskTaskRunner(address=address)
    kind = kind or os.environ.get("GRAPH_TASK_RUNNER") or "dask"
    if kind not in RUNNERS:
        raise ValueError(f"unknown task runner {kind!r} (choose from {', '.join(RUNNERS)})")
    if kind == "threads":
        return ThreadPoolTaskRunner()
    address = os.environ.get("GRAPH_DASK_ADDRESS")
    return DaskTaskRunner(address=address) if address else DaskTaskRunner(cluster_class=local_cluster)


def uses_dask(runner) -> bool:
    return isinstance(runner, DaskTaskRunner)
