"""The total weight of a spanning forest, on either backend: as a run shows it
(``reported_total``) and exactly, to compare two forests (``exact_units``); and how large a graph
validation still checks against Kruskal's serial forest (``KRUSKAL_LIMIT``).

Both the one-partition run and the partitioned run sum their forest's weights here, so the two
report the same figure for the same forest. No Prefect: the ranks of a partitioned run use it.
"""
from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np

from kernels import backend as be
from kernels.verify import kruskal

# Kruskal's serial reference also runs inside validation up to this many edges; above it the
# cycle-property check alone proves minimality (it is exact, just not a second algorithm).
KRUSKAL_LIMIT = 200_000

# Values whose whole parts one float64 bincount adds (exact_units on the host): every partial
# sum is a whole number below 2**53 in magnitude (at most 2**16 parts below 2**27), so each
# addition is exact in any order; and the chunk's temporaries stay in cache: 16 M weights took
# 3.3 s in chunks of 2**25 and 0.2 s in chunks of 2**16 on a laptop's two cores.
EXACT_CHUNK = 1 << 16
# float64 values are m * 2**(e - 53) for a whole m below 2**53 and frexp's e in [-1073, 1024]:
# e + UNIT_SHIFT - 53 >= 0, so the exact sum is a whole number of 2**-UNIT_SHIFT units.
UNIT_SHIFT = 1126
EXPONENTS = 1024 + 1073 + 1
HALF = 26  # m as hi * 2**HALF + lo: hi in [-2**27, 2**27), lo in [0, 2**26)


def exact_units(values) -> int:
    """The exact sum of finite float32 or float64 ``values`` (either backend; float32 widened
    exactly), in units of 2**-UNIT_SHIFT:
    each value split by np.frexp into a whole mantissa and its exponent, the mantissas' halves
    added per exponent by float64 bincounts that stay exact (EXACT_CHUNK), then the ~2,100
    per-exponent sums joined in Python integers. Vectorized: Python's exact sum of 16 M weights
    (math.fsum over a list) took a GPU run ~0.35 s. On a GPU, float weights go to one kernel of
    the ahead-of-time module that forms the same halves per exponent from each value's bits
    (kernels/cuda/arrays.cu, exact_slot_sums); other types are summed on the host."""
    if be.is_gpu(values) and values.dtype.kind == "f":
        from kernels import gpu_arrays

        hi_sums, lo_sums = gpu_arrays.exact_slot_sums(values)
    else:
        hi_sums, lo_sums = _slot_sums(be.to_host(values))
    total = 0
    for slot in np.flatnonzero(hi_sums | lo_sums).tolist():
        # frexp's e = slot - 1073, the value m * 2**(e - 53): m << slot units of 2**-UNIT_SHIFT
        total += ((int(hi_sums[slot]) << HALF) + int(lo_sums[slot])) << slot
    return total


def _slot_sums(values: np.ndarray):
    """exact_units' sums of mantissa halves per exponent slot, on the host."""
    values = values.astype(np.float64, copy=False)  # exact, subnormal float32 included
    hi_sums = np.zeros(EXPONENTS, dtype=np.int64)  # (below 2**63 for any count under 2**36)
    lo_sums = np.zeros(EXPONENTS, dtype=np.int64)
    for lo in range(0, values.size, EXACT_CHUNK):
        mantissa, exponent = np.frexp(values[lo:lo + EXACT_CHUNK])
        whole = (mantissa * 2.0**53).astype(np.int64)  # exact: 53 significant bits
        slot = (exponent + 1073).astype(np.int64)
        for sums, part in ((hi_sums, whole >> HALF), (lo_sums, whole & ((1 << HALF) - 1))):
            sums += np.bincount(slot, weights=part.astype(np.float64), minlength=EXPONENTS).astype(np.int64)
    return hi_sums, lo_sums


def reported_total(weights) -> float | str:
    """The forest's total weight as a run reports it (weights on either backend): the exact sum
    of the weights (float32 weights widened exactly) rounded once to the nearest float64, as
    math.fsum gives it; where that is beyond float64's range, text: '≈' and the exact sum to 17
    significant digits."""
    if weights.size == 0:
        return 0.0
    units = exact_units(weights)
    try:
        return units / (1 << UNIT_SHIFT)  # Python's integer division rounds correctly
    except OverflowError:
        with localcontext() as context:
            context.prec = 17  # one rounding, of the exact quotient
            digits = f"{Decimal(units) / Decimal(1 << UNIT_SHIFT):.16e}"
        mantissa, exponent = digits.split("e")
        return f"≈{mantissa.rstrip('0').rstrip('.')}e{exponent}"


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
    checks = {"total weight equals Kruskal's": 0 if exact_units(weight[chosen]) == exact_units(weight[ref_edges]) else 1,
              "edge count equals Kruskal's": abs(len(ref_edges) - int(chosen.shape[0]))}
    return checks, reported_total(weight[ref_edges])
