"""The data the kernels exchange, its array encodings, and the constants both backends obey.

Host (NumPy) and device (CuPy) implementations import from here and never from each other's
modules, so the imports run one way: bfs / msf / graph -> gpu_* -> gpu -> structures.

Encodings (all arrays of one backend, NumPy or CuPy):
- vertex ids inside the kernels are dense int32 in [0, n); ``ids[i]`` is vertex i's original id.
- ``EdgeList``: one entry per input row, in input order, so edge index e IS the input row.
  ``src[e]``, ``dst[e]`` int32; ``weight[e]`` in the input's dtype (float32 stays float32,
  float64 stays exact), ``UNIT_WEIGHT`` ones for the forest of an unweighted input, or None. Self-loops stay in the list: the CSR leaves them out and no
  forest contains them, so kernels skip them instead of copying the list without them.
- ``CSR``: ``indptr`` int64 [n+1] (exclusive prefix sum of degrees: arcs can exceed 2^31),
  ``indices`` int32 [nnz]; the neighbours of v are ``indices[indptr[v]:indptr[v+1]]``.
- ``Graph``: ``out`` is the CSR of arcs src->dst (both directions when undirected); ``inc`` is
  the CSR of arcs reversed (the same object when undirected). Bottom-up BFS reads ``inc``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kernels.backend import count_equal

MAX_VERTICES = 2**31 - 1  # vertex ids are int32 inside the kernels
# The forest of an unweighted edge list is the forest of unit weights: every spanning forest is
# minimum, and Boruvka's tie-break by edge index picks one. float32, the narrowest weight both
# backends' forest kernels order (4 bytes per edge).
UNIT_WEIGHT = "float32"


def check_vertex_count(count: int) -> None:
    if count > MAX_VERTICES:
        raise ValueError(f"{count} distinct vertex ids: more than {MAX_VERTICES} are not supported")

# Direction policy of the BFS (Beamer; GAPBS's constants): go bottom-up when the frontier's
# out-arcs exceed the arcs still incident to unvisited vertices divided by ALPHA; go back
# top-down when the frontier holds fewer than n / BETA vertices.
ALPHA = 15
BETA = 18

# Minimum spanning forest bands (ECL-MST's heavy-edge filter): a band holds about BAND_FACTOR
# times as many edges as there are live components, and at least BAND_MIN.
BAND_FACTOR = 4
BAND_MIN = 1 << 16


@dataclass
class EdgeList:
    src: object
    dst: object
    weight: object | None
    n: int

    @property
    def m(self) -> int:
        return int(self.src.shape[0])

    def self_loops(self) -> int:
        """Edges whose two ends are one vertex (kept in the list, ignored by the kernels)."""
        return count_equal(self.src, self.dst)


@dataclass
class CSR:
    indptr: object
    indices: object
    n: int

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])

    def degree(self):
        return self.indptr[1:] - self.indptr[:-1]


@dataclass
class Graph:
    out: CSR
    inc: CSR
    directed: bool

    @property
    def n(self) -> int:
        return self.out.n


@dataclass
class BFSResult:
    distance: object  # int32 [n]: hops from the nearest source, -1 = unreached
    predecessor: object  # int32 [n]: BFS-tree parent, a source is its own, -1 = unreached
    levels: int  # number of expansion steps taken
    steps: list = field(default_factory=list)  # per level: 'top-down' / 'bottom-up' (+ GPU form)


class NoProgressError(RuntimeError):
    """A Boruvka round hooked no component although edges still cross components."""


@dataclass
class MSFResult:
    edges: object  # int64 indices into the EdgeList (= input rows), ascending
    components: int  # trees in the forest, isolated vertices included
    rounds: int  # Boruvka rounds over all bands
    bands: int
