"""Reading Parquet edge lists and writing results, with pyarrow.

``EdgeTable`` encoding (arrays of the compute backend, NumPy or CuPy):
- ``src``, ``dst``: integer arrays of one dtype (the narrowest that holds every file's ids) or,
  for string ids, int32 codes into ``names`` (a pyarrow large_string array over src and dst).
- ``weight``: float32 when every file's weights are float16 or float32, else float64 (integers
  and decimals included), or None; ``rows``: number of input rows; ``path``: input name.
- ``skipped``: files of a dataset directory that were looked at and are not data (not Parquet).
Rows are the dataset's files in discovery order, each file's rows in order. Every check runs on
one row group of one file at a time, and an error names that file and the row within it
(counted from 0).

Outputs are written to a temporary file beside the target and renamed over it, so a reader
sees the old file or the new one, never a partial one. Each names its result in its footer's
key-value metadata (RESULT_KEY), and a dataset that holds such a file beside edge files is
refused: the result would be read as edges.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import re
import shutil
import socket
import stat
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks import stopping
from tasks.errors import InputError, OutputError
from tasks.parquet_concat import write_table_parallel

# Dask starts its workers with OMP_NUM_THREADS=1, which Arrow takes as its thread count: Parquet
# reads on a worker ran 2.3x slower than in a plain process (Kron-24, H200 host). Arrow gets the
# cores this process may run on (dask-cuda pins each GPU worker to its GPU's cores) unless
# ARROW_NUM_THREADS says otherwise.
if "ARROW_NUM_THREADS" not in os.environ:
    pa.set_cpu_count(len(os.sched_getaffinity(0)))


@dataclass
class EdgeTable:
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    names: pa.Array | None  # string ids: vertex code -> name
    path: str
    skipped: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return int(self.src.shape[0])


# Dataset discovery. A directory is one dataset, walked as pyarrow.dataset walks it: every
# folder (hive partitions `key=value/` included; symlinked folders followed, each folder and
# file read once however many links reach it), skipping any path with a component that starts
# with `_` or `.` (`_SUCCESS`, `_temporary/`, `_metadata`, `.crc` files, `.ipynb_checkpoints/`).
# Nothing that could be data is skipped silently: a dangling link, an unreadable entry, a FIFO
# or device, a file named as a part that is not Parquet, and a Parquet file named otherwise (a
# backup copy?) are each refused by name. Other files (README.md, notes) are not Parquet, so
# not data: they are skipped and listed in the run's log.
PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")
SKIP_PREFIXES = ("_", ".")
MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"


def _stat(path: Path) -> os.stat_result:
    """stat() through links, without opening: a FIFO or a device is found before any read blocks."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError(f"{path}: dangling symbolic link (to {os.readlink(path)})") from None
        raise InputError(f"{path}: input not found") from None
    except OSError as exc:  # a link loop, a folder on the way that may not be entered
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None


def _require_regular_file(path: Path, st: os.stat_result) -> None:
    # opening a FIFO blocks until a writer comes, and a blocked read cannot be interrupted;
    # Parquet needs random access anyway (its footer is at the end)
    if not stat.S_ISREG(st.st_mode):
        kinds = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket",
                 stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}
        what = kinds.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise InputError(f"{path}: is {what}; Parquet is read from regular files only (save the stream to a file first)")


def _parquet_problem(path: Path, size: int) -> str | None:
    """None when the file starts and ends with Parquet's magic bytes, else what is wrong."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            fh.seek(max(0, size - 4))
            tail = fh.read(4)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    if head != MAGIC:
        return "it does not start with Parquet's magic bytes PAR1" if size else "it is empty (0 bytes)"
    if tail == ENCRYPTED_MAGIC:
        return "it is an encrypted Parquet file, which is not supported"
    if size < 12 or tail != MAGIC:
        return "it starts as Parquet but does not end with PAR1: truncated"
    return None


def _looks_like_part(name: str) -> bool:
    return name.lower().endswith(PARQUET_SUFFIXES) or name.startswith("part-")


def _refuse_table_formats(root: Path) -> None:
    """Folders whose Parquet files are not all current data: reading every part would mix in
    deleted rows (table formats) or miss some (an unfinished Hadoop commit). Asked of every
    folder of the dataset: a folder of daily Spark outputs holds one write per day."""
    if (root / "_delta_log").is_dir():
        raise InputError(f"{root}: is a Delta Lake table (_delta_log/); its folder also holds files of "
                         "older versions: export the current version to Parquet first")
    metadata = root / "metadata"
    if metadata.is_dir() and any(metadata.glob("*.metadata.json")):
        raise InputError(f"{root}: is an Apache Iceberg table (metadata/*.metadata.json); its folders also "
                         "hold files of older snapshots: export the current snapshot to Parquet first")
    if (root / "_temporary").is_dir() and not (root / "_SUCCESS").exists():
        raise InputError(f"{root / '_temporary'}: a Spark/Hadoop write that did not finish (no _SUCCESS beside "
                         "it), so parts may be missing: rerun the job, or remove _temporary if the data is complete")


def dataset_files(path: str | os.PathLike) -> tuple[list[Path], list[Path]]:
    """The Parquet files of an input (a file, or a directory holding one dataset) and the files
    looked at and skipped because they are not Parquet. Raises InputError naming the path."""
    root = Path(path)
    st = _stat(root)
    if not stat.S_ISDIR(st.st_mode):
        _require_regular_file(root, st)
        problem = _parquet_problem(root, st.st_size)
        if problem:
            raise InputError(f"{root}: not a readable Parquet file ({problem})")
        return [root], []
    files, skipped = [], []
    seen: set[tuple[int, int]] = set()  # (device, inode): a folder or file reached twice is read once
    folders = [(root, st)]
    while folders:
        folder, st = folders.pop()
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        try:
            names = os.listdir(folder)
        except OSError as exc:
            raise InputError(f"{folder}: cannot list folder ({exc.strerror})") from None
        if {"_delta_log", "metadata", "_temporary"} & set(names):
            _refuse_table_formats(folder)
        for name in names:
            if name.startswith(SKIP_PREFIXES):
                continue
            entry = folder / name
            st = _stat(entry)
            if stat.S_ISDIR(st.st_mode):
                folders.append((entry, st))
                continue
            _require_regular_file(entry, st)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            problem = _parquet_problem(entry, st.st_size)
            if _looks_like_part(name):
                if problem:
                    raise InputError(f"{entry}: a part of the dataset that is not readable Parquet ({problem})")
                files.append(entry)
            elif problem is None:
                raise InputError(f"{entry}: a Parquet file whose name is not *.parquet, *.parq, *.pq or part-*; "
                                 "rename it to read it as data, or start its name with _ to skip it")
            else:
                skipped.append(entry)
    if not files:
        listed = ", ".join(str(p.relative_to(root)) for p in sorted(skipped)[:3]) + (", ..." if len(skipped) > 3 else "")
        raise InputError(f"{root}: directory holds no Parquet files (*.parquet, *.parq, *.pq, part-*)"
                         + (f"; not Parquet: {listed}" if skipped else ""))
    order = lambda p: p.relative_to(root).parts  # noqa: E731
    return sorted(files, key=order), sorted(skipped, key=order)


def _id_kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    return str(t)


def _first(mask) -> int:
    """Row of the first true value of a boolean (chunked) array or ndarray."""
    if isinstance(mask, np.ndarray):
        return int(np.flatnonzero(mask)[0])
    return int(pc.index(mask, True).as_py())


def _open(file: Path, columns: list[str], ids: tuple[str, str], weight: str | None) -> pq.ParquetFile:
    """Open one part and check its schema."""
    try:
        # page checksums (CRC32) are verified where the writer stored them (Spark does by default)
        parquet = pq.ParquetFile(file, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: not a readable Parquet file ({exc})") from None
    try:
        _check_schema(file, parquet.schema_arrow, columns, ids, weight)
    except InputError:
        parquet.close()
        raise
    return parquet


def _check_schema(file: Path, schema: pa.Schema, columns: list[str], ids: tuple[str, str], weight: str | None) -> None:
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
        kind = _id_kind(schema.field(c).type)
        if kind not in ("integer", "string"):
            raise InputError(f"{file}: column {c!r} has type {kind}; vertex ids must be integers or strings")
    if weight:
        t = schema.field(weight).type
        t = t.value_type if pa.types.is_dictionary(t) else t
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
            raise InputError(f"{file}: weight column {weight!r} has type {t}; weights must be numeric")


def _check_row_counts(file: Path, meta: pq.FileMetaData, columns: list[str]) -> int:
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


def _locate_damage(unit: _Unit, parquet: pq.ParquetFile, columns: list[str], exc: Exception) -> str:
    """Name the column of a row group that failed to read (a bad page checksum, say)."""
    for c in columns:
        try:
            parquet.read_row_group(unit.group, columns=[c], use_threads=False)
        except (pa.ArrowException, OSError) as err:
            return f"{unit.file}: corrupt Parquet data in column {c!r}, row group {unit.group} ({err})"
    return f"{unit.file}: corrupt Parquet data in row group {unit.group} ({exc})"


def _first_invalid_string(col: pa.Array) -> int:
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


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


# The reader's unit of work is one row group of one file. A pool of threads decodes units
# (pyarrow releases the GIL while it decodes), each into its own slice of arrays allocated once
# for the whole edge list on the compute backend. On a GPU each thread uploads its unit on a
# stream of its own while the others decode, so the table never exists whole on the host.
# (pyarrow's read_table decodes the columns of a row group in parallel: three threads for an
# edge list, however many cores there are.)


@dataclass
class _Unit:
    """One row group of one file."""

    file: Path
    metadata: pq.FileMetaData
    group: int
    file_row: int  # its first row within the file: errors name rows of files
    start: int  # its first row within the whole edge list
    rows: int
    identity: tuple  # the file as its footer was read (_identity): its rows are read only from it


@dataclass
class _Plan:
    """What the footers say about the input, before any data is read."""

    units: list[_Unit]
    rows: int
    columns: list[str]
    strings: bool  # string ids, else integer ids
    id_type: np.dtype | None  # integer ids: one dtype for every file's src and dst
    mixed_signs: bool  # uint64 ids beside signed ones: the values decide (see _unify_signs)
    weight_type: np.dtype | None  # float32 when every file's weights are float16/32, else float64
    vertex_bound: int  # at most this many distinct ids: 2 x rows, or the ids' range by the footers


def _plan(path: str, files: list[Path], src_col: str, dst_col: str, weight_col: str | None) -> _Plan:
    columns = list(dict.fromkeys([src_col, dst_col] + ([weight_col] if weight_col else [])))
    units, rows, first_of_kind, id_types, weight_types = [], 0, {}, set(), set()
    id_range = [None, None]  # lowest and highest id by the footers' statistics; None: unknown
    results = {}  # file -> the result it is, for files an earlier run wrote (see RESULT_KEY)
    for file in files:
        identity = _identity(file)
        with _open(file, columns, (src_col, dst_col), weight_col) as parquet:
            meta, schema = parquet.metadata, parquet.schema_arrow
        _check_unchanged(file, identity)
        if RESULT_KEY in (meta.metadata or {}):
            results[file] = meta.metadata[RESULT_KEY].decode(errors="replace")
        file_rows = _check_row_counts(file, meta, columns)
        kinds = {c: _id_kind(schema.field(c).type) for c in (src_col, dst_col)}
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
            id_types.update(np.dtype(_value_type(schema.field(c).type).to_pandas_dtype()) for c in (src_col, dst_col))
        if weight_col:
            weight_types.add(_value_type(schema.field(weight_col).type))
        file_row = 0
        for group in range(meta.num_row_groups):
            count = meta.row_group(group).num_rows
            if count:
                units.append(_Unit(file, meta, group, file_row, rows, count, identity))
                if kind == "integer":
                    _widen(id_range, meta.row_group(group), (src_col, dst_col))
            file_row += count
            rows += count
        assert file_row == file_rows
    _refuse_results_among_edges(path, files, results)
    if rows == 0:
        raise InputError(f"{path}: the edge list is empty (0 rows)")
    mixed = np.dtype(np.uint64) in id_types and any(t.kind == "i" for t in id_types)
    id_type = (np.dtype(np.int64) if mixed else np.result_type(*id_types)) if id_types else None
    weight_type = None
    if weight_col:
        narrow = all(pa.types.is_float16(t) or pa.types.is_float32(t) for t in weight_types)
        weight_type = np.dtype(np.float32 if narrow else np.float64)
    bound = 2 * rows
    if None not in id_range and False not in id_range:
        bound = min(bound, id_range[1] - id_range[0] + 1)
    return _Plan(units, rows, columns, "integer" not in first_of_kind, id_type, mixed, weight_type, bound)


def _refuse_results_among_edges(path: str, files: list[Path], results: dict[Path, str]) -> None:
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


def _identity(file: Path) -> tuple | None:
    """What tells one version of a file from another: inode, size, mtime (None: gone). Not the
    device: a partitioned run's ranks may read a network mount that each host numbers its own way."""
    try:
        st = os.stat(file)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{file}: cannot be read ({exc.strerror})") from None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _check_unchanged(file: Path, identity: tuple) -> None:
    """Rows are read through the footer read when the input was planned (a partitioned run's
    ranks read seconds later): a file replaced since (an upstream job renaming its next version
    into place), rewritten or removed would be read through a footer that is not its own, and
    give another version's rows, or fail as corrupt data."""
    if _identity(file) != identity:
        raise InputError(f"{file}: changed while the run read it (replaced, rewritten or removed after its footer "
                         "was read); rerun once the input is complete")


def _read_unit(unit: _Unit, columns: list[str], use_threads: bool) -> pa.Table:
    # the file is the planned one before it is opened and after the row group is read, so every
    # byte read came from it (a replacement after the open is refused too: the input changed)
    _check_unchanged(unit.file, unit.identity)
    try:
        # page checksums (CRC32) are verified where the writer stored them (Spark does by default)
        # read, not memory-mapped: mapped pages of the whole file would stay in this process's
        # resident memory while the decoded row groups are already on the GPU
        parquet = pq.ParquetFile(unit.file, metadata=unit.metadata, memory_map=False, pre_buffer=True,
                                 page_checksum_verification=True)
    except (pa.ArrowException, OSError) as exc:
        _check_unchanged(unit.file, unit.identity)
        raise InputError(f"{unit.file}: not a readable Parquet file ({exc})") from None
    with parquet:
        try:
            table = parquet.read_row_group(unit.group, columns=columns, use_threads=use_threads)
        except (pa.ArrowException, OSError) as exc:
            _check_unchanged(unit.file, unit.identity)
            raise InputError(_locate_damage(unit, parquet, columns, exc)) from None
    _check_unchanged(unit.file, unit.identity)
    if table.num_rows != unit.rows:
        raise InputError(f"{unit.file}: corrupt Parquet data: row group {unit.group} claims {unit.rows} rows "
                         f"but {table.num_rows} were read")
    return table


def _unit_ids(unit: _Unit, col: pa.ChunkedArray, name: str) -> np.ndarray | pa.ChunkedArray:
    """A unit's id column: an integer ndarray, or large_string chunks for string ids."""
    if col.null_count:
        raise InputError(f"{unit.file}: column {name!r} is null at row {unit.file_row + _first(pc.is_null(col))}")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if _id_kind(col.type) == "integer":
        return col.to_numpy()
    # Parquet readers do not check that a string column holds UTF-8; such bytes would be copied
    # into the results, which Arrow itself then refuses to read
    offset = unit.file_row
    for chunk in col.chunks:
        try:
            chunk.validate(full=True)
        except pa.ArrowInvalid:
            row = offset + _first_invalid_string(chunk)
            raise InputError(f"{unit.file}: column {name!r} holds a string that is not valid UTF-8 at row {row}") from None
        offset += len(chunk)
    return col.cast(pa.large_string())


def _unit_weights(unit: _Unit, col: pa.ChunkedArray, name: str, dtype: np.dtype) -> np.ndarray:
    """A unit's weights in the edge list's weight dtype, every one finite (integers exactly)."""
    if col.null_count:
        raise InputError(f"{unit.file}: weight column {name!r} is null at row {unit.file_row + _first(pc.is_null(col))}")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_integer(col.type):
        return _integer_weights(unit, col.to_numpy(), name)
    # float16 -> float32 and float32 -> float64 are exact. Decimals go to the nearest float64
    # through their text: Arrow's decimal -> float64 cast scales in floating point and misses
    # the nearest value for about 1 decimal in 4 (1.001 became 1.0010000000000001), which also
    # made weights one ulp apart equal, so the heavier of two parallel edges could win the tie
    precision = col.type.precision if pa.types.is_decimal(col.type) else 0
    if precision:
        col = col.cast(pa.string())
    weight = col.cast(pa.from_numpy_dtype(dtype)).to_numpy()
    bad = ~np.isfinite(weight)
    if bad.any():
        row = _first(bad)
        raise InputError(f"{unit.file}: weight column {name!r} is {weight[row]} at row {unit.file_row + row}; "
                         "weights must be finite")
    if precision > DECIMAL_DIGITS_FLOAT64_KEEPS:
        _refuse_blurred_decimals(unit, col, weight, name)
    return weight


# Any decimal of at most 15 significant digits is the shortest text of its nearest float64
# (DBL_DIG), so two such decimals never share a float64. A longer one that is not that text can
# share its float64 with another decimal (2**53 + 1 and 2**53; two 18-digit ratios one unit
# apart): both would weigh the same, the lower row would win their tie, and the forest would
# keep the heavier edge. Decimals that are the shortest text of their float64 map to distinct
# float64s, so refusing the others is exact, and needs no look across row groups or ranks.
DECIMAL_DIGITS_FLOAT64_KEEPS = 15


def _refuse_blurred_decimals(unit: _Unit, text: pa.ChunkedArray, weight: np.ndarray, name: str) -> None:
    """``text``: the unit's decimal weights as exact text; ``weight``: their nearest float64s.
    Refuses the first decimal with more than 15 significant digits that is not the shortest
    text of its float64 (checked one by one, so a column of such weights costs a Python step
    per long value)."""
    long_rows = np.flatnonzero(pc.greater(_significant_digits(text), DECIMAL_DIGITS_FLOAT64_KEEPS).to_numpy(
        zero_copy_only=False))
    if long_rows.size == 0:
        return
    values = pc.take(text, pa.array(long_rows)).to_pylist()
    for row, value in zip(long_rows, values):
        if Decimal(value) != Decimal(repr(float(weight[row]))):
            raise InputError(f"{unit.file}: weight column {name!r} holds {value} at row {unit.file_row + int(row)}, "
                             "which float64 cannot tell apart from nearby decimals (more significant digits than "
                             "it holds), so two weights could tie; round the weights to 15 significant digits, or "
                             "store them as float64 if they were made from floating-point numbers")


def _significant_digits(text: pa.ChunkedArray) -> pa.ChunkedArray:
    """Significant digits of each decimal's text, as Arrow writes decimals: plain (-0.0012300)
    or, for small values, with an exponent (1.2300E-7); an exponent's characters are counted
    too, which only sends a value to the exact check. Sign, leading zeros and the point go
    from the front, trailing zeros and the point from the back; a point left inside is not a
    digit. ASCII trims and a literal count, no regular expression: this runs over every weight
    of a decimal(16+) column, and costs a quarter of reading it (4 M decimal(38, 18) weights:
    0.1 s beside 0.4 s; removing sign and point by a regular expression took 0.6 s)."""
    core = pc.ascii_rtrim(pc.ascii_ltrim(text, "-0."), "0.")
    return pc.subtract(pc.binary_length(core), pc.count_substring(core, "."))


def _integer_weights(unit: _Unit, weight: np.ndarray, name: str) -> np.ndarray:
    # float64 holds an integer exactly when its odd part fits the 53-bit significand; beyond
    # 2**53 some do not, and rounding them would merge distinct weights and change the forest
    if weight.dtype.itemsize == 8:
        bits = weight.view(np.uint64)
        magnitude = np.where(weight < 0, ~bits + np.uint64(1), bits)  # |w|, -2**63 included
        lowest_bit = magnitude & (~magnitude + np.uint64(1))
        odd_part = magnitude // np.maximum(lowest_bit, np.uint64(1))
        inexact = odd_part >= np.uint64(2**53)
        if inexact.any():
            row = _first(inexact)
            raise InputError(f"{unit.file}: weight column {name!r} holds {int(weight[row])} at row "
                             f"{unit.file_row + row}, which float64 cannot hold exactly (integers beyond 2**53 "
                             "lose digits); scale the weights down")
    return weight.astype(np.float64)


@dataclass
class _Signs:
    """Where a unit of a uint64-beside-signed input holds ids only one of int64 and uint64 can
    hold: (file, column, row in file, value) of its first id above 2**63-1, and of its first
    negative id."""

    big: tuple | None = None
    negative: tuple | None = None


def _signs(unit: _Unit, column: str, ids: np.ndarray) -> _Signs:
    found = _Signs()
    if ids.dtype == np.uint64 and ids.size and ids.max() > np.iinfo(np.int64).max:
        row = _first(ids > np.iinfo(np.int64).max)
        found.big = (unit.file, column, unit.file_row + row, int(ids[row]))
    elif ids.dtype.kind == "i" and ids.size and ids.min() < 0:
        row = _first(ids < 0)
        found.negative = (unit.file, column, unit.file_row + row, int(ids[row]))
    return found


def _unify_signs(found: list[_Signs]) -> np.dtype:
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


class _Uploader:
    """One reading thread's way to the GPU: its own CUDA stream and pinned host buffers, one per
    column. A row group is copied into the pinned buffers and uploaded asynchronously, so the
    copy runs while the thread decodes its next row group (copies from pageable memory go
    through the driver's staging and ran at a fraction of the bus's speed). Before a buffer is
    refilled, the stream is synchronized: the previous upload from it is done."""

    def __init__(self, xp):
        import cupyx

        self.xp, self.empty_pinned = xp, cupyx.empty_pinned
        self.stream = xp.cuda.Stream(non_blocking=True)
        self.buffers: dict[int, np.ndarray] = {}

    def put(self, column: int, dest, start: int, values: np.ndarray) -> None:
        if column == 0:
            self.stream.synchronize()  # this thread's previous uploads have left the buffers
        buffer = self.buffers.get(column)
        if buffer is None or buffer.nbytes < values.shape[0] * dest.itemsize:
            buffer = self.buffers[column] = self.empty_pinned(values.shape[0] * dest.itemsize, dtype=np.uint8)
        staged = buffer[:values.shape[0] * dest.itemsize].view(dest.dtype)
        np.copyto(staged, values, casting="unsafe")  # same kind; narrower ids widen
        dest[start:start + values.shape[0]].set(staged, stream=self.stream)


def check_columns(path: str, src_col: str, dst_col: str, weight_col: str | None) -> None:
    """The three columns asked for are three different columns."""
    if src_col == dst_col:
        raise InputError(f"{path}: the source and destination columns are both {src_col!r}")
    if weight_col in (src_col, dst_col):
        raise InputError(f"{path}: the weight column {weight_col!r} is also the "
                         f"{'source' if weight_col == src_col else 'destination'} column")


def read_edges(path: str, src_col="src", dst_col="dst", weight_col: str | None = "weight", xp=np,
               before_reading=None) -> EdgeTable:
    """Read and check an edge list (a Parquet file or a directory holding one dataset) into
    arrays of the backend ``xp`` (numpy or cupy), row groups decoded in parallel.
    ``before_reading(rows, vertex_bound, weight_dtype)``, if given, is called once the footers
    are read and before any array is allocated (a memory check can refuse the input there)."""
    check_columns(path, src_col, dst_col, weight_col)
    files, skipped = dataset_files(path)
    plan = _plan(path, files, src_col, dst_col, weight_col)
    rows = plan.rows
    if before_reading is not None:
        before_reading(rows, plan.vertex_bound, plan.weight_type)
    # ids of a uint64-beside-signed input are stored as their 64-bit patterns until the values
    # say which type holds them all
    src = dst = None
    if not plan.strings:
        src, dst = xp.empty(rows, dtype=plan.id_type), xp.empty(rows, dtype=plan.id_type)
    weight = xp.empty(rows, dtype=plan.weight_type) if weight_col else None
    threads = max(1, min(len(os.sched_getaffinity(0)), len(plan.units)))
    local = threading.local()

    def read(unit: _Unit):
        table = _read_unit(unit, plan.columns, use_threads=len(plan.units) < threads * 2)
        ends = [_unit_ids(unit, table[c], c) for c in (src_col, dst_col)]
        w = _unit_weights(unit, table[weight_col], weight_col, plan.weight_type) if weight_col else None
        del table
        found = [_signs(unit, c, ids) for c, ids in zip((src_col, dst_col), ends)] if plan.mixed_signs else []
        stores = [(weight, w)] if plan.strings else [(src, ends[0]), (dst, ends[1]), (weight, w)]
        for column, (dest, values) in enumerate((d, v) for d, v in stores if d is not None):
            if values.dtype == np.uint64 and plan.mixed_signs:
                values = values.view(np.int64)
            if xp is np:
                dest[unit.start:unit.start + values.shape[0]] = values
            else:
                uploader = getattr(local, "uploader", None) or _Uploader(xp)
                local.uploader = uploader
                uploader.put(column, dest, unit.start, values)
        return ends if plan.strings else found

    results = _run_in_order(read, plan.units, threads)
    if xp is not np:
        xp.cuda.Device().synchronize()  # every reading thread's last uploads
    if plan.strings:
        both = pa.chunked_array([chunk for end in (0, 1) for r in results for chunk in r[end].chunks],
                                type=pa.large_string()).combine_chunks().dictionary_encode()
        codes = xp.asarray(both.indices.to_numpy(zero_copy_only=False).astype(np.int32))
        return EdgeTable(codes[:rows], codes[rows:], weight, both.dictionary, str(path), [str(p) for p in skipped])
    if plan.mixed_signs:
        unified = _unify_signs([s for found in results for s in found])
        src, dst = src.view(unified), dst.view(unified)
    return EdgeTable(src, dst, weight, None, str(path), [str(p) for p in skipped])


def _run_in_order(work, units: list, threads: int) -> list:
    """work(unit) for every unit on a pool of threads; results in unit order. On a failure the
    error of the first failing unit (in input order) is raised, and units after it are dropped."""
    if threads == 1:
        return [work(u) for u in units]
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="parquet-read")
    futures = [pool.submit(work, u) for u in units]
    try:
        return [f.result() for f in futures]  # in order: units before a failure all completed
    finally:
        # an error or an interrupt leaves at once: queued units are cancelled, running ones end
        # with their row group
        pool.shutdown(wait=False, cancel_futures=True)


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


def vertex_names(names: pa.Array | None, ids: np.ndarray) -> pa.Array:
    """Original ids of dense vertices, as a pyarrow array of the input's id type (``ids`` are
    codes into ``names`` for string ids)."""
    if names is not None:
        return names.take(pa.array(ids))
    return pa.array(ids)


def _walk(root: Path) -> tuple[set[str], dict[str, Path]]:
    """What dataset_files reaches below ``root``, links followed: the real path of every folder
    it enters, and of every file it looks at (mapped to the path it is reached by)."""
    walked: set[str] = set()
    files: dict[str, Path] = {}
    folders = [root]
    while folders:
        folder = os.path.realpath(folders.pop())
        if folder in walked:
            continue
        walked.add(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:  # the read names it
            continue
        for e in entries:
            if e.name.startswith(SKIP_PREFIXES):
                continue
            if e.is_dir():
                folders.append(e.path)
            else:
                files.setdefault(os.path.realpath(e.path), Path(e.path))
    return walked, files


def _read_by_walk(folder: str, walked: set[str]) -> bool:
    """Whether files in ``folder`` (a real path, which need not exist yet) would be read: it or
    the nearest walked folder above it is reached without passing a folder the walk skips."""
    path = Path(folder)
    for step in (path, *path.parents):
        if str(step) in walked:
            return True
        if step.name.startswith(SKIP_PREFIXES):
            return False
    return False


def check_output_paths(input: str, targets: list[str | os.PathLike], directories: bool = False) -> None:
    """Refuse, before anything is read, result files that could not be written or that a later
    run would read back as input: an output folder inside the input dataset (unless under a
    folder the dataset walk skips, such as `_results/`), a result path taken by a folder other
    than a partitioned run's result (which any run replaces whole) or, where ``directories`` (a
    partitioned run, which replaces a result path whole), an empty folder; an output folder
    path taken by a file; a result path that is an input file (or holds one), which writing the
    result would replace."""
    if os.path.isdir(input):
        walked, files = _walk(Path(input))
    else:
        walked, files = set(), {os.path.realpath(input): Path(input)}
    for target in map(Path, targets):
        out = target.parent
        # the entry a result replaces (a file, or a partitioned run's folder of parts): an input
        # file reached by it, through links or not, would be lost before anyone read the result
        replaced = os.path.join(os.path.realpath(out), target.name)
        lost = next((f for real, f in files.items() if real == replaced or real.startswith(replaced + os.sep)), None)
        if lost is not None:
            raise OutputError(f"{target}: the result would replace the input file {lost}; write the results elsewhere")
        if _read_by_walk(os.path.realpath(out), walked):
            raise OutputError(f"{out}: output folder is inside the input dataset {input}, so a later run "
                              "would read the results as input; write them elsewhere")
        if os.path.lexists(target) and not (target.is_file() or is_result_dataset(target)):
            # a partitioned run would replace a folder whole: only one that holds nothing of the user's
            if directories and target.is_dir():
                if any(target.iterdir()):
                    raise OutputError(f"{target}: output path is a folder that holds more than a partitioned "
                                      "run's part files, so it is taken to be yours; remove it or write the "
                                      "results elsewhere")
            else:
                raise OutputError(f"{target}: output path exists and is not a regular file")
        # whether a folder may be written is left to the write: with a remote Dask cluster the
        # workers write, and a path missing here may exist there
        existing = out
        while not os.path.lexists(existing) and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise OutputError(f"{existing}: output path exists and is not a directory")


def prepare_output_dir(output: str | os.PathLike) -> Path:
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: output path exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{out}: cannot create output directory ({exc.strerror})") from None
    # (a run publishing into the same output may have removed the folder just made, a
    # source-set-K folder it found empty: the write makes it again, see _write_temporary)
    if not os.access(out, os.W_OK | os.X_OK) and out.is_dir():
        raise OutputError(f"{out}: output directory is not writable")
    return out


def _temporary_prefix(target: Path) -> str:
    # .<file>~<host>~<pid>~: a temporary file names the process that writes it, so one whose
    # writer is gone (killed, interrupted) can be told from one a live run is still writing
    return f".{target.name}~{socket.gethostname()}~{os.getpid()}~"


def remove_stale_temporaries(output: str | os.PathLike, ending: int | None = None) -> list[Path]:
    """Delete temporary result files in ``output`` left by dead processes of this host (and by
    process ``ending``, which is about to exit)."""
    removed = []
    try:
        found = list(Path(output).glob(".*~*~*~*.tmp"))
    except FileNotFoundError:  # a source-set-K folder another run removed as empty meanwhile
        return removed
    for path in found:
        parts = path.name.split("~")
        if len(parts) != 4 or parts[1] != socket.gethostname() or not parts[2].isdigit():
            continue
        if int(parts[2]) == ending or not _process_alive(int(parts[2])):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umask() -> int:
    """The process's umask, read from /proc where Linux shows it: reading it with os.umask means
    setting it, which races with other threads creating files."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o077)  # the restrictive side while it is briefly set
    os.umask(mask)
    return mask


# Results are written with Snappy by default: on the H200 host, 16 M rows x 2 columns took 1.0 s
# uncompressed, 1.1 s with Snappy and 2.1 s with zstd (one Parquet writer, one core), and
# Snappy files are about half the size of uncompressed ones and readable everywhere. zstd makes
# smaller files for archiving; `--compression` chooses.
COMPRESSIONS = ("snappy", "zstd", "lz4", "gzip", "none")
DEFAULT_COMPRESSION = "snappy"
# Dictionary encoding where it pays. Result columns of vertex ids (one distinct value per row in
# bfs_distances, nearly so in mst_edges) never: the writer would build a dictionary for each
# column chunk and drop it once it overflows, ~20% of the write for nothing (measured with 8 M
# rows on a 2-core VM: 0.62 s with every column dictionary-encoded, 0.49 s without the ids, and
# the file 5% smaller). Distances always (a few dozen values). Weights when a sample of them
# repeats (unit or small integer weights shrink well); random real weights are all distinct,
# and building their dictionary cost 25-40% of the forest's write (8 M rows, same VM).
ID_RESULT_COLUMNS = ("vertex", "predecessor", "src", "dst")
DICTIONARY_SAMPLE = 65536


def dictionary_columns(table: pa.Table) -> list[str]:
    chosen = []
    for name in table.column_names:
        if name in ID_RESULT_COLUMNS:
            continue
        sample = table[name].slice(0, DICTIONARY_SAMPLE)
        if name != "weight" or len(sample) == 0 or 4 * len(pc.unique(sample)) <= len(sample):
            chosen.append(name)
    return chosen


# Every result file carries this key in its footer's key-value metadata, naming the result
# (mst_edges.parquet, ...). A result that lands where a later run reads a dataset (a one-file
# run's default output/ under a dataset folder that is the current directory, say) would
# otherwise be read back as edges; the reader refuses such a mix by the key.
RESULT_KEY = b"parquet-graph-pipeline.result"

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
RESULT_PART = re.compile(r"part-\d{5}\.parquet")  # a partitioned run's part files (tasks/partitioned_io.py)


def exchange_paths(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not on this file system
        return False
    raise OSError(err, os.strerror(err), str(b))


def remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def is_result_dataset(path: Path) -> bool:
    """A folder a partitioned run wrote as one result (``--output-layout dataset``): nothing in
    it but its part files. A one-partition run replaces it with a file; any other folder at a
    result's path is the user's and is refused."""
    if path.is_symlink() or not path.is_dir():
        return False
    entries = list(path.iterdir())
    return bool(entries) and all(RESULT_PART.fullmatch(e.name) and e.is_file() and not e.is_symlink()
                                 for e in entries)


BFS_RESULT_NAME = "bfs_distances.parquet"
SOURCE_SET_FOLDER = re.compile(r"source-set-\d+")


def remove_earlier_bfs_results(output: str | os.PathLike, written: list[str | os.PathLike]) -> list[Path]:
    """Remove the BFS results under ``output`` that this run did not write: OUTPUT/source-set-K/
    from an earlier run with more source sets, or OUTPUT/bfs_distances.parquet from a run with
    one search when this one had source sets (and the other way round), so that a job reading
    the output never mixes two runs. Only result files (or a partitioned run's result folders)
    of those names go, known by their footers (RESULT_KEY), and a source-set folder only when
    nothing else is left in it."""
    output = Path(output)
    kept = {os.path.abspath(p) for p in written}
    removed = []
    for found in [output / BFS_RESULT_NAME, *sorted(output.glob(f"source-set-*/{BFS_RESULT_NAME}"))]:
        if found.parent != output and not SOURCE_SET_FOLDER.fullmatch(found.parent.name):
            continue
        if os.path.abspath(found) in kept or found.is_symlink():
            continue
        # by its footer: a file of the user's at a result's name (an edge list named
        # bfs_distances.parquet, say, perhaps this run's input) is not a result and stays
        files = sorted(found.iterdir()) if is_result_dataset(found) else [found] if found.is_file() else []
        if files and all(_result_in_footer(f) == BFS_RESULT_NAME for f in files):
            remove_path(found)
            removed.append(found)
    # a source-set folder of an earlier run goes once empty, the temporary files of a run
    # killed while writing there removed first (a rerun would not write there again)
    written_folders = {os.path.dirname(p) for p in kept}
    for folder in sorted(output.glob("source-set-*")):
        if (SOURCE_SET_FOLDER.fullmatch(folder.name) and folder.is_dir() and not folder.is_symlink()
                and os.path.abspath(folder) not in written_folders):
            remove_stale_temporaries(folder)
            try:
                folder.rmdir()
            except OSError:  # the user keeps something of their own there, or a live run writes there
                pass
    return removed


def _result_in_footer(path: Path) -> str | None:
    """The result a Parquet file names in its footer (RESULT_KEY); None for any other file."""
    try:
        metadata = pq.read_metadata(path).metadata or {}
    except (pa.ArrowException, OSError):
        return None
    return metadata[RESULT_KEY].decode(errors="replace") if RESULT_KEY in metadata else None


def result_name(target: Path) -> str:
    """The result a file holds: its own name, or for a partitioned run's part file the name of
    the folder of parts it belongs to (mst_edges.parquet/part-00001.parquet: mst_edges.parquet)."""
    return target.parent.name if RESULT_PART.fullmatch(target.name) else target.name


def _write_temporary(table: pa.Table, target: Path, compression: str, threads: int) -> Path:
    """``table`` encoded on up to ``threads`` cores (tasks.parquet_concat.write_table_parallel)
    into a temporary file beside ``target``, on disk (fsynced); its footer names the result
    (RESULT_KEY). Nothing is left behind on failure."""
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           RESULT_KEY: result_name(target).encode()})
    for attempt in range(3):
        try:
            fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(target), suffix=".tmp", dir=target.parent)
            break
        except FileNotFoundError:
            # a run publishing into the same output removes a source-set-K folder it left empty
            # (remove_earlier_bfs_results): made again, it holds this temporary file from now on
            if attempt == 2:
                raise
            target.parent.mkdir(parents=True, exist_ok=True)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp creates 0600; a result is as readable as the umask says
    os.close(fd)
    try:
        write_table_parallel(table, tmp, threads, compression=compression,
                             use_dictionary=dictionary_columns(table))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return Path(tmp)


def _move_into_place(tmp: Path, target: Path) -> None:
    try:
        if is_result_dataset(target):  # a partitioned run's result: replaced whole by this file
            _replace_dataset(tmp, target)
        else:
            os.replace(tmp, target)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(path: str | os.PathLike) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _replace_dataset(new: Path, target: Path) -> None:
    if exchange_paths(new, target):
        remove_path(new)  # now the old dataset
        return
    # no atomic swap on this file system: a reader may find the result missing for a moment
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    os.rename(target, old)
    os.rename(new, target)
    remove_path(old)


@contextmanager
def publishing(output: str | os.PathLike):
    """Runs that publish into one output folder take turns: each renames its files into place
    and removes the earlier results it does not replace while holding an exclusive lock on the
    folder (flock on the folder itself, so nothing is added to it; the kernel releases it when
    the process ends, however it ends). Without it two runs at once interleaved their renames
    and clean-ups and left one run's BFS distances beside the other's forest, or neither run's
    searches. Where the file system has no such lock (some network mounts) runs publish as
    they come."""
    try:
        fd = os.open(output, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise OutputError(f"{output}: cannot open output directory ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


def publish_results(tables: dict[str | os.PathLike, pa.Table], output: str | os.PathLike,
                    compression: str = DEFAULT_COMPRESSION, check=None) -> tuple[list[Path], list[Path]]:
    """A one-partition run's results (target path -> table, each under ``output``): written at
    once (write_many), then, when they include BFS results, the BFS results of an earlier run
    that they do not replace are removed (remove_earlier_bfs_results), all while no other run
    publishes into ``output``; ``check()``, called just before the first file is renamed into
    place, may still refuse (raise). Returns the files written and those removed. A partitioned run
    killed before it could clean up left its staging folder here: it goes too."""
    from tasks.partitioned_io import remove_stale_staging  # (it imports this module)

    removed: list[Path] = []
    if os.path.isdir(output):
        remove_stale_staging(Path(output))

    def remove_earlier(written: list[Path]) -> None:
        if any(result_name(t) == BFS_RESULT_NAME for t in written):
            removed.extend(remove_earlier_bfs_results(output, [os.path.abspath(p) for p in written]))

    return write_many(tables, compression, lock=output, check=check, then=remove_earlier), removed


def write_many(tables: dict[str | os.PathLike, pa.Table], compression: str = DEFAULT_COMPRESSION,
               lock: str | os.PathLike | None = None, check=None, then=None) -> list[Path]:
    """Write result files (target path -> table), all at once, the cores shared out among them
    (a Parquet writer encodes on one core and releases the GIL; each file is encoded in pieces,
    one per core it gets). Every file is encoded to a temporary first, and only once all are on
    disk are they renamed into place: a write that fails (a full disk, say) replaces none. With
    ``lock`` (a folder above every target), ``check()`` (if given; it may refuse by raising),
    the renames and ``then(targets)`` after them run while no other run publishes there
    (``publishing``)."""
    if compression not in COMPRESSIONS:
        raise OutputError(f"unknown compression {compression!r} (choose from {', '.join(COMPRESSIONS)})")
    targets = [Path(t) for t in tables]
    for out in dict.fromkeys(t.parent for t in targets):
        prepare_output_dir(out)
        remove_stale_temporaries(out)

    cores = len(os.sched_getaffinity(0))
    written: dict[Path, Path] = {}  # target -> its temporary, once on disk

    def write(target: Path, table: pa.Table) -> None:
        try:
            written[target] = _write_temporary(table, target, compression, threads=max(1, cores // len(targets)))
        except OSError as exc:
            raise OutputError(f"{target}: cannot write results ({exc.strerror or exc})") from None

    try:
        if len(targets) == 1:
            write(targets[0], next(iter(tables.values())))
        else:
            with ThreadPoolExecutor(max_workers=min(len(targets), cores)) as pool:
                list(pool.map(write, targets, tables.values()))
        with publishing(lock) if lock is not None else nullcontext():
            stopping.check(f"publishing {', '.join(map(str, targets))}")
            if check is not None:
                check()
            for target in targets:
                try:
                    _move_into_place(written.pop(target), target)
                except OSError as exc:
                    raise OutputError(f"{target}: cannot write results ({exc.strerror or exc})") from None
            if then is not None:
                then(targets)
    finally:
        for tmp in written.values():  # a failure before every file was in place
            _unlink_quietly(tmp)
    return targets

