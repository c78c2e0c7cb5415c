"""The writer: result tables into Parquet files, atomically.

A result reaches the writer as a pyarrow table, encoded by pyarrow on the host's cores, or as a
tasks.parquet.write.tables.ResultColumns, encoded by the page writer (tasks.parquet.write.page_writer) on
the arrays' backend: the form chooses the encoder (``resolve_writer`` says which form a run
builds, ``ResultWriter.choose`` which form each result takes and why, ``written_by`` what
encodes a file); everything else below is shared. The one-partition run and every rank of a
partitioned run choose the same way.

Every file is encoded into a temporary file beside its target (on disk, fsynced; its footer
names the result under results.RESULT_KEY), and only once every file of a write is on disk
are they renamed into place (``write_many``): a reader sees the old file or the new one,
never a partial one, and a write that fails (a full disk, say) replaces none. A temporary
file's name (``.<file>~<host>~<pid>~....tmp``) names the process that writes it, so one left by
a process that is gone can be told from one a live run is still writing (``left_by_dead_process``,
shared with the staging folders of tasks.parquet.publish.publish).

A partitioned run's ranks write their parts of each result into the run's staging folder
(``write_parts``); with the ``file`` layout one rank then joins each result's parts into one
file, copying their pages (``merge_parts``, tasks.parquet.write.concat).
Errors are tasks.errors.OutputError naming the path.
"""
from __future__ import annotations

import os
import socket
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kernels.backend import array_module
from kernels.parquet import encode as enc
from tasks import stopping
from tasks.errors import OutputError
from tasks.parquet.write.concat import ParquetConcatError, concatenate_files, write_table_parallel
from tasks.parquet.codec.decompress import nvcomp_usable
from tasks.parquet.store.filesystem import local
from tasks.parquet.publish.output_paths import is_result_dataset, prepare_output_dir, remove_path
from tasks.parquet.write.page_writer import compressor, refusal, write_columns
from tasks.parquet.write.results import (
    BFS_RESULT_NAME, COMPRESSIONS, DEFAULT_COMPRESSION, FOREST_COLUMNS, FOREST_RESULT_NAME, RESULT_KEY, WRITERS,
    result_name,
)
from tasks.parquet.write.tables import ResultColumns, result_of

# Dictionary encoding where it pays. Result columns of vertex ids (one distinct value per row in
# bfs_distances, nearly so in mst_edges) never: the writer would build a dictionary for each
# column chunk and drop it once it overflows, ~20% of the write for nothing (measured with 8 M
# rows on a 2-core VM: 0.62 s with every column dictionary-encoded, 0.49 s without the ids, and
# the file 5% smaller). Distances always (a few dozen values). Weights when a sample of them
# repeats (unit or small integer weights shrink well); random real weights are all distinct,
# and building their dictionary cost 25-40% of the forest's write (8 M rows, same VM).
# A column's role is its place in its result's schema (a forest's columns are named as its
# input's: tables.forest_schema).
DICTIONARY_SAMPLE = 65536


def column_roles(table: pa.Table | ResultColumns) -> list[str]:
    """Each column's role, "id", "weight" or "value", by the result its schema names
    (tables.result_of): a forest's are id, id, weight; a search's vertex and predecessor are ids.
    A schema that names no result is taken by its column names (src, dst, weight: the defaults)."""
    names = table.schema.names
    result = result_of(table.schema)
    if result == FOREST_RESULT_NAME:
        return ["id", "id", "weight"]
    if result == BFS_RESULT_NAME:
        return ["id" if n in ("vertex", "predecessor") else "value" for n in names]
    defaults = dict(zip(FOREST_COLUMNS, ("id", "id", "weight")), vertex="id", predecessor="id")
    return [defaults.get(n, "value") for n in names]


def dictionary_columns(table: pa.Table | ResultColumns) -> list[str]:
    """The columns to dictionary-encode, by the rule above (the same for both encoders)."""
    chosen = []
    for i, (name, role) in enumerate(zip(table.schema.names, column_roles(table))):
        if role == "id":
            continue
        if role != "weight":
            chosen.append(name)
            continue
        if isinstance(table, ResultColumns):
            sample = table.values[i][:DICTIONARY_SAMPLE]  # weights have no nulls
            size, distinct = int(sample.shape[0]), enc.distinct_count(array_module(sample), sample)
        else:
            sample = table[name].slice(0, DICTIONARY_SAMPLE)
            size, distinct = len(sample), len(pc.unique(sample))
        if size == 0 or 4 * distinct <= size:
            chosen.append(name)
    return chosen


def resolve_writer(name: str | None, xp) -> str:
    """The writer that ``name`` (auto, gpu or host; None: auto) means for results computed in
    arrays of ``xp``: auto is gpu where xp is CuPy and nvCOMP is usable, else host. gpu: the
    run builds ResultColumns of its arrays for the page writer (on NumPy where the backend is);
    host: pyarrow tables."""
    name = name or "auto"
    if name not in WRITERS:
        raise OutputError(f"unknown Parquet writer {name!r} (choose from {', '.join(WRITERS)})")
    if name == "auto":
        return "gpu" if xp is not np and nvcomp_usable() else "host"
    return name


def written_by(table: pa.Table | ResultColumns, compression: str) -> str:
    """What encodes ``table``: 'host (pyarrow)', or 'gpu page writer on cupy, nvCOMP snappy'."""
    if not isinstance(table, ResultColumns):
        return "host (pyarrow)"
    xp = array_module(table.values[0]) if table.values else np
    how = compressor(xp, compression)
    return f"gpu page writer on {xp.__name__}, " + ("uncompressed" if how == "none" else f"{how} {compression}")


@dataclass(frozen=True)
class ResultWriter:
    """Who encodes a run's results: ``pages`` when the run's writer is the page writer
    (resolve_writer gave gpu), which takes ResultColumns, else pyarrow, which takes tables."""

    pages: bool
    compression: str

    @classmethod
    def resolve(cls, writer: str | None, xp, compression: str) -> ResultWriter:
        """The writer ``writer`` (auto, gpu or host) means for results in arrays of ``xp``."""
        return cls(resolve_writer(writer, xp) == "gpu", compression)

    def choose(self, columns, table, refused: str | None = None) -> tuple[pa.Table | ResultColumns, str]:
        """One result in the form its encoder takes, and the words that name the encoder (the
        log's and the summary's): ``columns()`` (ResultColumns) where the run writes with the
        page writer and it takes their schema, else ``table()`` (a pyarrow table), with why the
        page writer did not take it. ``refused``: why this result has no ResultColumns form
        (string vertex ids); ``columns`` is then never called."""
        reason = refused if self.pages else None
        if self.pages and reason is None:
            built = columns()
            reason = refusal(built.schema)
            if reason is None:
                return built, written_by(built, self.compression)
        return table(), "host (pyarrow" + (f"; the page writer takes no {reason})" if reason else ")")


def process_marker() -> str:
    """``<host>~<pid>``: what a temporary file or staging folder says of the process that made it."""
    return f"{socket.gethostname()}~{os.getpid()}"


def left_by_dead_process(name: str, ending: int | None = None) -> bool:
    """Whether a temporary file or staging folder named ``<prefix>~<host>~<pid>~<rest>`` was left
    by a process of this host that is gone (or by process ``ending``, which is about to exit).
    Names of other hosts, or of other forms, are never taken for stale."""
    parts = name.split("~")
    if len(parts) != 4 or parts[1] != socket.gethostname() or not parts[2].isdigit():
        return False
    pid = int(parts[2])
    if pid == ending:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def temporary_prefix(target: Path) -> str:
    return f".{target.name}~{process_marker()}~"


def remove_stale_temporaries(output: str | os.PathLike, ending: int | None = None) -> list[Path]:
    """Delete temporary result files in ``output`` left by dead processes of this host (and by
    process ``ending``, which is about to exit)."""
    removed = []
    try:
        found = list(Path(output).glob(".*~*~*~*.tmp"))
    except FileNotFoundError:  # a source-set-K folder another run removed as empty meanwhile
        return removed
    for path in found:
        if left_by_dead_process(path.name, ending):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def write_temporary(table: pa.Table | ResultColumns, target: Path, compression: str, threads: int,
                    remake_folder: bool = True) -> Path:
    """``table`` encoded into a temporary file beside ``target``, on disk (fsynced); its footer
    names the result (RESULT_KEY: the one its schema names, else the target's result_name). A pyarrow table is encoded on up to ``threads`` cores
    (tasks.parquet.write.concat.write_table_parallel), ResultColumns by the page writer (host codecs
    and CRCs on up to ``threads`` cores). Nothing is left behind on failure. ``remake_folder``:
    a target folder removed meanwhile is made again (else the write fails: FileNotFoundError)."""
    table = table.replace_schema_metadata({RESULT_KEY: result_name(target).encode(),
                                           **(table.schema.metadata or {})})
    for attempt in range(3):
        try:
            fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(target), suffix=".tmp", dir=target.parent)
            break
        except FileNotFoundError:
            # a run publishing into the same output removes a source-set-K folder it left empty
            # (remove_earlier_bfs_results): made again, it holds this temporary file from now on
            if attempt == 2 or not remake_folder:
                raise
            target.parent.mkdir(parents=True, exist_ok=True)
    os.fchmod(fd, 0o666 & ~local().umask())  # mkstemp creates 0600; a result is as readable as the umask says
    os.close(fd)
    try:
        if isinstance(table, ResultColumns):
            write_columns(table, tmp, compression, dictionary=dictionary_columns(table), threads=threads)
        else:
            write_table_parallel(table, tmp, threads, compression=compression,
                                 use_dictionary=dictionary_columns(table))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        unlink_quietly(tmp)
        raise
    return Path(tmp)


def move_into_place(tmp: Path, target: Path) -> None:
    """A temporary file renamed over its target (a partitioned run's result folder there is
    replaced whole, atomically where the system can swap paths)."""
    try:
        if is_result_dataset(target):
            _replace_dataset(tmp, target)
        else:
            os.replace(tmp, target)
    except BaseException:
        unlink_quietly(tmp)
        raise


def unlink_quietly(path: str | os.PathLike) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _replace_dataset(new: Path, target: Path) -> None:
    if local().exchange(new, target):
        remove_path(new)  # now the old dataset
        return
    # no atomic swap on this file system: a reader may find the result missing for a moment
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    os.rename(target, old)
    os.rename(new, target)
    remove_path(old)


def make_folder_below(root: Path, folder: Path) -> None:
    """``folder`` and the folders between it and ``root`` made where missing, never ``root``
    itself: FileNotFoundError once ``root`` is gone."""
    current = root
    for part in folder.relative_to(root).parts:
        current = current / part
        try:
            os.mkdir(current)
        except FileExistsError:
            pass
    if not root.is_dir():
        raise FileNotFoundError(2, os.strerror(2), str(root))


def write_many(tables: dict[str | os.PathLike, pa.Table | ResultColumns], compression: str = DEFAULT_COMPRESSION,
               lock: str | os.PathLike | None = None, check=None, then=None, inside: Path | None = None) -> list[Path]:
    """Write result files (target path -> table: a pyarrow table or ResultColumns, which chooses
    the encoder), all at once, the cores shared out among them
    (a Parquet writer encodes on one core and releases the GIL; each file is encoded in pieces,
    one per core it gets). Every file is encoded to a temporary first, and only once all are on
    disk are they renamed into place: a write that fails (a full disk, say) replaces none. With
    ``lock`` (a folder above every target), ``check()`` (if given; it may refuse by raising),
    the renames and ``then(targets)`` after them run while no other run publishes there
    (tasks.parquet.publish.publish.publishing). With ``inside`` (a folder above every target that must
    exist, a partitioned run's staging folder), folders are made below it and never it: a write
    that finds it gone fails (FileNotFoundError) and leaves nothing."""
    if compression not in COMPRESSIONS:
        raise OutputError(f"unknown compression {compression!r} (choose from {', '.join(COMPRESSIONS)})")
    targets = [Path(t) for t in tables]
    for out in dict.fromkeys(t.parent for t in targets):
        if inside is None:
            prepare_output_dir(out)
            remove_stale_temporaries(out)
        else:
            make_folder_below(inside, out)

    cores = len(os.sched_getaffinity(0))
    written: dict[Path, Path] = {}  # target -> its temporary, once on disk

    def write(target: Path, table: pa.Table) -> None:
        try:
            written[target] = write_temporary(table, target, compression, threads=max(1, cores // len(targets)),
                                              remake_folder=inside is None)
        except OSError as exc:
            raise OutputError(f"{target}: cannot write results ({exc.strerror or exc})") from None

    try:
        if len(targets) == 1:
            write(targets[0], next(iter(tables.values())))
        else:
            with ThreadPoolExecutor(max_workers=min(len(targets), cores)) as pool:
                list(pool.map(write, targets, tables.values()))
        with local().lock(lock) if lock is not None else nullcontext():
            stopping.check(f"publishing {', '.join(map(str, targets))}")
            if check is not None:
                check()
            for target in targets:
                try:
                    move_into_place(written.pop(target), target)
                except OSError as exc:
                    raise OutputError(f"{target}: cannot write results ({exc.strerror or exc})") from None
            if then is not None:
                then(targets)
    finally:
        for tmp in written.values():  # a failure before every file was in place
            unlink_quietly(tmp)
    return targets


def part_path(staging: Path, result: str, rank: int, layout: str) -> Path:
    """Where rank ``rank`` writes its part of ``result`` (a path relative to the output)."""
    base = staging / result if layout == "dataset" else staging / ".parts" / result
    return base / f"part-{rank:05d}.parquet"


def write_parts(tables: dict[str, pa.Table], staging: Path, rank: int, layout: str,
                compression: str = DEFAULT_COMPRESSION) -> list[Path]:
    """This rank's part of each result (result name -> table), written at once. The staging
    folder is never made here: once the driver gave the run up and removed it (a time limit, a
    cancel, a failed rank), a rank still writing must not make it again, or it would be left in
    the output."""
    gone = OutputError(f"{staging}: the run's staging directory is gone (the run was cancelled)")
    if not staging.is_dir():
        raise gone
    try:
        return write_many({part_path(staging, result, rank, layout): t for result, t in tables.items()}, compression,
                          inside=staging)
    except OutputError:
        if not staging.is_dir():
            raise gone from None
        raise
    except FileNotFoundError:
        raise gone from None


def merge_parts(staging: Path, result: str, size: int) -> Path:
    """One file from the ranks' parts of ``result``, in rank order: their pages copied as they
    were encoded, one footer over all (tasks.parquet.write.concat)."""
    target = staging / result
    parts = [part_path(staging, result, r, "file") for r in range(size)]
    if not staging.is_dir():  # the driver gave the run up and removed it: do not recreate it
        raise OutputError(f"{staging}: the run's staging directory is gone (the run was cancelled)")
    try:
        make_folder_below(staging, target.parent)  # never the staging folder itself (write_parts)
        concatenate_files(parts, target, threads=len(os.sched_getaffinity(0)))
        with open(target, "rb") as fh:
            os.fsync(fh.fileno())
    except ParquetConcatError as exc:
        raise OutputError(f"{target}: cannot join the parts ({exc})") from None
    except OSError as exc:
        raise OutputError(f"{target.parent}: cannot write results ({exc.strerror or exc})") from None
    return target
