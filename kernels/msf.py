"""Minimum spanning forest by Boruvka rounds over weight bands.

Encoding:
- input: an undirected ``EdgeList`` with each edge stored once (``src``, ``dst`` int32,
  ``weight`` any real dtype, self-loops included and never chosen); the result names edges by
  their index e into those arrays, which is their input row.
- ``rep`` int32 [n]: a vertex's component representative (a vertex id). ``parent`` int32 [n]:
  the hook forest of representatives; a representative is its own parent.
- inside a band, edges are sorted by (weight, edge index), so an edge's position in the band is
  its rank: one integer that orders by weight and names the edge. "Each component's cheapest
  edge" is the minimum position over the component's edges (a scatter-min on the host, an
  atomicMin on the GPU); rank keys are exact for any float64 weights.

Tie rule: among equal weights the edge with the lower index (earlier input row) is lighter. With
that total order the minimum spanning forest is unique, so results are deterministic and both
backends return the same forest (-0.0 and 0.0 are one weight on both). The GPU
(kernels/gpu_msf.py) orders by the same (weight, index) pairs without sorting a band.

Heavy-edge filter (ECL-MST): edges are taken in weight bands, lightest first. Each band is about
BAND_FACTOR times the number of live components; before a band is cut, edges whose ends already
share a component are dropped, so most heavy edges are never sorted at all. Finishing a band
before the next is Kruskal's order on bands, hence still the minimum forest.
"""
from __future__ import annotations

import numpy as np

from kernels.backend import array_module, count_nonfinite, is_gpu
from kernels.structures import BAND_FACTOR, BAND_MIN, EdgeList, MSFResult, NoProgressError

__all__ = ["MSFResult", "NoProgressError", "minimum_spanning_forest"]

SAMPLE = 1 << 14  # weights sampled to place a band's upper threshold


def band_threshold(xp, weight, target: int):
    """A weight such that roughly ``target`` of ``weight`` are <= it (sampled, deterministic)."""
    stride = max(1, weight.shape[0] // SAMPLE)
    sample = xp.sort(weight[::stride])
    k = min(sample.shape[0] - 1, (target * sample.shape[0]) // weight.shape[0])
    return sample[k]


def minimum_spanning_forest(edges: EdgeList, on_round=None) -> MSFResult:
    """The minimum spanning forest of an undirected edge list (see the module's tie rule).
    ``on_round(rounds_done, edges_left)``, if given, is called after each Boruvka round;
    edges_left counts the edges not yet known to be inside one component (all bands)."""
    if edges.weight is None:
        raise ValueError("a minimum spanning forest needs edge weights")
    _refuse_nan(edges.weight)
    if is_gpu(edges.src):
        from kernels.gpu_msf import msf_gpu

        return msf_gpu(edges, on_round or _ignore)
    return _msf_bands(edges, _boruvka_band, on_round or _ignore)


def _refuse_nan(weight) -> None:
    """NaN orders against no weight: a band's sampled threshold would be NaN, every band empty,
    and the rounds would never end. (The Parquet reader refuses NaN before any kernel runs.)"""
    if weight.dtype.kind == "f" and count_nonfinite(weight, nan_only=True):
        raise ValueError("edge weights must not be NaN")


def _ignore(*_):
    pass


def _boruvka_band(u, v, eid, parent, n, accepted, on_round):
    """Boruvka rounds on one band (edges sorted by rank, ends are representatives), on the host.
    Hooks and compresses ``parent`` in place, flags accepted edges, calls
    ``on_round(rounds_done, edges_left)`` after each round; returns the rounds."""
    rounds = 0
    while u.shape[0]:
        k = u.shape[0]
        position = np.arange(k, dtype=np.int64)
        best = np.full(n, k, dtype=np.int64)
        np.minimum.at(best, u, position)
        np.minimum.at(best, v, position)
        comps = np.flatnonzero(best < k).astype(np.int32)
        if comps.shape[0] == 0:
            raise NoProgressError(f"Boruvka round {rounds + 1}: {k} edges cross components but none was chosen")
        e = best[comps]
        # start-of-round snapshot: every hook target is read from the edge, not from parent
        other = np.where(u[e] == comps, v[e], u[e])
        parent[comps] = other
        # two components that chose each other chose the same edge: the smaller one stays root
        mutual = (parent[other] == comps) & (comps < other)
        parent[comps[mutual]] = comps[mutual]
        accepted[eid[e[~mutual]]] = 1  # one edge per hooked component: no duplicates
        while True:  # pointer jumping until every vertex points at its root
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent[:] = grand
        u, v = parent[u], parent[v]
        crossing = u != v
        u, v, eid = u[crossing], v[crossing], eid[crossing]
        rounds += 1
        on_round(rounds, int(u.shape[0]))
    return rounds


def _msf_bands(edges: EdgeList, solve_band, on_round) -> MSFResult:
    """Bands of light edges, each solved by Boruvka rounds; ``parent`` maps every vertex to its
    component's representative after each band (the band solvers compress it fully)."""
    xp = array_module(edges.src)
    n = edges.n
    parent = xp.arange(n, dtype=np.int32)
    accepted = xp.zeros(edges.m, dtype=np.uint8)
    u, v, w = edges.src, edges.dst, edges.weight
    eid = xp.arange(edges.m, dtype=np.int64)  # ascending: stable sorts below keep index order
    rounds, bands, live = 0, 0, n
    while u.shape[0]:
        u, v = parent[u], parent[v]
        crossing = u != v
        u, v, w, eid = u[crossing], v[crossing], w[crossing], eid[crossing]
        if u.shape[0] == 0:
            break
        target = max(BAND_MIN, BAND_FACTOR * live)
        if u.shape[0] > 2 * target:
            light = w <= band_threshold(xp, w, target)
            heavy = ~light
            bu, bv, bw, be = u[light], v[light], w[light], eid[light]
            u, v, w, eid = u[heavy], v[heavy], w[heavy], eid[heavy]
        else:
            bu, bv, bw, be = u, v, w, eid
            u = u[:0]
        order = xp.argsort(bw, kind="stable")
        done, heavy = rounds, int(u.shape[0])
        rounds += solve_band(bu[order], bv[order], be[order], parent, n, accepted,
                             lambda r, left: on_round(done + r, left + heavy))
        bands += 1
        live = n - int(accepted.sum())
    chosen = xp.flatnonzero(accepted).astype(np.int64)
    return MSFResult(edges=chosen, components=n - int(chosen.shape[0]), rounds=rounds, bands=bands)
