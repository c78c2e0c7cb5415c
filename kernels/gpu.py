"""CuPy side of the GPU backend: the compiled CUDA module, launch helpers, the CSR build and
renumbering. kernels/gpu_bfs.py and kernels/gpu_msf.py launch the searches; this module is
imported only when arrays live on a GPU.

The module is the one compiled ahead of time (kernels/cuda/module.fatbin, see
kernels/cuda_module.py) where it matches the sources and has code for the device; otherwise the
sources are compiled with NVRTC at first use (cached by CuPy). module_origin() says which.

CSR build (kernels/cuda/graph.cu): count degrees with atomics, exclusive prefix sum (int64
offsets), then scatter with per-vertex atomic cursors, reading the edge list once and writing
both arcs of an edge in the same pass. Rows come out in arrival order, not input order.
Renumbering: a presence bitmap over the id range, its rank, and a rewrite of the int32 offsets
in place (kernels/graph.py explains when the range is narrow enough, and the sorted fallback).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import cupy as cp
import numpy as np

from kernels.cuda_module import FATBIN, fatbin_choice
from kernels.cuda_source import EDGE_TYPES, ID_TYPES, WEIGHT_TYPES, name_expressions, source, template
from kernels.structures import CSR, check_vertex_count

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


# ---- CSR ------------------------------------------------------------------------------------

BOTH, FORWARD, BACKWARD = 0, 1, 2


def _csr(src, dst, n: int, mode: int, skip_loops: bool) -> CSR:
    src = src.astype(cp.int32, copy=False)
    dst = dst.astype(cp.int32, copy=False)
    m = int(src.shape[0])
    degree = cp.zeros(n + 1, dtype=cp.int64)
    args = (src, dst, np.int64(m), np.int32(mode), np.int32(skip_loops))
    if m:
        launch("csr_count", m, args + (degree,))
    indptr = cp.cumsum(degree)
    del degree
    indices = cp.empty(int(indptr[-1]), dtype=cp.int32)
    if indices.shape[0]:
        cursor = indptr[:-1].copy()
        launch("csr_fill", m, args + (cursor, indices))
    return CSR(indptr=indptr, indices=indices, n=n)


def csr_symmetric(src, dst, n: int) -> CSR:
    """CSR of an undirected edge list: both arcs of every edge, self-loops left out."""
    return _csr(src, dst, n, BOTH, True)


def csr_one_way(src, dst, n: int) -> CSR:
    """CSR of the arcs src -> dst, self-loops left out."""
    return _csr(src, dst, n, FORWARD, True)


def csr_scatter(rows, cols, n: int) -> CSR:
    """CSR of the arcs rows[i] -> cols[i], every one kept (kernels.graph.build_csr's GPU form)."""
    return _csr(rows, cols, n, FORWARD, False)


# ---- renumbering ----------------------------------------------------------------------------

def id_bitmap(span: int):
    return cp.zeros((span + 31) // 32, dtype=cp.uint32)


def id_mark(ids, lo: int, bits, offsets) -> None:
    """Mark a chunk's ids present and write their offsets from lo (int32) into `offsets`."""
    name = ID_TYPES.get(ids.dtype.name)
    if name is None:
        ids, name = ids.astype(cp.int64), ID_TYPES["int64"]
    m = int(ids.shape[0])
    if m:
        launch(template("ids_mark", name), m, (ids, np.int64(m), np.uint64(lo % 2**64), bits, offsets))


def id_finish(bits, lo: int, span: int, dtype, arrays):
    """Dense numbers for the marked offsets in `arrays` (in place) and the ids, ascending."""
    words = int(bits.shape[0])
    counts = cp.empty(words, dtype=cp.int32)
    launch("ids_word_counts", words, (bits, np.int64(words), counts))
    prefix = cp.cumsum(counts, dtype=cp.int64)
    del counts
    count = int(prefix[-1])
    dtype = np.dtype(dtype)
    name = ID_TYPES.get(dtype.name, ID_TYPES["int64"])
    ids = cp.empty(count, dtype=dtype if dtype.name in ID_TYPES else np.int64)
    launch(template("ids_list", name), words, (bits, np.int64(words), prefix, np.uint64(lo % 2**64), ids))
    if count < span:  # some ids of the range are absent: offsets -> ranks
        for a in arrays:
            launch("ids_rank", a.shape[0], (a, np.int64(a.shape[0]), bits, prefix))
    return ids.astype(dtype, copy=False)


def renumber_sorted(src, dst):
    """Renumbering by sorting, for ids too spread for a bitmap: the distinct ids of each column,
    then of both, then a binary search per edge. Peak: one column's sort besides the inputs."""
    ids = cp.unique(cp.concatenate([cp.unique(src), cp.unique(dst)]))
    check_vertex_count(int(ids.shape[0]))
    return (cp.searchsorted(ids, src).astype(cp.int32), cp.searchsorted(ids, dst).astype(cp.int32), ids)
