"""Backend selection: NumPy on the host, CuPy on an NVIDIA GPU.

The backend is chosen once per run: an explicit name ("numpy" / "cupy"), else the environment
variable GRAPH_BACKEND, else "auto" (CuPy when a CUDA device is usable, NumPy otherwise).
Kernels never choose: they look at the module of the arrays they are given.
"""
from __future__ import annotations

import os

import numpy as np

BACKENDS = ("numpy", "cupy")
ENV_VAR = "GRAPH_BACKEND"


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run on this machine."""


def cupy_usable() -> bool:
    try:
        import cupy
    except Exception:
        return False
    try:
        return bool(cupy.cuda.is_available())
    except Exception:
        return False


def resolve(name: str | None = None) -> str:
    """Name of the backend to use: 'numpy' or 'cupy'."""
    given = name or os.environ.get(ENV_VAR, "").strip()
    # a name from the environment is named with its variable: the run's parameters do not show it
    where = f"{ENV_VAR}={given}: " if given and not name else ""
    name = (given or "auto").strip().lower()
    if name == "auto":
        return "cupy" if cupy_usable() else "numpy"
    if name not in BACKENDS:
        raise BackendUnavailable(f"{where}unknown backend {given!r}: choose numpy, cupy or auto")
    if name == "cupy" and not cupy_usable():
        raise BackendUnavailable(f"{where}backend 'cupy' requested but no usable CUDA device/CuPy install was found")
    return name


def module(name: str):
    """The array module (numpy or cupy) for a resolved backend name."""
    if name == "cupy":
        import cupy

        return cupy
    return np


def array_module(a):
    """numpy or cupy, whichever owns array ``a``."""
    if type(a).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def is_gpu(a) -> bool:
    return array_module(a) is not np


def to_host(a):
    """A NumPy copy of ``a`` (no copy when it already is one)."""
    if a is None or isinstance(a, np.ndarray):
        return a
    return a.get()


def to_backend(a, name: str):
    """``a`` as an array of backend ``name``."""
    if a is None:
        return None
    if name == "cupy":
        import cupy

        return cupy.asarray(a)
    return to_host(a)


def device_name(name: str) -> str:
    """Human-readable name of the device a backend computes on."""
    if name == "cupy":
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        label = props["name"]
        return label.decode() if isinstance(label, bytes) else str(label)
    import platform

    # platform.machine, not processor: on Linux processor() runs `uname -p` in a subprocess
    return f"CPU ({platform.machine()}, {os.cpu_count()} cores)"


def device_bus_id() -> str:
    """The PCI bus id of the GPU this process computes on: the same id from two processes means
    one physical GPU, whatever CUDA_VISIBLE_DEVICES numbered it in each."""
    import cupy

    return cupy.cuda.Device().pci_bus_id


def synchronize(xp) -> None:
    """Wait for queued device work (no-op on NumPy); call before stopping a timer."""
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


def count_true(mask) -> int:
    """True entries of a bool array. On a GPU through the ahead-of-time module: CuPy's own
    reductions over bool arrays are compiled at run time, over a second each."""
    if is_gpu(mask):
        from kernels import gpu_arrays

        return gpu_arrays.count_true(mask)
    return int(np.count_nonzero(mask))


def count_equal(a, b) -> int:
    """Places where two int32 or int64 arrays of one length and type hold the same value."""
    if is_gpu(a):
        from kernels import gpu_arrays

        return gpu_arrays.count_equal(a, b)
    return int(np.count_nonzero(a == b))


def count_at_least(values, low: int) -> int:
    """Entries of an int32 or int64 array at or above ``low``."""
    if is_gpu(values):
        from kernels import gpu_arrays

        return gpu_arrays.count_at_least(values, low)
    return int(np.count_nonzero(values >= low))


def count_ends_reached(distance, ends) -> int:
    """Entries of ``ends`` (vertex ids) whose ``distance`` is at least 0: with a search's
    distances and the edge list's sources, the edges it traversed."""
    if is_gpu(distance) and distance.dtype == np.int32:
        from kernels import gpu_arrays

        return gpu_arrays.count_ends_reached(distance, ends)
    return count_at_least(distance[ends], 0)


def bincount(values, length: int):
    """How often each of 0 .. length - 1 occurs in ``values`` (int64, all in range)."""
    if is_gpu(values):
        from kernels import gpu_arrays

        return gpu_arrays.bincount(values, length)
    return np.bincount(values, minlength=length)


def full(xp, n: int, value, dtype):
    """n copies of ``value`` in ``xp``'s memory (a number dtype)."""
    if xp is np:
        return np.full(n, value, dtype=dtype)
    from kernels import gpu_arrays

    return gpu_arrays.full(n, value, dtype)


def count_nonfinite(values, nan_only: bool = False) -> int:
    """NaN and infinite entries of a float array (NaN alone with ``nan_only``)."""
    if is_gpu(values):
        from kernels import gpu_arrays

        return gpu_arrays.count_nonfinite(values, nan_only)
    return int(np.count_nonzero(np.isnan(values) if nan_only else ~np.isfinite(values)))


def take(values, index):
    """values[index] for an int64 ``index`` whose entries are all in range."""
    if is_gpu(values):
        from kernels import gpu_arrays

        return gpu_arrays.take(values, index)
    return values[index]


def mask_counts(mask):
    """int64 counts of the True entries of a bool array before each place: len(mask) + 1 entries."""
    if is_gpu(mask):
        from kernels import gpu_arrays

        return gpu_arrays.mask_counts(mask)
    counts = np.zeros(mask.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask, out=counts[1:])
    return counts


def compress(values, mask, counts):
    """values[mask]; ``counts`` is mask_counts(mask)."""
    if is_gpu(values):
        from kernels import gpu_arrays

        return gpu_arrays.compress(values, mask, counts)
    return values[mask]


def scatter_min(target, index, values) -> None:
    """target[index[i]] = min(target[index[i]], values[i]) for every i, repeats included."""
    array_module(target).minimum.at(target, index, values)


def scatter_add(target, index, values) -> None:
    """target[index[i]] += values[i] for every i, repeats included."""
    array_module(target).add.at(target, index, values)


def device_memory_free() -> int:
    """Bytes CuPy can still allocate on the current GPU: the device's free memory plus what
    CuPy's pool holds unused, capped by the pool's limit when one is set."""
    import cupy

    pool = cupy.get_default_memory_pool()
    free = cupy.cuda.runtime.memGetInfo()[0] + pool.free_bytes()
    limit = pool.get_limit()
    return min(free, limit - pool.used_bytes()) if limit else free


def host_memory_available() -> int | None:
    """Bytes this process can still take from the host: the kernel's MemAvailable, capped by the
    control group's limit (a container's memory.max less its current use) where one is set;
    None where neither can be read (not Linux)."""
    found = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            current = int(f.read())
        if limit != "max":
            found.append(max(int(limit) - current, 0))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


# CuPy compiles every kernel, its own elementwise ones too, with -ftz=true: single-precision
# arithmetic, comparisons and conversions read a subnormal float32 as 0. So float32 weights are
# ordered by their bits (here, and in kernels/cuda/verify.cu's order_key on the GPU).

def float32_order_keys(weight):
    """int64 keys ordered as the float32 ``weight`` values are (-0.0 equal to +0.0), computed
    with integer operations only."""
    xp = array_module(weight)
    bits = weight.view(np.uint32).astype(np.int64)
    magnitude = bits & 0x7FFFFFFF
    return xp.where(bits >> 31 == 1, -magnitude, magnitude)

