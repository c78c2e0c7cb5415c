"""The task runner ``auto`` resolves to for a run's input: a choice of kind only ("threads" or
"dask"), made without importing Prefect, so that the command line's device-start thread can
make it beside the main thread's imports (two threads importing Prefect's modules at once can
meet one half-initialized). flows/runners.py builds the runner of that kind."""
from __future__ import annotations

from kernels import backend as be
from tasks import cluster, settings

# Below this many input edges `auto` runs tasks in threads. Measured with
# `python -m benchmarks.runner_threshold` on 2 cores (benchmarks/README.md): a pipeline run with
# two source sets took 14.9 s in threads and 27.9 s on two Dask workers at Kron-18 (4.2 M
# edges), 42 s and 74 s at Kron-19 (8.4 M), 104 s and 88 s at Kron-20 (16.8 M): below that,
# starting worker processes and moving products between them costs more than running the
# searches and the forest in parallel processes saves. With one worker (one GPU, one core)
# Dask only adds its start, so `auto` asks for it only when there are several.
DASK_MIN_EDGES = 16_000_000
# ... and on the CPU only with this many workers. Measured again on 2 cores, quiet, medians of 3
# with the runners taking turns (benchmarks/results/cpu-runner-threshold-2026-12-02.json):
# threads 9.1 s against Dask 12.3 s at Kron-20, and threads faster at Kron-21 too. With two
# workers on two cores, the searches and the forest already run at once in threads (the NumPy
# kernels release the GIL), and Dask only adds its worker processes' start and the moves of the
# graph between them. (The 2026-11-30 figures above were single runs at a load average of 7.)
MIN_CPU_WORKERS = 4


def dask_min_edges() -> int:
    return settings.whole_number("GRAPH_DASK_MIN_EDGES", DASK_MIN_EDGES)


def resolve_auto(kind: str, plan) -> str:
    """``auto``: Dask for graphs of at least dask_min_edges() edges (the rows of the run's input
    plan, tasks.parquet.dataset.plan.InputPlan: with a filter, the rows it keeps) when this
    machine has workers enough to give it (several GPUs; on the CPU, MIN_CPU_WORKERS); threads
    otherwise."""
    if kind != "auto":
        return kind
    if plan.rows < dask_min_edges():
        return "threads"
    enough = 2 if be.resolve(None) == "cupy" else MIN_CPU_WORKERS
    return "dask" if cluster.local_workers() >= enough else "threads"
