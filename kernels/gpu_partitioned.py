"""The partitioned BFS's steps on one rank's GPU: the driver of kernels/cuda/bfs_partitioned.cu
(encodings there and in kernels/partitioned.py, which calls this module on CuPy arrays).

Each level is one step per rank, one or two launches: a bottom-up step over the whole graph's
frontier bitmap (the ranks sum their bits first), or a top-down expansion that claims the heads
this rank owns and proposes the others to their owners, then the acceptance of the proposals the
other ranks sent. The ranks exchange the frontier between the steps, through the communicator.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu
from kernels.gpu_bfs import BFS_THREADS

# counts layout of a step (kernels/cuda/bfs_partitioned.cu)
RANK_QUEUED, RANK_ARCS, RANK_OWNERS = 0, 1, 2


class RankSearch:
    """One partitioned search's device state on this rank (kernels/partitioned.py): two queues
    (a step reads the frontier from one and appends the next to the other), the step's counts
    (next frontier, its out-arcs, proposals per owner rank), the top-down step's bitmap of heads
    proposed, the regions of ``remote`` (one per owner rank q, at most q's vertex count long:
    each head is proposed once per level), and the frontier bitmap of bottom-up steps. Each step
    costs one small copy to the host, of ``counts``; the top-down step a second when proposals
    came in."""

    def __init__(self, n: int, lo: int, owned: int, bounds: np.ndarray):
        size = bounds.shape[0] - 1
        self.n, self.lo, self.owned, self.size = n, lo, owned, size
        self.queues = (cp.empty(max(owned, 1), dtype=cp.int32), cp.empty(max(owned, 1), dtype=cp.int32))
        self.counts = cp.zeros(RANK_OWNERS + size, dtype=cp.uint64)
        self.words = (n + 31) // 32
        self.bits = cp.empty(self.words, dtype=cp.uint32)  # proposed heads, or the frontier
        self.offsets = cp.zeros(max(owned, 1) + 1, dtype=cp.int64)  # [0] stays 0
        self.degrees = cp.empty(max(owned, 1), dtype=cp.int64)
        # owner q's region starts at q's first id, less this rank's own vertices when they come
        # before q's (this rank's own region is never written)
        first = bounds[:-1].astype(np.int64)
        self.region_host = np.where(first < lo + owned, first, first - owned)
        self.region = cp.asarray(self.region_host)
        self.bounds = cp.asarray(bounds.astype(np.int64))
        self.remote = cp.empty(max(n - owned, 1), dtype=cp.int64)
        self.expanded = (0, 0)  # the last top-down expansion's (found, arcs)

    def frontier_bitmap(self, frontier):
        """The frontier (local ids) as this rank's bits of the whole graph's bitmap."""
        frontier = frontier.astype(cp.int32, copy=False)
        self.bits.fill(0)
        if frontier.shape[0]:
            gpu.launch("bfs_rank_bitmap", frontier.shape[0], (frontier, np.int64(frontier.shape[0]), np.int32(self.lo),
                                                              self.bits))
        return self.bits

    def bottom_up(self, inc, out, frontier_words, distance, predecessor, level: int):
        """One bottom-up step over the whole graph's frontier bitmap: sets distance / predecessor
        of the owned vertices found; returns them (local int32 ids, in no particular order) and
        their out-arcs."""
        queue = self.queues[level % 2]
        self.counts.fill(0)
        gpu.launch("bfs_rank_bottom_up", self.owned, (
            inc.indptr, inc.indices, out.indptr, np.int32(self.owned), frontier_words, distance, predecessor,
            np.int32(level), queue, self.counts), threads=BFS_THREADS)
        found, arcs = (int(c) for c in self.counts[:RANK_OWNERS].get())
        return queue[:found], arcs

    def top_down(self, out, frontier, arcs: int, distance, predecessor, level: int):
        """The expansion of a top-down step from ``frontier`` (local ids; ``arcs`` its out-arcs on
        this rank): owned heads are claimed here. Returns the proposals for heads other ranks own
        (int64 head << 32 | parent, global ids, grouped by owner in rank order) and their count
        per owner (host int64 [size]); accept() finishes the step."""
        frontier = frontier.astype(cp.int32, copy=False)
        count = frontier.shape[0]
        if count:
            degrees = self.degrees[:count]
            gpu.launch("bfs_rank_degrees", count, (out.indptr, frontier, np.int32(count), degrees))
            cp.cumsum(degrees, out=self.offsets[1:count + 1])
        self.counts.fill(0)
        self.bits.fill(0)
        gpu.launch("bfs_rank_top_down", max(arcs, 1), (
            out.indptr, out.indices, frontier, np.int32(count), self.offsets, np.int32(self.lo), np.int32(self.owned),
            distance, predecessor, np.int32(level), self.bits, self.queues[level % 2], self.bounds,
            np.int32(self.size), self.region, self.remote, self.counts), threads=BFS_THREADS)
        counts = self.counts.get().astype(np.int64)
        self.expanded = (int(counts[RANK_QUEUED]), int(counts[RANK_ARCS]))
        per_owner = counts[RANK_OWNERS:]
        regions = [self.remote[self.region_host[q]:self.region_host[q] + per_owner[q]]
                   for q in range(self.size) if per_owner[q]]
        if len(regions) == 1:
            return regions[0], per_owner
        return (cp.concatenate(regions) if regions else self.remote[:0]), per_owner

    def accept(self, proposals, distance, predecessor, level: int, out):
        """The proposals the other ranks sent (heads owned here) take their parent where still
        unreached; returns the step's owned vertices found (local int32 ids) and their out-arcs."""
        queue = self.queues[level % 2]
        if not proposals.shape[0]:  # the expansion's counts, read back with its proposals, stand
            found, arcs = self.expanded
            return queue[:found], arcs
        gpu.launch("bfs_rank_accept", proposals.shape[0], (
            proposals, np.int64(proposals.shape[0]), out.indptr, np.int32(self.lo), distance, predecessor,
            np.int32(level), queue, self.counts), threads=BFS_THREADS)
        found, arcs = (int(c) for c in self.counts[:RANK_OWNERS].get())
        return queue[:found], arcs
