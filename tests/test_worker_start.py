"""What the workers of a cluster that a flow run starts get as they start (flows/runners.py,
flows/worker_start.py)."""
import importlib.util
import os
import sys

import pytest

from kernels import backend as be


def worker_view() -> tuple:
    return os.environ.get("PREFECT_API_URL"), os.environ.get("NCCL_NVLS_ENABLE"), "tasks.graph_tasks" in sys.modules


@pytest.mark.skipif(not be.cupy_usable() or importlib.util.find_spec("dask_cuda") is None,
                    reason="a GPU worker needs a usable GPU and dask-cuda")
def test_gpu_workers_get_the_flows_server_nvlink_multicast_off_and_the_task_modules(monkeypatch, prefect_server):
    """LocalCUDACluster gives each worker an environment of CUDA_VISIBLE_DEVICES alone; the
    flow's cluster adds the server the flow reports to and NCCL_NVLS_ENABLE=0."""
    from distributed import Client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.runners import local_cluster

    url = os.environ["PREFECT_API_URL"]
    monkeypatch.setenv("GRAPH_BACKEND", "cupy")
    for name in ("NCCL_NVLS_ENABLE", "PREFECT_API_URL"):  # so that the workers do not inherit them
        monkeypatch.delenv(name, raising=False)
    with temporary_settings(updates={PREFECT_API_URL: url}):
        with local_cluster(n_workers=1, CUDA_VISIBLE_DEVICES="0") as cluster, Client(cluster) as client:
            seen = client.run(worker_view)
    assert list(seen.values()) == [(url, "0", True)]
