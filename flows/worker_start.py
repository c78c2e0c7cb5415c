"""What a Dask worker of a cluster that a flow run starts does before it takes tasks (a Dask
preload, named by flows.runners.local_cluster): import the task modules, so that the first task
does not (on an H200 host `import prefect` alone takes ~2.7 s). A GPU worker's CUDA context is
created by dask-cuda's own preload (``dask_cuda.initialize --create-cuda-context``).

No warm-up of the kernels here: running the pipeline once on a small graph takes ~0.8 s on an
H200 host once the imports are done, about what it saves the first task run of a process
(a process's first run at Kron-24 is ~0.7 s slower than its second), whether the worker joins
after it or the first task runs beside it.

Imported by the worker before anything else of the project: it imports nothing heavy itself.
"""
from __future__ import annotations

import importlib

# the modules whose code the tasks of every flow run on a worker
TASK_MODULES = ("flows.dask_runner", "tasks.graph_tasks", "tasks.partitioned_tasks")


def dask_setup(worker) -> None:
    for name in TASK_MODULES:
        importlib.import_module(name)
    from flows.run_log import quiet_failures

    quiet_failures()  # the tasks' failures as the flow's process logs them
