"""The result tables, built one way for the one-partition run and every rank of a partitioned run.

- bfs_distances (``bfs_table``): ``vertex`` (the input's id type), ``distance`` int32 (null:
  unreached), ``predecessor`` (the input's id type; null for sources and unreached vertices).
- mst_edges (``forest_table``): the source and destination ids (the input's id type) and the
  weight (float32 or float64, the reader's weight type), one row per forest edge, the chosen
  input row's values; named as the input's columns (results.forest_columns; src, dst, weight
  by default).
Each schema names its result in its metadata (RESULT_KEY), whatever the file is called: the
footer says what the file is, and the writers choose each column's encoding by its role.
Columns are given as pyarrow arrays of the input's ids and NumPy arrays on the host; a missing
predecessor is null in the array given. A one-partition run's results, over dense vertices,
go through ``dense_bfs_table`` / ``dense_forest_table`` with the input ids of its vertices
(``vertex_names``); a partitioned rank has the ids themselves.

The page writer (tasks.parquet.write.page_writer) takes a result without a pyarrow table: a
``ResultColumns`` holds its columns as arrays of the compute backend (CuPy on a GPU), built by
``dense_bfs_columns`` / ``dense_forest_columns`` with the same schema, values and nulls as the
tables, so a GPU run's results go to the encoder without a copy to the host.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from kernels import backend as be
from tasks.parquet.arrays import from_numpy
from tasks.parquet.write.results import BFS_COLUMNS, BFS_RESULT_NAME, FOREST_COLUMNS, FOREST_RESULT_NAME, RESULT_KEY


def bfs_schema(id_type: pa.DataType) -> pa.Schema:
    return pa.schema(list(zip(BFS_COLUMNS, (id_type, pa.int32(), id_type))),
                     metadata={RESULT_KEY: BFS_RESULT_NAME.encode()})


def forest_schema(id_type: pa.DataType, weight_type: pa.DataType,
                  columns: tuple[str, str, str] = FOREST_COLUMNS) -> pa.Schema:
    """``columns``: the source, destination and weight columns' names (results.forest_columns)."""
    return pa.schema(list(zip(columns, (id_type, id_type, weight_type))),
                     metadata={RESULT_KEY: FOREST_RESULT_NAME.encode()})


def result_of(schema: pa.Schema) -> str | None:
    """The result a schema names in its metadata (RESULT_KEY), None where it names none."""
    named = (schema.metadata or {}).get(RESULT_KEY)
    return named.decode(errors="replace") if named is not None else None


def bfs_table(vertex: pa.Array, distance: np.ndarray, predecessor: pa.Array) -> pa.Table:
    """``distance``: hops from the nearest source, -1 for unreached (stored as null)."""
    return pa.table([vertex, from_numpy(distance, null=distance < 0, type=pa.int32()), predecessor],
                    schema=bfs_schema(vertex.type))


def forest_table(src: pa.Array, dst: pa.Array, weight: np.ndarray,
                 columns: tuple[str, str, str] = FOREST_COLUMNS) -> pa.Table:
    return pa.table([src, dst, from_numpy(weight)],
                    schema=forest_schema(src.type, pa.from_numpy_dtype(weight.dtype), columns))


def vertex_names(names: pa.Array | None, ids: np.ndarray) -> pa.Array:
    """Original ids of dense vertices, as a pyarrow array of the input's id type (``ids`` are
    codes into ``names`` for string ids)."""
    if names is not None:
        return names.take(from_numpy(ids))
    return from_numpy(ids)


def dense_bfs_table(ids: pa.Array, distance: np.ndarray, predecessor: np.ndarray) -> pa.Table:
    """A search over dense vertices 0..n-1 whose input ids are ``ids`` (``predecessor`` dense,
    meaningful where ``distance`` > 0)."""
    return bfs_table(ids, distance, ids.take(from_numpy(predecessor, null=distance <= 0)))


def dense_forest_table(ids: pa.Array, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
                       columns: tuple[str, str, str] = FOREST_COLUMNS) -> pa.Table:
    """A forest over dense vertices whose input ids are ``ids``: its edges' dense ends and
    weights, in input row order, in columns named ``columns``."""
    return forest_table(ids.take(from_numpy(src)), ids.take(from_numpy(dst)), weight, columns)


@dataclass(frozen=True)
class ResultColumns:
    """A result's columns on the compute backend: ``values[i]`` holds field i of ``schema``
    (its dtype the field's), ``valid[i]`` says which rows hold a value (bool; None: every row).
    Rows without a value hold anything. What the page writer needs of a pyarrow table."""

    schema: pa.Schema
    values: tuple
    valid: tuple

    @property
    def num_rows(self) -> int:
        return int(self.values[0].shape[0]) if self.values else 0

    def replace_schema_metadata(self, metadata: dict) -> ResultColumns:
        return replace(self, schema=self.schema.with_metadata(metadata))


def dense_bfs_columns(xp, ids, distance, predecessor) -> ResultColumns:
    """dense_bfs_table's result as ResultColumns of ``xp`` arrays (``ids``: the input's
    integer ids of dense vertices 0..n-1)."""
    ids = xp.asarray(ids)
    if xp is not np and ids.shape[0]:  # one launch of the ahead-of-time module
        from kernels import gpu_bfs

        distance, reached, has_predecessor, predecessor_ids = gpu_bfs.result_columns(ids, distance, predecessor)
    else:
        reached, has_predecessor = distance >= 0, distance > 0
        predecessor_ids = ids[xp.where(has_predecessor, predecessor, 0)] if ids.shape[0] else ids
        distance = distance.astype(xp.int32, copy=False)
    return ResultColumns(bfs_schema(pa.from_numpy_dtype(ids.dtype)), (ids, distance, predecessor_ids),
                         (None, reached, has_predecessor))


def dense_forest_columns(xp, ids, src, dst, weight, columns: tuple[str, str, str] = FOREST_COLUMNS) -> ResultColumns:
    """dense_forest_table's result as ResultColumns of ``xp`` arrays."""
    ids = xp.asarray(ids)
    return ResultColumns(forest_schema(pa.from_numpy_dtype(ids.dtype), pa.from_numpy_dtype(weight.dtype), columns),
                         (be.take(ids, src), be.take(ids, dst), weight), (None, None, None))
