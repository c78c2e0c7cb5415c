"""Fixed-width numeric columns between Arrow and NumPy, through their value buffers.

pyarrow's own conversions (``Array.to_numpy``, ``pa.array(ndarray)``, and before pyarrow 26
also ``DataType.to_pandas_dtype``) import pandas on their first call wherever it is installed:
about 0.2 s of every command on a 2-core machine, more than the bundled sample's whole read.
These touch only the types' widths and the buffers, which is all a column of integers or
floats without nulls needs.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def numpy_dtype(arrow_type: pa.DataType) -> np.dtype:
    """The NumPy dtype of an Arrow integer or float type (TypeError for any other)."""
    if pa.types.is_floating(arrow_type):
        return np.dtype(f"float{arrow_type.bit_width}")
    if pa.types.is_integer(arrow_type):
        return np.dtype(f"{'' if pa.types.is_signed_integer(arrow_type) else 'u'}int{arrow_type.bit_width}")
    raise TypeError(f"not a fixed-width numeric Arrow type: {arrow_type}")


def to_numpy(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of an integer or float column without nulls: a read-only view of its buffer
    where it is one chunk, else one copy joining its chunks."""
    if column.null_count:
        raise ValueError(f"{column.null_count} nulls in a column read as plain values")
    dtype = numpy_dtype(column.type)
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [np.frombuffer(chunk.buffers()[1], dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)
             for chunk in chunks if len(chunk)]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype)


def from_numpy(values: np.ndarray, null: np.ndarray | None = None, type: pa.DataType | None = None) -> pa.Array:
    """An Arrow array of ``values`` (1-D integers or floats; in ``type`` where given), null where
    ``null`` is true. The array shares the ndarray's memory where no conversion is needed."""
    arrow_type = type if type is not None else pa.from_numpy_dtype(values.dtype)
    values = np.ascontiguousarray(values, dtype=numpy_dtype(arrow_type))
    validity, nulls = None, 0
    if null is not None and (nulls := int(np.count_nonzero(null))):
        validity = pa.py_buffer(np.packbits(~np.asarray(null, dtype=bool), bitorder="little"))
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(values)], null_count=nulls)
