"""Integer and float columns between Arrow and NumPy through their buffers
(tasks/parquet/arrays.py): the same dtypes and values as pyarrow's own conversions, which
import pandas where it is installed (DataType.to_pandas_dtype too, before pyarrow 26)."""
import numpy as np
import pyarrow as pa
import pytest

from tasks.parquet.arrays import from_numpy, numpy_dtype, to_numpy

NUMERIC = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
           pa.float16(), pa.float32(), pa.float64()]


@pytest.mark.parametrize("arrow_type", NUMERIC, ids=str)
def test_each_numeric_type_has_pyarrows_dtype(arrow_type):
    assert numpy_dtype(arrow_type) == np.dtype(arrow_type.to_pandas_dtype())


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.bool_(), pa.decimal128(10, 2), pa.timestamp("s")], ids=str)
def test_a_type_that_is_no_plain_number_is_refused(arrow_type):
    with pytest.raises(TypeError, match="not a fixed-width numeric Arrow type"):
        numpy_dtype(arrow_type)


@pytest.mark.parametrize("arrow_type", [pa.int8(), pa.uint64(), pa.float32(), pa.float64()], ids=str)
def test_values_go_both_ways_as_pyarrow_converts_them(arrow_type):
    rng = np.random.default_rng(3)
    values = rng.integers(0, 100, 1000).astype(numpy_dtype(arrow_type))
    chunked = pa.chunked_array([pa.array(values[:300], arrow_type), pa.array(values[300:], arrow_type)])
    sliced = pa.array(values, arrow_type).slice(17, 500)  # an offset into the buffer
    assert np.array_equal(to_numpy(chunked), chunked.to_numpy())
    assert np.array_equal(to_numpy(sliced), sliced.to_numpy())
    null = values % 7 == 0
    assert from_numpy(values, null=null, type=arrow_type).equals(pa.array(values, arrow_type, mask=null))


def test_a_column_with_nulls_is_not_read_as_plain_values():
    with pytest.raises(ValueError, match="1 nulls"):
        to_numpy(pa.array([1, None, 3], pa.int64()))
