"""Dataset discovery: which files of an input are its Parquet data, and which inputs are refused.

An input is one Parquet file, or a folder holding one dataset, walked as pyarrow.dataset walks
it: every folder (hive partitions `key=value/` included; symlinked folders followed, each folder
and file read once however many links reach it), skipping any path with a component that starts
with `_` or `.` (`_SUCCESS`, `_temporary/`, `_metadata`, `.crc` files, `.ipynb_checkpoints/`).
Nothing that could be data is skipped silently: a dangling link, an unreadable entry, a FIFO or
device, a file named as a part that is not Parquet, and a Parquet file named otherwise (a backup
copy?) are each refused by name. Other files (README.md, notes) are not Parquet, so not data:
they are skipped and listed in the run's log. Table formats whose folders also hold files that
are not current data (Delta Lake, Iceberg, an unfinished Hadoop commit) are refused.

A run walks its input once, for its plan (tasks.parquet.dataset.plan): ``DatasetFiles`` also
keeps the folders entered and those a filter kept out, which the output check asks
(tasks.parquet.publish.output_paths) instead of walking again.

Files are returned in discovery order: sorted by their path components below the input. Every
question about a path goes through the input's filesystem (tasks.parquet.store.filesystem); every
refusal is a tasks.errors.InputError naming the path.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tasks.errors import InputError
from tasks.parquet.store.filesystem import Entry, Filesystem, reason, resolve

PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")
SKIP_PREFIXES = ("_", ".")
MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"


def require_regular_file(entry: Entry) -> None:
    # opening a FIFO blocks until a writer comes, and a blocked read cannot be interrupted;
    # Parquet needs random access anyway (its footer is at the end)
    if entry.kind != "file":
        raise InputError(f"{entry.path}: is {entry.kind}; Parquet is read from regular files only "
                         "(save the stream to a file first)")


def parquet_problem(fs: Filesystem, path: Path, size: int) -> str | None:
    """None when the file starts and ends with Parquet's magic bytes, else what is wrong."""
    try:
        with fs.arrow.open_input_file(fs.arrow_path(path)) as fh:
            head = fh.read_at(4, 0) if size else b""
            tail = fh.read_at(4, max(0, size - 4)) if size else b""
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({reason(exc)})") from None
    if head != MAGIC:
        return "it does not start with Parquet's magic bytes PAR1" if size else "it is empty (0 bytes)"
    if tail == ENCRYPTED_MAGIC:
        return "it is an encrypted Parquet file, which is not supported"
    if size < 12 or tail != MAGIC:
        return "it starts as Parquet but does not end with PAR1: truncated"
    return None


def looks_like_part(name: str) -> bool:
    return name.lower().endswith(PARQUET_SUFFIXES) or name.startswith("part-")


def refuse_table_formats(fs: Filesystem, root: Path, names: set[str]) -> None:
    """Folders whose Parquet files are not all current data: reading every part would mix in
    deleted rows (table formats) or miss some (an unfinished Hadoop commit). Asked of every
    folder of the dataset: a folder of daily Spark outputs holds one write per day."""
    if "_delta_log" in names and fs.is_dir(root / "_delta_log"):
        raise InputError(f"{root}: is a Delta Lake table (_delta_log/); its folder also holds files of "
                         "older versions: export the current version to Parquet first")
    metadata = root / "metadata"
    if "metadata" in names and fs.is_dir(metadata) and any(n.endswith(".metadata.json") for n in _names(fs, metadata)):
        raise InputError(f"{root}: is an Apache Iceberg table (metadata/*.metadata.json); its folders also "
                         "hold files of older snapshots: export the current snapshot to Parquet first")
    if "_temporary" in names and fs.is_dir(root / "_temporary") and not fs.exists(root / "_SUCCESS"):
        raise InputError(f"{root / '_temporary'}: a Spark/Hadoop write that did not finish (no _SUCCESS beside "
                         "it), so parts may be missing: rerun the job, or remove _temporary if the data is complete")


def _names(fs: Filesystem, folder: Path) -> list[str]:
    try:
        return fs.listdir(folder)
    except InputError:  # a folder named metadata that cannot be listed is not a table's
        return []


@dataclass
class DatasetFiles:
    """What one walk of an input found: its data files in discovery order, the files looked at
    and skipped (not Parquet), and the folders entered (the root first; none for a file input)
    and those a filter's partition values kept out, each as reached (links not resolved)."""

    files: list[Path]
    skipped: list[Path]
    folders: list[Path] = field(default_factory=list)
    excluded: list[Path] = field(default_factory=list)


def dataset_files(location: str | os.PathLike, keep_folder=None) -> DatasetFiles:
    """The Parquet files of an input (a file, or a directory holding one dataset) and the files
    looked at and skipped because they are not Parquet. Raises InputError naming the path.
    ``keep_folder(path)``, if given, is asked of every folder below the root before it is
    entered: a folder it refuses (a filter's hive partition) is not listed, nor any file in it."""
    fs, root = resolve(location)
    top = fs.entry(root)
    if top.kind != "directory":
        require_regular_file(top)
        problem = parquet_problem(fs, root, top.size)
        if problem:
            raise InputError(f"{root}: not a readable Parquet file ({problem})")
        return DatasetFiles([root], [])
    files, skipped, entered, excluded = [], [], [], []
    seen: set = set()  # Entry.key: a folder or file reached twice is read once
    folders = [top]
    while folders:
        folder = folders.pop()
        if folder.key in seen:
            continue
        seen.add(folder.key)
        entered.append(folder.path)
        names = fs.listdir(folder.path)
        if {"_delta_log", "metadata", "_temporary"} & set(names):
            refuse_table_formats(fs, folder.path, set(names))
        for name in names:
            if name.startswith(SKIP_PREFIXES):
                continue
            entry = fs.entry(folder.path / name)
            if entry.kind == "directory":
                if keep_folder is None or keep_folder(entry.path):
                    folders.append(entry)
                else:
                    excluded.append(entry.path)
                continue
            require_regular_file(entry)
            if entry.key in seen:
                continue
            seen.add(entry.key)
            problem = parquet_problem(fs, entry.path, entry.size)
            if looks_like_part(name):
                if problem:
                    raise InputError(f"{entry.path}: a part of the dataset that is not readable Parquet ({problem})")
                files.append(entry.path)
            elif problem is None:
                raise InputError(f"{entry.path}: a Parquet file whose name is not *.parquet, *.parq, *.pq or part-*; "
                                 "rename it to read it as data, or start its name with _ to skip it")
            else:
                skipped.append(entry.path)
    if not files and excluded:
        raise InputError(f"filter: kept no files of {root} (its partition values exclude {len(excluded)} "
                         f"folder{'s' if len(excluded) > 1 else ''})")
    if not files:
        listed = ", ".join(str(p.relative_to(root)) for p in sorted(skipped)[:3]) + (", ..." if len(skipped) > 3 else "")
        raise InputError(f"{root}: directory holds no Parquet files (*.parquet, *.parq, *.pq, part-*)"
                         + (f"; not Parquet: {listed}" if skipped else ""))
    order = lambda p: p.relative_to(root).parts  # noqa: E731
    return DatasetFiles(sorted(files, key=order), sorted(skipped, key=order), entered, excluded)
