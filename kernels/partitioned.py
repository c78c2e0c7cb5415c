"""Partitioned graph algorithms: one graph spread over ``comm.size`` ranks (one process, and one
GPU, each) that talk only through a communicator. Every rank runs the same calls in the same
order (SPMD); each routine here is collective.

Communicator protocol (``comm``; NumPy arrays on the CPU communicator, CuPy arrays on NCCL's):
- ``comm.rank``, ``comm.size``.
- ``comm.allreduce(x, op)``: elementwise ``"sum"`` / ``"max"`` / ``"min"`` of every rank's ``x``
  (same shape and dtype on every rank), returned on every rank.
- ``comm.allgatherv(x)``: ``(every rank's x concatenated in rank order, counts)``.
- ``comm.alltoallv(send, counts, recv_counts=None)``: ``send`` holds ``counts[r]`` elements for
  rank r, in rank order; returns ``(recv, recv_counts)``: what each rank sent here, in rank
  order. A caller that knows ``recv_counts`` passes them and saves a count exchange.
- ``comm.broadcast(x, root)``: root's ``x`` on every rank (the others pass an array of the same
  dtype, any length).
``counts`` are host int64 arrays of length ``comm.size``.

Encodings:
- Dense vertex ids are int32 in [0, n), n the global vertex count. Rank r owns the contiguous
  range [bounds[r], bounds[r+1]) (``bounds``: host int64 [size + 1]); an id's owner is found by
  a binary search in ``bounds``. Renumbering hashes each input id to its owner, so the owner of
  an id is also the owner of its vertex, and each owner numbers its ids in ascending order.
  Integer ids are renumbered here (``renumber_partitioned``); string ids take the same steps
  where strings can be sorted (the reading layer), with ``string_owner`` for the hash and
  ``group_by_rank``, ``ownership`` and ``numbers_back`` shared with the integer path.
- Each rank holds a contiguous share of the input rows as dense ``src``/``dst`` (int32) and
  ``weight``: the edge at index i is global input row ``row_offset + i``. Self-loops stay.
- ``LocalGraph``: the CSR rows of the owned vertices. ``out`` row v - lo lists the heads of the
  arcs leaving v (global dense ids); ``inc`` lists the tails of the arcs entering v (the same
  object when undirected, where each edge is an arc both ways). Self-loops are left out.
- BFS: ``distance`` / ``predecessor`` int32 over the owned vertices, predecessor a global dense
  id; -1 means unreached, a source is its own parent.
- MSF: the forest as the ascending global input rows of its edges, the same on every rank.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from kernels.backend import array_module, is_gpu, scatter_add, to_host
from kernels.bfs import ALPHA, BETA, bottom_up_parents, expand_ranges
from kernels.graph import CSR, MAX_VERTICES, EdgeList, build_csr, renumber
from kernels.msf import minimum_spanning_forest


@dataclass
class Ownership:
    """Who owns which dense vertex ids."""

    bounds: np.ndarray  # host int64 [size + 1]
    rank: int

    @property
    def lo(self) -> int:
        return int(self.bounds[self.rank])

    @property
    def hi(self) -> int:
        return int(self.bounds[self.rank + 1])

    @property
    def owned(self) -> int:
        return self.hi - self.lo

    @property
    def n(self) -> int:
        return int(self.bounds[-1])


@dataclass
class LocalGraph:
    out: CSR
    inc: CSR
    own: Ownership
    directed: bool


@dataclass
class PartitionedBFS:
    distance: object  # int32 [owned]
    predecessor: object  # int32 [owned], global dense ids
    levels: int
    steps: list = field(default_factory=list)
    level_times: list = field(default_factory=list)  # each level's wall time on this rank, exchanges included
    frontiers: list = field(default_factory=list)  # each level's frontier found, vertices of every rank


@dataclass
class PartitionedForest:
    rows: object  # int64, ascending global input rows of the forest's edges (every rank)
    components: int
    rounds: int  # Boruvka rounds: the most any rank ran, local forest and merges together
    merges: int  # pairwise merge steps (ceil(log2(size)))
    stage_times: list = field(default_factory=list)  # [stage, seconds] on this rank, in order


def _counts_by_owner(xp, sorted_ids, bounds):
    """Elements of ascending ``sorted_ids`` that fall in each owner's range (host int64)."""
    cuts = xp.searchsorted(sorted_ids, xp.asarray(bounds))
    return to_host(cuts[1:] - cuts[:-1]).astype(np.int64)


def owner_of(ids, bounds):
    xp = array_module(ids)
    return (xp.searchsorted(xp.asarray(bounds), ids, side="right") - 1).astype(np.int32)


def group_by_rank(xp, dest, size: int):
    """A stable order that groups elements by destination rank ``dest``, and the group sizes
    (host int64)."""
    # small integer keys: NumPy's stable argsort is a radix sort on 16-bit types
    key = dest.astype(np.int16) if size < 2**15 else dest
    order = xp.argsort(key, kind="stable")
    return order, to_host(xp.bincount(dest, minlength=size)).astype(np.int64)


def _mix(x):
    """MurmurHash3's 64-bit finalizer: every bit of ``x`` (uint64) moves every bit of the result."""
    for mult in (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53):
        x ^= x >> np.uint64(33)
        x *= np.uint64(mult)
    return x ^ (x >> np.uint64(33))


def _hash_owner(ids, size: int):
    """Owner rank of each id: the finalizer mix of its 64 bits, modulo size."""
    return (_mix(ids.astype(np.uint64)) % np.uint64(size)).astype(np.int32)


# A string's hash: its bytes b_0 .. b_{L-1} as the polynomial sum b_i * P**(L-1-i) mod 2**64,
# its length mixed in, then the finalizer. Only ownership depends on it (owners compare the
# strings themselves), so a collision costs balance, never correctness. Computed for a batch
# of strings at once: each byte's term from its distance to its string's end, the terms'
# running sum, and each string's sum as the difference of the running sum at its two ends
# (uint64 arithmetic wraps, which is the mod 2**64). About 40 bytes of temporaries per input
# byte, so the strings go in batches of about STRING_HASH_BATCH bytes.
_STRING_PRIME = np.uint64(0x100000001B3)  # FNV's 64-bit prime: odd, so every power is odd
STRING_HASH_BATCH = 1 << 22


def string_owner(offsets, data, size: int):
    """Owner rank (host int32) of each of the strings ``data[offsets[i]:offsets[i + 1]]``
    (``offsets``: host int64 [k + 1]; ``data``: host uint8), the same on every rank and in
    every process: a 64-bit hash of the bytes, modulo size."""
    offsets = np.asarray(offsets, dtype=np.int64)
    k = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    hashes = np.empty(k, dtype=np.uint64)
    powers = np.ones(1, dtype=np.uint64)
    first = 0
    while first < k:
        # the next batch: strings up to STRING_HASH_BATCH bytes, at least one string
        last = max(first + 1, int(np.searchsorted(offsets, offsets[first] + STRING_HASH_BATCH, side="right")) - 1)
        last = min(last, k)
        lo, hi = int(offsets[first]), int(offsets[last])
        longest = int(lengths[first:last].max(initial=0))
        if powers.shape[0] < longest:
            powers = np.concatenate([[np.uint64(1)], np.multiply.accumulate(np.full(longest - 1, _STRING_PRIME))])
        ends = np.repeat(offsets[first + 1:last + 1], lengths[first:last])  # each byte's string end
        terms = data[lo:hi].astype(np.uint64) * powers[ends - 1 - np.arange(lo, hi)]
        running = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(terms, dtype=np.uint64)])
        hashes[first:last] = running[offsets[first + 1:last + 1] - lo] - running[offsets[first:last] - lo]
        first = last
    hashes ^= lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return (_mix(hashes) % np.uint64(size)).astype(np.int32)


def ownership(comm, xp, owned: int) -> Ownership:
    """The ranges of dense ids when each rank owns ``owned`` vertices, numbered in rank order
    (an exclusive prefix sum of the counts; ``xp``: the communicator's array module). Raises
    ValueError past MAX_VERTICES."""
    sizes, _ = comm.allgatherv(xp.asarray([owned], dtype=np.int64))
    bounds = np.concatenate([[0], np.cumsum(to_host(sizes))]).astype(np.int64)
    if bounds[-1] > MAX_VERTICES:
        raise ValueError(f"{bounds[-1]} distinct vertex ids: more than {MAX_VERTICES} are not supported")
    return Ownership(bounds, comm.rank)


def numbers_back(comm, own: Ownership, back, received_counts, order, counts):
    """The owners' answers to a renumbering exchange. This rank sent its distinct ids in the
    order ``order`` (grouped by owner, ``counts`` per owner) and received ``received_counts``
    per sender; ``back[j]`` is the owner-local number of the j-th id it received. Returns
    the dense id of each of this rank's distinct ids, in their own (unsorted) order."""
    xp = array_module(back)
    numbers = (back.reshape(-1) + own.lo).astype(np.int32)
    answers, _ = comm.alltoallv(numbers, received_counts, recv_counts=counts)
    dense = xp.empty(order.shape[0], dtype=np.int32)
    dense[order] = answers
    return dense


def renumber_partitioned(comm, src, dst):
    """Dense int32 ids for integer input ids spread over the ranks.

    Each rank numbers its own share's ids (kernels.graph.renumber) and sends the distinct ones
    to their hashed owners; each owner numbers what it owns in ascending id order, offset by
    the prefix sum of the owners' counts; the numbers travel back the way the ids came. Returns ``(src_dense, dst_dense, owned_ids, ownership)``:
    ``owned_ids[i]`` is the input id of dense vertex ``lo + i`` (ascending).
    """
    xp = array_module(src)
    local_src, local_dst, keys = renumber(src, dst)  # this share's distinct ids, ascending
    order, counts = group_by_rank(xp, _hash_owner(keys, comm.size), comm.size)
    received, received_counts = comm.alltoallv(keys[order], counts)
    owned_ids, back = xp.unique(received, return_inverse=True)
    own = ownership(comm, xp, int(owned_ids.shape[0]))
    dense = numbers_back(comm, own, back, received_counts, order, counts)
    return dense[local_src], dense[local_dst], owned_ids, own


def locate(comm, own: Ownership, owned_ids, ids):
    """Dense id of each input id in ``ids`` (Python integers, the same on every rank); -1 where
    no rank owns it. Returns a host int64 array."""
    xp = array_module(owned_ids)
    info = np.iinfo(owned_ids.dtype)
    fits = np.array([info.min <= v <= info.max for v in ids], dtype=bool)
    query = xp.asarray(np.array([v if ok else 0 for v, ok in zip(ids, fits)], dtype=owned_ids.dtype))
    found = xp.full(query.shape[0], -1, dtype=np.int64)
    if own.owned:
        pos = xp.minimum(xp.searchsorted(owned_ids, query), own.owned - 1)
        found = xp.where((owned_ids[pos] == query) & xp.asarray(fits), pos + own.lo, found)
    return to_host(comm.allreduce(found, "max"))


@dataclass
class Asked:
    """A ``fetch``'s question: this rank's distinct dense ids ``asked`` (ascending; ``counts`` of
    them per owner) and ``inverse`` (query[i] == asked[inverse[i]]); the owner's side:
    ``incoming`` (dense ids other ranks asked it for, by sender) and ``incoming_counts``."""

    asked: object
    inverse: object
    counts: np.ndarray
    incoming: object
    incoming_counts: np.ndarray


def ask_owners(comm, own: Ownership, query) -> Asked:
    """Send each distinct dense id of ``query`` to its owner (the first half of ``fetch``)."""
    xp = array_module(query)
    asked, inverse = xp.unique(query, return_inverse=True)
    counts = _counts_by_owner(xp, asked, own.bounds)
    incoming, incoming_counts = comm.alltoallv(asked, counts)
    return Asked(asked, inverse.reshape(-1), counts, incoming, incoming_counts)


def fetch(comm, own: Ownership, values, query):
    """``values[v - lo]`` from the owner of v, for every dense id v in ``query`` (each rank asks
    for its own ids, in any order, repeats allowed)."""
    q = ask_owners(comm, own, query)
    answers, _ = comm.alltoallv(values[q.incoming - own.lo], q.incoming_counts, recv_counts=q.counts)
    return answers[q.inverse]


def _route_arcs(comm, own: Ownership, tails, heads):
    """Send each arc tails[i] -> heads[i] to the owner of its tail; returns the owner's arcs as
    (local row, global head), in (sending rank, sending order) order."""
    xp = array_module(tails)
    order, counts = group_by_rank(xp, owner_of(tails, own.bounds), comm.size)
    packed = (tails.astype(np.int64) << 32) | heads.astype(np.int64)
    arcs, _ = comm.alltoallv(packed[order], counts)
    return (arcs >> 32).astype(np.int32) - np.int32(own.lo), (arcs & 0xFFFFFFFF).astype(np.int32)


def build_local_graph(comm, own: Ownership, src, dst, directed: bool) -> LocalGraph:
    """The CSR rows of this rank's vertices, from every rank's share of the edges."""
    xp = array_module(src)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if directed:
        out = build_csr(*_route_arcs(comm, own, src, dst), own.owned)
        inc = build_csr(*_route_arcs(comm, own, dst, src), own.owned)
        return LocalGraph(out, inc, own, True)
    both = build_csr(*_route_arcs(comm, own, xp.concatenate([src, dst]), xp.concatenate([dst, src])), own.owned)
    return LocalGraph(both, both, own, False)


def _top_down(comm, g: LocalGraph, rank_search, frontier, arcs: int, distance, predecessor, level):
    """Owner-routed top-down step: each rank proposes (vertex, parent) for the unvisited
    neighbours of its frontier (``arcs`` out-arcs on this rank) to their owners; an owner takes
    the first proposal per vertex in (rank, frontier order) order (on GPUs: whichever claims it
    first). Returns the owned vertices discovered (local indices) and their out-arcs."""
    own = g.own
    if rank_search is not None:  # the GPU's (kernels.gpu_partitioned.RankSearch)
        remote, counts = rank_search.top_down(g.out, frontier, arcs, distance, predecessor, level)
        proposals, _ = comm.alltoallv(remote, counts)
        return rank_search.accept(proposals, distance, predecessor, level, g.out)
    # the host's step (NumPy)
    starts = g.out.indptr[frontier]
    pos, which = expand_ranges(starts, g.out.indptr[frontier + 1] - starts)
    heads = g.out.indices[pos]
    parents = (frontier[which] + own.lo).astype(np.int32)
    local = (heads >= own.lo) & (heads < own.hi)
    if own.owned:  # a local head already visited needs no message
        seen = local & (distance[np.where(local, heads - own.lo, 0)] >= 0)
        heads, parents = heads[~seen], parents[~seen]
    heads, first = np.unique(heads, return_index=True)  # ascending: grouped by owner
    packed = (heads.astype(np.int64) << 32) | parents[first].astype(np.int64)
    proposals, _ = comm.alltoallv(packed, _counts_by_owner(np, heads, own.bounds))
    vertex = (proposals >> 32) - own.lo
    parent = (proposals & 0xFFFFFFFF).astype(np.int32)
    fresh = distance[vertex] < 0
    vertex, parent = vertex[fresh], parent[fresh]
    found, first = np.unique(vertex, return_index=True)
    distance[found] = level + 1
    predecessor[found] = parent[first]
    return found, _out_arcs(g, found)


def _out_arcs(g: LocalGraph, vertices) -> int:
    return int((g.out.indptr[vertices + 1] - g.out.indptr[vertices]).sum())


def _bottom_up(comm, g: LocalGraph, rank_search, frontier, arcs: int, distance, predecessor, level):
    """Bottom-up step over the replicated frontier: each unvisited owned vertex takes its first
    in-neighbour (CSR order) that is in the frontier. The frontier is a bitmap over all n
    vertices (uint32 words, bit v % 32 of word v // 32): each rank sets the bits of its own
    vertices in a zeroed bitmap and the ranks sum them. Bits of different ranks never coincide,
    so the sum is their union, also in the words that two ranks' ranges share; a frontier holds
    distinct vertices (every step returns each vertex it found once), so no bit is added twice
    on one rank either. Returns the owned vertices discovered (local indices) and their
    out-arcs."""
    own = g.own
    if rank_search is not None:  # the GPU's (kernels.gpu_partitioned.RankSearch)
        words = comm.allreduce(rank_search.frontier_bitmap(frontier), "sum")
        return rank_search.bottom_up(g.inc, g.out, words, distance, predecessor, level)
    ids = frontier.astype(np.int64) + own.lo
    words = np.zeros((own.n + 31) // 32, dtype=np.uint32)
    scatter_add(words, ids >> 5, np.uint32(1) << (ids & 31).astype(np.uint32))
    words = comm.allreduce(words, "sum")
    in_frontier = np.unpackbits(words.view(np.uint8), bitorder="little")[: own.n].view(bool)
    found, parents = bottom_up_parents(g.inc.indptr, g.inc.indices, np.flatnonzero(distance < 0), in_frontier)
    distance[found] = level + 1
    predecessor[found] = parents
    return found, _out_arcs(g, found)


def bfs_partitioned(comm, g: LocalGraph, sources, depth_limit: int | None = None, on_level=None) -> PartitionedBFS:
    """Level-synchronous, direction-optimizing BFS from the dense ids ``sources`` (host array,
    the same on every rank). One direction decision per level, from statistics summed over the
    ranks with kernels.bfs's ALPHA / BETA rule, so every rank takes the same step.
    ``on_level(levels_done, global_frontier_size)`` is called after each step."""
    xp = array_module(g.out.indptr)
    own = g.own
    distance = xp.full(own.owned, -1, dtype=np.int32)
    predecessor = xp.full(own.owned, -1, dtype=np.int32)
    srcs = np.unique(np.asarray(sources, dtype=np.int64))
    mine = xp.asarray(srcs[(srcs >= own.lo) & (srcs < own.hi)] - own.lo)
    distance[mine] = 0
    predecessor[mine] = (mine + own.lo).astype(np.int32)
    rank_search = None
    if is_gpu(distance):
        from kernels.gpu_partitioned import RankSearch

        rank_search = RankSearch(own.n, own.lo, own.owned, own.bounds)
    arcs = _out_arcs(g, mine)  # the frontier's out-arcs on this rank
    unvisited_arcs = int(g.out.nnz) - arcs
    frontier, level, steps, seconds, frontiers, bottom_up = mine, 0, [], [], [], False
    started = time.perf_counter()
    while True:
        stats = comm.allreduce(xp.asarray([frontier.shape[0], arcs, unvisited_arcs], dtype=np.int64), "sum")
        size, frontier_arcs, unvisited = (int(s) for s in to_host(stats))
        if level:
            frontiers.append(size)
            if on_level is not None:
                on_level(level, size)
        if size == 0 or (depth_limit is not None and level >= depth_limit):
            break
        if not bottom_up and frontier_arcs > unvisited / ALPHA:
            bottom_up = True
        elif bottom_up and size < own.n / BETA:
            bottom_up = False
        step = _bottom_up if bottom_up else _top_down
        frontier, arcs = step(comm, g, rank_search, frontier, arcs, distance, predecessor, level)
        steps.append("bottom-up" if bottom_up else "top-down")
        level += 1
        unvisited_arcs -= arcs
        seconds.append(time.perf_counter() - started)
        started = time.perf_counter()
    return PartitionedBFS(distance, predecessor, level, steps, [round(t, 6) for t in seconds], frontiers)


def msf_partitioned(comm, src, dst, weight, n: int, row_offset: int) -> PartitionedForest:
    """Minimum spanning forest by local filtering. Each rank takes the forest of its own share of
    the edges; an edge left out is the heaviest on a cycle of its share, hence (cycle property)
    outside the global forest, under the same total order (weight, input row). The local
    forests are then merged pairwise in a tree: in step k rank r + 2^k sends its forest to rank
    r (r a multiple of 2^(k+1)), which keeps the forest of the union. Rows of a lower rank come
    first, so a forest's edge index order is input row order and the kernel's tie rule (lower
    index wins) is the global one. Each stage's wall time on this rank goes in ``stage_times``."""
    xp = array_module(src)
    times, started = [], time.perf_counter()

    def stage(name):
        nonlocal started
        times.append([name, round(time.perf_counter() - started, 6)])
        started = time.perf_counter()

    local = minimum_spanning_forest(EdgeList(src, dst, weight, n))
    chosen = local.edges
    ends = (src[chosen].astype(np.int64) << 32) | dst[chosen].astype(np.int64)
    weights, rows = weight[chosen], chosen + row_offset
    rounds, merges, step = local.rounds, 0, 1
    stage("local forest")
    while step < comm.size:
        sends = comm.rank % (2 * step) == step
        counts = np.zeros(comm.size, dtype=np.int64)
        if sends:
            counts[comm.rank - step] = ends.shape[0]
        got_ends, got = comm.alltoallv(ends if sends else ends[:0], counts)
        got_weights, _ = comm.alltoallv(weights if sends else weights[:0], counts, recv_counts=got)
        got_rows, _ = comm.alltoallv(rows if sends else rows[:0], counts, recv_counts=got)
        if sends:
            ends, weights, rows = ends[:0], weights[:0], rows[:0]
        elif got_ends.shape[0]:
            ends = xp.concatenate([ends, got_ends])
            weights = xp.concatenate([weights, got_weights])
            rows = xp.concatenate([rows, got_rows])
            merged = minimum_spanning_forest(EdgeList((ends >> 32).astype(np.int32),
                                                     (ends & 0xFFFFFFFF).astype(np.int32), weights, n))
            ends, weights, rows = ends[merged.edges], weights[merged.edges], rows[merged.edges]
            rounds += merged.rounds
        step *= 2
        merges += 1
        stage(f"merge {merges}")
    rows = comm.broadcast(rows, 0)
    rounds = int(to_host(comm.allreduce(xp.asarray([rounds], dtype=np.int64), "max"))[0])
    stage("broadcast")
    return PartitionedForest(rows=rows, components=n - int(rows.shape[0]), rounds=rounds, merges=merges,
                             stage_times=times)
