"""What a Dask worker of a cluster that a flow run starts does before it takes tasks (a Dask
preload, named by flows.runners.local_cluster): import the task modules, and on a GPU worker
create the CUDA context in a thread meanwhile. Otherwise the first task pays both: on an H200
host `import prefect` alone takes ~2.7 s, the CUDA context a few tenths more. The worker joins
the cluster once the imports are done; the context may still be on its way (the first task
waits for it inside CUDA, where it would have created it).

Imported by the worker before anything else of the project: it imports nothing heavy itself.
"""
from __future__ import annotations

import importlib
import os
import threading

# the modules whose code the tasks of every flow run on a worker
TASK_MODULES = ("flows.dask_runner", "tasks.graph_tasks", "tasks.partitioned")


def _create_cuda_context() -> None:
    try:
        import cupy

        cupy.cuda.runtime.free(0)  # cudaFree(0): creates the device's primary context
    except Exception:  # the first task meets, and reports, whatever is wrong with the GPU
        pass


def dask_setup(worker) -> None:
    if os.environ.get("GRAPH_WORKER_GPU") == "1":
        threading.Thread(target=_create_cuda_context, name="cuda-context", daemon=True).start()
    for name in TASK_MODULES:
        importlib.import_module(name)
