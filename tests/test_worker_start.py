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

    from flows.runners import _api_url, local_cluster

    monkeypatch.setenv("GRAPH_BACKEND", "cupy")
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)  # so that it is not inherited from here
    with local_cluster(n_workers=1, CUDA_VISIBLE_DEVICES="0") as cluster, Client(cluster) as client:
        seen = client.run(worker_view)
    assert list(seen.values()) == [(_api_url(), "0", True)]
