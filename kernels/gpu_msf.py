"""Minimum spanning forest on the GPU: the driver of kernels/cuda/msf.cu (encodings there).

Bands, lightest first (the heavy-edge filter): each band holds about BAND_FACTOR x the live
components' edges of the (key, edge) order, chosen exactly by a histogram over bins that a
sample of the live edges places; a band never exceeds BAND_MAX_FRACTION of the edges (+ one bin),
which bounds the worklist's memory. A band's live edges are appended to a worklist (one pass
over the edge list); then Boruvka rounds run on it until it is empty:
  1. atomicMin of each component's lightest weight key (64-bit, order-preserving bits),
  2. atomicMin of the edge index among its edges of exactly that key (the lower input row wins
     ties, as on the host, so the forest is the CPU's),
  3. each chosen edge's item hooks the choosing component(s) and appends the edge once,
  4. pointer jumping to the roots (and the choices cleared), over the vertices,
  5. the items are relabelled to their new roots and those still crossing components appended
     to the other buffer (a shrinking worklist; no sort, no host-side mask).
The host reads one small array per round (the new worklist length, the forest's size) and
raises NoProgressError when a round with crossing edges accepts none.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu, gpu_arrays
from kernels.cuda_source import template
from kernels.structures import BAND_FACTOR, BAND_MIN, EdgeList, MSFResult, NoProgressError

BINS = 256  # MSF_BINS in msf.cu
SAMPLE = 1 << 14
BAND_MAX_FRACTION = 4  # a band holds at most m / BAND_MAX_FRACTION edges (+ one bin)
U64_MAX = np.uint64(2**64 - 1)


def msf_gpu(edges: EdgeList, on_round) -> MSFResult:
    gpu.release_scratch()
    n, m = edges.n, edges.m
    w = edges.weight
    if w.dtype.name not in ("float32", "float64"):
        w = w.astype(cp.float64)
    wt, et = gpu.weight_type(w.dtype), gpu.edge_type(m)
    e_dtype = np.int32 if et == "int" else np.int64
    parent = gpu_arrays.arange(n, cp.int32)
    best_key = gpu_arrays.full(n, U64_MAX, cp.uint64)
    best_edge = gpu_arrays.full(n, U64_MAX, cp.uint64)
    forest = cp.empty(max(n - 1, 1), dtype=cp.int64)
    info = cp.zeros(4, dtype=cp.uint64)
    lo_key = cp.zeros(1, dtype=cp.uint64)
    lo_edge = cp.zeros(1, dtype=cp.uint64)
    bound_key = cp.empty(BINS, dtype=cp.uint64)
    bound_edge = cp.empty(BINS, dtype=cp.uint64)
    hist = cp.empty(BINS, dtype=cp.uint64)
    count = min(SAMPLE, m)
    stride = m // count if count else 1
    sample_key = cp.empty(count, dtype=cp.uint64)
    sample_edge = cp.empty(count, dtype=cp.uint64)
    base = (edges.src, edges.dst, w, np.int64(m), parent)
    rounds = bands = accepted = 0
    while m:
        # the band: bins over the live edges above lo, as many lightest bins as fit the target
        gpu.launch(template("msf_sample", wt), count, base + (lo_key, lo_edge, np.int64(count),
                                                                 np.int64(stride), sample_key, sample_edge))
        # the sample in (key, edge) order, sorted on the host (16 Ki pairs: no sort kernel to build)
        keys, edge_ids = sample_key.get(), sample_edge.get()
        order = np.lexsort((edge_ids, keys))
        gpu.kernel("msf_bounds")((1,), (32,), (cp.asarray(keys[order]), cp.asarray(edge_ids[order]), np.int64(count),
                                                bound_key, bound_edge))
        hist.fill(0)
        gpu.launch(template("msf_histogram", wt), m, base + (lo_key, lo_edge, bound_key, bound_edge, hist))
        cumulative = np.cumsum(hist.get().astype(np.int64))
        live = int(cumulative[-1])
        if live == 0:
            break
        target = min(max(BAND_MIN, BAND_FACTOR * (n - accepted)), max(BAND_MIN, m // BAND_MAX_FRACTION))
        last = max(int(np.searchsorted(cumulative, target, side="right")) - 1, int(np.argmax(cumulative > 0)))
        band = int(cumulative[last])
        hi_key, hi_edge = bound_key[last:], bound_edge[last:]
        items = (cp.empty(band, cp.int32), cp.empty(band, cp.int32), cp.empty(band, e_dtype), cp.empty(band, cp.uint64))
        other = (cp.empty(band, cp.int32), cp.empty(band, cp.int32), cp.empty(band, e_dtype), cp.empty(band, cp.uint64))
        info[3:].fill(0)
        gpu.launch(template("msf_band_fill", wt, et), m, base + (lo_key, lo_edge, hi_key, hi_edge) + items + (info,))
        bands += 1
        above = live - band
        k = band
        while k:
            wu, wv, we, wk = items
            size = np.int64(k)
            gpu.launch("msf_min_key", k, (wu, wv, wk, size, best_key, info))
            gpu.launch(template("msf_min_edge", et), k, (wu, wv, we, wk, size, best_key, best_edge))
            gpu.launch(template("msf_hook", et), k, (wu, wv, we, size, best_edge, parent, forest, info))
            gpu.launch("msf_compress", n, (np.int32(n), parent, best_key, best_edge))
            gpu.launch(template("msf_relabel", et), k, (wu, wv, we, wk, size, parent) + other + (info,))
            state = info.get()
            if k == band and int(state[3]) != band:  # the fill and the histogram disagree
                raise RuntimeError(f"MSF band {bands}: {int(state[3])} edges filled, {band} counted")
            rounds += 1
            if int(state[2]) == accepted:
                raise NoProgressError(f"Boruvka round {rounds}: {k} edges cross components but none was chosen")
            accepted, k = int(state[2]), int(state[1])
            items, other = other, items
            on_round(rounds, k + above)
        del items, other
        if last == BINS - 1:
            break
        # the next band starts past this one's upper bound (read on the host: no kernel to build)
        lo_key.set(bound_key.get()[last:last + 1])
        lo_edge.set(bound_edge.get()[last:last + 1] + np.uint64(1))
    chosen = forest[:accepted]
    chosen.sort()  # in place: cupy.sort copies first, with a kernel of its own
    return MSFResult(edges=chosen, components=n - accepted, rounds=rounds, bands=bands)
