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
An input may also be a glob pattern (``data/parts/*.parquet``, ``**`` for any folders; a
path that exists is never one): its matches are one dataset by the same rule, each matched
folder walked whole, the files sorted by their path below the pattern's base folder.

A run walks its input once, for its plan (tasks.parquet.dataset.plan): ``DatasetFiles`` also
keeps the folders entered and those a filter kept out, which the output check asks
(tasks.parquet.publish.output_paths) instead of walking again.

Files are returned in discovery order: sorted by their path components below the input. Every
question about a path goes through the input's filesystem (tasks.parquet.store.filesystem); every
refusal is a tasks.errors.InputError naming the path.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

from tasks.errors import InputError
from tasks.parquet.store import locations
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


def dataset_root(location: str | os.PathLike) -> str:
    """The folder or file an input's paths are taken below: the input itself, or for a glob
    pattern (``data/parts/*.parquet``, one that names no existing path) the folder before its
    first wildcard (pattern_base), where hive partition folders are read from."""
    return locations.pattern_base(location) if is_glob(location) else str(location)


def is_glob(location: str | os.PathLike) -> bool:
    """Whether ``location`` is read as a glob pattern: it holds ``*``, ``?`` or ``[`` and names
    no existing path (a file called ``graph[1].parquet`` is that file)."""
    if not locations.is_pattern(location):
        return False
    fs, path = resolve(location)
    return not fs.exists(path)


def dataset_files(location: str | os.PathLike, keep_folder=None) -> DatasetFiles:
    """The Parquet files of an input (a file, a directory holding one dataset, or a glob pattern
    whose matches are one dataset) and the files looked at and skipped because they are not
    Parquet. Raises InputError naming the path. ``keep_folder(path)``, if given, is asked of
    every folder below the root before it is entered: a folder it refuses (a filter's hive
    partition) is not listed, nor any file in it."""
    if is_glob(location):
        return _matched_files(str(location), keep_folder)
    fs, root = resolve(location)
    top = fs.entry(root)
    if top.kind != "directory":
        require_regular_file(top)
        problem = parquet_problem(fs, root, top.size)
        if problem:
            raise InputError(f"{root}: not a readable Parquet file ({problem})")
        return DatasetFiles([root], [])
    walk = _Walk(fs, keep_folder)
    walk.folder(top)
    return walk.found(root, str(root))


class _Walk:
    """One walk of a dataset's folders: the files each rule keeps or skips, read once each."""

    def __init__(self, fs: Filesystem, keep_folder):
        self.fs, self.keep_folder = fs, keep_folder
        self.files, self.skipped, self.entered, self.excluded = [], [], [], []
        self.seen: set = set()  # Entry.key: a folder or file reached twice is read once

    def listed(self, folder: Entry) -> list[str] | None:
        """The names in a folder entered for the first time (None when entered before)."""
        if folder.key in self.seen:
            return None
        self.seen.add(folder.key)
        self.entered.append(folder.path)
        names = self.fs.listdir(folder.path)
        if {"_delta_log", "metadata", "_temporary"} & set(names):
            refuse_table_formats(self.fs, folder.path, set(names))
        return names

    def kept(self, entry: Entry) -> bool:
        """Whether a folder below the root is entered (a filter's partition values may exclude it)."""
        if self.keep_folder is None or self.keep_folder(entry.path):
            return True
        self.excluded.append(entry.path)
        return False

    def folder(self, top: Entry) -> None:
        """Every data file below ``top``, by the dataset rule."""
        folders = [top]
        while folders:
            folder = folders.pop()
            for name in self.listed(folder) or ():
                if name.startswith(SKIP_PREFIXES):
                    continue
                entry = self.fs.entry(folder.path / name)
                if entry.kind == "directory":
                    if self.kept(entry):
                        folders.append(entry)
                    continue
                self.file(entry, name)

    def file(self, entry: Entry, name: str) -> None:
        """A file of the dataset: data where named as a part and Parquet, refused where the two
        disagree, skipped where neither (a README)."""
        require_regular_file(entry)
        if entry.key in self.seen:
            return
        self.seen.add(entry.key)
        problem = parquet_problem(self.fs, entry.path, entry.size)
        if looks_like_part(name):
            if problem:
                raise InputError(f"{entry.path}: a part of the dataset that is not readable Parquet ({problem})")
            self.files.append(entry.path)
        elif problem is None:
            raise InputError(f"{entry.path}: a Parquet file whose name is not *.parquet, *.parq, *.pq or part-*; "
                             "rename it to read it as data, or start its name with _ to skip it")
        else:
            self.skipped.append(entry.path)

    def found(self, root, shown: str) -> DatasetFiles:
        """What the walk found below ``root`` (``shown``: the input as errors name it), sorted."""
        files, skipped, excluded = self.files, self.skipped, self.excluded
        if not files and excluded:
            raise InputError(f"filter: kept no files of {shown} (its partition values exclude {len(excluded)} "
                             f"folder{'s' if len(excluded) > 1 else ''})")
        if not files:
            listed = ", ".join(str(p.relative_to(root)) for p in sorted(skipped)[:3]) + (", ..." if len(skipped) > 3 else "")
            holds = "directory holds" if shown == str(root) else "matches"
            raise InputError(f"{shown}: {holds} no Parquet files (*.parquet, *.parq, *.pq, part-*)"
                             + (f"; not Parquet: {listed}" if skipped else ""))
        order = lambda p: p.relative_to(root).parts  # noqa: E731
        return DatasetFiles(sorted(files, key=order), sorted(skipped, key=order), self.entered, excluded)


def _matched_files(pattern: str, keep_folder) -> DatasetFiles:
    """A glob pattern's matches read as one dataset: the folders below its base (pattern_base)
    whose path may still match are listed (names starting with _ or . skipped, as in a dataset),
    each matching file is taken by the dataset rule, each matching folder is walked whole; ``**``
    matches any folders, none included. No match: InputError "no file matches PATTERN"."""
    base = locations.pattern_base(pattern)
    fs, root = resolve(base)
    wanted = tuple(p for p in pattern[len(base):].split("/") if p)
    try:
        top = fs.entry(root)
    except InputError:
        top = None
    if top is None or top.kind != "directory":
        raise InputError(f"no file matches {pattern}")
    walk, matched = _Walk(fs, keep_folder), 0
    folders = [(top, ())]
    while folders:
        folder, below = folders.pop()
        for name in sorted(walk.listed(folder) or ()):
            parts = below + (name,)
            whole, deeper = _matches(parts, wanted), _may_match_below(parts, wanted)
            if name.startswith(SKIP_PREFIXES) or not (whole or deeper):
                continue
            entry = fs.entry(folder.path / name)
            if entry.kind == "directory":
                if walk.kept(entry):
                    if whole:
                        matched += 1
                        walk.folder(entry)
                    else:
                        folders.append((entry, parts))
            elif whole:
                matched += 1
                walk.file(entry, name)
    if not matched:
        raise InputError(f"no file matches {pattern}")
    return walk.found(root, pattern)


def _matches(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether path components ``parts`` match pattern components (fnmatch each; ``**``: any
    number of components, none included)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_matches(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _matches(parts[1:], pattern[1:])


def _may_match_below(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether some path below the folder ``parts`` could match the pattern."""
    if not pattern:
        return False
    if pattern[0] == "**":
        return True
    if not parts:
        return True
    return fnmatch.fnmatchcase(parts[0], pattern[0]) and _may_match_below(parts[1:], pattern[1:])
