"""Seeded differential fuzz of the graph kernels against independent references (scipy's
unweighted shortest paths and minimum spanning tree, a serial Kruskal), on graphs sized to cross
the thresholds where the kernels switch code paths. tests/test_kernels.py's property tests use
graphs of at most 30 vertices, which reach none of them.

Thresholds, and the families and sizes below that straddle them:
BFS on the host (kernels/bfs.py)
- direction (ALPHA 15, BETA 18): top-down -> bottom-up when the frontier's out-arcs x 15 exceed
  the arcs still incident to unvisited vertices; back when the frontier x 18 < n. The steps taken
  are checked level by level against that rule run over the reference's levels.
- bottom-up probes PROBES (4) in-neighbours one at a time, then reads windows of WINDOW (8),
  16, 32... arcs: in-degree 4 / 5, 12 / 13, 28 / 29.
BFS on the GPU (kernels/gpu_bfs.py, kernels/cuda/bfs.cu)
- the same rule on device statistics; only vertices with out-arcs are queued (sinks, isolated).
- top-down vertex-parallel while the frontier's largest out-degree <= 32
  (VERTEX_PARALLEL_MAX_DEGREE), edge-parallel above (block scans, 32-ary warp search): 32 / 33.
- bfs_fused (one block of 1024 threads) after NARROW_LEVELS (8) top-down levels in a row of
  <= FUSED_MAX_FRONTIER (1024) queued vertices of out-degree <= FUSED_MAX_DEGREE (32); back to
  the cooperative bfs_levels when a frontier passes 1024 or a degree 32 (paths of 7 / 8 / 9,
  layers of 1024 / 1025, spikes of degree 31-33). The GPU's step per level is checked against
  this schedule run over the reference's levels (GPU_* below mirror kernels/gpu_bfs.py).
- claim_batch: ARC_BATCH (4) arcs per thread step; bottom-up BU_PROBES (4), then 32 in-neighbours
  per warp step (in-degree 4 / 5, 36 / 37); 32-bit bitmap words (n near multiples of 32);
  bfs_init on one block of 1024 threads (more than 1024 sources); step codes read with the state
  up to STEPS_READ_WITH_STATE (64) levels, by a second copy beyond (64 / 65 levels); a workspace
  reused by the next search of the same n (several searches per graph here).
- grid-stride loops: bfs_levels' grid is its resident blocks of 512 threads, other launches at most
  4 x 2048 threads per SM (about 1.08 M on an H200): the "big" tier passes them.
- partitioned (kernels/partitioned.py): the same rule on summed statistics; top-down proposals to
  owner ranks (ranks owning few vertices), bottom-up over a bitmap whose words two ranks' ranges
  share; on the GPU one thread per frontier arc.
MSF on the host (kernels/msf.py)
- bands: cut when the live edges exceed 2 x max(BAND_MIN 65 536, BAND_FACTOR 4 x live
  components): ~131 072 edges for n <= 16 384; threshold sampled at stride max(1, m // 2^14).
MSF on the GPU (kernels/gpu_msf.py, kernels/cuda/msf.cu)
- band target min(max(65 536, 4 x live components), max(65 536, m // BAND_MAX_FRACTION 4)): one
  band up to 65 536 live edges (and 4 n), several above; the m // 4 cap binds from m = 262 148
  when 4 n is larger.
- SAMPLE 2^14 (all edges below 16 384; the first 16 384 below 32 768; a jittered stride >= 2
  above), BINS 256 quantile bins that split a run of equal keys by edge index (all-equal and
  few-distinct weights); two worklists swapped each round; warp appends over m not a multiple of
  32; float32 and float64 keys (-0.0 = 0.0, subnormals); int32 edge indices (int64 only at
  m >= 2^31: not reached).
CSR build on the host (kernels/graph.py): row keys packed and decoded HOST_CHUNK (2^20) arcs at a
time, per input array (the big tier has more). Renumbering (both backends): a presence table for a narrow id range (GPU <= 8 m + 2^24 ids, host
<= 4 m + 2^20), a sort otherwise: ids dense, gapped, spread over int64, int32, uint64 above 2^63.

Families (numpy, from a seed): rmat (Kronecker / R-MAT power law), path and cycle (many levels,
optionally ending in a hub), star (one huge frontier, hub chains, a tail), grid (torus, holes),
components (many small ones and isolated vertices), dense (near-complete blocks), layered (level
widths chosen around 32 and 1024), multi (parallel edges, self-loops). Any family may get parallel
edges, self-loops, self-loop-only vertices, shuffled rows; weights are distinct reals, few
distinct values, all equal, signed integers or float32 with -0.0 / 0.0 / subnormals.

Checks per case: BFS (kernels.bfs.bfs; one source, several, over 1024; undirected and directed;
without and with a depth limit) and the partitioned BFS on 1, 2 and 3 thread ranks give scipy's
distances, every parent one level closer along a real arc, and the steps the direction policy
prescribes (the GPU's schedule, fused and edge-parallel steps included, on CuPy); the MSF on one
partition and on 2 and 3 ranks is exactly Kruskal's forest under (weight, input row), of scipy's
total weight on the graph with the lightest edge per pair. The last test checks that the default
cases reached every path in MUST_REACH (on NumPy it also predicts the GPU's steps).

Case k is family FAMILIES[k % 9] with seed k; its family's sizes walk a menu (k // 9 picks the
entry). GRAPH_FUZZ_CASES (default 72, about 20 s on NumPy on 2 cores) cases from GRAPH_FUZZ_FIRST
(0); GRAPH_FUZZ_CASE=rmat-17 runs that case alone. The big tier (big-rmat-0, big-grid-0,
big-star-0: 1.2-1.3 M edges) runs on CuPy, on NumPy only with GRAPH_FUZZ_LARGE=1. Seeds are
fixed (no Hypothesis database); a failure names its case and the command that reruns it.
"""
import math
import os
from collections import defaultdict
from functools import lru_cache

import numpy as np
import pytest

from kernels import backend as be
from kernels.bfs import ALPHA, BETA, bfs
from kernels.graph import build_graph, edge_list, renumber
from kernels.msf import minimum_spanning_forest
from kernels.partitioned import bfs_partitioned, build_local_graph, locate, msf_partitioned, renumber_partitioned
from kernels.structures import BAND_MIN
from tests.references import kruskal_forest_rows, scipy_bfs_levels, scipy_msf_weight
from tests.test_partitioned_kernels import run_ranks

FAMILIES = ("rmat", "path", "cycle", "star", "grid", "components", "dense", "layered", "multi")
BIG = ("big-rmat-0", "big-grid-0", "big-star-0")
CHECKS = ("bfs", "bfs-partitioned", "msf", "msf-partitioned")
DEFAULT_CASES = 72

# kernels/gpu_bfs.py's policy constants (that module imports CuPy; the CuPy run asserts these)
GPU_FUSED_MAX_FRONTIER, GPU_FUSED_MAX_DEGREE, GPU_NARROW_LEVELS, GPU_VERTEX_PARALLEL_MAX_DEGREE = 1024, 32, 8, 32
GPU_STEPS_READ_WITH_STATE = 64
GPU_BAND_MAX_FRACTION = 4  # kernels/gpu_msf.py


def _names(first, count):
    return [f"{FAMILIES[k % len(FAMILIES)]}-{k}" for k in range(first, first + count)]


def case_names():
    one = os.environ.get("GRAPH_FUZZ_CASE")
    if one:
        return [one]
    first = int(os.environ.get("GRAPH_FUZZ_FIRST", "0"))
    return _names(first, int(os.environ.get("GRAPH_FUZZ_CASES", str(DEFAULT_CASES)))) + list(BIG)


def _parse(name):
    big = name.startswith("big-")
    family, seed = name.removeprefix("big-").rsplit("-", 1)
    if family not in FAMILIES:
        raise ValueError(f"unknown fuzz family {family!r} in {name!r}: one of {FAMILIES}")
    return family, int(seed), big


# ---- graph families: dense int64 vertex numbers, a source to start from, and a description ----
#
# Each family walks its menu of threshold sizes in turn (its t-th case takes entry t, so the first
# cases of every family hold the sizes that matter most) and draws everything else from the seed.

def _turn(menu, turn):
    return menu[turn % len(menu)]


# (scale, live edges): host bands above 131 072 live edges at n <= 16 384; GPU bands above 65 536,
# its m // 4 cap from m = 262 148 when 4 n is larger; the GPU sample's stride at 16 384 / 32 768
RMAT_SIZES = ((14, 131_073), (16, 262_149), (12, 65_537), (13, 16_385), (10, 65_535), (15, 32_769),
              (14, 131_071), (9, 262_143), (12, 16_383), (13, 32_767), (9, 5_000))
PATH_LENGTHS = (9, 65, 1025, 8, 64, 7, 66, 300, 2, 10, 31, 33, 63)  # narrow streaks of 8; 64 levels
CYCLE_LENGTHS = (64, 8, 1025, 65, 9, 7, 300, 63, 66, 2, 10, 31, 33)
HUB_DEGREES = (1025, 33, 40_000, 32, 1024, 31, 4000, 1023, 30, 1)  # 32 / 33, 1024 / 1025, n / 18
GRID_SHAPES = ((100, 330), (32, 32), (2, 513), (33, 33), (31, 33), (5, 2000), (64, 65), (300, 7), (1, 64),
               (400, 400))  # n near multiples of 32


def _rmat(rng, big, turn):
    """Kronecker (Graph500's A, B, C = 0.57, 0.19, 0.19), vertex numbers permuted; self-loops
    moved off so that the live edge count is exactly m (the band thresholds count live edges)."""
    scale, m = (17, 1_300_000) if big else _turn(RMAT_SIZES, turn)
    src, dst = np.zeros(m, np.int64), np.zeros(m, np.int64)
    for _ in range(scale):
        r = rng.random(m)
        src = 2 * src + (r >= 0.76)
        dst = 2 * dst + (((r >= 0.57) & (r < 0.76)) | (r >= 0.95))
    perm = rng.permutation(1 << scale)
    src, dst = perm[src], perm[dst]
    loops = src == dst
    dst[loops] = (dst[loops] + 1) % (1 << scale)
    return src, dst, int(src[0]), f"scale {scale}, m {m}"


def _hub_on(rng, attach, first):
    """A hub joined to ``attach`` with a chosen number of leaves, numbered from ``first``."""
    k = int(rng.choice((30, 31, 32, 33, 1024, 1025)))
    hub, leaves = first, first + 1 + np.arange(k)
    return np.concatenate([[attach], np.full(k, hub)]), np.concatenate([[hub], leaves]), k


def _path(rng, big, turn, closed=False):
    """A path (or cycle) of a chosen length, forward arcs with a few flipped, sometimes ending in
    a hub: narrow levels, then a wide one."""
    length = _turn(CYCLE_LENGTHS if closed else PATH_LENGTHS, turn)
    src, dst = np.arange(length - 1), np.arange(1, length)
    if closed and length > 2:
        src, dst = np.append(src, length - 1), np.append(dst, 0)
    what = f"length {length}"
    if rng.random() < 0.4:
        s, d, k = _hub_on(rng, length - 1, length)
        src, dst, what = np.concatenate([src, s]), np.concatenate([dst, d]), what + f", hub of {k} at the end"
    flip = rng.random(src.shape[0]) < rng.choice([0.0, 0.0, 0.03])
    src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
    return src, dst, 0, what


def _cycle(rng, big, turn):
    return _path(rng, big, turn, closed=True)


def _star(rng, big, turn):
    """Hubs joined in a path, each with k leaves (arcs out of or into the hub), and a tail path
    hanging off hub 0's first leaf."""
    k = 1_200_000 if big else _turn(HUB_DEGREES, turn)
    hubs = 1 if big else int(rng.choice([h for h in (1, 2, 5, 40) if h * k <= 100_000] or [1]))
    tail = int(rng.choice((0, 3, 9, 12)))
    src, dst, first = [], [], 0
    for h in range(hubs):
        leaves = first + 1 + np.arange(k)
        out = rng.random() < 0.5
        src.append(np.full(k, first) if out else leaves)
        dst.append(leaves if out else np.full(k, first))
        if h:
            src.append([first - k - 1])
            dst.append([first])
        first += k + 1
    chain = np.concatenate([[1], first + np.arange(tail)])  # leaf 1, then the tail
    src.append(chain[1:])
    dst.append(chain[:-1])
    return np.concatenate(src), np.concatenate(dst), int(chain[-1]), f"{hubs} hubs of {k} leaves, tail {tail}"


def _grid(rng, big, turn):
    """A 2-D grid, arcs right and down, sometimes wrapped into a torus, sometimes with holes."""
    r, c = (800, 800) if big else _turn(GRID_SHAPES, turn)
    at = np.arange(r * c).reshape(r, c)
    src = [at[:, :-1].ravel(), at[:-1, :].ravel()]
    dst = [at[:, 1:].ravel(), at[1:, :].ravel()]
    torus = rng.random() < 0.25
    if torus:
        src += [at[:, -1], at[-1, :]]
        dst += [at[:, 0], at[0, :]]
    src, dst = np.concatenate(src), np.concatenate(dst)
    holes = float(rng.choice((0.0, 0.0, 0.1, 0.35)))
    keep = rng.random(src.shape[0]) >= holes
    start = int(at[0, 0] if rng.random() < 0.5 else at[r // 2, c // 2])
    return src[keep], dst[keep], start, f"{r} x {c}{' torus' if torus else ''}, holes {holes}"


def _components(rng, big, turn):
    """Many small components: random trees with a few extra edges; size-1 ones are isolated
    vertices (a self-loop each, the only way a vertex exists without an edge)."""
    total = _turn((20_000, 1025, 4096, 1023, 500), turn)
    sizes = []
    while sum(sizes) < total:
        sizes.append(min(int(rng.geometric(0.08)), total - sum(sizes)))
    src, dst, first = [], [], 0
    for size in sizes:
        if size == 1:
            src.append([first])
            dst.append([first])
        else:
            child = np.arange(1, size)
            extra = int(rng.integers(0, size))
            src.append(first + np.concatenate([child, rng.integers(0, size, extra)]))
            dst.append(first + np.concatenate([(rng.random(size - 1) * child).astype(np.int64),
                                               rng.integers(0, size, extra)]))
        first += size
    largest = int(np.argmax(sizes))
    start = int(sum(sizes[:largest]))  # a vertex of the largest component
    return np.concatenate(src), np.concatenate(dst), start, f"{len(sizes)} components, {total} vertices"


def _dense(rng, big, turn):
    """Near-complete blocks (long in-lists for the bottom-up warp scans), joined in a chain, and
    a tail path into block 0."""
    size = _turn((300, 33, 37, 200, 64, 100), turn)
    p = float(rng.choice((0.5, 0.9, 1.0)))
    blocks = int(rng.integers(1, 5))
    blocks = max(1, min(blocks, int(120_000 / (p * size * size / 2))))
    i, j = np.triu_indices(size, 1)
    src, dst = [], []
    for b in range(blocks):
        keep = rng.random(i.shape[0]) < p
        flip = rng.random(i.shape[0]) < 0.5
        a, c = b * size + i[keep], b * size + j[keep]
        src.append(np.where(flip[keep], c, a))
        dst.append(np.where(flip[keep], a, c))
        if b:
            src.append([(b - 1) * size + int(rng.integers(size))])
            dst.append([b * size + int(rng.integers(size))])
    tail = int(rng.choice((0, 9, 20)))
    chain = np.append(blocks * size + np.arange(tail), 0)  # the tail, then block 0's vertex 0
    src.append(chain[:-1])
    dst.append(chain[1:])
    return np.concatenate(src), np.concatenate(dst), int(chain[0]), f"{blocks} blocks of {size}, p {p}, tail {tail}"


def _layered(rng, big, turn):
    """Levels of chosen widths: every vertex has a parent one level up, plus extra arcs between
    neighbouring levels and inside a level. Widths: runs of 1 .. 1024 for 3 .. 20 levels and
    spikes of 31-33 or 1025+ (a hub's degree, a frontier too wide for one block). The first case
    is planned: nine levels of 1000 (one block takes them), three of 1025 with many arcs still
    ahead (the whole GPU, top-down), twenty of 1000 again."""
    if turn == 0:
        widths = [1, 30, 30, 30] + [1000] * 9 + [1025] * 3 + [1000] * 20
    else:
        widths = [1]
    while len(widths) < 4 or (turn and rng.random() < 0.7 and len(widths) < 60):
        if rng.random() < 0.6:
            widths += [int(rng.choice((1, 2, 30, 500, 1000, 1024)))] * int(rng.choice((3, 7, 8, 9, 20)))
        else:
            widths.append(int(rng.choice((31, 32, 33, 1025, 1500))))
        if sum(widths) > 60_000:
            break
    start = np.cumsum([0] + widths)
    extra = 0.0 if turn == 0 else float(rng.choice((0.0, 0.3, 1.5)))
    src, dst = [], []
    for level in range(1, len(widths)):
        upper, here = np.arange(start[level - 1], start[level]), np.arange(start[level], start[level + 1])
        src += [rng.choice(upper, here.shape[0]), rng.choice(upper, int(extra * here.shape[0])),
                rng.choice(here, here.shape[0] // 10)]
        dst += [here, rng.choice(here, int(extra * here.shape[0])), rng.choice(here, here.shape[0] // 10)]
    src, dst = np.concatenate(src), np.concatenate(dst)
    flip = rng.random(src.shape[0]) < 0.02
    return (np.where(flip, dst, src), np.where(flip, src, dst), 0,
            f"widths {widths[:12]}{'...' if len(widths) > 12 else ''} ({len(widths)} levels), extra {extra}")


def _multi(rng, big, turn):
    """A sparse random graph whose edges come 1-5 times each, in either direction."""
    n = _turn((5000, 100, 1000), turn)
    m0 = n * int(rng.choice((1, 3)))
    u, v = rng.integers(0, n, m0), rng.integers(0, n, m0)
    reps = rng.integers(1, 6, m0)
    u, v = np.repeat(u, reps), np.repeat(v, reps)
    flip = rng.random(u.shape[0]) < 0.5
    return np.where(flip, v, u), np.where(flip, u, v), int(u[0]), f"{n} vertices, {m0} pairs x 1-5"


GENERATORS = {"rmat": _rmat, "path": _path, "cycle": _cycle, "star": _star, "grid": _grid,
              "components": _components, "dense": _dense, "layered": _layered, "multi": _multi}


WEIGHT_MODES = ("real", "ties", "equal", "ints", "float32")


def _weights(rng, m, mode):
    if mode == "real":
        return mode, rng.random(m) * 10 - 1
    if mode == "ties":
        return mode, rng.integers(0, 3, m).astype(np.float64)
    if mode == "equal":
        return mode, np.ones(m)
    if mode == "ints":
        return mode, rng.integers(-1000, 1000, m).astype(np.float64)
    special = np.array([-2.5, -0.0, 0.0, 1e-45, 3e-45, 1e-40, 1.0, 1.0, 7.5], dtype=np.float32)
    w = (rng.random(m) * 4 - 1).astype(np.float32)
    pick = rng.random(m) < 0.5
    w[pick] = rng.choice(special, int(pick.sum()))
    return mode, w


def _ids(rng, n):
    """Input ids for dense vertices 0..n-1, ascending with the vertex (renumbering orders by id)."""
    mode = str(rng.choice(("dense", "dense", "gapped", "spread", "int32", "uint64")))
    v = np.arange(n, dtype=np.int64)
    if mode == "dense":
        return mode, v
    if mode == "gapped":
        return mode, 7 * v + 3
    if mode == "int32":
        return mode, v.astype(np.int32)
    if mode == "uint64":
        return mode, np.uint64(2**63) + 5 * v.astype(np.uint64)
    spread = np.unique(rng.integers(-2**62, 2**62, n + n // 8 + 10))
    return mode, np.sort(rng.choice(spread, n, replace=False))


class Case:
    """One generated graph, its input ids and weights, and its references (computed once)."""

    def __init__(self, name):
        self.name = name
        family, seed, self.big = _parse(name)
        self.seed_key = [seed, FAMILIES.index(family), int(self.big)]
        rng = np.random.default_rng(self.seed_key)
        turn = seed // len(FAMILIES)
        src, dst, start, what = GENERATORS[family](rng, self.big, turn)
        notes = [what]
        if family not in ("rmat", "multi") and rng.random() < 0.3:  # parallel edges, either direction
            pick = rng.choice(src.shape[0], max(1, src.shape[0] // int(rng.choice((5, 20)))))
            flip = rng.random(pick.shape[0]) < 0.5
            more_src, more_dst = np.where(flip, dst[pick], src[pick]), np.where(flip, src[pick], dst[pick])
            src, dst = np.concatenate([src, more_src]), np.concatenate([dst, more_dst])
            notes.append("parallel edges")
        n = int(max(src.max(), dst.max())) + 1
        if family in ("components", "multi") or rng.random() < 0.4:  # self-loops, loop-only vertices
            loops = np.concatenate([rng.integers(0, n, max(1, n // 100)), n + np.arange(int(rng.integers(1, 6)))])
            src, dst = np.concatenate([src, loops]), np.concatenate([dst, loops])
            notes.append("self-loops")
        if rng.random() < 0.5:
            order = rng.permutation(src.shape[0])
            src, dst = src[order], dst[order]
            notes.append("rows shuffled")
        # random vertex numbers, then only the vertices that occur (as renumbering will see them)
        n = int(max(src.max(), dst.max())) + 1
        perm = rng.permutation(n)
        src, dst, start = perm[src], perm[dst], int(perm[start])
        present, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
        self.n, self.m = int(present.shape[0]), int(src.shape[0])
        self.s, self.d = inverse[:self.m].astype(np.int64), inverse[self.m:].astype(np.int64)
        self.start = int(np.searchsorted(present, start))
        self.weight_mode, self.weight = _weights(rng, self.m, _turn(WEIGHT_MODES, turn + FAMILIES.index(family)))
        self.id_mode, self.ids = _ids(rng, self.n)
        self.src_ids, self.dst_ids = self.ids[self.s], self.ids[self.d]
        self.describe = (f"{name}: {'; '.join(notes)}; n {self.n}, m {self.m}, weights {self.weight_mode}, "
                         f"ids {self.id_mode}")
        self.source_sets = self._source_sets(rng)
        self._levels, self._limits, self._arcs, self._degree = {}, {}, {}, {}

    def _source_sets(self, rng):
        sets = {"start": np.array([self.start])}
        k = min(self.n, int(rng.integers(2, 7)))
        sets["several"] = np.sort(rng.choice(self.n, k, replace=False))
        if self.n >= 2500 and rng.random() < 0.5:  # more sources than bfs_init's one block has threads
            sets["many"] = np.sort(rng.choice(self.n, 1025 + int(rng.integers(0, 500)), replace=False))
        return sets

    def rerun(self, backend):
        return (f"case {self.describe}\nrerun: GRAPH_FUZZ_CASE={self.name}{' GRAPH_FUZZ_LARGE=1' if self.big else ''} "
                f"python -m pytest 'tests/test_differential.py' -k {backend}")

    def levels(self, label, directed):
        """The reference's distances from a source set (no depth limit)."""
        key = (label, directed)
        if key not in self._levels:
            self._levels[key] = scipy_bfs_levels(self.n, self.s, self.d, self.source_sets[label], directed)
        return self._levels[key]

    def limit(self, label, directed):
        """A depth limit that cuts this search short, near a threshold where possible."""
        key = (label, directed)
        if key not in self._limits:
            deepest = int(self.levels(label, directed).max())
            choices = [x for x in (0, 1, 2, 8, 9, 64, 65, deepest - 1) if 0 <= x < deepest]
            rng = np.random.default_rng(self.seed_key + [1 + list(self.source_sets).index(label), int(directed)])
            self._limits[key] = int(rng.choice(choices)) if choices else 0
        return self._limits[key]

    def searches(self):
        """(source set, directed, depth limit): every set both ways, without and with a limit."""
        return [(label, directed, limit) for label in self.source_sets for directed in (False, True)
                for limit in (None, self.limit(label, directed))]

    def arc_keys(self, directed):
        """Sorted tail * n + head of every arc (self-loops left out)."""
        if directed not in self._arcs:
            keep = self.s != self.d
            s, d = self.s[keep], self.d[keep]
            keys = s * self.n + d if directed else np.concatenate([s * self.n + d, d * self.n + s])
            self._arcs[directed] = np.unique(keys)
        return self._arcs[directed]

    def out_degree(self, directed):
        if directed not in self._degree:
            keep = self.s != self.d
            degree = np.bincount(self.s[keep], minlength=self.n)
            if not directed:
                degree = degree + np.bincount(self.d[keep], minlength=self.n)
            self._degree[directed] = degree
        return self._degree[directed]

    @property
    def forest(self):
        if not hasattr(self, "_forest"):
            self._forest = kruskal_forest_rows(self.s, self.d, self.weight)
            self._scipy = scipy_msf_weight(self.n, self.s, self.d, self.weight.astype(np.float64))
        return self._forest


@lru_cache(maxsize=2)
def get_case(name) -> Case:
    return Case(name)


# ---- the direction policy, run over the reference's levels ----------------------------------

def level_statistics(case, label, directed, limit):
    """Per level of the reference: vertices, vertices with out-arcs, their out-arcs, the largest
    out-degree; and the arcs still incident to unvisited vertices once that level is found."""
    dist = case.levels(label, directed)
    degree = case.out_degree(directed)
    reached = dist >= 0
    depth = int(dist.max()) + 1
    at = dist[reached]
    size = np.bincount(at, minlength=depth)
    queued = np.bincount(at, weights=degree[reached] > 0, minlength=depth).astype(np.int64)
    arcs = np.bincount(at, weights=degree[reached], minlength=depth).astype(np.int64)
    top = np.zeros(depth, dtype=np.int64)
    np.maximum.at(top, at, degree[reached])
    unvisited = int(degree.sum()) - np.cumsum(arcs)
    levels = depth if limit is None else min(depth, limit)
    return size, queued, arcs, top, unvisited, levels


def host_steps(case, label, directed, limit):
    """kernels/bfs.py's steps: bottom-up once arcs x ALPHA > unvisited, top-down again once the
    frontier x BETA < n (a level whose frontier is empty ends the search)."""
    size, _, arcs, _, unvisited, levels = level_statistics(case, label, directed, limit)
    steps, bottom_up = [], False
    for level in range(levels):
        if not bottom_up and arcs[level] * ALPHA > unvisited[level]:
            bottom_up = True
        elif bottom_up and size[level] * BETA < case.n:
            bottom_up = False
        steps.append("bottom-up" if bottom_up else "top-down")
    return steps


def gpu_steps(case, label, directed, limit):
    """kernels/cuda/bfs.cu's steps: the direction rule in bfs_levels, top-down vertex- or
    edge-parallel by the largest degree, and bfs_fused from the NARROW_LEVELS-th narrow top-down
    level in a row (bottom-up levels neither extend nor break a streak) until a frontier is too
    wide for it; bfs_levels then resumes top-down with no streak."""
    size, queued, arcs, top, unvisited, levels = level_statistics(case, label, directed, limit)
    steps, mode, streak, fused, level = [], "top-down", 0, False, 0
    while level < levels:
        narrow = queued[level] <= GPU_FUSED_MAX_FRONTIER and top[level] <= GPU_FUSED_MAX_DEGREE
        if fused:
            if narrow:
                steps.append("top-down/fused")
                level += 1
                continue
            fused, streak = False, 0
        if mode == "top-down" and arcs[level] * ALPHA > unvisited[level]:
            mode = "bottom-up"
        elif mode == "bottom-up" and size[level] * BETA < case.n:
            mode = "top-down"
        if mode == "bottom-up":
            steps.append("bottom-up")
        else:
            streak = streak + 1 if narrow else 0
            if streak >= GPU_NARROW_LEVELS:
                fused = True
                continue
            steps.append("top-down/vertex" if top[level] <= GPU_VERTEX_PARALLEL_MAX_DEGREE else "top-down/edge")
        level += 1
    return steps


# ---- what the cases reached, per backend: the last test checks the list reaches every path ----

REACHED: dict = defaultdict(lambda: defaultdict(set))  # backend -> what -> case names
RAN: dict = defaultdict(set)  # backend -> (case, check) that passed


def _note_steps(backend, case, steps, gpu_kind):
    seen = REACHED[backend]
    for a, b in zip(steps, steps[1:]):
        if a != b:
            seen[f"{a} -> {b}"].add(case.name)
    for s in steps:
        seen[s].add(case.name)
    if gpu_kind and len(steps) > GPU_STEPS_READ_WITH_STATE:
        seen["more than 64 levels"].add(case.name)


# ---- the checks ------------------------------------------------------------------------------

def check_search(case, where, label, directed, limit, distance, predecessor):
    """Distances equal the reference's; a source is its own parent, an unreached vertex has none,
    every other parent is one level closer and an arc of the graph leads from it to the vertex."""
    expected = case.levels(label, directed)
    if limit is not None:
        expected = np.where(expected > limit, -1, expected)
    what = f"{where}, sources {label}, {'directed' if directed else 'undirected'}, depth limit {limit}"
    wrong = np.flatnonzero(distance != expected)
    assert wrong.size == 0, (f"{what}: {wrong.size} distances differ; vertex {wrong[0]}: "
                             f"{distance[wrong[0]]}, expected {expected[wrong[0]]}")
    sources = case.source_sets[label]
    assert np.array_equal(predecessor[sources], sources), f"{what}: a source is not its own parent"
    unreached = np.flatnonzero(expected < 0)
    assert (predecessor[unreached] == -1).all(), f"{what}: an unreached vertex has a parent"
    inner = expected > 0
    v, p = np.flatnonzero(inner), predecessor[inner].astype(np.int64)
    bad = (p < 0) | (p >= case.n)
    assert not bad.any(), f"{what}: vertex {v[bad][0]} has parent {p[bad][0]}"
    bad = expected[p] != expected[v] - 1
    assert not bad.any(), (f"{what}: vertex {v[bad][0]} at level {expected[v[bad][0]]} has parent {p[bad][0]} "
                           f"at level {expected[p[bad][0]]}")
    keys = case.arc_keys(directed)
    want = p * case.n + v
    found = np.searchsorted(keys, want)
    bad = (found >= keys.shape[0]) | (keys[np.minimum(found, keys.shape[0] - 1)] != want)
    assert not bad.any(), f"{what}: no arc from parent {p[bad][0]} to vertex {v[bad][0]}"


def on_backend(case, xp):
    """The case's edge list renumbered by the kernels on xp; renumbering must give the dense
    numbers the references use."""
    s, d, ids = renumber(xp.asarray(case.src_ids), xp.asarray(case.dst_ids))
    assert np.array_equal(be.to_host(ids), case.ids), "renumbered ids are not the sorted input ids"
    assert np.array_equal(be.to_host(s), case.s) and np.array_equal(be.to_host(d), case.d), "dense ends differ"
    return edge_list(s, d, xp.asarray(case.weight), case.n)


def check_bfs(case, xp, backend):
    edges = on_backend(case, xp)
    gpu = backend == "cupy"
    for directed in (False, True):
        graph = build_graph(edges, directed=directed)
        for label, dirs, limit in case.searches():
            if dirs != directed:
                continue
            result = bfs(graph, case.source_sets[label], depth_limit=limit)
            distance, predecessor = be.to_host(result.distance), be.to_host(result.predecessor)
            check_search(case, "bfs", label, directed, limit, distance, predecessor)
            expected = (gpu_steps if gpu else host_steps)(case, label, directed, limit)
            assert result.steps == expected, (f"bfs from {label}, directed {directed}, limit {limit}: steps "
                                              f"{_runs(result.steps)}, the policy says {_runs(expected)}")
            _note_steps(backend, case, result.steps, gpu)
            if not gpu:  # what the GPU would take on this search (the policy is checked on the GPU run)
                predicted = gpu_steps(case, label, directed, limit)
                _note_steps("cupy (predicted)", case, predicted, True)
                if case.source_sets[label].shape[0] > 1024:
                    REACHED["cupy (predicted)"]["more than 1024 sources"].add(case.name)
            if case.source_sets[label].shape[0] > 1024:
                REACHED[backend]["more than 1024 sources"].add(case.name)


def _runs(steps):
    """Steps as runs, 'top-down x 3, bottom-up x 2': readable for long searches."""
    runs = []
    for s in steps:
        if runs and runs[-1][0] == s:
            runs[-1][1] += 1
        else:
            runs.append([s, 1])
    return ", ".join(f"{s} x {k}" for s, k in runs)


def check_bfs_partitioned(case, xp, backend):
    # half of the one-partition searches, as a partitioned level costs collectives between the
    # rank threads: each source set undirected without a limit and directed with one
    searches = [s for k, s in enumerate(case.searches()) if k % 4 in (0, 3)]
    for size in (1, 2, 3):
        bounds = np.linspace(0, case.m, size + 1).astype(np.int64)

        def program(comm):
            lo, hi = bounds[comm.rank], bounds[comm.rank + 1]
            s, d, owned_ids, own = renumber_partitioned(comm, xp.asarray(case.src_ids[lo:hi]),
                                                        xp.asarray(case.dst_ids[lo:hi]))
            results = []
            for directed in (False, True):
                graph = build_local_graph(comm, own, s, d, directed)
                for label, dirs, limit in searches:
                    if dirs == directed:
                        dense = locate(comm, own, owned_ids, [int(v) for v in case.ids[case.source_sets[label]]])
                        search = bfs_partitioned(comm, graph, dense, limit)
                        results.append((label, directed, limit, be.to_host(search.distance),
                                        be.to_host(search.predecessor), search.steps))
            return be.to_host(owned_ids), results

        ranks = run_ranks(size, program)
        owned = np.concatenate([r[0] for r in ranks])  # input id of each partitioned dense id
        at = np.searchsorted(case.ids, owned)  # ... and its dense number in the references
        assert np.array_equal(case.ids[np.minimum(at, case.n - 1)], owned), f"{size} ranks: owned ids are not input ids"
        for k, (label, directed, limit, _, _, steps) in enumerate(ranks[0][1]):
            distance = np.full(case.n, -2, dtype=np.int64)
            distance[at] = np.concatenate([r[1][k][3] for r in ranks])
            parent = np.concatenate([r[1][k][4] for r in ranks]).astype(np.int64)
            predecessor = np.full(case.n, -2, dtype=np.int64)
            predecessor[at] = np.where(parent >= 0, at[np.maximum(parent, 0)], parent)
            check_search(case, f"partitioned bfs on {size} ranks", label, directed, limit, distance, predecessor)
            expected = host_steps(case, label, directed, limit)
            assert steps == expected, (f"partitioned bfs on {size} ranks from {label}, directed {directed}, "
                                       f"limit {limit}: steps {_runs(steps)}, the policy says {_runs(expected)}")
            _note_steps(f"{backend} partitioned", case, steps, False)


def check_msf(case, xp, backend):
    edges = on_backend(case, xp)
    result = minimum_spanning_forest(edges)
    chosen = be.to_host(result.edges)
    expected = case.forest
    assert np.array_equal(chosen, expected), _forest_difference(case, chosen, expected)
    assert result.components == case.n - expected.shape[0]
    total, count = case._scipy
    assert count == chosen.shape[0], f"scipy's forest has {count} edges, the kernel's {chosen.shape[0]}"
    mine = math.fsum(case.weight[chosen].astype(np.float64).tolist())
    assert math.isclose(mine, total, rel_tol=1e-9, abs_tol=1e-9), f"forest weight {mine}, scipy's {total}"
    if result.bands > 1:
        REACHED[backend]["msf: several bands"].add(case.name)
    if backend == "numpy":  # the GPU's first band (kernels/gpu_msf.py): several iff live edges exceed it
        live = int((case.s != case.d).sum())
        cap = case.m // GPU_BAND_MAX_FRACTION
        target = min(max(BAND_MIN, 4 * case.n), max(BAND_MIN, cap))
        if live > target:
            REACHED["cupy (predicted)"]["msf: several bands"].add(case.name)
            if target == cap > BAND_MIN:
                REACHED["cupy (predicted)"]["msf: band capped at m / 4"].add(case.name)


def _forest_difference(case, chosen, expected):
    extra, missing = np.setdiff1d(chosen, expected), np.setdiff1d(expected, chosen)

    def show(rows):
        return [(int(r), int(case.s[r]), int(case.d[r]), float(case.weight[r])) for r in rows[:3]]

    return (f"forest differs from Kruskal's: {chosen.shape[0]} vs {expected.shape[0]} edges; rows only in the "
            f"kernel's {show(extra)}, only in Kruskal's {show(missing)} (row, src, dst, weight)")


def check_msf_partitioned(case, xp, backend):
    expected = case.forest
    for size in (2, 3):
        bounds = np.linspace(0, case.m, size + 1).astype(np.int64)

        def program(comm):
            lo, hi = bounds[comm.rank], bounds[comm.rank + 1]
            s, d, _, own = renumber_partitioned(comm, xp.asarray(case.src_ids[lo:hi]),
                                                xp.asarray(case.dst_ids[lo:hi]))
            forest = msf_partitioned(comm, s, d, xp.asarray(case.weight[lo:hi]), own.n, int(lo))
            return be.to_host(forest.rows), forest.components

        for rank, (rows, components) in enumerate(run_ranks(size, program)):
            difference = _forest_difference(case, rows, expected)
            assert np.array_equal(rows, expected), f"{size} ranks, rank {rank}: {difference}"
            assert components == case.n - expected.shape[0]


CHECK = {"bfs": check_bfs, "bfs-partitioned": check_bfs_partitioned, "msf": check_msf,
         "msf-partitioned": check_msf_partitioned}


@pytest.mark.parametrize("name, check", [(name, check) for name in case_names() for check in CHECKS],
                         ids=lambda v: v)
def test_kernels_agree_with_references(backend, xp, name, check):
    if name.startswith("big-") and backend == "numpy" and not os.environ.get("GRAPH_FUZZ_LARGE"):
        pytest.skip("big tier: a GPU case (set GRAPH_FUZZ_LARGE=1 to run it on NumPy)")
    if backend == "cupy":
        from kernels import gpu_bfs, gpu_msf

        assert (gpu_bfs.FUSED_MAX_FRONTIER, gpu_bfs.FUSED_MAX_DEGREE, gpu_bfs.NARROW_LEVELS,
                gpu_bfs.VERTEX_PARALLEL_MAX_DEGREE, gpu_bfs.STEPS_READ_WITH_STATE, gpu_msf.BAND_MAX_FRACTION) == (
            GPU_FUSED_MAX_FRONTIER, GPU_FUSED_MAX_DEGREE, GPU_NARROW_LEVELS, GPU_VERTEX_PARALLEL_MAX_DEGREE,
            GPU_STEPS_READ_WITH_STATE, GPU_BAND_MAX_FRACTION), "this file's copy of the GPU policy constants is stale"
    case = get_case(name)
    try:
        CHECK[check](case, xp, backend)
    except AssertionError as failure:
        failure.add_note(case.rerun(backend))
        raise
    RAN[backend].add((name, check))


# What the default case list must reach, by the backend whose run records it: a NumPy run also
# records the steps the GPU's policy would take on each search (checked on the GPU's own run).
GPU_PATHS = {"top-down/vertex", "top-down/edge", "bottom-up", "top-down/fused", "top-down/vertex -> top-down/fused",
             "top-down/fused -> top-down/vertex", "top-down/fused -> top-down/edge", "top-down/fused -> bottom-up",
             "top-down/edge -> bottom-up", "bottom-up -> top-down/vertex", "more than 64 levels",
             "more than 1024 sources", "msf: several bands"}
MUST_REACH = {
    "numpy": {
        "numpy": {"top-down", "bottom-up", "top-down -> bottom-up", "bottom-up -> top-down", "more than 1024 sources",
                  "msf: several bands"},
        "numpy partitioned": {"top-down -> bottom-up", "bottom-up -> top-down"},
        "cupy (predicted)": GPU_PATHS | {"msf: band capped at m / 4"},
    },
    "cupy": {"cupy": GPU_PATHS, "cupy partitioned": {"top-down -> bottom-up", "bottom-up -> top-down"}},
}


def test_the_default_cases_reach_every_code_path(backend):
    """After the cases: every path in MUST_REACH was taken by some default case (GRAPH_FUZZ_CASES
    at least the default, from 0), so that edits to the families cannot quietly lose a path."""
    wanted = {(name, check) for name in _names(0, DEFAULT_CASES) for check in CHECKS}
    if not wanted <= RAN[backend]:
        pytest.skip("needs every default case of this backend to have run and passed in this session")
    for who, paths in MUST_REACH[backend].items():
        missing = paths - set(REACHED[who])
        assert not missing, f"{who}: no case reached {sorted(missing)}; reached {sorted(REACHED[who])}"
