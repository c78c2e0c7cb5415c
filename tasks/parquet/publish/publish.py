"""Publishing: a run's results put into its output folder, all of them or none, while no other
run publishes there.

- Runs that publish into one output folder take turns (``publishing``: the output
  filesystem's lock, flock on the local disk). Without it two runs at once interleaved their
  renames and clean-ups and left one run's BFS distances beside the other's forest, or
  neither run's searches.
- A one-partition run (``publish_results``) writes its files atomically (tasks.parquet.write.result_files),
  then removes the BFS results of an earlier run that it does not replace
  (``remove_earlier_bfs_results``), so a job reading the output never mixes two runs.
- A partitioned run's ranks write into a staging folder in the output
  (``.partitioned~<host>~<pid>~<token>.partial``, ``staging_name``); the driver moves each result
  into place only after every rank has finished (``publish``). Renaming over an existing result
  exchanges the two atomically (renameat2's RENAME_EXCHANGE) where the system offers it, so a
  reader sees the old result or the new one, whether each is a file or a folder; a move that
  fails puts the results already moved back.
- In a store (S3, GCS, Azure, HDFS: no rename, no lock), a one-partition run's results are
  encoded on the local disk first, then each is uploaded whole (a PUT replaces an object
  whole: a reader sees the old object or the new one), and ``_SUCCESS`` is removed before the
  first upload and written after the last, naming the results (``publish_to_store``). So a
  reader that finds ``_SUCCESS`` before and after reading has read one run's complete results;
  two runs publishing into one prefix at once are not kept apart. A partitioned run publishes
  in the same order (``publish_objects``) from a staging prefix (tasks.parquet.publish.store_staging).
- What a killed run left (temporary files, staging folders or prefixes of dead drivers of
  this host) is removed by the next run that publishes there (``remove_stale_staging``,
  ``remove_stale_store_staging``, and tasks.parquet.write.result_files.remove_stale_temporaries).
Errors are tasks.errors.OutputError naming the path.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tasks import stopping
from tasks.errors import OutputError
from tasks.parquet.store import locations
from tasks.parquet.store.filesystem import Filesystem, StorePath, local, reason, resolve
from tasks.parquet.publish.output_paths import is_result_dataset, prepare_output_dir, remove_path
from tasks.parquet.write.results import (
    BFS_RESULT_NAME, COMPRESSIONS, DEFAULT_COMPRESSION, RESULT_KEY, RESULT_PART, SOURCE_SET_FOLDER, result_name,
)
from tasks.parquet.write.result_files import left_by_dead_process, process_marker, remove_stale_temporaries, write_many, write_temporary

STAGING_SUFFIX = ".partial"
SUCCESS_MARKER = "_SUCCESS"  # in a store: written last, naming the results (publish_to_store)
STAGING_GLOB = f".partitioned~*~*~*{STAGING_SUFFIX}"
STAGING_NAME = re.compile(r"\.partitioned~[^~/]+~\d+~[^~/]+" + re.escape(STAGING_SUFFIX))


def publishing(output: str | os.PathLike):
    """A context in which no other run publishes into ``output`` (its filesystem's lock; where
    the file system has no such lock, some network mounts, runs publish as they come)."""
    return local().lock(output)


def publish_results(tables: dict[str | os.PathLike, pa.Table], output: str | os.PathLike,
                    compression: str = DEFAULT_COMPRESSION, check=None) -> tuple[list[Path], list[Path]]:
    """A one-partition run's results (target path -> table, each under ``output``): written at
    once (write_many), then, when they include BFS results, the BFS results of an earlier run
    that they do not replace are removed (remove_earlier_bfs_results), all while no other run
    publishes into ``output``; ``check()``, called just before the first file is renamed into
    place, may still refuse (raise). Returns the files written and those removed. A partitioned run
    killed before it could clean up left its staging folder here: it goes too. An ``output`` in
    a store is published by publish_to_store."""
    if locations.is_store(output):
        return publish_to_store(tables, output, compression, check)
    removed: list[Path] = []
    if os.path.isdir(output):
        remove_stale_staging(Path(output))

    def remove_earlier(written: list[Path]) -> None:
        if any(result_name(t) == BFS_RESULT_NAME for t in written):
            removed.extend(remove_earlier_bfs_results(output, [os.path.abspath(p) for p in written]))

    return write_many(tables, compression, lock=output, check=check, then=remove_earlier), removed


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
        if files and all(result_in_footer(f) == BFS_RESULT_NAME for f in files):
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


def result_in_footer(path: Path | StorePath, fs: Filesystem | None = None) -> str | None:
    """The result a Parquet file names in its footer (RESULT_KEY); None for any other file."""
    fs = fs or local()
    try:
        metadata = pq.read_metadata(fs.arrow_path(path), filesystem=fs.arrow).metadata or {}
    except (pa.ArrowException, OSError):
        return None
    return metadata[RESULT_KEY].decode(errors="replace") if RESULT_KEY in metadata else None


def publish_to_store(tables: dict[str, pa.Table], output: str, compression: str = DEFAULT_COMPRESSION,
                     check=None) -> tuple[list[StorePath], list[StorePath]]:
    """A one-partition run's results (target URI -> table, each under the store's ``output``
    prefix): encoded on the local disk at once, then, ``check()`` passed, ``_SUCCESS`` removed,
    each uploaded whole (an earlier partitioned run's parts at its path removed first), the
    BFS results of an earlier run that they do not replace removed, and ``_SUCCESS`` written
    naming them. A partitioned run's staging prefix left by a dead driver of this host goes
    too. Returns the objects written and those removed."""
    if compression not in COMPRESSIONS:
        raise OutputError(f"unknown compression {compression!r} (choose from {', '.join(COMPRESSIONS)})")
    fs, root = resolve(output, OutputError)
    targets = [resolve(t, OutputError)[1] for t in tables]
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix=".graph-results-") as scratch:
        encoded = []
        for i, (target, table) in enumerate(zip(targets, tables.values())):
            here = Path(scratch) / str(i) / target.name  # named as the result: its footer says which
            here.parent.mkdir()
            try:
                encoded.append(write_temporary(table, here, compression, threads=max(1, cores // len(targets))))
            except OSError as exc:
                raise OutputError(f"{target}: cannot write results ({exc.strerror or exc})") from None
        stopping.check(f"publishing {', '.join(map(str, targets))}")
        if check is not None:
            check()
        remove_stale_store_staging(fs, root)

        def upload(target: StorePath, i: int) -> None:
            clear_result_path(fs, target, "file")
            pafs.copy_files(str(encoded[i]), target.key, source_filesystem=local().arrow,
                            destination_filesystem=fs.arrow)

        removed = publish_objects(fs, root, targets, upload)
    return targets, removed


def publish_objects(fs: Filesystem, root: StorePath, targets: list[StorePath], place) -> list[StorePath]:
    """The store's order of publishing (docs/object-storage.md): ``_SUCCESS`` removed,
    ``place(target, i)`` for each result in turn, the BFS results of an earlier run that these
    do not replace removed, and ``_SUCCESS`` written naming the results (one per line, relative
    to ``root``). Returns the results removed; a store's error is an OutputError naming what was
    being written."""
    marker = root / SUCCESS_MARKER
    target = marker
    try:
        if fs.exists(marker):
            fs.arrow.delete_file(marker.key)
        for i, target in enumerate(targets):
            place(target, i)
        removed = remove_earlier_bfs_objects(fs, root, targets) if any(
            result_name(t) == BFS_RESULT_NAME for t in targets) else []
        target = marker
        with fs.arrow.open_output_stream(marker.key) as out:
            out.write("".join(f"{t.relative_to(root)}\n" for t in targets).encode())
    except OSError as exc:
        raise OutputError(f"{target}: cannot write results ({reason(exc)})") from None
    return removed


def result_objects(fs: Filesystem, path: StorePath) -> tuple[bool, list[StorePath]]:
    """What is at a result's path in a store: (whether an object of that name is there, the
    part objects below it as a partitioned run's ``dataset`` layout leaves them). A store may
    hold both, ``a`` and ``a/part-00000.parquet`` being two unrelated keys."""
    found = fs.arrow.get_file_info(pafs.FileSelector(path.key, allow_not_found=True))
    parts = sorted(path / info.base_name for info in found
                   if info.type == pafs.FileType.File and RESULT_PART.fullmatch(info.base_name))
    return fs.arrow.get_file_info(path.key).type == pafs.FileType.File, parts


def clear_result_path(fs: Filesystem, target: StorePath, layout: str) -> None:
    """What an earlier run left at a result's path in the other layout, deleted just before this
    run's result is placed there: the parts below it before an object (``file``), the object
    before parts (``dataset``). In a store ``a`` and ``a/part-00000.parquet`` are unrelated keys
    that would both stay, and a listing would show the result twice (a file and a folder).
    Deleting a key makes pyarrow keep its folder as an empty marker object where nothing else
    is left in it, so a prefix holding only parts is deleted whole (delete_dir)."""
    whole, parts = result_objects(fs, target)
    if layout == "file" and parts:
        below = fs.arrow.get_file_info(pafs.FileSelector(target.key, recursive=True))
        if len(below) == len(parts):
            fs.arrow.delete_dir(target.key)
        else:  # something of the user's below it too: only the parts go
            for part in parts:
                fs.arrow.delete_file(part.key)
    elif layout == "dataset" and whole:
        fs.arrow.delete_file(target.key)


def remove_earlier_bfs_objects(fs: Filesystem, root: StorePath, written: list[StorePath]) -> list[StorePath]:
    """remove_earlier_bfs_results in a store: OUTPUT/bfs_distances.parquet and
    OUTPUT/source-set-K/bfs_distances.parquet that this run did not write, an object or a
    partitioned run's parts, known by their footers."""
    names = fs.listdir(root)
    found = [root / BFS_RESULT_NAME] if BFS_RESULT_NAME in names else []
    found += [root / n / BFS_RESULT_NAME for n in sorted(names) if SOURCE_SET_FOLDER.fullmatch(n)]
    removed = []
    for path in found:
        if path in written:
            continue
        whole, parts = result_objects(fs, path)
        objects = ([path] if whole else []) + parts
        if objects and all(result_in_footer(o, fs) == BFS_RESULT_NAME for o in objects):
            if whole:
                fs.arrow.delete_file(path.key)
            if parts:
                clear_result_path(fs, path, "file")
            removed.append(path)
            folder = path.parent
            if folder != root and not fs.arrow.get_file_info(pafs.FileSelector(folder.key, recursive=True)):
                fs.arrow.delete_dir(folder.key)  # source-set-K/ kept by pyarrow as an empty marker
    return removed


def staging_name(token: str) -> str:
    """The staging folder of a partitioned run: it names the driver, so a folder whose driver is
    gone can be told from one a live run is still filling."""
    return f".partitioned~{process_marker()}~{token}{STAGING_SUFFIX}"


def remove_staging(staging: Path) -> None:
    """A staging folder removed with all it holds. Ranks that still run when the driver gives
    the run up cannot make it again (tasks.parquet.write.result_files.write_parts), but one may be creating a
    file in it while it is removed, which leaves that folder behind: removed until it is gone."""
    for _ in range(50):
        shutil.rmtree(staging, ignore_errors=True)
        if not os.path.lexists(staging):
            return
        time.sleep(0.02)


def remove_stale_staging(output: Path, ending: int | None = None) -> list[Path]:
    """Delete staging directories in ``output`` left by dead drivers of this host (and by
    process ``ending``, which is about to exit)."""
    removed = []
    for path in Path(output).glob(STAGING_GLOB):
        if left_by_dead_process(path.name, ending):
            remove_staging(path)
            removed.append(path)
    return removed


def remove_store_staging(fs: Filesystem, staging: StorePath) -> None:
    """A staging prefix in a store deleted with every object below it, its folder marker too
    (pyarrow's delete_dir; one of the output prefix itself is kept where nothing else is left
    in it)."""
    try:
        fs.arrow.delete_dir(staging.key)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise OutputError(f"{staging}: cannot remove the run's staging objects ({reason(exc)})") from None


def remove_stale_store_staging(fs: Filesystem, output: StorePath, ending: int | None = None) -> list[StorePath]:
    """remove_stale_staging in a store: the staging prefixes below ``output`` of dead drivers
    of this host (and of process ``ending``), by the name a staging folder has."""
    removed = []
    for name in fs.listdir(output) if fs.is_dir(output) else []:
        if STAGING_NAME.fullmatch(name) and left_by_dead_process(name, ending):
            remove_store_staging(fs, output / name)
            removed.append(output / name)
    return removed


def publish(staging: Path, output: Path, results: list[str]) -> list[str]:
    """Move each staged result to the same place under ``output``, replacing what is there: all
    of them, or none. Every folder is checked before the first move (one that cannot be written
    is the usual failure); a move that fails anyway puts the results already moved back."""
    fs = local()
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
            elif fs.exchange(new, target):
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
    fs = local()
    undone = True
    for kept, target, how in reversed(moved):
        try:
            if how == "added":
                remove_path(target)
            elif how == "exchanged":
                undone = fs.exchange(kept, target) and undone
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
