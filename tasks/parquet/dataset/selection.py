"""Which rows of an input a ``--filter`` keeps (the language: tasks.parquet.dataset.filters), decided
before the edge columns are read, in three steps:
1. folders: discovery asks ``keep_folder`` of every folder below the root before entering it;
   a hive folder (``day=2026-10-31/``) whose value makes the filter false or null for every row
   is not entered, so none of its files is opened;
2. row groups: each row group of a file that is read is skipped when its footer's statistics
   (min, max, null count of the filter's data columns) show that no row can pass;
3. rows: in the row groups left, the filter's data columns are read (with the footer, while
   the run plans) and the filter is evaluated as a pyarrow.compute Expression; the rows it
   keeps are stored per row group as packed bits (``ReadUnit.keep``), and only they are rows of
   the edge list: the reader drops the others before any check or renumbering.
A filter column must be a partition key of the file's folders or a column of the file; a
literal is converted to a data column's type (a date-looking text to a date or timestamp
column's type; a time-zone-aware column's text without an offset is UTC), and a literal that
does not fit the column's type is an error naming both.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.errors import InputError
from tasks.parquet.dataset.filters import (
    And, Bounds, Compare, FilterError, In, IsNull, Not, Or, columns, hive_facts, parse, possible,
)


class Selection:
    """A filter applied to one input rooted at ``root``; counts what it kept for the run's report."""

    def __init__(self, text: str, root: Path):
        self.text, self.root = text, root
        self.tree = parse(text)
        self.columns = columns(self.tree)
        self.folders_excluded = self.row_groups_skipped = self.files_read = self.rows_read = 0

    def keep_folder(self, folder: Path) -> bool:
        """Whether some row below ``folder`` can pass, by its hive folder names alone."""
        keep = True in possible(self.tree, hive_facts(folder.relative_to(self.root).parts))
        self.folders_excluded += not keep
        return keep

    def row_groups(self, file: Path, parquet: pq.ParquetFile) -> list:
        """Per row group of ``file``: False (no row passes), None (every row does) or the packed
        bits of the rows that pass (np.packbits over the group's rows)."""
        self.files_read += 1
        meta, schema = parquet.metadata, parquet.schema_arrow
        self.rows_read += meta.num_rows
        partitions = hive_facts(file.parent.relative_to(self.root).parts) if file != self.root else {}
        tree, expression = self.bind(file, schema, partitions)
        data = [c for c in self.columns if c not in partitions]
        leaf = {meta.schema.column(j).path: j for j in range(meta.num_columns)}
        found = []
        for group in range(meta.num_row_groups):
            rows = meta.row_group(group).num_rows
            facts = dict(partitions)
            facts.update(statistics(meta.row_group(group), leaf, schema, data))
            truth = possible(tree, facts)
            if True not in truth or rows == 0:
                self.row_groups_skipped += rows > 0
                found.append(False)
            elif truth == {True}:
                found.append(None)
            else:
                found.append(self.evaluate(file, parquet, group, data, expression))
        return found

    def bind(self, file: Path, schema: pa.Schema, partitions: dict):
        """The tree with each data column's literals in the column's type, and the filter as an
        Expression over the file's data columns (partition comparisons are constants here)."""
        for c in self.columns:
            if c in partitions and c in schema.names:
                raise FilterError(f"{c!r} is both a partition folder key and a column of {file}; rename one")
            if c not in partitions and c not in schema.names:
                where = self.root if self.files_read == 1 else file  # the first file speaks for the dataset
                known = list(partitions) + [n for n in schema.names if n not in partitions]
                raise FilterError(f"no column {c!r} in {where} (columns: {', '.join(known)})")
        types = {f.name: f.type for f in schema}
        return _bind(self.tree, types, partitions)

    def evaluate(self, file: Path, parquet: pq.ParquetFile, group: int, data: list[str], expression):
        try:
            table = parquet.read_row_group(group, columns=data, use_threads=False)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{file}: corrupt Parquet data in row group {group} ({exc})") from None
        table = pa.table({n: _plain(table[n]) for n in table.column_names})
        import pyarrow.dataset as ds  # (0.2 s to import: only a run with a filter pays it)

        try:
            keep = ds.dataset(table).to_table(columns={"keep": expression}, use_threads=False)["keep"]
        except (pa.ArrowException, TypeError) as exc:
            raise FilterError(f"cannot be evaluated on {file} ({exc})") from None
        mask = pc.fill_null(keep, False).to_numpy(zero_copy_only=False)
        if mask.all():
            return None
        return np.packbits(mask) if mask.any() else False

    def report(self, files: int) -> dict:
        """What the filter kept (``files`` with a row kept; the rows kept are the edge list's):
        the filter keys of tasks.report.RunSummary."""
        return dict(filter=self.text, filter_files=files, filter_files_read=self.files_read,
                    filter_folders_excluded=self.folders_excluded, filter_row_groups_skipped=self.row_groups_skipped,
                    filter_rows_read=self.rows_read)


def _plain(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column as its values: comparisons take the value type."""
    return col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col


def statistics(group: pq.RowGroupMetaData, leaf: dict[str, int], schema: pa.Schema, names: list[str]) -> dict:
    """Bounds of the named columns in one row group, from its footer's statistics (a column
    without them is left out: it may hold anything)."""
    facts = {}
    for name in names:
        if name not in leaf:
            continue
        stats = group.column(leaf[name]).statistics
        if stats is None or not stats.has_null_count:
            continue
        t = _value_type(schema.field(name).type)
        nulls, values = stats.null_count > 0, stats.null_count < group.num_rows
        low = high = None
        if stats.has_min_max and (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
                                  or pa.types.is_string(t) or pa.types.is_large_string(t)
                                  or pa.types.is_temporal(t) or pa.types.is_boolean(t)):
            low, high = stats.min, stats.max
        facts[name] = Bounds(low, high, nulls, values, nan=pa.types.is_floating(t))
    return facts


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def literal(column: str, t: pa.DataType, value) -> pa.Scalar:
    """A literal as a scalar comparable with a data column of type ``t``."""
    t = _value_type(t)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        if isinstance(value, str):
            return pa.scalar(value, pa.string())
        kind = "text; quote the value"
    elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return pa.scalar(value)
            except OverflowError:  # an integer past 64 bits
                if not pa.types.is_integer(t):
                    return pa.scalar(float(value))
                if pa.types.is_unsigned_integer(t) and 0 <= value < 2**64:
                    return pa.scalar(value, pa.uint64())
                raise FilterError(f"the number {value} is out of range for column {column!r} ({t})") from None
        kind = "numbers; write the value unquoted"
    elif pa.types.is_boolean(t):
        if isinstance(value, bool):
            return pa.scalar(value)
        kind = "true or false"
    elif pa.types.is_date(t) or pa.types.is_timestamp(t):
        if isinstance(value, str):
            try:
                return pa.scalar(value).cast(t)
            except pa.ArrowInvalid:
                if pa.types.is_timestamp(t) and t.tz is not None:  # text without an offset: UTC
                    try:
                        return pa.scalar(value).cast(pa.timestamp(t.unit)).cast(t)
                    except pa.ArrowInvalid:
                        pass
            kind = "dates" if pa.types.is_date(t) else "timestamps"
        else:
            kind = f"{t} values; quote the value, e.g. '2026-11-01'"
    else:
        raise FilterError(f"column {column!r} has type {t}, which a filter does not compare")
    raise FilterError(f"column {column!r} ({t}) holds {kind} (compared with {value!r})")


def _bind(node, types: dict, partitions: dict):
    if isinstance(node, (And, Or)):
        left, a = _bind(node.left, types, partitions)
        right, b = _bind(node.right, types, partitions)
        return type(node)(left, right), (a & b if isinstance(node, And) else a | b)
    if isinstance(node, Not):
        operand, a = _bind(node.operand, types, partitions)
        return Not(operand), ~a
    if node.column in partitions:
        (truth,) = possible(node, partitions)
        return node, pc.scalar(pa.scalar(truth, pa.bool_()))
    field, t = pc.field(node.column), types[node.column]
    if isinstance(node, IsNull):
        return node, field.is_null()
    if isinstance(node, In):
        scalars = [literal(node.column, t, v) for v in node.values]
        one_type = scalars[0].type if len({s.type for s in scalars}) == 1 else None  # else ints and floats: double
        values = pa.array([s.as_py() for s in scalars], type=one_type)
        # is_in matches a null row as False, which `not` would turn True: SQL's null in (...) is null
        found = pc.if_else(field.is_null(), pa.scalar(None, pa.bool_()), field.isin(values))
        return In(node.column, tuple(values.to_pylist())), found
    scalar = literal(node.column, t, node.value)
    expression = {"=": field == scalar, "!=": field != scalar, "<": field < scalar, "<=": field <= scalar,
                  ">": field > scalar, ">=": field >= scalar}[node.op]
    return Compare(node.column, node.op, scalar.as_py()), expression
