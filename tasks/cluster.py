"""The Dask cluster of this machine, as a flow run's task runner (flows/runners.py) and a
partitioned run given no cluster (tasks/partitioned/driver.py) start it: a
``dask_cuda.LocalCUDACluster`` of one worker per GPU when the run computes on GPUs, else a
``distributed.LocalCluster`` of single-threaded worker processes. No Prefect here; distributed
and dask_cuda are imported when a cluster is asked for (dask_cuda fails to import or start on a
machine without a GPU, and the import costs every command half a second).
"""
from __future__ import annotations

import logging
import os

from kernels import backend as be
from tasks import settings


def cpu_workers() -> int:
    """Workers of a CPU cluster of this machine: GRAPH_DASK_WORKERS, else min(4, cores)."""
    return settings.whole_number("GRAPH_DASK_WORKERS", min(4, os.cpu_count() or 1))


def local_cluster(n_workers: int | None = None, backend: str | None = None, env: dict | None = None, **kwargs):
    """GPU workers when ``backend`` (else GRAPH_BACKEND, else auto) resolves to cupy, one per
    GPU (or ``n_workers`` of them); CPU workers otherwise, ``n_workers`` of them (default
    cpu_workers()), told to compute on NumPy. ``env``: variables every worker process gets, beside
    NCCL_NVLS_ENABLE=0 (NVLink multicast stays off for the NCCL communicators of partitioned
    runs; the ranks also set it themselves). Other keyword arguments go to the cluster."""
    # a free port, so that runs at the same time do not collide on 8787 (the dashboard is served
    # there when bokeh is installed; without it only Dask's health and metrics pages are)
    kwargs.setdefault("dashboard_address", "127.0.0.1:0")
    # Dask's INFO lines (each worker's start and stop, ~90 a run) tell the user nothing about
    # the run: WARNING and above, unless DASK_LOGGING__DISTRIBUTED says otherwise (the worker
    # processes read it when they import distributed)
    level = os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    logging.getLogger("distributed").setLevel(level.upper())
    env = {**(env or {}), "NCCL_NVLS_ENABLE": "0"}
    if be.resolve(backend) == "cupy":
        # Dask's own messages are small: TCP, whatever UCX may offer; the ranks' data goes
        # through NCCL
        kwargs.setdefault("protocol", "tcp")
        return _gpu_cluster(env, n_workers=n_workers, **kwargs)
    from distributed import LocalCluster

    # one thread per worker: the NumPy kernels are single-threaded, and a second thread would
    # only hold a second copy of a large graph in the same process. GRAPH_BACKEND=numpy: a
    # worker of a CPU cluster on a GPU machine would otherwise resolve auto to cupy.
    return LocalCluster(n_workers=n_workers or cpu_workers(), threads_per_worker=1,
                        env={**env, "GRAPH_BACKEND": "numpy"}, **kwargs)


def _gpu_cluster(env: dict, **kwargs):
    """A LocalCUDACluster whose workers get ``env`` too: LocalCUDACluster gives each worker an
    environment of CUDA_VISIBLE_DEVICES alone, in place of the one it was asked for (dask-cuda
    26.10). Merged into each worker's spec, it holds for a worker the nanny restarts as well."""
    from dask_cuda import LocalCUDACluster

    class Cluster(LocalCUDACluster):
        def new_worker_spec(self):
            spec = super().new_worker_spec()
            for worker in spec.values():
                worker["options"]["env"] = {**env, **worker["options"].get("env", {})}
            return spec

    return Cluster(**kwargs)


def cluster_workers(client) -> dict[str, dict]:
    """The workers the scheduler has now, by address, each with its identity (name, status, ...).
    Asked of the scheduler on every call: ``client.scheduler_info()`` fetches them but returns
    the client's cache, which its periodic refresh (every 2 s, without per-worker entries)
    can overwrite between that fetch and the return, so that it sometimes lists no worker."""
    return client.sync(client.scheduler.identity)["workers"]


def local_workers(backend: str | None = None) -> int:
    """Workers local_cluster() starts: one per GPU, else GRAPH_DASK_WORKERS or min(4, cores)."""
    if be.resolve(backend) == "cupy":
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    return cpu_workers()
