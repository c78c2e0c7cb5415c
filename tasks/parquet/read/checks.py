"""Value checks of the columns the reader decodes, one row group (``ReadUnit``) at a time.

- ids (``unit_ids``): never null; string ids valid UTF-8 (Parquet readers do not check it, and
  Arrow refuses to read such bytes back from the results); returned as an integer ndarray or
  as large_string chunks.
- weights (``unit_weights``): never null, finite; integers held exactly by float64; decimals
  converted to their nearest float64 and refused where float64 cannot tell them from nearby
  decimals (``DECIMAL_DIGITS_FLOAT64_KEEPS``).
- signs (``find_signs``, ``unify_signs``): uint64 ids beside signed ones fit int64 when no id
  exceeds 2**63-1, uint64 when none is negative, and are refused otherwise; each row group
  reports its first id of each kind (``Signs``), so the decision needs no second pass and a
  partitioned run's ranks can agree on it.
- source ids given by the user (``integer_vertex_id``).
- decoded columns (``decoded_ids``, ``decoded_weights``): the same checks, with the same
  errors, on values a page decoder gave as NumPy or CuPy arrays with their validity mask (the
  arrays stay on their device; only an offending value is copied back to be named).
Every error is a tasks.errors.InputError naming the file, the column and the row within the
file (counted from 0; a filtered unit's rows are mapped back to theirs, ReadUnit.row_in_file).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kernels.backend import array_module, count_nonfinite, count_true
from tasks.errors import InputError
from tasks.parquet.arrays import to_numpy
from tasks.parquet.dataset.plan import ReadUnit, id_kind

# Any decimal of at most 15 significant digits is the shortest text of its nearest float64
# (DBL_DIG), so two such decimals never share a float64. A longer one that is not that text can
# share its float64 with another decimal (2**53 + 1 and 2**53; two 18-digit ratios one unit
# apart): both would weigh the same, the lower row would win their tie, and the forest would
# keep the heavier edge. Decimals that are the shortest text of their float64 map to distinct
# float64s, so refusing the others is exact, and needs no look across row groups or ranks.
DECIMAL_DIGITS_FLOAT64_KEEPS = 15


def first_true(mask) -> int:
    """Row of the first true value of a boolean (chunked) Arrow array, or of a NumPy or CuPy
    array that holds one."""
    if isinstance(mask, (pa.Array, pa.ChunkedArray)):
        return int(pc.index(mask, True).as_py())
    return int(mask.argmax())


def first_invalid_string(col: pa.Array) -> int:
    """Row of the first string that is not valid UTF-8 (the array is known to hold one)."""
    lo, hi = 0, len(col)  # invariant: the first bad row is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            col.slice(lo, mid - lo).validate(full=True)
            lo = mid
        except pa.ArrowInvalid:
            hi = mid
    return lo


def unit_ids(unit: ReadUnit, col: pa.ChunkedArray, name: str) -> np.ndarray | pa.ChunkedArray:
    """A unit's id column: an integer ndarray, or large_string chunks for string ids."""
    if col.null_count:
        raise InputError(f"{unit.file}: column {name!r} is null at row {unit.row_in_file(first_true(pc.is_null(col)))}")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if id_kind(col.type) == "integer":
        return to_numpy(col)
    # Parquet readers do not check that a string column holds UTF-8; such bytes would be copied
    # into the results, which Arrow itself then refuses to read
    offset = 0
    for chunk in col.chunks:
        try:
            chunk.validate(full=True)
        except pa.ArrowInvalid:
            row = unit.row_in_file(offset + first_invalid_string(chunk))
            raise InputError(f"{unit.file}: column {name!r} holds a string that is not valid UTF-8 at row {row}") from None
        offset += len(chunk)
    return col.cast(pa.large_string())


def unit_weights(unit: ReadUnit, col: pa.ChunkedArray, name: str, dtype: np.dtype) -> np.ndarray:
    """A unit's weights in the edge list's weight dtype, every one finite (integers exactly)."""
    if col.null_count:
        raise InputError(f"{unit.file}: weight column {name!r} is null at row {unit.row_in_file(first_true(pc.is_null(col)))}")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_integer(col.type):
        return integer_weights(unit, to_numpy(col), name)
    # float16 -> float32 and float32 -> float64 are exact. Decimals go to the nearest float64
    # through their text: Arrow's decimal -> float64 cast scales in floating point and misses
    # the nearest value for about 1 decimal in 4 (1.001 became 1.0010000000000001), which also
    # made weights one ulp apart equal, so the heavier of two parallel edges could win the tie
    precision = col.type.precision if pa.types.is_decimal(col.type) else 0
    if precision:
        col = col.cast(pa.string())
    weight = to_numpy(col.cast(pa.from_numpy_dtype(dtype)))
    refuse_nonfinite(unit, weight, name)
    if precision > DECIMAL_DIGITS_FLOAT64_KEEPS:
        refuse_blurred_decimals(unit, col, weight, name)
    return weight


def refuse_nonfinite(unit: ReadUnit, weight, name: str) -> None:
    """Refuse the first NaN or infinite weight (a NumPy or CuPy float array)."""
    if count_nonfinite(weight):
        row = first_true(~array_module(weight).isfinite(weight))
        # float() names nan, inf and -inf as NumPy's float32 and float64 scalars do
        raise InputError(f"{unit.file}: weight column {name!r} is {float(weight[row])} at row {unit.row_in_file(row)}; "
                         "weights must be finite")


def decoded_ids(unit: ReadUnit, values, valid, name: str):
    """A unit's integer ids as a page decoder gave them (``valid``: None when no row is null),
    refused as ``unit_ids`` refuses them."""
    if valid is not None and count_true(valid) < valid.shape[0]:
        raise InputError(f"{unit.file}: column {name!r} is null at row {unit.row_in_file(first_true(~valid))}")
    return values


def decoded_weights(unit: ReadUnit, values, valid, name: str, dtype: np.dtype):
    """A unit's integer, float32 or float64 weights as a page decoder gave them, in the edge
    list's weight dtype, refused as ``unit_weights`` refuses them."""
    if valid is not None and count_true(valid) < valid.shape[0]:
        raise InputError(f"{unit.file}: weight column {name!r} is null at row {unit.row_in_file(first_true(~valid))}")
    if values.dtype.kind in "iu":
        return integer_weights(unit, values, name)
    weight = values.astype(dtype, copy=False)
    refuse_nonfinite(unit, weight, name)
    return weight


def refuse_blurred_decimals(unit: ReadUnit, text: pa.ChunkedArray, weight: np.ndarray, name: str) -> None:
    """``text``: the unit's decimal weights as exact text; ``weight``: their nearest float64s.
    Refuses the first decimal with more than 15 significant digits that is not the shortest
    text of its float64 (checked one by one, so a column of such weights costs a Python step
    per long value)."""
    long_rows = np.flatnonzero(pc.greater(significant_digits(text), DECIMAL_DIGITS_FLOAT64_KEEPS).to_numpy(
        zero_copy_only=False))
    if long_rows.size == 0:
        return
    values = pc.take(text, pa.array(long_rows)).to_pylist()
    for row, value in zip(long_rows, values):
        if Decimal(value) != Decimal(repr(float(weight[row]))):
            raise InputError(f"{unit.file}: weight column {name!r} holds {value} at row {unit.row_in_file(row)}, "
                             "which float64 cannot tell apart from nearby decimals (more significant digits than "
                             "it holds), so two weights could tie; round the weights to 15 significant digits, or "
                             "store them as float64 if they were made from floating-point numbers")


def significant_digits(text: pa.ChunkedArray) -> pa.ChunkedArray:
    """Significant digits of each decimal's text, as Arrow writes decimals: plain (-0.0012300)
    or, for small values, with an exponent (1.2300E-7); an exponent's characters are counted
    too, which only sends a value to the exact check. Sign, leading zeros and the point go
    from the front, trailing zeros and the point from the back; a point left inside is not a
    digit. ASCII trims and a literal count, no regular expression: this runs over every weight
    of a decimal(16+) column, and costs a quarter of reading it (4 M decimal(38, 18) weights:
    0.1 s beside 0.4 s; removing sign and point by a regular expression took 0.6 s)."""
    core = pc.ascii_rtrim(pc.ascii_ltrim(text, "-0."), "0.")
    return pc.subtract(pc.binary_length(core), pc.count_substring(core, "."))


def integer_weights(unit: ReadUnit, weight, name: str):
    """Integer weights (a NumPy or CuPy array) as float64, refused where float64 cannot hold one
    exactly."""
    # float64 holds an integer exactly when its odd part fits the 53-bit significand; beyond
    # 2**53 some do not, and rounding them would merge distinct weights and change the forest
    if weight.dtype.itemsize == 8:
        xp = array_module(weight)
        bits = weight.view(np.uint64)
        magnitude = xp.where(weight < 0, ~bits + np.uint64(1), bits)  # |w|, -2**63 included
        lowest_bit = magnitude & (~magnitude + np.uint64(1))
        odd_part = magnitude // xp.maximum(lowest_bit, np.uint64(1))
        inexact = odd_part >= np.uint64(2**53)
        if inexact.any():
            row = first_true(inexact)
            raise InputError(f"{unit.file}: weight column {name!r} holds {int(weight[row])} at row "
                             f"{unit.row_in_file(row)}, which float64 cannot hold exactly (integers beyond 2**53 "
                             "lose digits); scale the weights down")
    return weight.astype(np.float64)


@dataclass
class Signs:
    """Where a unit of a uint64-beside-signed input holds ids only one of int64 and uint64 can
    hold: (file, column, row in file, value) of its first id above 2**63-1, and of its first
    negative id."""

    big: tuple | None = None
    negative: tuple | None = None


def find_signs(unit: ReadUnit, column: str, ids) -> Signs:
    """The ``Signs`` of one unit's ids of ``column`` (a NumPy or CuPy array)."""
    found = Signs()
    int64_max = np.uint64(np.iinfo(np.int64).max)  # a uint64 scalar: CuPy compares a Python int as int64
    if ids.dtype == np.uint64 and ids.size and ids.max() > int64_max:
        row = first_true(ids > int64_max)
        found.big = (unit.file, column, unit.row_in_file(row), int(ids[row]))
    elif ids.dtype.kind == "i" and ids.size and ids.min() < 0:
        row = first_true(ids < 0)
        found.negative = (unit.file, column, unit.row_in_file(row), int(ids[row]))
    return found


def unify_signs(found: list[Signs]) -> np.dtype:
    """uint64 ids beside signed ones: int64 when no id exceeds 2**63-1, uint64 when none is
    negative, an error naming both files otherwise. (The ids were stored as 64-bit patterns.)"""
    big = next((s.big for s in found if s.big), None)
    negative = next((s.negative for s in found if s.negative), None)
    if big is None:
        return np.dtype(np.int64)
    if negative is None:
        return np.dtype(np.uint64)
    (f1, c1, r1, v1), (f2, c2, r2, v2) = big, negative
    raise InputError(f"{f1}: column {c1!r} holds {v1} at row {r1} (above 2**63-1), but {f2}: column {c2!r} "
                     f"holds {v2} at row {r2} (negative); no integer type holds both")


_DECIMAL_ID = re.compile(r"-?[0-9]+")


def integer_vertex_id(path: str, given) -> int:
    """A source id the user gave for a graph of integer ids: an int, or its decimal digits in
    ASCII with an optional minus sign. Python's int() also takes '1_0', '+3', padding and
    non-ASCII digits, which more likely mean a typo than a vertex."""
    if isinstance(given, (int, np.integer)) and not isinstance(given, (bool, np.bool_)):
        return int(given)
    if isinstance(given, str) and _DECIMAL_ID.fullmatch(given):
        return int(given)
    raise InputError(f"{path}: source {given!r} is not an integer vertex id")
