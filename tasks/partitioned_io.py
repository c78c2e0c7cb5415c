"""Parquet input and output of a partitioned run, with pyarrow.

Input: the driver reads only footers (``plan_input``): the files, their row groups, the id and
weight types, and the checks a schema answers. Rank r of P then reads global rows
[rows * r // P, rows * (r + 1) // P) (``read_share``): the row groups that overlap that range,
cut to it, so shares are even whatever the row-group sizes (a row group on a boundary is
decoded by both neighbours). Values are checked as they are read; an error names the file, the
column and the row within that file.

``Share`` encoding (host arrays): ``src``/``dst`` the ids in the plan's common integer dtype,
``weight`` float32 when every file stores float32, else float64 (None without a weight
column); the share's first global row is ``row_offset``.

Output: every rank writes its part of each result into one staging directory inside the output
directory; the driver renames each result into place only after every rank has finished
(``publish``). A result is a Parquet dataset directory (one ``part-RRRRR.parquet`` per rank,
layout ``dataset``) or one file (layout ``file``: rank 0 streams the parts into it row group by
row group). Renaming over an existing result exchanges the two atomically (renameat2's
RENAME_EXCHANGE) where the system offers it, so a reader sees the old result or the new one.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.errors import InputError, OutputError

LAYOUTS = ("file", "dataset")
DEFAULT_COMPRESSION = "zstd"
BFS_RESULT = "bfs_distances.parquet"
FOREST_RESULT = "mst_edges.parquet"
_STAGING_SUFFIX = ".partial"


@dataclass
class InputPlan:
    path: str
    files: list[str]
    columns: list[str]  # src, dst[, weight]
    id_dtype: np.dtype
    weight_dtype: np.dtype | None
    check_signed: bool  # int64 and uint64 ids mixed: uint64 values must fit int64
    groups: list[tuple[int, int, int, int]] = field(default_factory=list)  # file, group, first row (global), rows
    file_rows: list[int] = field(default_factory=list)  # first global row of each file

    @property
    def rows(self) -> int:
        return sum(g[3] for g in self.groups)

    def share(self, rank: int, size: int) -> tuple[int, int]:
        return self.rows * rank // size, self.rows * (rank + 1) // size


def _discover(path: Path) -> list[Path]:
    if not path.exists():
        raise InputError(f"{path}: input not found")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".parquet", ".pq")
                       and not p.name.startswith((".", "_")))
        if not files:
            raise InputError(f"{path}: directory holds no Parquet files (*.parquet)")
        return files
    return [path]


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _kind(t: pa.DataType) -> str:
    t = _value_type(t)
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return str(t)


def plan_input(path: str, src_col: str = "src", dst_col: str = "dst", weight_col: str | None = "weight") -> InputPlan:
    """Files, row groups and types of a Parquet edge list, from the footers alone."""
    files = _discover(Path(path))
    columns = [src_col, dst_col] + ([weight_col] if weight_col else [])
    kinds, id_types, weight_types, groups, starts = None, [], [], [], []
    total = 0
    for index, file in enumerate(files):
        try:
            meta = pq.ParquetFile(file)
            schema = meta.schema_arrow
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{file}: not a readable Parquet file ({exc})") from None
        missing = [c for c in columns if c not in schema.names]
        if missing:
            raise InputError(f"{file}: column {missing[0]!r} not found (columns: {', '.join(schema.names)})")
        these = {c: _kind(schema.field(c).type) for c in columns}
        kinds = kinds or these
        for c in columns:
            if these[c] != kinds[c]:
                raise InputError(f"{file}: column {c!r} is {these[c]} but {files[0]} has {kinds[c]} (mixed schemas)")
        id_types += [_value_type(schema.field(c).type) for c in (src_col, dst_col)]
        if weight_col:
            weight_types.append(_value_type(schema.field(weight_col).type))
        starts.append(total)
        for g in range(meta.metadata.num_row_groups):
            rows = meta.metadata.row_group(g).num_rows
            groups.append((index, g, total, rows))
            total += rows
    for c in (src_col, dst_col):
        if kinds[c] == "string":
            raise InputError(f"{path}: column {c!r} holds string ids; a partitioned run needs integer ids "
                             "(run with one partition)")
        if kinds[c] != "integer":
            raise InputError(f"{path}: column {c!r} has type {kinds[c]}; vertex ids must be integers or strings")
    if weight_col:
        t = weight_types[0]
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
            raise InputError(f"{path}: weight column {weight_col!r} has type {t}; weights must be numeric")
    if total == 0:
        raise InputError(f"{path}: the edge list is empty (0 rows)")
    id_dtype = np.result_type(*[t.to_pandas_dtype() for t in id_types])
    check_signed = id_dtype.kind == "f"  # int64 with uint64
    if check_signed:
        id_dtype = np.dtype(np.int64)
    weight_dtype = None
    if weight_col:
        weight_dtype = np.dtype(np.float32 if all(t == pa.float32() for t in weight_types) else np.float64)
    return InputPlan(str(path), [str(f) for f in files], columns, np.dtype(id_dtype), weight_dtype, check_signed,
                     groups, starts)


@dataclass
class Share:
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    row_offset: int

    @property
    def rows(self) -> int:
        return int(self.src.shape[0])


def _first_null(col) -> int:
    return int(pc.index(pc.is_null(col), True).as_py())


def _ids(plan: InputPlan, file: str, name: str, col: pa.ChunkedArray, first_row: int) -> np.ndarray:
    if col.null_count:
        raise InputError(f"{file}: column {name!r} is null at row {first_row + _first_null(col)}")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    values = col.to_numpy()
    if plan.check_signed and values.dtype == np.uint64:
        above = np.flatnonzero(values > np.iinfo(np.int64).max)
        if above.size:
            raise InputError(f"{file}: column {name!r} holds {values[above[0]]} at row {first_row + int(above[0])}, "
                             "above 2**63-1, while other ids are signed")
    return values.astype(plan.id_dtype, copy=False)


def _weights(plan: InputPlan, file: str, name: str, col: pa.ChunkedArray, first_row: int) -> np.ndarray:
    if col.null_count:
        raise InputError(f"{file}: weight column {name!r} is null at row {first_row + _first_null(col)}")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    values = col.cast(pa.from_numpy_dtype(plan.weight_dtype)).to_numpy()
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        row = int(bad[0])
        raise InputError(f"{file}: weight column {name!r} is {values[row]} at row {first_row + row}; "
                         "weights must be finite")
    return values


def read_share(plan: InputPlan, rank: int, size: int) -> Share:
    """This rank's rows of the edge list, checked."""
    start, stop = plan.share(rank, size)
    pieces = {c: [] for c in plan.columns}
    readers: dict[int, pq.ParquetFile] = {}
    for index, group, first, rows in plan.groups:
        lo, hi = max(start, first), min(stop, first + rows)
        if lo >= hi:
            continue
        file = plan.files[index]
        try:
            reader = readers.get(index) or readers.setdefault(index, pq.ParquetFile(file))
            table = reader.read_row_group(group, columns=plan.columns).slice(lo - first, hi - lo)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{file}: corrupt or truncated Parquet data ({exc})") from None
        in_file = lo - plan.file_rows[index]  # the piece's first row, counted within its file
        for c in plan.columns[:2]:
            pieces[c].append(_ids(plan, file, c, table[c], in_file))
        if len(plan.columns) > 2:
            pieces[plan.columns[2]].append(_weights(plan, file, plan.columns[2], table[plan.columns[2]], in_file))
    empty = {plan.columns[0]: plan.id_dtype, plan.columns[1]: plan.id_dtype}
    if len(plan.columns) > 2:
        empty[plan.columns[2]] = plan.weight_dtype
    arrays = {c: np.concatenate(p) if p else np.empty(0, dtype=empty[c]) for c, p in pieces.items()}
    weight = arrays[plan.columns[2]] if len(plan.columns) > 2 else None
    return Share(arrays[plan.columns[0]], arrays[plan.columns[1]], weight, start)


def bfs_schema(id_type: pa.DataType) -> pa.Schema:
    return pa.schema([("vertex", id_type), ("distance", pa.int32()), ("predecessor", id_type)])


def forest_schema(id_type: pa.DataType, weight_type: pa.DataType) -> pa.Schema:
    return pa.schema([("src", id_type), ("dst", id_type), ("weight", weight_type)])


def bfs_table(id_type, vertex: np.ndarray, distance: np.ndarray, parent: np.ndarray, has_parent: np.ndarray) -> pa.Table:
    """vertex, distance (null = unreached), predecessor (null for sources and unreached)."""
    return pa.table([pa.array(vertex, type=id_type), pa.array(distance, mask=distance < 0, type=pa.int32()),
                     pa.array(parent, mask=~has_parent, type=id_type)], schema=bfs_schema(id_type))


def forest_table(id_type, weight_type, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> pa.Table:
    return pa.table([pa.array(src, type=id_type), pa.array(dst, type=id_type), pa.array(weight, type=weight_type)],
                    schema=forest_schema(id_type, weight_type))


def staging_name(token: str) -> str:
    # .partitioned~<host>~<pid>~<token>.partial: names the driver, so a directory whose driver
    # is gone can be told from one a live run is still filling
    return f".partitioned~{socket.gethostname()}~{os.getpid()}~{token}{_STAGING_SUFFIX}"


def remove_stale_staging(output: Path) -> list[Path]:
    """Delete staging directories in ``output`` left by dead drivers of this host."""
    removed = []
    for path in Path(output).glob(f".partitioned~*~*~*{_STAGING_SUFFIX}"):
        parts = path.name.split("~")
        if len(parts) != 4 or parts[1] != socket.gethostname() or not parts[2].isdigit():
            continue
        try:
            os.kill(int(parts[2]), 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def part_path(staging: Path, result: str, rank: int, layout: str) -> Path:
    """Where rank ``rank`` writes its part of ``result`` (a path relative to the output)."""
    base = staging / result if layout == "dataset" else staging / ".parts" / result
    return base / f"part-{rank:05d}.parquet"


def write_part(table: pa.Table, staging: Path, result: str, rank: int, layout: str,
               compression: str = DEFAULT_COMPRESSION) -> Path:
    target = part_path(staging, result, rank, layout)
    if not staging.is_dir():  # the driver gave the run up and removed it: do not recreate it
        raise OutputError(f"{staging}: the run's staging directory is gone (the run was cancelled)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, target, compression=compression)
    except OSError as exc:
        raise OutputError(f"{target.parent}: cannot write a result part ({exc.strerror or exc})") from None
    return target


def merge_parts(staging: Path, result: str, size: int, compression: str = DEFAULT_COMPRESSION) -> Path:
    """One file from the ranks' parts of ``result``, in rank order, a row group at a time."""
    target = staging / result
    parts = [part_path(staging, result, r, "file") for r in range(size)]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        schema = pq.read_schema(parts[0])
        with pq.ParquetWriter(target, schema, compression=compression) as writer:
            for part in parts:
                reader = pq.ParquetFile(part)
                for g in range(reader.metadata.num_row_groups):
                    writer.write_table(reader.read_row_group(g))
        with open(target, "rb") as fh:
            os.fsync(fh.fileno())
    except OSError as exc:
        raise OutputError(f"{target.parent}: cannot write results ({exc.strerror or exc})") from None
    return target


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
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


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def publish(staging: Path, output: Path, results: list[str]) -> list[str]:
    """Move each staged result to the same place under ``output``, replacing what is there."""
    placed = []
    try:
        for result in results:
            new, target = staging / result, output / result
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() and not target.is_symlink():
                os.rename(new, target)
            elif _exchange(new, target):
                _remove(new)  # now the old result
            elif new.is_file() and target.is_file():
                os.replace(new, target)
            else:  # no atomic swap here: a reader may find the result missing for a moment
                old = staging / ".old" / result
                old.parent.mkdir(parents=True, exist_ok=True)
                os.rename(target, old)
                os.rename(new, target)
            placed.append(str(target))
    except OSError as exc:
        raise OutputError(f"{output}: cannot write results ({exc.strerror or exc})") from None
    return placed
