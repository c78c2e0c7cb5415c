"""The CUDA runtime of the GPU backend: the compiled CUDA module, launch helpers and scratch
kept between calls. The drivers of each CUDA file launch through it: kernels/gpu_graph.py (CSR,
renumbering), gpu_bfs.py, gpu_msf.py, gpu_partitioned.py and kernels/parquet/'s gpu_*.py; this
module is imported only when arrays live on a GPU.

The module is the one compiled ahead of time (kernels/cuda/module.fatbin, see
kernels/cuda_module.py) where it matches the sources and has code for the device; otherwise the
sources are compiled with NVRTC at first use (cached by CuPy). module_origin() says which.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import cupy as cp
import numpy as np

from kernels.cuda_module import FATBIN, fatbin_choice
from kernels.cuda_source import EDGE_TYPES, WEIGHT_TYPES, name_expressions, source

THREADS = 256
_module = None
_symbols: dict = {}  # kernel() name -> symbol in the fatbin; empty under NVRTC (CuPy maps the names)
_origin = ""
_module_lock = threading.Lock()
_kernels: dict = {}


def _load_module():
    """(module, symbols, origin) for the current device. The fatbin is loaded here, not at the
    first launch, so that a driver which refuses it still leaves NVRTC to fall back on. The
    choice is made once per process, for the first device (the GPUs of one run are alike)."""
    choice = fatbin_choice(int(cp.cuda.Device().compute_capability))
    why = choice.why
    if choice.target is not None:
        module = cp.RawModule(path=str(FATBIN))
        try:
            module.module  # the property loads the file (cuModuleLoad)
        except cp.cuda.driver.CUDADriverError as e:
            why = f"the driver did not load {FATBIN.name}: {e}"
        else:
            return module, choice.symbols, f"fatbin {choice.target}"
    module = cp.RawModule(code=source(), options=("-std=c++17",), name_expressions=name_expressions())
    return module, {}, f"NVRTC ({why})"


def _ensure_module() -> None:
    global _module, _symbols, _origin
    if _module is None:
        cp.cuda.Device().use()  # loading the module is a driver call: this thread's context current
        _module, _symbols, _origin = _load_module()


def kernel(name: str):
    """A kernel of the module by name (templates as "name<type,...>"), loaded on first use."""
    found = _kernels.get(name)
    if found is None:
        with _module_lock:  # one load (or compilation) when the first kernels are asked for from several threads
            _ensure_module()
            found = _kernels[name] = _module.get_function(_symbols.get(name, name))
    return found


def module_origin() -> str:
    """Where this process's CUDA module came from: "fatbin sm_90" (prebuilt SASS), "fatbin
    compute_100" (prebuilt PTX the driver compiled) or "NVRTC (why the fatbin was not used)"."""
    with _module_lock:
        _ensure_module()
        return _origin


def weight_type(dtype) -> str:
    return WEIGHT_TYPES[np.dtype(dtype).name]


def edge_type(m: int) -> str:
    """Worklist edge indices: int32 while they fit, int64 beyond."""
    return EDGE_TYPES["int32" if m < 2**31 else "int64"]


def grid(work: int, threads: int = THREADS) -> tuple[int]:
    """Blocks for a grid-stride loop over `work` items: enough to fill the GPU, no more."""
    return (max(1, min((int(work) + threads - 1) // threads, sm_count() * 2048 // threads * 4)),)


_sm_count = None


def sm_count() -> int:
    global _sm_count
    if _sm_count is None:
        _sm_count = cp.cuda.Device().attributes["MultiProcessorCount"]
    return _sm_count


def launch(name: str, work: int, args: tuple, threads: int = THREADS) -> None:
    kernel(name)(grid(work, threads), (threads,), args)


# Scratch objects kept between calls (the BFS workspace: a benchmark searches from many roots).
# A search borrows one for its duration, so searches that run at once (source sets in a task
# runner's threads) never share one; at most one idle object is kept, and an algorithm that
# needs the memory for itself releases it first.
_idle_scratch: dict = {}
_scratch_lock = threading.Lock()


@contextmanager
def borrowed_scratch(key, make):
    """The idle scratch object for ``key`` (on this device), or a new one from ``make()``, owned
    by the caller until the block ends; then kept as the idle one."""
    key = (key, cp.cuda.Device().id)
    with _scratch_lock:
        found = _idle_scratch.pop(key, None)
        if found is None:
            _idle_scratch.clear()  # free another size's before allocating
    if found is None:
        found = make()
    try:
        yield found
    finally:
        with _scratch_lock:
            _idle_scratch.clear()
            _idle_scratch[key] = found


def release_scratch() -> None:
    """Return the idle scratch arrays to CuPy's pool."""
    with _scratch_lock:
        _idle_scratch.clear()
