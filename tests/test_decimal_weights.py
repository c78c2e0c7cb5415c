"""Decimal weights: each becomes its nearest float64 (Arrow's own cast is not correctly
rounded), and the forest is Kruskal's under the exact weights; two decimals that float64 cannot
tell apart are refused naming file, column, row and value, on one partition and on several.
The significant-digit count that sends long decimals to the exact check (tasks/parquet/read/checks.py)
against Python's Decimal, on named values and generated ones."""
from decimal import Context, Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows import mst as mst_cli
from tasks.parquet.read.checks import DECIMAL_DIGITS_FLOAT64_KEEPS, significant_digits
from tests.helpers import run
from tests.references import assert_forest, kruskal_rows

pytestmark = pytest.mark.usefixtures("prefect_server")


def test_decimal_weights_are_read_as_the_nearest_float64(tmp_path, capsys):
    """Arrow's decimal -> float64 cast is not correctly rounded: 1.001 became 1.0010000000000001,
    and the two decimals below, whose nearest float64 values differ, became one float64. The
    heavier edge (row 0) then won the tie by its row and the forest was not the minimum one,
    silently: the validation saw the same rounded weights."""
    heavier, lighter = Decimal("0.08755227724079506"), Decimal("0.08755227724079505")
    assert float(lighter) < float(heavier)
    src, dst = [0, 1, 0, 3], [1, 2, 2, 4]
    weight = [heavier, Decimal("0.001"), lighter, Decimal("-1.001")]
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": pa.array(weight, pa.decimal128(38, 17))}), path)
    code, _, err = run(mst_cli.main, [path, "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    as_float = [float(w) for w in weight]
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, as_float)  # rows 1, 2 and 3


@pytest.mark.parametrize("partitions", [1, 2])
@pytest.mark.parametrize("heavier, lighter, type_", [
    (Decimal(2**53 + 1), Decimal(2**53), pa.decimal128(38, 0)),
    (Decimal("0.333333333333333334"), Decimal("0.333333333333333333"), pa.decimal128(38, 18)),
], ids=["integers-beyond-2-pow-53", "scale-18-ratios-one-unit-apart"])
def test_decimal_weights_that_round_to_one_float64_are_refused(tmp_path, capsys, heavier, lighter, type_, partitions):
    """Decimals become their nearest float64. Two distinct ones can share it (a decimal(38, 0)
    weight of 2**53 + 1 beside 2**53, or two decimal(38, 18) ratios one unit apart): they
    would tie, the lower row would win, and the forest would hold the heavier edge while its
    validation (on the rounded weights) passed. A decimal with more significant digits than
    float64 tells apart is refused, naming file, column, row and value, as int64 weights
    beyond 2**53 are, on one partition and on several."""
    src, dst, weight = [0, 1, 0, 2], [1, 2, 2, 3], [heavier, Decimal(1), lighter, Decimal(1)]
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": pa.array(weight, type_)}), path)
    argv = [path, "--output", tmp_path / "o"] + (["--partitions", "2", "--runner", "dask", "--backend", "numpy"]
                                                 if partitions > 1 else [])
    code, _, err = run(mst_cli.main, argv, capsys)
    assert code == 1, err
    assert f"{path}: weight column 'weight' holds {heavier} at row 0, which float64 cannot tell" in err, err
    assert not (tmp_path / "o").exists()


def test_long_decimal_types_whose_values_float64_keeps_apart_are_read_exactly(tmp_path, capsys):
    """A decimal(38, 17) column of ordinary values (-1.001, 0.1: not exact in binary, but each
    the shortest text of its float64) and 16-17 digit values that are such texts too: read,
    and the forest is Kruskal's under the exact weights."""
    weight = [Decimal("-1.00100000000000000"), Decimal("0.10000000000000000"), Decimal("0.12345678901234560"),
              Decimal("0.12345678901234561"), Decimal("1234567890.12345670")]
    src, dst = [0, 1, 2, 0, 3], [1, 2, 0, 2, 1]
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": pa.array(weight, pa.decimal128(38, 17))}), path)
    code, _, err = run(mst_cli.main, [path, "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    forest = pq.read_table(tmp_path / "o" / "mst_edges.parquet")
    rows = kruskal_rows(src, dst, weight)  # over the exact Decimal weights
    assert list(zip(forest["src"].to_pylist(), forest["dst"].to_pylist())) == [(src[r], dst[r]) for r in rows]
    assert forest["weight"].to_pylist() == [float(weight[r]) for r in rows]


def reference_digits(value: Decimal) -> int:
    """Significant digits of a decimal's value: leading and trailing zeros of its digits are not
    (counted on the digits themselves: Decimal.normalize rounds to the context's 28 digits)."""
    return len("".join(map(str, value.as_tuple().digits)).strip("0"))


@st.composite
def long_decimals(draw):
    """A decimal type of more than 15 digits (both widths) and a value of it with some trailing
    zeros, either sign, possibly zero."""
    wide = draw(st.booleans())
    precision = draw(st.integers(16, 76 if wide else 38))
    scale = draw(st.integers(0, precision))
    zeros = draw(st.integers(0, precision - 1))
    unscaled = draw(st.integers(0, 10 ** (precision - zeros) - 1)) * 10 ** zeros
    # scaled exactly: the default context would round to 28 digits (999...9 becoming 1E+30)
    value = Decimal(draw(st.sampled_from([1, -1])) * unscaled).scaleb(-scale, context=Context(prec=100))
    return (pa.decimal256 if wide else pa.decimal128)(precision, scale), value


NAMED = [  # (type, value): each side of 15 digits, leading and trailing zeros, signs, zero, exponent text
    (pa.decimal128(38, 18), Decimal("-0.000123456789012345")),  # 15 digits after leading zeros
    (pa.decimal128(38, 18), Decimal("-0.001234567890123456")),  # 16
    (pa.decimal128(38, 18), Decimal("123456789012345.000000000000000000")),  # 15, trailing zeros
    (pa.decimal128(38, 18), Decimal("1234567890123456.5")),  # 17
    (pa.decimal128(38, 0), Decimal(2**53 + 1)),  # 16 digits
    (pa.decimal128(38, 0), Decimal(10**37)),  # 1 digit
    (pa.decimal128(38, 18), Decimal(0)),
    (pa.decimal128(26, 26), Decimal("1.234567890123456789E-7")),  # Arrow writes it with an exponent
    (pa.decimal128(26, 26), Decimal("1E-7")),
    (pa.decimal256(76, 38), Decimal("-" + "9" * 38 + "." + "9" * 38)),  # 76 digits
]


def check_count(type_, value):
    text = pa.chunked_array([pa.array([value], type_)]).cast(pa.string())
    count = significant_digits(text).to_pylist()[0]
    expected = reference_digits(value)
    assert count >= expected, (text, count, expected)
    # (an exponent's characters are counted: such a value only goes to the exact check)
    if "E" not in text[0].as_py():
        assert count == expected, (text, count, expected)
    assert (count > DECIMAL_DIGITS_FLOAT64_KEEPS) >= (expected > DECIMAL_DIGITS_FLOAT64_KEEPS)


@pytest.mark.parametrize("type_, value", NAMED, ids=[str(v) for _, v in NAMED])
def test_the_digit_count_of_named_decimals(type_, value):
    """The count that decides which decimals go to the exact check (more than 15 significant
    digits), against Decimal: never fewer digits than the value has, exact for plain text."""
    check_count(type_, value)


@settings(max_examples=300, deadline=None)
@given(long_decimals())
def test_the_digit_count_of_any_long_decimal(case):
    check_count(*case)
