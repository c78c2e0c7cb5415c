"""Minimum spanning forest on the GPU: the driver of kernels/cuda/msf.cu (encodings there).

Bands, lightest first (the heavy-edge filter): each band holds about BAND_FACTOR x the live
components' edges of the (key, edge) order, chosen exactly by a histogram over bins that a
sample of the live edges places; a band never exceeds BAND_MAX_FRACTION of the edges, which
bounds the worklist's memory. A band's live edges are compacted in edge order into a worklist;
then Boruvka rounds run on it until it is empty:
  1. atomicMin of each component's lightest weight key (64-bit, order-preserving bits),
  2. atomicMin of the worklist position among its edges of exactly that key (positions order
     like edge indices, so the lower input row wins ties, as on the host),
  3. hook each component to the other end of its choice (the smaller of a mutual pair stays),
     appending the accepted edge,
  4. pointer jumping to the roots,
  5./6. relabel the worklist's ends and compact the edges that still cross components (a tile
     count, its prefix sum, a stable scatter: no sort, no host-side mask).
The host reads one small array per round (the new worklist length, the forest's size) and
raises NoProgressError when a round with crossing edges accepts none.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from kernels import gpu
from kernels.msf import BAND_FACTOR, BAND_MIN
from kernels.structures import EdgeList, MSFResult, NoProgressError

BINS = 256  # MSF_BINS in msf.cu
TILE = 4096  # MSF_TILE in msf.cu
TILE_THREADS = 256
SAMPLE = 1 << 14
BAND_MAX_FRACTION = 4  # a band holds at most m / BAND_MAX_FRACTION edges (+ one bin)
U64_MAX = np.uint64(2**64 - 1)


def _tiles(count: int) -> tuple[int]:
    return (max(1, min((count + TILE - 1) // TILE, gpu.sm_count() * 8)),)


def msf_gpu(edges: EdgeList, on_round) -> MSFResult:
    gpu.release_scratch()
    n, m = edges.n, edges.m
    w = edges.weight
    if w.dtype.name not in ("float32", "float64"):
        w = w.astype(cp.float64)
    wt, et = gpu.weight_type(w.dtype), gpu.edge_type(m)
    e_dtype = np.int32 if et == "int" else np.int64
    src, dst = edges.src, edges.dst
    parent = cp.arange(n, dtype=cp.int32)
    best_key = cp.full(n, U64_MAX, dtype=cp.uint64)
    best_pos = cp.full(n, U64_MAX, dtype=cp.uint64)
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
    base = (src, dst, w, np.int64(m), parent)
    rounds = bands = accepted = 0
    while m:
        # the band: bins over the live edges above lo, as many lightest bins as fit the target
        gpu.launch(gpu.template("msf_sample", wt), count, base + (lo_key, lo_edge, np.int64(count),
                                                                 np.int64(stride), sample_key, sample_edge))
        order = cp.argsort(sample_key)
        gpu.kernel("msf_bounds")((1,), (32,), (sample_key[order], sample_edge[order], np.int64(count),
                                                bound_key, bound_edge))
        hist.fill(0)
        gpu.launch(gpu.template("msf_histogram", wt), m, base + (lo_key, lo_edge, bound_key, bound_edge, hist))
        cumulative = np.cumsum(hist.get().astype(np.int64))
        live = int(cumulative[-1])
        if live == 0:
            break
        target = min(max(BAND_MIN, BAND_FACTOR * (n - accepted)), max(BAND_MIN, m // BAND_MAX_FRACTION))
        last = max(int(np.searchsorted(cumulative, target, side="right")) - 1, int(np.argmax(cumulative > 0)))
        band = int(cumulative[last])
        hi_key, hi_edge = bound_key[last:], bound_edge[last:]
        tiles = (m + TILE - 1) // TILE
        tile_counts = cp.empty(tiles, dtype=cp.int64)
        gpu.kernel(gpu.template("msf_band_count", wt))(_tiles(m), (TILE_THREADS,), base + (
            lo_key, lo_edge, hi_key, hi_edge, tile_counts))
        tile_ends = cp.cumsum(tile_counts)
        wu, wv, we = cp.empty(band, cp.int32), cp.empty(band, cp.int32), cp.empty(band, e_dtype)
        gpu.kernel(gpu.template("msf_band_fill", wt, et))(_tiles(m), (TILE_THREADS,), base + (
            lo_key, lo_edge, hi_key, hi_edge, tile_ends, tile_counts, wu, wv, we))
        del tile_counts, tile_ends
        bands += 1
        above = live - band
        other = (cp.empty(band, cp.int32), cp.empty(band, cp.int32), cp.empty(band, e_dtype))
        k = band
        while k:
            items = (wu, wv, we, np.int64(k))
            gpu.launch(gpu.template("msf_min_key", wt, et), k, items + (w, best_key))
            gpu.launch(gpu.template("msf_min_position", wt, et), k, items + (w, best_key, best_pos))
            gpu.launch(gpu.template("msf_hook", et), n, (wu, wv, we, np.int32(n), best_pos, parent, forest, info))
            gpu.launch("msf_compress", n, (np.int32(n), parent, best_key, best_pos))
            tile_counts = cp.empty((k + TILE - 1) // TILE, dtype=cp.int64)
            gpu.kernel(gpu.template("msf_relabel_count", et))(_tiles(k), (TILE_THREADS,), (
                wu, wv, np.int64(k), parent, tile_counts))
            tile_ends = cp.cumsum(tile_counts)
            ou, ov, oe = other
            gpu.kernel(gpu.template("msf_compact", et))(_tiles(k), (TILE_THREADS,), (
                wu, wv, we, np.int64(k), tile_ends, tile_counts, ou, ov, oe, info))
            state = info.get()
            rounds += 1
            if int(state[2]) == accepted:
                raise NoProgressError(f"Boruvka round {rounds}: {k} edges cross components but none was chosen")
            accepted, k = int(state[2]), int(state[1])
            other, (wu, wv, we) = (wu, wv, we), other
            on_round(rounds, k + above)
        del wu, wv, we, other
        if last == BINS - 1:
            break
        lo_key[...] = hi_key[0]
        lo_edge[...] = hi_edge[0] + np.uint64(1)
    chosen = cp.sort(forest[:accepted])
    return MSFResult(edges=chosen, components=n - accepted, rounds=rounds, bands=bands)
