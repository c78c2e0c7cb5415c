"""BFS on the GPU: the driver of kernels/cuda/bfs.cu (encodings and per-level protocol there).

A search is one cooperative launch of ``bfs_levels`` that runs every level on the whole GPU,
with a grid barrier between levels and the direction (top-down / bottom-up, ALPHA / BETA of
kernels/structures.py) and the form of each step (vertex- or edge-parallel) decided on the device
from frontier statistics that the kernels accumulate themselves. The host reads the state back
once per launch (one small copy). Narrow stretches, NARROW_LEVELS top-down frontiers in a row of
at most FUSED_MAX_FRONTIER vertices of degree <= FUSED_MAX_DEGREE (road networks, grids), go to
``bfs_fused``, which runs levels on one block with block barriers only, until its frontier
outgrows it; then ``bfs_levels`` continues. So a search costs a few launches whatever its depth.
Top-down steps are vertex-parallel while no frontier vertex has more than
VERTEX_PARALLEL_MAX_DEGREE arcs, edge-parallel otherwise (a hub would serialize one thread).

Tie rule on the GPU: a vertex takes whichever valid parent wins the race (Graph500's benign
race); distances are deterministic, parents need not be.

A partitioned search (kernels/partitioned.py) runs one step per launch on each rank instead:
kernels/gpu_partitioned.py drives those steps.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu, gpu_arrays
from kernels.cuda_source import ARRAY_TYPES, EDGE_TYPES, template
from kernels.structures import ALPHA, BETA, BFSResult, Graph

BFS_THREADS = 512  # bfs_levels' block (its __launch_bounds__)
FUSED_THREADS = 1024
FUSED_MAX_FRONTIER = 1024  # one queued vertex per thread of the single block
FUSED_MAX_DEGREE = 32  # a fused block walks each vertex's list on one thread
NARROW_LEVELS = 8  # narrow top-down levels in a row before handing the search to one block
VERTEX_PARALLEL_MAX_DEGREE = 32  # above it a frontier expands edge-parallel (one thread per arc)

# ctl layout (kernels/cuda/bfs.cu)
CTL_LEVEL, CTL_STATUS, CTL_STATS, ST_COUNT, CTL_SIZE = 0, 2, 8, 4, 20
STATUS_DONE, STATUS_NARROW = 1, 2
STEP_NAMES = ("top-down/vertex", "top-down/edge", "bottom-up", "top-down/fused")
STEPS_READ_WITH_STATE = 64  # levels whose step codes come back with the state in one copy


class Workspace:
    """Per-vertex arrays a search needs besides its results, kept (kernels.gpu.borrowed_scratch)
    between searches of graphs with the same vertex count: a benchmark runs many roots, a
    pipeline one or a few; the MSF releases them. Searches at once each have their own."""

    def __init__(self, n: int):
        words = (n + 31) // 32
        self.visited = cp.empty(words, dtype=cp.uint32)
        self.bitmaps = (cp.empty(words, dtype=cp.uint32), cp.empty(words, dtype=cp.uint32))
        self.queues = (cp.empty(max(n, 1), dtype=cp.int32), cp.empty(max(n, 1), dtype=cp.int32))
        self.offsets = cp.empty(n + 1, dtype=cp.int64)
        self.blocks = levels_grid()
        self.block_sums = cp.empty(self.blocks, dtype=cp.int64)
        # ctl (CTL_SIZE int64) followed by one step code per level, read back together
        self.state = cp.zeros(CTL_SIZE * 8 + n + 2, dtype=cp.uint8)
        self.ctl = self.state[: CTL_SIZE * 8].view(cp.int64)
        self.steps = self.state[CTL_SIZE * 8:].view(cp.int8)


_levels_grid = None


def levels_grid() -> int:
    """Blocks of bfs_levels that are resident at once: the cooperative launch's grid."""
    global _levels_grid
    if _levels_grid is None:
        # the occupancy query is a driver call: it needs this thread's context current, which a
        # thread whose first CUDA call this is (a task runner's worker thread) does not have yet
        cp.cuda.Device().use()
        fn = gpu.kernel("bfs_levels").kernel
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, BFS_THREADS, 0)
        _levels_grid = max(1, per_sm) * gpu.sm_count()
    return _levels_grid


def bfs_gpu(graph: Graph, sources: np.ndarray, depth_limit: int | None, on_level) -> BFSResult:
    n = graph.n
    out, inc = graph.out, graph.inc
    with gpu.borrowed_scratch(("bfs", n), lambda: Workspace(n)) as ws:
        words = (n + 31) // 32
        dist = cp.empty(n, dtype=cp.int32)
        pred = cp.empty(n, dtype=cp.int32)
        gpu.launch("bfs_reset", n, (np.int32(n), np.int32(words), dist, pred, ws.visited))
        src = cp.asarray(sources, dtype=cp.int32)
        gpu.kernel("bfs_init")((1,), (FUSED_THREADS,), (
            src, np.int32(src.size), out.indptr, np.int64(out.nnz), dist, pred, ws.visited, ws.queues[0], ws.ctl))
        max_level = np.int32(min(depth_limit if depth_limit is not None else 2**31 - 1, 2**31 - 1))
        levels_fn = gpu.kernel("bfs_levels").kernel
        levels_args = (out.indptr, out.indices, inc.indptr, inc.indices, np.int32(n), dist, pred, ws.visited,
                       ws.bitmaps[0], ws.bitmaps[1], ws.queues[0], ws.queues[1], ws.offsets, ws.block_sums,
                       ws.steps, ws.ctl, max_level, np.int32(ALPHA), np.int32(BETA), np.int32(VERTEX_PARALLEL_MAX_DEGREE),
                       np.int32(FUSED_MAX_FRONTIER), np.int32(FUSED_MAX_DEGREE), np.int32(NARROW_LEVELS))
        fused_args = (out.indptr, out.indices, dist, pred, ws.visited, ws.queues[0], ws.queues[1], ws.steps,
                      ws.ctl, max_level, np.int32(FUSED_MAX_FRONTIER), np.int32(FUSED_MAX_DEGREE))
        fused = False
        while True:
            if fused:
                gpu.kernel("bfs_fused")((1,), (FUSED_THREADS,), fused_args)
            else:
                levels_fn((ws.blocks,), (BFS_THREADS,), levels_args, enable_cooperative_groups=True)
            head = ws.state[: CTL_SIZE * 8 + STEPS_READ_WITH_STATE].get()
            ctl = head[: CTL_SIZE * 8].view(np.int64)
            level, status = int(ctl[CTL_LEVEL]), int(ctl[CTL_STATUS])
            on_level(level, int(ctl[CTL_STATS + ST_COUNT * (level % 3)]))
            if status == STATUS_DONE:
                break
            fused = status == STATUS_NARROW
        codes = head[CTL_SIZE * 8:].view(np.int8)[:level] if level <= STEPS_READ_WITH_STATE else ws.steps[:level].get()
        return BFSResult(dist, pred, level, [STEP_NAMES[c] for c in codes.tolist()])


def result_columns(ids, distance, predecessor):
    """(distance as int32, reached, has_predecessor, predecessor ids) of a search over vertices
    with input ``ids`` (tasks/parquet/write/tables.py, dense_bfs_columns), in one launch."""
    ids, predecessor = cp.ascontiguousarray(ids), cp.ascontiguousarray(predecessor)
    distance = cp.ascontiguousarray(gpu_arrays.astype(distance, np.int32))
    n = int(distance.shape[0])
    reached, has_predecessor = cp.empty(n, dtype=cp.bool_), cp.empty(n, dtype=cp.bool_)
    predecessor_ids = cp.empty(n, dtype=ids.dtype)
    if n:
        gpu.launch(template("bfs_result_columns", ARRAY_TYPES[ids.dtype.name], EDGE_TYPES[predecessor.dtype.name]), n,
                   (ids, distance, predecessor, np.int64(n), reached, has_predecessor, predecessor_ids))
    return distance, reached, has_predecessor, predecessor_ids
