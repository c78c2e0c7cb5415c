"""The result tables, built one way for the one-partition run and every rank of a partitioned run.

- bfs_distances (``bfs_table``): ``vertex`` (the input's id type), ``distance`` int32 (null:
  unreached), ``predecessor`` (the input's id type; null for sources and unreached vertices).
- mst_edges (``forest_table``): ``src``, ``dst`` (the input's id type), ``weight`` (float32 or
  float64, the reader's weight type), one row per forest edge, the chosen input row's values.
Columns are given as pyarrow arrays of the input's ids and NumPy arrays on the host; a missing
predecessor is null in the array given. A one-partition run's results, over dense vertices,
go through ``dense_bfs_table`` / ``dense_forest_table`` with the input ids of its vertices
(``vertex_names``); a partitioned rank has the ids themselves.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def bfs_schema(id_type: pa.DataType) -> pa.Schema:
    return pa.schema([("vertex", id_type), ("distance", pa.int32()), ("predecessor", id_type)])


def forest_schema(id_type: pa.DataType, weight_type: pa.DataType) -> pa.Schema:
    return pa.schema([("src", id_type), ("dst", id_type), ("weight", weight_type)])


def bfs_table(vertex: pa.Array, distance: np.ndarray, predecessor: pa.Array) -> pa.Table:
    """``distance``: hops from the nearest source, -1 for unreached (stored as null)."""
    return pa.table([vertex, pa.array(distance, mask=distance < 0, type=pa.int32()), predecessor],
                    schema=bfs_schema(vertex.type))


def forest_table(src: pa.Array, dst: pa.Array, weight: np.ndarray) -> pa.Table:
    return pa.table([src, dst, pa.array(weight)], schema=forest_schema(src.type, pa.from_numpy_dtype(weight.dtype)))


def vertex_names(names: pa.Array | None, ids: np.ndarray) -> pa.Array:
    """Original ids of dense vertices, as a pyarrow array of the input's id type (``ids`` are
    codes into ``names`` for string ids)."""
    if names is not None:
        return names.take(pa.array(ids))
    return pa.array(ids)


def dense_bfs_table(ids: pa.Array, distance: np.ndarray, predecessor: np.ndarray) -> pa.Table:
    """A search over dense vertices 0..n-1 whose input ids are ``ids`` (``predecessor`` dense,
    meaningful where ``distance`` > 0)."""
    return bfs_table(ids, distance, ids.take(pa.array(predecessor, mask=distance <= 0)))


def dense_forest_table(ids: pa.Array, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> pa.Table:
    """A forest over dense vertices whose input ids are ``ids``: its edges' dense ends and
    weights, in input row order."""
    return forest_table(ids.take(pa.array(src)), ids.take(pa.array(dst)), weight)
