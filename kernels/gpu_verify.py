"""Graph500's rules for a BFS result on the GPU: the driver of kernels/cuda/verify.cu, three
passes (sources, arcs, vertices) whose counts are kernels/verify.py's ``verify_bfs`` report,
read back once. Arrays of any integer type are taken: edge ends as int32 or int64, distances
and parents together as int32 or int64 (widened to int64 when they differ)."""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu, gpu_arrays
from kernels.cuda_source import EDGE_TYPES, template

RULES = ("tree rooted at the sources", "tree edges span one level", "input edges span at most one level",
         "depth limit respected", "tree edges are input edges")  # verify.cu's BFS_* slots, in order


def _integers(*arrays):
    """The arrays as int32 or int64, one type for all (int64 when they differ)."""
    if len({a.dtype for a in arrays}) == 1 and arrays[0].dtype.name in EDGE_TYPES:
        return arrays
    return tuple(gpu_arrays.astype(a, np.int64) if a.dtype.name in EDGE_TYPES else a.astype(np.int64)
                 for a in arrays)


def verify_bfs(src, dst, n: int, sources, distance, predecessor, directed: bool, depth_limit) -> dict:
    sources = np.asarray(sources, dtype=np.int64).reshape(-1)
    if sources.shape[0] and (sources.min() < 0 or sources.max() >= n):
        raise IndexError(f"a source is outside the {n} vertices")
    src, dst = _integers(cp.ascontiguousarray(src), cp.ascontiguousarray(dst))
    distance, predecessor = _integers(cp.ascontiguousarray(distance), cp.ascontiguousarray(predecessor))
    e, d = EDGE_TYPES[src.dtype.name], EDGE_TYPES[distance.dtype.name]
    limit = np.int64(-1 if depth_limit is None else depth_limit)
    is_source, joined = cp.zeros(n, dtype=cp.bool_), cp.zeros(n, dtype=cp.bool_)
    counts = cp.zeros(len(RULES), dtype=cp.uint64)
    on_device = cp.asarray(sources)
    if sources.shape[0]:
        gpu.launch(template("bfs_check_sources", d), sources.shape[0],
                   (on_device, np.int64(sources.shape[0]), distance, predecessor, is_source, counts))
    m = int(src.shape[0])
    if m:
        gpu.launch(template("bfs_check_arcs", e, d), m,
                   (src, dst, np.int64(m), distance, predecessor, np.int32(bool(directed)), limit, joined, counts))
    if n:
        gpu.launch(template("bfs_check_vertices", d), n,
                   (np.int64(n), distance, predecessor, is_source, joined, limit, counts))
    found = dict(zip(RULES, (int(c) for c in counts.get())))
    if depth_limit is None:
        del found["depth limit respected"]
    return found
