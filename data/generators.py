"""Benchmark graphs, generated on either backend (``xp`` is numpy or cupy).

``kronecker``: Graph500's generator: edge factor 16, initiator A=0.57, B=C=0.19, D=0.05,
vertex ids permuted and edges shuffled; weights uniform in [0, 1) when asked.
``grid``: a side x side 4-neighbour lattice, vertex r*side+c, every edge once.
Both return (src, dst, weight-or-None) as int64/float64 arrays of that backend.
"""
from __future__ import annotations

import numpy as np

A, B, C = 0.57, 0.19, 0.19
EDGE_FACTOR = 16


def kronecker(xp, scale: int, seed: int = 1, weighted: bool = True):
    rng = xp.random.default_rng(seed)
    m = EDGE_FACTOR << scale
    src = xp.zeros(m, dtype=np.int64)
    dst = xp.zeros(m, dtype=np.int64)
    ab, c_norm, a_norm = A + B, C / (1 - (A + B)), A / (A + B)
    for bit in range(scale):
        src_bit = rng.random(m, dtype=np.float32) > ab
        dst_bit = rng.random(m, dtype=np.float32) > xp.where(src_bit, c_norm, a_norm)
        src += src_bit.astype(np.int64) << bit
        dst += dst_bit.astype(np.int64) << bit
    perm = xp.argsort(rng.random(1 << scale, dtype=np.float32))  # random permutations by
    order = xp.argsort(rng.random(m, dtype=np.float32))  # sorted keys: same code on both backends
    src, dst = perm[src][order], perm[dst][order]
    weight = rng.random(m, dtype=np.float64) if weighted else None
    return src, dst, weight


def grid(xp, side: int, seed: int = 1, weighted: bool = True):
    v = xp.arange(side * side, dtype=np.int64).reshape(side, side)
    src = xp.concatenate([v[:, :-1].ravel(), v[:-1, :].ravel()])
    dst = xp.concatenate([v[:, 1:].ravel(), v[1:, :].ravel()])
    weight = xp.random.default_rng(seed).random(src.shape[0], dtype=np.float64) if weighted else None
    return src, dst, weight
