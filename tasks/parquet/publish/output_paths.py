"""Output paths: which result paths may be written, checked before any data is read (against
the files and folders the run's plan walked).

A result may not land where a later run would read it back as input (an output folder inside
the input dataset, unless under a folder the dataset walk skips, such as `_results/`), nor
replace an input file, nor a folder or file of the user's: a result path may hold a result
file or a partitioned run's result folder (``is_result_dataset``: nothing in it but part
files), which any run replaces whole. Results in a store (``check_store_outputs``): the scheme
known, the bucket there, the output not below the input's prefix, and not memory:// for a
partitioned run (``check_partitioned_output``).
Refusals are tasks.errors.OutputError naming the path.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from tasks.errors import InputError, OutputError
from tasks.parquet.store import locations
from tasks.parquet.dataset.discovery import SKIP_PREFIXES, dataset_root
from tasks.parquet.dataset.plan import InputPlan
from tasks.parquet.store.filesystem import LocalFilesystem, StorePath, reason, resolve
from tasks.parquet.write.results import BFS_RESULT_NAME, FOREST_RESULT_NAME, RESULT_PART


def is_result_dataset(path: Path) -> bool:
    """A folder a partitioned run wrote as one result (``--output-layout dataset``): nothing in
    it but its part files. A one-partition run replaces it with a file; any other folder at a
    result's path is the user's and is refused."""
    if path.is_symlink() or not path.is_dir():
        return False
    entries = list(path.iterdir())
    return bool(entries) and all(RESULT_PART.fullmatch(e.name) and e.is_file() and not e.is_symlink()
                                 for e in entries)


def remove_path(path: Path) -> None:
    """A file, link or folder removed (a folder with all it holds)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


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


def walked_paths(plan: InputPlan) -> tuple[set[str], dict[str, Path]]:
    """What the plan's walk of a local input reached, links resolved: the real path of every
    folder a run would enter (those a filter kept out included: a run without it enters them),
    and of every file it looked at (mapped to the path it was reached by). A store's input: none."""
    dataset = plan.dataset
    if dataset is None or not isinstance(plan.footers.filesystem, LocalFilesystem):
        return set(), {}
    walked = {os.path.realpath(f) for f in (*dataset.folders, *dataset.excluded)}
    files = {}
    for f in (*dataset.files, *dataset.skipped):
        files.setdefault(os.path.realpath(f), f)
    return walked, files


def check_output_paths(plan: InputPlan, targets: list[str | os.PathLike], directories: bool = False) -> None:
    """Refuse, before any data is read, result files that could not be written or that a later
    run would read back as input (the input's files and folders as the run's plan walked them):
    an output folder inside the input dataset (unless under a folder the dataset walk skips,
    such as `_results/`), a result path taken by a folder other than a partitioned run's result
    (which any run replaces whole) or, where ``directories`` (a partitioned run, which replaces
    a result path whole), an empty folder; an output folder path taken by a file; a result path
    that is an input file (or holds one), which writing the result would replace. Results in a
    store: see check_store_outputs."""
    input = plan.path
    if any(locations.is_uri(t) for t in map(str, targets)):
        check_store_outputs(input, [str(t) for t in targets], directories)
        return
    walked, files = walked_paths(plan)
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
                hint = ("; an output ending in .parquet names the result file: end it with / to write into "
                        "that folder" if target.is_dir() and target.name not in (BFS_RESULT_NAME, FOREST_RESULT_NAME)
                        else "")
                raise OutputError(f"{target}: output path exists and is not a regular file{hint}")
        # whether a folder may be written is left to the write: with a remote Dask cluster the
        # workers write, and a path missing here may exist there
        existing = out
        while not os.path.lexists(existing) and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise OutputError(f"{existing}: output path exists and is not a directory")


def check_store_outputs(input: str, targets: list[str], directories: bool) -> None:
    """Results in a store: the scheme known and the store reachable, the bucket there, and the
    output not inside the input dataset (a key prefix below the input's, not under a folder the
    dataset walk skips). ``directories``: a partitioned run (check_partitioned_output)."""
    for target in targets:
        if directories:
            check_partitioned_output(target)
        fs, path = resolve(target, OutputError)
        if not isinstance(path, StorePath):
            continue
        try:
            found = fs.arrow.get_file_info(path.bucket if fs.buckets else path.parent.key)
        except OSError as exc:
            raise OutputError(f"{target}: cannot reach the store ({reason(exc)})") from None
        if fs.buckets and found.type.name == "NotFound":
            raise OutputError(f"{target}: bucket {path.bucket!r} does not exist")
        if locations.is_store(input) and locations.scheme(input) == fs.scheme:
            # keys, not URIs: one key has several spellings (memory:///g/edges is memory://g/edges)
            _, source = resolve(dataset_root(input), InputError)  # a glob pattern: the prefix it searches
            inside = path.parent.key + "/"
            prefix = source.key + "/"
            below = inside[len(prefix):].split("/") if inside.startswith(prefix) else None
            if below is not None and not any(part.startswith(SKIP_PREFIXES) for part in below if part):
                raise OutputError(f"{path.parent}: output folder is inside the input dataset {input}, so a later run "
                                  "would read the results as input; write them elsewhere")


def check_partitioned_output(target: str) -> None:
    """memory:// is each process's own memory: a partitioned run's ranks, Dask worker
    processes, would write their parts where the driver never sees them."""
    if locations.scheme(target) == "memory":
        raise OutputError(f"{target}: a partitioned run cannot write to memory:// (each Dask worker process has a "
                          "memory of its own); write to a store or a folder, or run with one partition")


def prepare_output_dir(output: str | os.PathLike) -> Path:
    """The output folder, made where missing; refused where it cannot be written."""
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: output path exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{out}: cannot create output directory ({exc.strerror})") from None
    # (a run publishing into the same output may have removed the folder just made, a
    # source-set-K folder it found empty: the write makes it again, see write.write_temporary)
    if not os.access(out, os.W_OK | os.X_OK) and out.is_dir():
        raise OutputError(f"{out}: output directory is not writable")
    return out
