"""CuPy launchers for the CUDA kernels in kernels/cuda/graph.cu (one module: one NVRTC compile,
cached by CuPy under ~/.cupy/kernel_cache). Imported only when arrays live on a GPU.

BFS driver, per level:
- frontier small (<= FUSED_MAX_FRONTIER vertices, none above FUSED_MAX_DEGREE): top-down levels
  run fused in one launch of one block until the frontier outgrows it (road networks: one launch
  for hundreds of levels);
- top-down otherwise, in the form the frontier's degrees call for: vertex-parallel when degrees
  are even (max <= SKEW_LIMIT x mean), edge-parallel over the frontier's degree prefix sum when
  skewed (one hub would starve a warp);
- bottom-up over a bitmap frontier by the ALPHA/BETA rule of kernels.bfs.
Tie rule on the GPU: a vertex takes whichever valid parent wins the race (Graph500's benign
race); distances are deterministic, parents need not be. Rows of a GPU-built CSR are in arrival
order (atomic cursors), not input order.
"""
from __future__ import annotations

from pathlib import Path

import cupy as cp
import numpy as np

from kernels.bfs import ALPHA, BETA, BFSResult
from kernels.graph import CSR, Graph

THREADS = 256
FUSED_THREADS = 1024
FUSED_MAX_FRONTIER = 4096  # above this a full grid beats one block per level
FUSED_MAX_DEGREE = 32  # a fused block walks each vertex's list on one thread
SKEW_LIMIT = 4.0
NO_EDGE = np.iinfo(np.int32).max

_SOURCE = (Path(__file__).parent / "cuda" / "graph.cu").read_text()
_module = None


def kernel(name: str):
    global _module
    if _module is None:
        _module = cp.RawModule(code=_SOURCE, options=("-std=c++17",))
    return _module.get_function(name)


def _grid(work: int) -> tuple[int]:
    return (max(1, min((int(work) + THREADS - 1) // THREADS, 65535 * 4)),)


def csr_scatter(rows, cols, n: int) -> CSR:
    """Count degrees, exclusive prefix sum, then scatter with per-vertex atomic cursors."""
    rows = rows.astype(cp.int32, copy=False)
    cols = cols.astype(cp.int32, copy=False)
    m = rows.shape[0]
    indptr = cp.zeros(n + 1, dtype=cp.int64)
    cp.cumsum(cp.bincount(rows, minlength=n), out=indptr[1:])
    cursor = indptr[:-1].astype(cp.uint64)
    indices = cp.empty(m, dtype=cp.int32)
    if m:
        kernel("csr_scatter")(_grid(m), (THREADS,), (rows, cols, np.int64(m), cursor, indices))
    return CSR(indptr=indptr, indices=indices, n=n)


def bfs_gpu(graph: Graph, sources: np.ndarray, depth_limit: int | None, on_level) -> BFSResult:
    n = graph.n
    out, inc = graph.out, graph.inc
    words = (n + 31) // 32
    dist = cp.full(n, -1, dtype=cp.int32)
    pred = cp.full(n, -1, dtype=cp.int32)
    visited = cp.zeros(words, dtype=cp.uint32)
    queue_a = cp.empty(n, dtype=cp.int32)
    queue_b = cp.empty(n, dtype=cp.int32)
    count = cp.zeros(1, dtype=cp.int32)
    state = cp.zeros(3, dtype=cp.int32)
    src = cp.asarray(sources, dtype=cp.int32)
    dist[src] = 0
    pred[src] = src
    kernel("queue_to_bitmap")(_grid(src.size), (THREADS,), (src, np.int32(src.size), visited))
    queue_a[: src.size] = src
    out_degree = out.indptr[1:] - out.indptr[:-1]
    unvisited_arcs = int(out_degree.sum()) - int(out_degree[src].sum())
    frontier, size, level, steps, bottom_up = queue_a, int(src.size), 0, [], False
    bitmap = next_bitmap = None
    max_levels = depth_limit if depth_limit is not None else np.iinfo(np.int32).max
    while size and level < max_levels:
        if bottom_up and size < n / BETA:  # back to a queue frontier
            bottom_up = False
            queue_a[:size] = cp.flatnonzero(dist == level).astype(cp.int32)
            frontier = queue_a
            unvisited_arcs = int(out_degree[dist < 0].sum())
        if not bottom_up:
            degree = out_degree[frontier[:size]]
            offsets = cp.zeros(size + 1, dtype=cp.int64)
            cp.cumsum(degree, out=offsets[1:])
            frontier_arcs, max_degree = (int(x) for x in cp.stack([offsets[-1], degree.max()]).get())
            if frontier_arcs > unvisited_arcs / ALPHA:
                bottom_up = True
                bitmap = cp.zeros(words, dtype=cp.uint32)
                next_bitmap = cp.empty(words, dtype=cp.uint32)
                kernel("queue_to_bitmap")(_grid(size), (THREADS,), (frontier, np.int32(size), bitmap))
            elif size <= FUSED_MAX_FRONTIER and max_degree <= FUSED_MAX_DEGREE:
                other = queue_b if frontier is queue_a else queue_a
                kernel("bfs_top_down_fused")((1,), (FUSED_THREADS,), (
                    frontier, other, np.int32(size), out.indptr, out.indices, visited, dist, pred,
                    np.int32(level), np.int32(max_levels - level), np.int32(FUSED_MAX_FRONTIER),
                    np.int32(FUSED_MAX_DEGREE), state))
                size, which, done = (int(x) for x in state.get())
                frontier = (frontier, other)[which]
                steps += ["top-down/fused"] * done
                level += done
                unvisited_arcs = int(out_degree[dist < 0].sum())
                on_level(level, size)
                continue
        count.fill(0)
        if bottom_up:
            kernel("bfs_bottom_up")(_grid(words * 32), (THREADS,), (
                bitmap, inc.indptr, inc.indices, visited, next_bitmap, dist, pred, count,
                np.int32(n), np.int32(level)))
            bitmap, next_bitmap = next_bitmap, bitmap
            steps.append("bottom-up")
        else:
            nxt = queue_b if frontier is queue_a else queue_a
            if max_degree <= SKEW_LIMIT * frontier_arcs / size:
                kernel("bfs_top_down_vertex")(_grid(size), (THREADS,), (
                    frontier, np.int32(size), out.indptr, out.indices, visited, dist, pred, nxt,
                    count, np.int32(level)))
                steps.append("top-down/vertex")
            else:
                kernel("bfs_top_down_edge")(_grid(frontier_arcs), (THREADS,), (
                    frontier, np.int32(size), offsets, out.indptr, out.indices, visited, dist,
                    pred, nxt, count, np.int32(level)))
                steps.append("top-down/edge")
            unvisited_arcs -= frontier_arcs
            frontier = nxt
        size = int(count.get()[0])
        level += 1
        on_level(level, size)
    return BFSResult(dist, pred, level, steps)


def boruvka_band_gpu(u, v, eid, parent, n, accepted, on_round):
    """Boruvka rounds over one band (edges sorted by rank; ends are representatives).
    Hooks and compresses ``parent`` in place and flags accepted edges; calls
    ``on_round(rounds_done, edges_left)`` after each round; returns the rounds."""
    from kernels.msf import NoProgressError

    best = cp.empty(n, dtype=cp.int32)
    hooks = cp.zeros(1, dtype=cp.int32)
    u, v = u.astype(cp.int32), v.astype(cp.int32)
    rounds = 0
    while u.shape[0]:
        k = u.shape[0]
        best.fill(NO_EDGE)
        hooks.fill(0)
        kernel("boruvka_min_edge")(_grid(k), (THREADS,), (u, v, np.int32(k), best))
        kernel("boruvka_hook")(_grid(n), (THREADS,), (u, v, best, parent, np.int32(n)))
        kernel("boruvka_accept")(_grid(n), (THREADS,), (u, v, eid, best, parent, accepted, hooks, np.int32(n)))
        kernel("boruvka_compress")(_grid(n), (THREADS,), (parent, np.int32(n)))
        if int(hooks.get()[0]) == 0:
            raise NoProgressError(f"Boruvka round {rounds + 1}: {k} edges cross components but none was chosen")
        kernel("relabel")(_grid(k), (THREADS,), (u, v, np.int64(k), parent))
        crossing = u != v
        u, v, eid = u[crossing], v[crossing], eid[crossing]
        rounds += 1
        on_round(rounds, int(u.shape[0]))
    return rounds
