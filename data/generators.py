"""Benchmark graphs, generated on either backend (``xp`` is numpy or cupy).

``kronecker``: Graph500's generator: edge factor 16, initiator A=0.57, B=C=0.19, D=0.05, vertex
ids permuted; every edge is drawn independently, so the list's order is already random (no
shuffle needed). Weights uniform in [0, 1) when asked. Edges are drawn CHUNK at a time into the
output arrays, so temporaries stay bounded whatever the scale (Kron-26 is 2^30 edges).
``grid``: a side x side 4-neighbour lattice, vertex r*side+c, every edge once.
Both return (src, dst, weight-or-None) as int64/float64 arrays of that backend.
"""
from __future__ import annotations

import numpy as np

A, B, C = 0.57, 0.19, 0.19
EDGE_FACTOR = 16
CHUNK = 1 << 24


def kronecker(xp, scale: int, seed: int = 1, weighted: bool = True):
    rng = xp.random.default_rng(seed)
    m = EDGE_FACTOR << scale
    ab, c_norm, a_norm = A + B, C / (1 - (A + B)), A / (A + B)
    perm = xp.argsort(rng.random(1 << scale, dtype=np.float32))  # a random permutation of the ids
    src = xp.empty(m, dtype=np.int64)
    dst = xp.empty(m, dtype=np.int64)
    weight = xp.empty(m, dtype=np.float64) if weighted else None
    for lo in range(0, m, CHUNK):
        k = min(CHUNK, m - lo)
        s = xp.zeros(k, dtype=np.int64)
        d = xp.zeros(k, dtype=np.int64)
        for bit in range(scale):
            src_bit = rng.random(k, dtype=np.float32) > ab
            dst_bit = rng.random(k, dtype=np.float32) > xp.where(src_bit, c_norm, a_norm)
            s += src_bit.astype(np.int64) << bit
            d += dst_bit.astype(np.int64) << bit
        src[lo:lo + k] = perm[s]
        dst[lo:lo + k] = perm[d]
        if weighted:
            weight[lo:lo + k] = rng.random(k, dtype=np.float64)
    return src, dst, weight


def grid(xp, side: int, seed: int = 1, weighted: bool = True):
    v = xp.arange(side * side, dtype=np.int64).reshape(side, side)
    src = xp.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    dst = xp.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    weight = xp.random.default_rng(seed).random(src.shape[0], dtype=np.float64) if weighted else None
    return src, dst, weight
