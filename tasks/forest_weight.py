"""The total weight of a spanning forest, on either backend: as a run shows it
(``reported_total``) and exactly, to compare two forests (``exact_total``); and how large a graph
validation still checks against Kruskal's serial forest (``KRUSKAL_LIMIT``).

Both the one-partition run and the partitioned run sum their forest's weights here, so the two
report the same figure for the same forest. No Prefect: the ranks of a partitioned run use it.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

from kernels import backend as be
from kernels.verify import kruskal

# Kruskal's serial reference also runs inside validation up to this many edges; above it the
# cycle-property check alone proves minimality (it is exact, just not a second algorithm).
KRUSKAL_LIMIT = 200_000

# Values summed per row by sum_in_blocks: each value passes through at most SUM_BLOCK - 1
# additions per level of rows.
SUM_BLOCK = 256


def exact_total(weights: np.ndarray) -> int:
    """The exact sum of float64 values, in units of 2**-1074 (the smallest float64): any finite
    weights, where math.fsum raises once a partial sum passes float64's range."""
    total = 0
    for value in weights.tolist():
        numerator, denominator = value.as_integer_ratio()  # denominator = 2**k, k <= 1074
        total += numerator << (1075 - denominator.bit_length())
    return total


def reported_total(weights) -> float | str:
    """A sum to show (weights on either backend), within 2**-40 of the exact sum relative to
    it however the weights cancel: a float, or where float64 cannot hold it, its decimal text."""
    if weights.size == 0:
        return 0.0
    xp = be.array_module(weights)
    # float32 sums overflow at 3.4e38; widened by their bits, as CuPy's own cast reads subnormals as 0
    values = be.float32_to_float64(weights) if weights.dtype == np.float32 else weights.astype(np.float64, copy=False)
    with np.errstate(over="ignore"):  # an overflow here sends the sum down the exact path
        total, height = sum_in_blocks(values, xp)
        magnitude, _ = sum_in_blocks(xp.abs(values), xp)
    # a float64 sum in which no term passes through more than `height` additions lies within
    # about height * 2**-53 * sum(|w|) of the exact one (twice that here, for the rounding of
    # the two sums themselves): enough unless large weights cancel ([1e16, 1, 1, -1e16] sums
    # to 0, not 2) or a partial sum overflows
    if math.isfinite(magnitude) and height * 2.0**-52 * magnitude <= 2.0**-40 * abs(total):
        return total
    host = be.to_host(values)
    try:
        return math.fsum(host.tolist())  # correctly rounded
    except OverflowError:  # a partial sum beyond float64's range: sum exactly in integers
        exact = Fraction(exact_total(host), 2**1074)
        try:
            return float(exact)
        except OverflowError:
            return f"{Decimal(exact.numerator) / Decimal(exact.denominator):.6e}"


def sum_in_blocks(values, xp) -> tuple[float, int]:
    """The sum of float64 values as sums of rows of SUM_BLOCK values, then of rows of those sums,
    and so on; and the most rounded additions any one value passes through, whatever order a
    backend adds a row in: 765 for 2**24 values, where one reduction over all of them bounds it
    only by n - 1."""
    height = 0
    while values.size > 1:
        rows = -(-values.size // SUM_BLOCK)
        height += min(values.size, SUM_BLOCK) - 1
        padded = xp.zeros(rows * SUM_BLOCK, dtype=np.float64)  # zeros add exactly
        padded[:values.size] = values
        values = padded.reshape(rows, SUM_BLOCK).sum(axis=1)
    return float(values[0]), height


def kruskal_check(src, dst, weight, n: int, chosen) -> tuple[dict[str, int], float | str]:
    """The forest ``chosen`` (input rows) beside Kruskal's serial forest of the same edges
    (arrays on either backend): two checks in a validation report's form (name -> violations:
    total weight equal, exactly; edge count equal) and Kruskal's total weight as shown."""
    weight, m = be.to_host(weight), int(weight.shape[0])
    # Kruskal walks the edges by (weight, row). Given each edge's rank in that order instead
    # of its weight it accepts the same edges, and the total it sums is then one of ranks,
    # which weights near 1e308 cannot overflow; both forests' weights are summed exactly here.
    rank = np.empty(m)
    rank[np.lexsort((np.arange(m), weight))] = np.arange(m)
    _, ref_edges = kruskal(be.to_host(src), be.to_host(dst), rank, n)
    chosen = be.to_host(chosen)
    checks = {"total weight equals Kruskal's": 0 if exact_total(weight[chosen]) == exact_total(weight[ref_edges]) else 1,
              "edge count equals Kruskal's": abs(len(ref_edges) - int(chosen.shape[0]))}
    return checks, reported_total(weight[ref_edges])
