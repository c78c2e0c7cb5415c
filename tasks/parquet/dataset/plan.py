"""The footer plan: what an input's Parquet footers say, read before any data is.

``plan_input`` walks the input once (tasks.parquet.dataset.discovery) and reads every file's
footer once (through the input's filesystem) and checks it:
each column asked for is present once and of a usable type (ids integers or strings, weights
numeric), the row counts of file, row groups and column chunks agree, every file has ids of
one kind, and no result of an earlier run sits among edge files. It returns an ``InputPlan``:
the columns to read and a ``FooterPlan`` whose ``units`` (one ``ReadUnit`` per non-empty row
group, in discovery order) are the rows of the edge list, with the types the reader stores
them in:
- ids: one integer dtype that holds every file's src and dst (``id_type``), or string ids
  (``strings``); ``mixed_signs``: uint64 ids beside signed ones, stored as int64 bit patterns
  until the values say which type holds them all (tasks.parquet.read.checks.unify_signs);
- weights: float32 when every file's weights are float16 or float32, else float64
  (integers and decimals included); None without a weight column;
- ``vertex_bound``: at most this many distinct ids (2 x rows, or the ids' range by the
  footers' statistics).
A unit remembers its file's identity when the footer was read (Filesystem.identity): its rows
are read only from that version of the file. Refusals are tasks.errors.InputError naming the
file (and column, row group).
"""
from __future__ import annotations

import os
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.errors import InputError
from tasks.parquet.arrays import numpy_dtype
from tasks.parquet.dataset.discovery import DatasetFiles, dataset_files, dataset_root
from tasks.parquet.store.filesystem import Filesystem, resolve
from tasks.parquet.write.results import RESULT_KEY
from tasks.parquet.dataset.selection import Selection


@dataclass
class ReadUnit:
    """One row group of one file: the reader's unit of work."""

    file: Path
    metadata: pq.FileMetaData
    group: int
    file_row: int  # its row group's first row within the file: errors name rows of files
    start: int  # its first row within the whole edge list
    rows: int
    identity: tuple  # the file as its footer was read (Filesystem.identity)
    # a filter's rows of the row group: np.packbits over the group's rows (None: every row);
    # the unit's rows are those, in order
    keep: np.ndarray | None = None

    def kept(self) -> np.ndarray | None:
        """One bool per row of the row group: the rows this unit holds (None: all of them)."""
        if self.keep is None:
            return None
        return np.unpackbits(self.keep, count=self.metadata.row_group(self.group).num_rows).astype(bool)

    def row_in_file(self, i: int) -> int:
        """The row within the file of the unit's row ``i``: what an error names."""
        if self.keep is None:
            return self.file_row + int(i)
        return self.file_row + int(np.flatnonzero(self.kept())[i])

    def piece(self, lo: int, hi: int) -> ReadUnit:
        """Its rows [lo, hi) of the edge list (numbered as ``start`` is) as a unit of their own."""
        if self.keep is None:
            return dataclasses.replace(self, file_row=self.file_row + lo - self.start, start=lo, rows=hi - lo)
        kept = self.kept()
        inside = np.zeros_like(kept)
        inside[np.flatnonzero(kept)[lo - self.start:hi - self.start]] = True
        return dataclasses.replace(self, start=lo, rows=hi - lo, keep=np.packbits(inside))

    def column_ranges(self, columns: list[str]) -> dict[str, tuple[int, int]]:
        """Byte range [offset, offset + length) in the file of each column's chunk in this row
        group (dictionary page included), for a reader that fetches the bytes itself."""
        group = self.metadata.row_group(self.group)
        ranges = {}
        for j in range(group.num_columns):
            chunk = group.column(j)
            if chunk.path_in_schema in columns:
                start = chunk.data_page_offset
                if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
                    start = min(start, chunk.dictionary_page_offset)
                ranges[chunk.path_in_schema] = (start, start + chunk.total_compressed_size)
        return ranges


@dataclass
class FooterPlan:
    """What the footers say about the input, before any data is read."""

    units: list[ReadUnit]
    rows: int
    columns: list[str]
    strings: bool  # string ids, else integer ids
    id_type: np.dtype | None  # integer ids: one dtype for every file's src and dst
    mixed_signs: bool  # uint64 ids beside signed ones: the values decide (checks.unify_signs)
    weight_type: np.dtype | None  # float32 when every file's weights are float16/32, else float64
    vertex_bound: int  # at most this many distinct ids: 2 x rows, or the ids' range by the footers
    filesystem: Filesystem  # where the files are read from
    skipped: list[Path]  # files of a dataset directory looked at and skipped (not Parquet)
    selection: dict | None = None  # what a filter kept (Selection.report), None without one
    # integer ids: (lowest, highest) id of the rows read by the footers' statistics; None where a
    # column chunk has none (or for string ids)
    id_range: tuple[int, int] | None = None


@dataclass
class InputPlan:
    """An input's footer plan and the columns to read: the one plan of a run, made once from one
    walk of the input and one footer read per file, that the runner choice, the memory checks,
    the output check, the one-partition reader and every rank of a partitioned run read from.
    It pickles (pyarrow's FileMetaData included) to the Dask workers that read."""

    path: str
    footers: FooterPlan
    src_col: str
    dst_col: str
    weight_col: str | None
    dataset: DatasetFiles | None = None  # the walk's files and folders (the output check asks them)
    filter: str | None = None  # the --filter text whose rows the plan holds (None: every row)

    @property
    def rows(self) -> int:
        return self.footers.rows

    @property
    def id_dtype(self) -> np.dtype:
        return self.footers.id_type

    @property
    def weight_dtype(self) -> np.dtype | None:
        return self.footers.weight_type

    def share(self, rank: int, size: int) -> tuple[int, int]:
        """Global rows [start, stop) of rank ``rank`` of ``size``: even shares whatever the
        row-group sizes."""
        return self.rows * rank // size, self.rows * (rank + 1) // size


def check_columns(path: str, src_col: str, dst_col: str, weight_col: str | None) -> None:
    """The three columns asked for are three different columns."""
    if src_col == dst_col:
        raise InputError(f"{path}: the source and destination columns are both {src_col!r}")
    if weight_col in (src_col, dst_col):
        raise InputError(f"{path}: the weight column {weight_col!r} is also the "
                         f"{'source' if weight_col == src_col else 'destination'} column")


def plan_input(path: str | os.PathLike, src_col: str = "src", dst_col: str = "dst",
               weight_col: str | None = "weight", filter: str | None = None) -> InputPlan:
    """Files, row groups and types of a Parquet edge list, from the footers alone (and, with a
    ``filter``, its data columns: the rows it keeps, tasks.parquet.dataset.selection)."""
    check_columns(str(path), src_col, dst_col, weight_col)
    selection = Selection(filter, resolve(dataset_root(path))[1]) if filter is not None else None
    dataset = dataset_files(path, selection.keep_folder if selection else None)
    footers = plan_footers(str(path), dataset.files, src_col, dst_col, weight_col, dataset.skipped, selection)
    return InputPlan(str(path), footers, src_col, dst_col, weight_col, dataset, filter)


def id_kind(t: pa.DataType) -> str:
    """"integer", "string", or the type's name for any other id type."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    return str(t)


def value_type(t: pa.DataType) -> pa.DataType:
    """A column's value type (a dictionary column's values)."""
    return t.value_type if pa.types.is_dictionary(t) else t


def open_checked(fs: Filesystem, file: Path, columns: list[str], ids: tuple[str, str],
                 weight: str | None) -> pq.ParquetFile:
    """Open one part and check its schema."""
    try:
        # page checksums (CRC32) are verified where the writer stored them (Spark does by default)
        parquet = pq.ParquetFile(fs.arrow_path(file), filesystem=fs.arrow, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: not a readable Parquet file ({exc})") from None
    try:
        check_schema(file, parquet.schema_arrow, columns, ids, weight)
    except InputError:
        parquet.close()
        raise
    return parquet


def check_schema(file: Path, schema: pa.Schema, columns: list[str], ids: tuple[str, str], weight: str | None) -> None:
    """Each column present once, of a usable type."""
    for c in columns:
        count = schema.names.count(c)
        if count == 0:
            # a hive partition folder `c=value/` names a column that pyarrow.dataset would add;
            # here the columns must be in the files themselves
            folder = any(part.startswith(f"{c}=") for part in file.parent.parts)
            raise InputError(f"{file}: column {c!r} not found (columns: {', '.join(schema.names)})"
                             + ("; partition folder values are not read as columns" if folder else ""))
        if count > 1:
            raise InputError(f"{file}: column {c!r} appears {count} times; name each column once")
    for c in ids:
        kind = id_kind(schema.field(c).type)
        if kind not in ("integer", "string"):
            raise InputError(f"{file}: column {c!r} has type {kind}; vertex ids must be integers or strings")
    if weight:
        t = value_type(schema.field(weight).type)
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
            raise InputError(f"{file}: weight column {weight!r} has type {t}; weights must be numeric")


def check_row_counts(file: Path, meta: pq.FileMetaData, columns: list[str]) -> int:
    """The footer's row count must agree with its row groups, and each row group's with its
    column chunks: a reader trusts these counts and silently drops the rows a forged or damaged
    footer leaves out."""
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    total = sum(g.num_rows for g in groups)
    if total != meta.num_rows:
        raise InputError(f"{file}: corrupt footer: it claims {meta.num_rows} rows but its row groups hold {total}")
    leaf = {meta.schema.column(j).path: j for j in range(meta.num_columns)}
    for i, group in enumerate(groups):
        for c in columns:
            # a flat column has one value (or null) per row; more values than rows means the
            # row group's count is wrong (fewer is what some writers record when there are nulls)
            if c in leaf and group.column(leaf[c]).num_values > group.num_rows:
                raise InputError(f"{file}: corrupt footer: row group {i} claims {group.num_rows} rows but "
                                 f"column {c!r} holds {group.column(leaf[c]).num_values} values")
    return total


def check_unchanged(fs: Filesystem, file: Path, identity: tuple) -> None:
    """Rows are read through the footer read when the input was planned (a partitioned run's
    ranks read seconds later): a file replaced since (an upstream job renaming its next version
    into place), rewritten or removed would be read through a footer that is not its own, and
    give another version's rows, or fail as corrupt data."""
    if fs.identity(file) != identity:
        raise InputError(f"{file}: changed while the run read it (replaced, rewritten or removed after its footer "
                         "was read); rerun once the input is complete")


def plan_footers(path: str, files: list[Path], src_col: str, dst_col: str, weight_col: str | None,
                 skipped: list[Path] = (), selection: Selection | None = None) -> FooterPlan:
    """The footer plan of ``files`` (an input's Parquet files, in discovery order), of the rows
    ``selection`` keeps when there is one."""
    fs, _ = resolve(path)
    columns = list(dict.fromkeys([src_col, dst_col] + ([weight_col] if weight_col else [])))
    units, rows, first_of_kind, id_types, weight_types = [], 0, {}, set(), set()
    id_range = [None, None]  # lowest and highest id by the footers' statistics; None: unknown
    results = {}  # file -> the result it is, for files an earlier run wrote (see RESULT_KEY)
    for file in files:
        identity = fs.identity(file)
        with open_checked(fs, file, columns, (src_col, dst_col), weight_col) as parquet:
            meta, schema = parquet.metadata, parquet.schema_arrow
            keep = selection.row_groups(file, parquet) if selection else [None] * meta.num_row_groups
        check_unchanged(fs, file, identity)  # (the filter's columns came from this version too)
        if RESULT_KEY in (meta.metadata or {}):
            results[file] = meta.metadata[RESULT_KEY].decode(errors="replace")
        file_rows = check_row_counts(file, meta, columns)
        kinds = {c: id_kind(schema.field(c).type) for c in (src_col, dst_col)}
        if kinds[src_col] != kinds[dst_col]:
            raise InputError(f"{file}: column {src_col!r} is {kinds[src_col]} but {dst_col!r} is {kinds[dst_col]}; "
                             "ids must share one type")
        kind = kinds[src_col]
        first_of_kind.setdefault(kind, file)
        if len(first_of_kind) > 1:
            other = next(k for k in first_of_kind if k != kind)
            raise InputError(f"{file}: column {src_col!r} holds {kind} ids but {first_of_kind[other]} holds {other} "
                             "ids (mixed schemas)")
        if kind == "integer":
            id_types.update(numpy_dtype(value_type(schema.field(c).type)) for c in (src_col, dst_col))
        if weight_col:
            weight_types.add(value_type(schema.field(weight_col).type))
        file_row = 0
        for group in range(meta.num_row_groups):
            count = meta.row_group(group).num_rows
            kept = count if keep[group] is None else 0 if keep[group] is False else int(
                np.unpackbits(keep[group], count=count).sum())
            if kept:
                units.append(ReadUnit(file, meta, group, file_row, rows, kept, identity,
                                      None if keep[group] is None else keep[group]))
                if kind == "integer":
                    _widen(id_range, meta.row_group(group), (src_col, dst_col))
            file_row += count
            rows += kept
        assert file_row == file_rows
    refuse_results_among_edges(path, files, results)
    report = None
    if selection is not None:
        report = selection.report(len({u.file for u in units}))
        if rows == 0:
            raise InputError(f"filter: kept no rows of {path} ({report['filter_rows_read']:,} rows in "
                             f"{report['filter_files_read']:,} files read)")
    if rows == 0:
        raise InputError(f"{path}: the edge list is empty (0 rows)")
    mixed = np.dtype(np.uint64) in id_types and any(t.kind == "i" for t in id_types)
    id_type = (np.dtype(np.int64) if mixed else np.result_type(*id_types)) if id_types else None
    weight_type = None
    if weight_col:
        narrow = all(pa.types.is_float16(t) or pa.types.is_float32(t) for t in weight_types)
        weight_type = np.dtype(np.float32 if narrow else np.float64)
    bound = 2 * rows
    # (by identity: an id range that starts at 0 holds a value equal to False)
    known = all(end is not None and end is not False for end in id_range)
    if known:
        bound = min(bound, id_range[1] - id_range[0] + 1)
    return FooterPlan(units, rows, columns, "integer" not in first_of_kind, id_type, mixed, weight_type, bound,
                      fs, list(skipped), report, tuple(id_range) if known else None)


def refuse_results_among_edges(path: str, files: list[Path], results: dict[Path, str]) -> None:
    """A dataset of edge files that also holds a result file of an earlier run would read the
    result's rows as more edges (a forest has the columns of an edge list). Every file a result,
    or none, is fine: a forest or a result dataset given as the input is an edge list."""
    if not results or len(results) == len(files):
        return
    file = next(f for f in files if f in results)
    edges = next(f for f in files if f not in results)
    raise InputError(f"{file}: is the {results[file]} result of an earlier run, but {edges} is an edge list of "
                     f"the same input {path}; move the result out of it, or start its name or folder with _ "
                     "to skip it")


def _widen(id_range: list, group: pq.RowGroupMetaData, columns: tuple[str, str]) -> None:
    """Widen [lowest, highest] to a row group's id statistics; [False, False] once a column
    chunk has none (the range is then unknown for good)."""
    if id_range[0] is False:
        return
    for j in range(group.num_columns):
        chunk = group.column(j)
        if chunk.path_in_schema not in columns:
            continue
        stats = chunk.statistics
        if stats is None or not stats.has_min_max or not isinstance(stats.min, int):
            id_range[:] = [False, False]
            return
        id_range[0] = stats.min if id_range[0] is None else min(id_range[0], stats.min)
        id_range[1] = stats.max if id_range[1] is None else max(id_range[1], stats.max)
