"""A GPU run's device started while the command imports Prefect and the flow: CuPy imported,
the device's context created with a first allocation from its memory pool, and the project's
CUDA module loaded (kernels/gpu.py), on a thread of their own; where the page reader will
read the input, also what its first read pays once (nvCOMP's library, its pinned buffers:
tasks.parquet.read.page_reader.prepare_first_read). A fresh process otherwise pays these at
its first task's first array, after its imports: about a second of a run in which the kernels
take a tenth of that.

Only where this process runs the tasks (the thread runner, one partition) on CuPy; with Dask
the workers own the devices, and a context here would only hold memory on one of them. What
the thread meets (no CuPy, no device, a module the driver refuses) is left for the run's own
first use of the device, which meets it again and reports it.
"""
from __future__ import annotations

import threading


def start_early(backend: str | None, runner: str, partitions, plan, reader: str = "auto") -> threading.Thread | None:
    """The thread that starts the device for a run of ``runner`` ("auto", "threads" or "dask")
    over ``plan`` (the command's InputPlan) on ``backend`` (None: $GRAPH_BACKEND, else what
    this machine has) with the Parquet reader ``reader`` (auto, gpu or host), or None where the
    run's tasks run elsewhere or on NumPy."""
    if runner == "dask" or backend == "numpy" or partitions != 1:  # ("auto" may give several)
        return None
    # imported here, not by the thread: the flow's imports on this thread import it too, and a
    # module imported by two threads at once may be met half-initialized
    from tasks.parquet.read import page_reader  # noqa: F401
    thread = threading.Thread(target=_start, args=(backend, runner, plan, reader), name="device-start", daemon=True)
    thread.start()
    return thread


def _start(backend: str | None, runner: str, plan, reader: str) -> None:
    try:
        from kernels import backend as be

        if be.resolve(backend) != "cupy":
            return
        if runner == "auto":  # the runner the command will choose (Dask on several GPUs for a large graph)
            from flows.runner_choice import resolve_auto  # (flows.runners would import Prefect here)

            if resolve_auto(runner, plan) != "threads":
                return
        import cupy

        cupy.empty(1)
        from kernels import gpu

        gpu.module_origin()
        if reader != "host":
            from tasks.parquet.read.page_reader import prepare_first_read

            prepare_first_read(plan)
    except Exception:  # noqa: BLE001 (the run's first use of the device reports it)
        return
