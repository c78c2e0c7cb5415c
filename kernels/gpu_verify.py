"""The verifiers on the GPU, the drivers of kernels/cuda/verify.cu; each report is exactly the
one kernels/verify.py gives on the host, counted on the device and read back at the end.

- ``verify_bfs``: Graph500's rules in three passes (sources, arcs, vertices). Edge ends as int32
  or int64, distances and parents together as int32 or int64 (widened to int64 when they differ).
- ``verify_forest``: kernels/verify.py's method step by step, each step a few launches of the
  module's kernels (no run-time compilation) and O(log n) steps in all; host syncs only where a
  size decides what follows (the in-range forest, the trees, the longest tour, the depth).
  Edge ends int32 or int64; weights float32, float64, int32 or int64.

Launch loops count their rounds in the caller's ``rounds`` (kernels.verify.rounds), by step."""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu, gpu_arrays
from kernels.cuda_source import EDGE_TYPES, FOREST_WEIGHT_TYPES, template

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


FOREST_COUNTS = ("below", "above", "repeats", "trees", "crossing", "heavier")  # verify.cu's FOREST_* slots
RANGE_BLOCK_BITS = 6  # verify.cu's range-maximum blocks


def _list_ranks(packed, steps: int, rounds):
    """Pointer jumping over a packed list (verify.cu's layout), ``steps`` rounds: afterwards each
    entry's high half is the weight from it to the end. ``packed`` is reused as a buffer."""
    other = cp.empty_like(packed)
    for _ in range(steps):
        rounds["list ranking"] += 1
        gpu.launch("list_jump", packed.shape[0], (packed, other, np.int64(packed.shape[0])))
        packed, other = other, packed
    return packed


def _maximum(values) -> int:
    """The largest entry of a non-empty contiguous int64 array."""
    out = gpu_arrays.full(1, np.iinfo(np.int64).min, np.int64)
    gpu.launch("array_max", values.shape[0], (values, np.int64(values.shape[0]), out))
    return int(out.get()[0])


def _range_tables(h, rounds):
    """verify.cu's range-maximum tables over h: prefix, suffix, the block table and its width."""
    n = int(h.shape[0])
    blocks = -(-n // (1 << RANGE_BLOCK_BITS))
    levels = max(1, blocks.bit_length())
    prefix, suffix = cp.empty(n, dtype=cp.int32), cp.empty(n, dtype=cp.int32)
    table = cp.empty(levels * blocks, dtype=cp.int32)
    gpu.launch("range_blocks", blocks, (h, np.int64(n), prefix, suffix, table))
    for j in range(1, levels):
        rounds["range maxima"] += 1
        gpu.launch("range_level", blocks, (table[(j - 1) * blocks:], table[j * blocks:], np.int64(blocks),
                                           np.int64(1 << (j - 1))))
    return prefix, suffix, table, blocks


def verify_forest(src, dst, weight, n: int, chosen, rounds) -> dict:
    src, dst = _integers(cp.ascontiguousarray(src), cp.ascontiguousarray(dst))
    weight = cp.ascontiguousarray(weight)
    if weight.dtype.name not in FOREST_WEIGHT_TYPES:
        raise TypeError(f"no forest check for {weight.dtype} weights")
    if weight.dtype.kind == "f" and gpu_arrays.count_nonfinite(weight, nan_only=True):
        raise ValueError("edge weights must not be NaN")
    e, w = EDGE_TYPES[src.dtype.name], FOREST_WEIGHT_TYPES[weight.dtype.name]
    m = int(src.shape[0])
    if not isinstance(chosen, cp.ndarray):
        chosen = cp.asarray(np.asarray(chosen, dtype=np.int64))
    chosen = gpu_arrays.copy(gpu_arrays.astype(chosen, np.int64))
    chosen.sort()  # in place: out-of-range entries at the two ends, repeats side by side
    counts = cp.zeros(len(FOREST_COUNTS), dtype=cp.uint64)
    if chosen.shape[0]:
        gpu.launch("forest_chosen_check", chosen.shape[0], (chosen, np.int64(chosen.shape[0]), np.int64(m), counts))
    below, above, repeats = (int(c) for c in counts[:3].get())
    report = {"edges are distinct input edges": below + above + repeats}
    chosen = chosen[below:chosen.shape[0] - above]
    k = int(chosen.shape[0])

    label = gpu_arrays.arange(n, np.int32)
    if k:
        gpu.launch(template("forest_hook", e), k, (src, dst, chosen, np.int64(k), label))
    if n:
        gpu.launch("forest_labels", n, (label, np.int64(n), counts))
    trees = int(counts[3:4].get()[0])
    report["acyclic"] = abs(k - (n - trees))  # n vertices, k edges and c components: a forest when k = n - c
    if report["acyclic"]:
        if m:
            gpu.launch(template("forest_crossing", e), m, (src, dst, np.int64(m), label, counts))
        report["one tree per component"] = int(counts[4:5].get()[0])
        report["minimum (cycle property)"] = -1  # not checkable on a non-forest
        return report

    # ranks by weight, ties in any order; rank k, a root's, is lighter than every key
    edge_rank = cp.empty(k, dtype=cp.int32)
    key_of_rank = gpu_arrays.full(k + 1, np.iinfo(np.int64).min, np.int64)
    size = gpu_arrays.bincount(label, n)  # vertices of the tree labelled v (0 off labels)
    parent, rank = gpu_arrays.arange(n, np.int32), gpu_arrays.full(n, k, np.int32)
    child_of_edge = cp.empty(k, dtype=cp.int32)
    depth, steps = 0, 0
    if k:
        keys = cp.empty(k, dtype=cp.int64)
        gpu.launch(template("forest_weight_keys", w), k, (weight, chosen, np.int64(k), keys))
        keys.sort()
        gpu.launch(template("forest_ranks", w), k, (weight, chosen, np.int64(k), keys, cp.zeros(k, dtype=cp.int32),
                                                    edge_rank, key_of_rank))
        del keys
        steps = max(0, 2 * _maximum(size) - 3).bit_length()  # rounds that rank the longest tour
        # root every tree at its label through its Euler tour (verify.py, _root_forest)
        shift = (2 * k - 1).bit_length()
        arc_key = cp.empty(2 * k, dtype=cp.int64)
        gpu.launch(template("forest_arc_keys", e), 2 * k, (src, dst, chosen, np.int64(k), np.int32(shift), arc_key))
        arc_key.sort()
        run_start = cp.empty(n, dtype=cp.int64)
        gpu.launch("tour_run_starts", 2 * k, (arc_key, np.int64(2 * k), np.int32(shift), run_start))
        packed = cp.empty(2 * k + 1, dtype=cp.int64)
        gpu.launch("tour_links", 2 * k, (arc_key, np.int64(k), np.int32(shift), run_start, label, packed))
        del arc_key, run_start
        ranked = _list_ranks(packed, steps, rounds)
        tour_end = cp.empty(n, dtype=cp.int64)
        gpu.launch("tour_lengths", n, (size, np.int64(n), tour_end))
        gpu_arrays.cumsum(tour_end)
        step = cp.empty(2 * k, dtype=cp.int64)
        gpu.launch(template("forest_orient", e), k, (src, dst, chosen, np.int64(k), ranked, label, tour_end, edge_rank,
                                                     parent, rank, child_of_edge, step))
        del ranked, tour_end
        depth = _maximum(gpu_arrays.cumsum(step))
        del step

    # heavier ancestors by binary lifting (verify.py, _heavier_ancestor)
    levels = max(1, (depth + 1).bit_length())
    table = cp.empty(levels * n, dtype=cp.int64)
    aparent = cp.empty(n, dtype=cp.int32)
    if n:
        gpu.launch("lift_first", n, (parent, rank, np.int64(n), table))
        for j in range(1, levels):
            rounds["binary lifting"] += 1
            gpu.launch("lift_level", n, (table[(j - 1) * n:], table[j * n:], np.int64(n)))
        rounds["binary lifting"] += 1
        gpu.launch("lift_descend", n, (table, np.int32(levels), np.int64(n), parent, rank, aparent))
    del table

    # KRT leaf positions by A's Euler tour (verify.py, _krt_leaf_order)
    slot = gpu_arrays.full(n, -1, np.int64)
    later = cp.zeros(1, dtype=cp.int64)
    if k:
        keys = cp.empty(k, dtype=cp.int64)
        vertex_of_rank = cp.empty(k, dtype=cp.int32)
        gpu.launch("krt_keys", k, (child_of_edge, edge_rank, np.int64(k), aparent, keys, vertex_of_rank))
        keys.sort()
        child_sorted = cp.empty(k, dtype=cp.int32)
        first_child = gpu_arrays.full(n, -1, np.int64)
        gpu.launch("krt_slots", k, (keys, np.int64(k), vertex_of_rank, child_sorted, slot, first_child))
        packed = cp.empty(2 * k + 1, dtype=cp.int64)
        gpu.launch("krt_links", k, (keys, np.int64(k), child_sorted, slot, first_child, parent, packed))
        del keys, vertex_of_rank, child_sorted, first_child
        later = _list_ranks(packed, steps, rounds)
    first = gpu_arrays.exclusive_sums(size)
    position, h = cp.empty(n, dtype=cp.int32), cp.empty(n, dtype=cp.int32)
    if n:
        gpu.launch("krt_positions", n, (np.int64(n), label, first, size, slot, later, rank, position, h))
    del first, slot, later, parent, aparent

    # the cycle property over every input edge
    if m:
        prefix, suffix, table, blocks = _range_tables(h, rounds)
        gpu.launch(template("forest_cycle_check", e, w), m,
                   (src, dst, weight, np.int64(m), position, h, prefix, suffix, table, np.int64(blocks),
                    key_of_rank, np.int64(k), counts))
    crossing, heavier = (int(c) for c in counts[4:6].get())
    report["one tree per component"] = crossing
    report["minimum (cycle property)"] = -1 if crossing else heavier
    return report
