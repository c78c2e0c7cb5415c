"""Memory admission: a graph is refused before any upload or decode when its working set
(kernels/footprint.py, counted array by array) exceeds what the GPU or the host has free, and a
GPU that runs out anyway is reported in one line that says what to do. Refusals are
tasks.errors.DeviceMemoryError and HostMemoryError naming the input."""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from kernels import backend as be
from kernels.footprint import gpu_bytes, host_bytes
from tasks import settings
from tasks.errors import DeviceMemoryError, HostMemoryError


@contextmanager
def device_memory_guard(path: str, edges: int | None = None):
    """Turn CuPy's out-of-memory error into one line that says what to do."""
    try:
        yield
    except Exception as exc:
        if type(exc).__name__ != "OutOfMemoryError":
            raise
        on = f" on {edges} edges" if edges is not None else ""
        raise DeviceMemoryError(
            f"{path}: the GPU ran out of memory{on} ({exc}); "
            "rerun with --backend numpy (GRAPH_BACKEND=numpy) to compute on the CPU"
        ) from None


def check_device_memory(path: str, edges: int, vertices: int | None = None, weight_dtype=np.float64,
                        algorithms=("bfs", "msf"), directed: bool = False) -> None:
    """Refuse, before any upload, a graph whose working set exceeds the GPU's free memory
    (kernels/footprint.py counts it array by array; ``vertices`` is an upper bound, from the
    footers' id range when they have one)."""
    weight_bytes = np.dtype(weight_dtype).itemsize if weight_dtype is not None else 0
    needed = gpu_bytes(edges, vertices, weight_bytes, algorithms, directed)
    free = be.device_memory_free()
    if needed > free:
        raise DeviceMemoryError(
            f"{path}: {edges} edges need about {needed / 2**30:.2f} GiB of GPU memory, "
            f"{free / 2**30:.2f} GiB is free; rerun with --backend numpy (GRAPH_BACKEND=numpy) "
            "to compute on the CPU"
        )


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


def check_host_memory(path: str, edges: int, algorithms=("bfs", "msf")) -> None:
    """Refuse, before any column is decoded, a NumPy run whose measured peak per edge
    (kernels/footprint.py host_bytes) exceeds the memory it may take: GRAPH_HOST_MEMORY_LIMIT
    bytes where set, else what the host (or its container) has available."""
    limit = settings.whole_number("GRAPH_HOST_MEMORY_LIMIT", 0)
    available = limit or be.host_memory_available()
    needed = host_bytes(edges, algorithms)
    if available is not None and needed > available:
        where = "GRAPH_HOST_MEMORY_LIMIT allows" if limit else "is available"
        raise HostMemoryError(
            f"{path}: {edges:,} edges need about {_bytes(needed)} of host memory, "
            f"{_bytes(available)} {where}; run on a GPU (--backend cupy), split the graph "
            "over workers (--partitions N), or on a machine with more memory"
        )
