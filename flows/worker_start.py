"""What a Dask worker of a cluster that a flow run starts does before it takes tasks (a Dask
preload, named by flows.runners.local_cluster): import the task modules, and on a GPU worker,
in a thread meanwhile, create the CUDA context and, once the imports are done, warm the GPU up
(warm_up). Otherwise the first task pays all of it: on an H200 host `import prefect` alone takes
~2.7 s, the CUDA context a few tenths more, and a process's first pipeline run at Kron-24 ~0.8 s
more than its second. The worker joins the cluster once the imports are done; the warm-up may
still be on its way, beside the first task (a task that meets a kernel the warm-up has not
loaded yet loads it itself).

Imported by the worker before anything else of the project: it imports nothing heavy itself.
"""
from __future__ import annotations

import importlib
import logging
import os
import threading
import time

# the modules whose code the tasks of every flow run on a worker
TASK_MODULES = ("flows.dask_runner", "tasks.graph_tasks", "tasks.partitioned")

# the warm-up graph: Kronecker of 2**14 vertices and 2**18 edges, large enough for the level
# kernels and weight bands that large graphs use, done in a fraction of a second
WARM_UP_SCALE = 14


def warm_up(backend: str = "cupy") -> None:
    """Run the pipeline's work once (Parquet read, renumbering, CSR, BFS, spanning forest, both
    validations, result tables) on a small graph with the types most inputs have (int64 ids,
    float64 weights). On a GPU, a process's first use of each CuPy kernel loads its module and
    builds its launch code, and its first reads set up the pinned buffers, streams and memory
    pools: done here, as the worker starts, little of that lands on a flow's tasks."""
    import tempfile

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from data.generators import kronecker
    from kernels import backend as be
    from kernels.bfs import bfs
    from kernels.graph import build_graph
    from kernels.msf import minimum_spanning_forest
    from kernels.verify import verify_bfs, verify_forest
    from tasks.graph_tasks import bfs_table, forest_table, prepare_input

    src, dst, weight = kronecker(np, WARM_UP_SCALE)
    with tempfile.TemporaryDirectory(prefix="graph-warm-up-") as folder:
        path = os.path.join(folder, "edges.parquet")
        pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), path)
        prepared = prepare_input(path, "src", "dst", "weight", backend)
    edges = prepared.edges
    source = np.zeros(1, dtype=np.int64)
    result = bfs(build_graph(edges, False), source)
    forest = minimum_spanning_forest(edges)
    bfs_report = verify_bfs(edges.src, edges.dst, edges.n, source, result.distance, result.predecessor, False, None)
    forest_report = verify_forest(edges.src, edges.dst, edges.weight, edges.n, forest.edges)
    bfs_table(prepared, result), forest_table(prepared, forest)
    be.synchronize(be.module(backend))
    if any(bfs_report.values()) or any(forest_report.values()):
        raise AssertionError(f"the warm-up's results did not validate: {bfs_report} {forest_report}")


# what the GPU start-up thread did, for the worker's log and the tests: None while it runs
start_report: str | None = None
start_done = threading.Event()


def _start_gpu(imported: threading.Event) -> None:
    """The CUDA context at once, the warm-up once the task modules are imported (Prefect's
    first import in two threads at a time breaks its plugin set-up). A failure is logged and
    otherwise left for the first task to meet and report."""
    global start_report
    try:
        import cupy

        cupy.cuda.runtime.free(0)  # cudaFree(0): creates the device's primary context
        imported.wait()
        started = time.perf_counter()
        warm_up("cupy")
        start_report = f"warmed up in {time.perf_counter() - started:.2f} s"
    except Exception as exc:
        start_report = f"warm-up failed: {type(exc).__name__}: {exc}"
        logging.getLogger(__name__).warning("GPU %s", start_report)
    finally:
        start_done.set()


def dask_setup(worker) -> None:
    imported = threading.Event()
    if os.environ.get("GRAPH_WORKER_GPU") == "1":
        threading.Thread(target=_start_gpu, args=(imported,), name="gpu-start", daemon=True).start()
    try:
        for name in TASK_MODULES:
            importlib.import_module(name)
    finally:
        imported.set()
