"""Parquet input and output of a partitioned run, with pyarrow.

Input: the driver reads only footers (``plan_input``, through tasks.edges_io's discovery and
footer checks: the same files, row groups, id and weight types and refusals as a one-partition
run). Rank r of P then reads global rows [rows * r // P, rows * (r + 1) // P) (``read_share``):
the row groups that overlap that range, cut to it, so shares are even whatever the row-group
sizes (a row group on a boundary is decoded by both neighbours). Values are checked as they are
read, by edges_io's per-row-group checks; an error names the file, the column and the row within
that file. String ids are refused: the ranks renumber integer ids by hashing them.

``Share`` encoding (arrays of the rank's backend): ``src``/``dst`` the ids in the plan's common integer dtype
(int64 bit patterns while uint64 ids sit beside signed ones: ``signs`` then says, per row group,
which ids only one of int64 and uint64 can hold, and the ranks agree on one type); ``weight``
float32 when every file's weights are float16/32, else float64 (None without a weight column);
the share's first global row is ``row_offset``.

Output: every rank writes its part of each result into one staging directory inside the output
directory; the driver renames each result into place only after every rank has finished
(``publish``: all of them, or none). A result is a Parquet dataset directory (one ``part-RRRRR.parquet`` per rank,
layout ``dataset``) or one file (layout ``file``: once every part is on disk, one rank streams
the parts into it row group by row group; results are dealt out to the ranks in turn, so they
are merged at once). Renaming over an existing result exchanges the two atomically (renameat2's
RENAME_EXCHANGE) where the system offers it, so a reader sees the old result or the new one,
whether each is a file or a directory.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from tasks.edges_io import (
    DEFAULT_COMPRESSION, _Plan, _plan, _read_unit, _run_in_order, _signs, _Signs, _unit_ids, _Uploader, _unit_weights,
    check_columns, dataset_files, exchange_paths, prepare_output_dir, remove_path, write_many,
)
from tasks.errors import InputError, OutputError
from tasks.parquet_concat import ParquetConcatError, concatenate_files

LAYOUTS = ("file", "dataset")
BFS_RESULT = "bfs_distances.parquet"
FOREST_RESULT = "mst_edges.parquet"
_STAGING_SUFFIX = ".partial"


@dataclass
class InputPlan:
    """What the footers say about the input (edges_io's plan: its row groups, in order, are the
    rows of the edge list) and the columns to read."""

    path: str
    footers: _Plan
    src_col: str
    dst_col: str
    weight_col: str | None

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
        return self.rows * rank // size, self.rows * (rank + 1) // size


def plan_input(path: str, src_col: str = "src", dst_col: str = "dst", weight_col: str | None = "weight",
               strings: bool = False) -> InputPlan:
    """Files, row groups and types of a Parquet edge list, from the footers alone. String ids
    are refused unless ``strings`` (a plan only asked how large the input is)."""
    check_columns(path, src_col, dst_col, weight_col)
    plan = InputPlan(str(path), _plan(path, dataset_files(path)[0], src_col, dst_col, weight_col),
                     src_col, dst_col, weight_col)
    if not strings:
        check_integer_ids(plan)
    return plan


def check_integer_ids(plan: InputPlan) -> None:
    if plan.footers.strings:
        raise InputError(f"{plan.path}: column {plan.src_col!r} holds string ids; a partitioned run needs integer "
                         "ids (run with one partition)")


@dataclass
class Share:
    src: object  # arrays of the rank's backend (NumPy or CuPy)
    dst: object
    weight: object | None
    row_offset: int
    signs: list[_Signs] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return int(self.src.shape[0])


def read_share(plan: InputPlan, rank: int, size: int, xp=np) -> Share:
    """This rank's rows of the edge list, checked, in arrays of the backend ``xp``: row groups
    decoded by a pool of threads, each piece stored at its place in the share as it is decoded
    (on a GPU through each thread's pinned buffers and stream, edges_io._Uploader), so no
    whole-share host copy is made."""
    start, stop = plan.share(rank, size)
    footers = plan.footers
    ends = (plan.src_col, plan.dst_col)
    units = [u for u in footers.units if u.start < stop and u.start + u.rows > start]
    threads = max(1, min(len(os.sched_getaffinity(0)), len(units)))
    src, dst = xp.empty(stop - start, dtype=footers.id_type), xp.empty(stop - start, dtype=footers.id_type)
    weight = xp.empty(stop - start, dtype=footers.weight_type) if plan.weight_col else None
    local = threading.local()

    def read(unit):
        table = _read_unit(unit, footers.columns, use_threads=len(units) < threads * 2)
        lo, hi = max(start, unit.start), min(stop, unit.start + unit.rows)
        table = table.slice(lo - unit.start, hi - lo)
        # the piece as a unit of its own: the checks count rows from its first row in the file
        piece = dataclasses.replace(unit, file_row=unit.file_row + lo - unit.start, start=lo, rows=hi - lo)
        ids = [_unit_ids(piece, table[c], c) for c in ends]
        found = [_signs(piece, c, v) for c, v in zip(ends, ids)] if footers.mixed_signs else []
        # ids of a uint64-beside-signed input stay 64-bit patterns until the ranks agree on a type
        ids = [v.view(np.int64) if footers.mixed_signs and v.dtype == np.uint64 else v for v in ids]
        stores = [(src, ids[0]), (dst, ids[1])]
        if weight is not None:
            stores.append((weight, _unit_weights(piece, table[plan.weight_col], plan.weight_col, footers.weight_type)))
        del table
        for column, (dest, values) in enumerate(stores):
            if xp is np:
                dest[lo - start:hi - start] = values
            else:
                uploader = getattr(local, "uploader", None) or _Uploader(xp)
                local.uploader = uploader
                uploader.put(column, dest, lo - start, values)
        return found

    found = _run_in_order(read, units, threads)
    if xp is not np:
        xp.cuda.Device().synchronize()  # every reading thread's last uploads
    return Share(src, dst, weight, start, [s for f in found for s in f])


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


def remove_stale_staging(output: Path, ending: int | None = None) -> list[Path]:
    """Delete staging directories in ``output`` left by dead drivers of this host (and by
    process ``ending``, which is about to exit)."""
    removed = []
    for path in Path(output).glob(f".partitioned~*~*~*{_STAGING_SUFFIX}"):
        parts = path.name.split("~")
        if len(parts) != 4 or parts[1] != socket.gethostname() or not parts[2].isdigit():
            continue
        try:
            if int(parts[2]) != ending:
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


def write_parts(tables: dict[str, pa.Table], staging: Path, rank: int, layout: str,
                compression: str = DEFAULT_COMPRESSION) -> list[Path]:
    """This rank's part of each result (result name -> table), written at once."""
    if not staging.is_dir():  # the driver gave the run up and removed it: do not recreate it
        raise OutputError(f"{staging}: the run's staging directory is gone (the run was cancelled)")
    return write_many({part_path(staging, result, rank, layout): t for result, t in tables.items()}, compression)


def merge_parts(staging: Path, result: str, size: int) -> Path:
    """One file from the ranks' parts of ``result``, in rank order: their pages copied as they
    were encoded, one footer over all (tasks.parquet_concat)."""
    target = staging / result
    parts = [part_path(staging, result, r, "file") for r in range(size)]
    if not staging.is_dir():  # the driver gave the run up and removed it: do not recreate it
        raise OutputError(f"{staging}: the run's staging directory is gone (the run was cancelled)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        concatenate_files(parts, target, threads=len(os.sched_getaffinity(0)))
        with open(target, "rb") as fh:
            os.fsync(fh.fileno())
    except ParquetConcatError as exc:
        raise OutputError(f"{target}: cannot join the parts ({exc})") from None
    except OSError as exc:
        raise OutputError(f"{target.parent}: cannot write results ({exc.strerror or exc})") from None
    return target


def publish(staging: Path, output: Path, results: list[str]) -> list[str]:
    """Move each staged result to the same place under ``output``, replacing what is there: all
    of them, or none. Every folder is checked before the first move (one that cannot be written
    is the usual failure); a move that fails anyway puts the results already moved back."""
    for folder in dict.fromkeys((output / result).parent for result in results):
        prepare_output_dir(folder)
    moved = []  # (where the old result is kept, the result's path, how it was replaced), for undoing
    target = output
    try:
        for result in results:
            new, target = staging / result, output / result
            if not target.exists() and not target.is_symlink():
                os.rename(new, target)
                moved.append((None, target, "added"))
            elif exchange_paths(new, target):
                moved.append((new, target, "exchanged"))  # the old result is now at `new`
            else:  # no atomic swap here: the old result waits in staging until every result is in place
                old = staging / ".old" / result
                old.parent.mkdir(parents=True, exist_ok=True)
                if new.is_file() and target.is_file() and not target.is_symlink():
                    try:
                        os.link(target, old)  # kept for undoing; readers see the old file or the new one
                    except OSError:  # a file system without hard links: this one cannot be undone
                        old = None
                    os.replace(new, target)
                else:  # a reader may find the result missing for a moment
                    os.rename(target, old)
                    moved.append((old, target, "set aside"))
                    os.rename(new, target)
                    moved.pop()
                moved.append((old, target, "replaced"))
    except OSError as exc:
        undone = _undo(moved)
        raise OutputError(f"{target.parent}: cannot write results ({exc.strerror or exc}); "
                          + ("no result was replaced" if undone else "some results could not be put back")) from None
    for kept, _, how in moved:
        if how == "exchanged":
            remove_path(kept)
    return [os.path.abspath(output / result) for result in results]


def _undo(moved: list[tuple]) -> bool:
    """Put back what publish moved, last first. False where something could not be put back."""
    undone = True
    for kept, target, how in reversed(moved):
        try:
            if how == "added":
                remove_path(target)
            elif how == "exchanged":
                undone = exchange_paths(kept, target) and undone
            elif how == "set aside":
                os.rename(kept, target)
            elif kept is None:
                undone = False
            else:  # replaced: the old result back over the new one
                if not (kept.is_file() and target.is_file()):
                    remove_path(target)
                os.replace(kept, target)
        except OSError:
            undone = False
    return undone
