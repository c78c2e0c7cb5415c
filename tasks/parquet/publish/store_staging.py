"""A partitioned run's results in a store (S3, GCS, Azure, HDFS, an fsspec filesystem): staged
under a prefix beside them, then published in the store's order (tasks.parquet.publish.publish).

A store has no rename and no folder to remove while a rank still writes into it, so:
- The driver opens the staging prefix ``OUTPUT/.partitioned~<host>~<pid>~<token>.partial/``
  (publish.staging_name, as on the local disk) by writing the object ``OPEN`` in it
  (``open_staging``), and gives it up by deleting ``OPEN`` first, then every object below the
  prefix (``close_staging``).
- A rank encodes its parts on its local disk, then uploads each to the prefix (the layout's
  part paths, write.part_path) and, after each upload, looks for ``OPEN`` again: gone, it
  deletes what it uploaded and fails (``upload_parts``). An upload that completed before the
  driver deleted ``OPEN`` is listed by the driver's deletion after it (stores list what was
  written before, read-after-write); one that completed after is seen by its rank's look. So
  a run given up (a failed rank, a time limit, a cancel) leaves no staging object, even while
  ranks it no longer waits for still upload.
- Once every rank has finished, the driver publishes (``publish_staged``): with the ``file``
  layout each result's parts are joined by streaming (tasks.parquet.write.concat: footers and pages
  by ranged reads from the staging objects, the result written as one upload); with the
  ``dataset`` layout each part is copied within the store (``copy_file``: S3's CopyObject,
  no bytes through this process) to ``OUTPUT/<result>/part-RRRRR.parquet``. Every join is
  checked (its footers read and joined) before anything in OUTPUT is touched.
A driver killed outright leaves its prefix; the next run publishing there from this host
removes it (publish.remove_stale_store_staging). Errors are tasks.errors.OutputError naming the
object.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from tasks.errors import OutputError
from tasks.parquet.write.concat import ParquetConcatError, join_footers, write_joined
from tasks.parquet.store.filesystem import Filesystem, StorePath, local, reason, resolve
from tasks.parquet.publish.output_paths import check_partitioned_output
from tasks.parquet.publish.publish import (
    clear_result_path, publish_objects, remove_stale_store_staging, remove_store_staging, result_objects, staging_name,
)
from tasks.parquet.write.results import DEFAULT_COMPRESSION
from tasks.parquet.write.result_files import part_path, write_many

OPEN = "OPEN"  # in the staging prefix while the run may still publish (its absence: given up)
# S3's CopyObject copies at most 5 GiB in one request (pyarrow's copy_file makes one); a larger
# part is streamed through this process instead
LARGEST_COPY = 5 * 2**30


def open_staging(output: str, token: str) -> tuple[Filesystem, StorePath, StorePath]:
    """The store's filesystem, the output prefix and a new staging prefix below it, opened
    (``OPEN`` written); the staging prefixes of dead drivers of this host are removed first."""
    check_partitioned_output(output)
    fs, out = resolve(output, OutputError)
    remove_stale_store_staging(fs, out)
    staging = out / staging_name(token)
    try:
        with fs.arrow.open_output_stream((staging / OPEN).key) as marker:
            marker.write(b"")
    except OSError as exc:
        raise OutputError(f"{staging}: cannot write results ({reason(exc)})") from None
    return fs, out, staging


def close_staging(fs: Filesystem, staging: StorePath) -> None:
    """The run given up or published: ``OPEN`` deleted, then every object below the prefix."""
    try:
        fs.arrow.delete_file((staging / OPEN).key)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise OutputError(f"{staging}: cannot remove the run's staging objects ({reason(exc)})") from None
    remove_store_staging(fs, staging)


def _is_open(fs: Filesystem, staging: StorePath) -> bool:
    return fs.arrow.get_file_info((staging / OPEN).key).type == pafs.FileType.File


def upload_parts(tables: dict[str, pa.Table], staging_uri: str, rank: int, layout: str,
                 compression: str = DEFAULT_COMPRESSION) -> list[StorePath]:
    """This rank's part of each result (result name -> table): encoded on the local disk at
    once (write.write_many), then uploaded one by one to the staging prefix, each followed by a
    look at ``OPEN``. Fails, leaving none of its objects, once the driver has given the run up."""
    fs, staging = resolve(staging_uri, OutputError)
    gone = OutputError(f"{staging}: the run's staging directory is gone (the run was cancelled)")
    if not _is_open(fs, staging):
        raise gone
    uploaded: list[StorePath] = []
    with tempfile.TemporaryDirectory(prefix=".graph-parts-") as scratch:
        here = {result: part_path(Path(scratch), result, rank, layout) for result in tables}
        write_many({here[result]: t for result, t in tables.items()}, compression, inside=Path(scratch))
        target = staging
        try:
            for result in tables:
                target = part_path(staging, result, rank, layout)
                pafs.copy_files(str(here[result]), target.key, source_filesystem=local().arrow,
                                destination_filesystem=fs.arrow)
                uploaded.append(target)
                if not _is_open(fs, staging):
                    raise gone
        except BaseException as exc:
            if exc is gone or not _is_open(fs, staging):  # given up: the whole prefix goes, markers and all
                remove_store_staging(fs, staging)
            else:  # the driver removes the prefix once it hears of the failure
                for done in uploaded:
                    try:
                        fs.arrow.delete_file(done.key)
                    except OSError:
                        pass
            if isinstance(exc, OSError):
                raise OutputError(f"{target}: cannot write results ({reason(exc)})") from None
            raise
    return uploaded


def _copy(fs: Filesystem, source: StorePath, target: StorePath, size: int) -> None:
    if size <= LARGEST_COPY:
        fs.arrow.copy_file(source.key, target.key)
        return
    out = fs.arrow.open_output_stream(target.key)
    try:
        with fs.arrow.open_input_stream(source.key) as data:
            while chunk := data.read(64 << 20):
                out.write(chunk)
    except BaseException:
        out.close()  # pyarrow's streams cannot abort: the object is completed, then deleted
        fs.arrow.delete_file(target.key)
        raise
    out.close()


def publish_staged(fs: Filesystem, staging: StorePath, output: StorePath, results: list[str], layout: str,
                   size: int, check=None) -> tuple[list[StorePath], list[StorePath]]:
    """Every result of a finished run, from the staging prefix into ``output`` in the store's
    order (publish.publish_objects): each file-layout join checked first, then ``check()`` (it
    may still refuse), ``_SUCCESS`` deleted, each result placed (joined into one object, or its
    parts copied), what an earlier run left at its path in the other layout (or parts of a run
    with more ranks) removed, the earlier BFS results this run does not replace removed, and
    ``_SUCCESS`` written. Returns the results placed and those removed."""
    parts = {result: [part_path(staging, result, rank, layout) for rank in range(size)] for result in results}
    joins, sizes = {}, {}
    target = staging
    try:
        for result, paths in parts.items():
            target = output / result
            if layout == "file":
                joins[result] = join_footers([p.key for p in paths], fs.arrow)
            else:
                sizes[result] = [info.size for info in fs.arrow.get_file_info([p.key for p in paths])]
    except ParquetConcatError as exc:
        raise OutputError(f"{target}: cannot join the parts ({exc})") from None
    except OSError as exc:
        raise OutputError(f"{target}: cannot read the ranks' parts ({reason(exc)})") from None
    if check is not None:
        check()
    targets = [output / result for result in results]

    def place(target: StorePath, i: int) -> None:
        result = results[i]
        clear_result_path(fs, target, layout)
        if layout == "file":
            write_joined(joins[result], target.key, fs.arrow)
            return
        for part, bytes_ in zip(parts[result], sizes[result]):
            _copy(fs, part, target / part.name, bytes_)
        for earlier in result_objects(fs, target)[1]:  # those of an earlier run of more ranks
            if earlier.name not in {p.name for p in parts[result]}:
                fs.arrow.delete_file(earlier.key)

    removed = publish_objects(fs, output, targets, place)
    return targets, removed
