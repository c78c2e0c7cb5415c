"""One Parquet file from several, without decoding or re-encoding a page.

A Parquet file is ``PAR1``, the row groups' pages, a footer (a Thrift FileMetaData, compact
protocol: kernels.parquet.thrift), the footer's length and ``PAR1``. Pages hold no file positions; only the footer does.
So files that share a schema concatenate by copying each one's pages as they are and writing one
footer: their row groups in order, each position moved by where that file's pages now start.

Two uses: a Parquet writer encodes on one core, so a large table is encoded in row-range pieces
on all cores and the pieces concatenated (`write_table_parallel`); and a partitioned run's
single-file result is its ranks' part files concatenated, a copy rather than a second decode and
encode: local files by the kernel's copy (`concatenate_files`), objects in a store through a
pyarrow FileSystem (`join_footers`, then `write_joined`: footers and pages fetched by ranged
reads, the result written as one stream, so one upload).

Pieces must not carry page indexes or bloom filters (pyarrow writes neither unless asked): those
live among the pages and hold file positions of their own; nor pages kept in other files.
"""
from __future__ import annotations

import errno
import os
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kernels.parquet.format import ColumnChunkField, ColumnMetaDataField, FileMetaDataField, RowGroupField
from kernels.parquet.thrift import LIST, STRUCT, ThriftError, decode_struct, encode_struct, field

MAGIC = b"PAR1"

# FileMetaData's required fields: a footer without them is not Parquet metadata
_META_REQUIRED = {FileMetaDataField.version, FileMetaDataField.schema, FileMetaDataField.num_rows,
                  FileMetaDataField.row_groups}
# Fields of a plaintext footer of an encrypted file
_META_ENCRYPTION = (FileMetaDataField.encryption_algorithm, FileMetaDataField.footer_signing_key_metadata)
# A chunk's page index positions, which point among the pages
_CHUNK_PAGE_INDEX = (ColumnChunkField.offset_index_offset, ColumnChunkField.column_index_offset)
# ColumnMetaData's page positions, each moved with its file's pages
_CHUNK_POSITIONS = (ColumnMetaDataField.data_page_offset, ColumnMetaDataField.index_page_offset,
                    ColumnMetaDataField.dictionary_page_offset)


class ParquetConcatError(ValueError):
    """The files cannot be concatenated as they are (schemas differ, page indexes, encryption)."""


# --- concatenation --------------------------------------------------------------------------

def _footer_of(read_at, size: int, name: str) -> tuple[list, int]:
    """(decoded footer, the length of the pages before it) of a file of ``size`` bytes, read
    through ``read_at(offset, count)``."""
    tail = read_at(size - 8, 8) if size >= 12 else b""
    if tail[4:] != MAGIC or read_at(0, 4) != MAGIC:
        raise ParquetConcatError(f"{name}: not a plain Parquet file (encrypted, or not Parquet)")
    length = struct.unpack("<I", tail[:4])[0]
    if length + 12 > size:
        raise ParquetConcatError(f"{name}: its footer is longer than the file")
    try:
        meta = decode_struct(read_at(size - 8 - length, length))
    except (ThriftError, IndexError):
        meta = []
    if not _META_REQUIRED <= {entry[0] for entry in meta}:
        raise ParquetConcatError(f"{name}: its footer is not valid Parquet metadata")
    if any(field(meta, f) for f in _META_ENCRYPTION):
        raise ParquetConcatError(f"{name}: encrypted footers are not concatenated")
    return meta, size - 8 - length - len(MAGIC)


def _moved_row_groups(meta: list, shift: int, name: str) -> list:
    """The row groups of one piece, their file positions moved by ``shift`` bytes."""
    groups = field(meta, FileMetaDataField.row_groups)
    for group in groups[2][1] if groups else []:
        offset = field(group, RowGroupField.file_offset)
        if offset and offset[2]:
            offset[2] += shift
        for chunk in field(group, RowGroupField.columns)[2][1]:
            if any(field(chunk, f) for f in _CHUNK_PAGE_INDEX):
                raise ParquetConcatError(f"{name}: has page indexes, which hold file positions")
            if (field(chunk, ColumnChunkField.file_path) or [0, 0, b""])[2]:
                raise ParquetConcatError(f"{name}: keeps pages in another file")
            offset = field(chunk, ColumnChunkField.file_offset)
            if offset and offset[2]:  # deprecated; pyarrow writes 0, meaning none
                offset[2] += shift
            column = field(chunk, ColumnChunkField.meta_data)[2]
            if field(column, ColumnMetaDataField.bloom_filter_offset):
                raise ParquetConcatError(f"{name}: has bloom filters, which hold file positions")
            for fid in _CHUNK_POSITIONS:
                position = field(column, fid)
                if position and position[2]:  # a page is never at 0 (the magic is); 0 means none
                    position[2] += shift
    return groups[2][1] if groups else []


def _joined_footer(footers: list[list], bodies: list[int], names: list[str]) -> tuple[bytes, list[int]]:
    """The concatenated file's footer, and where each piece's pages start in it, given each
    piece's decoded footer and page bytes (its length less magic and footer)."""
    def described(meta, fid) -> bytes:  # a field as bytes, to compare files by (an empty struct if absent)
        entry = field(meta, fid)
        return encode_struct([entry] if entry else [])

    first = footers[0]
    starts, position, groups, rows = [], len(MAGIC), [], 0
    for meta, body, name in zip(footers, bodies, names):
        if any(described(meta, f) != described(first, f)
               for f in (FileMetaDataField.schema, FileMetaDataField.key_value_metadata)):
            raise ParquetConcatError(f"{name}: its schema differs from {names[0]}'s")
        if described(meta, FileMetaDataField.created_by) != described(first, FileMetaDataField.created_by):
            # readers work around known bugs of a writer by its version: one file, one writer
            raise ParquetConcatError(f"{name}: written by another writer than {names[0]}")
        starts.append(position)
        try:
            groups += _moved_row_groups(meta, position - len(MAGIC), name)
            rows += field(meta, FileMetaDataField.num_rows)[2]
        except (TypeError, IndexError, KeyError):  # a required field missing or of another type
            raise ParquetConcatError(f"{name}: its footer is not valid Parquet metadata") from None
        position += body
    for ordinal, group in enumerate(groups):
        entry = field(group, RowGroupField.ordinal)
        if entry and ordinal < 2**15:
            entry[2] = ordinal
        elif entry:  # an i16: past 32767 it would wrap, so the (optional) field goes
            group.remove(entry)
    joined = [list(entry) for entry in first]
    field(joined, FileMetaDataField.num_rows)[2] = rows
    listed = field(joined, FileMetaDataField.row_groups)
    if listed:
        listed[2] = (STRUCT, groups)
    else:
        joined.append([FileMetaDataField.row_groups, LIST, (STRUCT, groups)])
        joined.sort(key=lambda entry: entry[0])
    return encode_struct(joined), starts


def _finish(fd: int, footer: bytes, at: int) -> None:
    os.pwrite(fd, footer + struct.pack("<I", len(footer)) + MAGIC, at)
    os.pwrite(fd, MAGIC, 0)


def concatenate_files(parts: list[str | os.PathLike], target: str | os.PathLike, threads: int = 1) -> None:
    """Write ``target``: the rows of ``parts`` in order, their pages copied by the kernel
    (copy_file_range where the system has it), so nothing is decoded. Does not fsync."""
    names = [str(p) for p in parts]
    if os.path.exists(target) and any(os.path.samefile(target, name) for name in names):
        raise ParquetConcatError(f"{target}: is one of the files to concatenate")
    footers, bodies = [], []
    for name in names:
        fd = os.open(name, os.O_RDONLY)
        try:
            meta, body = _footer_of(lambda at, count: os.pread(fd, count, at), os.fstat(fd).st_size, name)
        finally:
            os.close(fd)
        footers.append(meta)
        bodies.append(body)
    footer, starts = _joined_footer(footers, bodies, names)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        def copy(i: int) -> None:
            src = os.open(names[i], os.O_RDONLY)
            try:
                _copy_range(src, fd, bodies[i], len(MAGIC), starts[i], names[i])
            finally:
                os.close(src)

        for_each(copy, range(len(names)), threads)
        _finish(fd, footer, starts[-1] + bodies[-1])
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Joined:
    """What ``write_joined`` writes: the parts (paths in ``filesystem``), each one's page bytes
    (its length less magic and footer) and the joined footer."""

    filesystem: pafs.FileSystem
    parts: list[str]
    bodies: list[int]
    footer: bytes


def join_footers(parts: list[str], filesystem: pafs.FileSystem) -> Joined:
    """The footers of ``parts`` (paths in ``filesystem``, e.g. a store's keys) read by ranged
    reads and joined; raises ParquetConcatError where they cannot be joined. Nothing is written:
    a caller can learn that every result joins before it replaces any."""
    footers, bodies = [], []
    for name in parts:
        with filesystem.open_input_file(name) as source:
            meta, body = _footer_of(lambda at, count: source.read_at(count, at), source.size(), name)
        footers.append(meta)
        bodies.append(body)
    footer, _ = _joined_footer(footers, bodies, list(parts))
    return Joined(filesystem, list(parts), bodies, footer)


def write_joined(joined: Joined, target: str, filesystem: pafs.FileSystem) -> None:
    """``target`` (a path in ``filesystem``) written as one stream: magic, each part's pages in
    order (ranged reads of _COPY_CHUNK bytes), the joined footer. In a store the object appears
    whole when the stream closes. pyarrow's streams have no abort (closing one, as its
    destructor also does, completes the upload), so a write that fails midway deletes the
    object it made: the target is then missing, never partial."""
    out = filesystem.open_output_stream(target)
    try:
        out.write(MAGIC)
        for name, body in zip(joined.parts, joined.bodies):
            with joined.filesystem.open_input_file(name) as source:
                done = 0
                while done < body:
                    chunk = source.read_at(min(_COPY_CHUNK, body - done), len(MAGIC) + done)
                    if not chunk:
                        raise OSError(errno.EIO, f"{name}: shorter than its footer says")
                    out.write(chunk)
                    done += len(chunk)
        out.write(joined.footer + struct.pack("<I", len(joined.footer)) + MAGIC)
    except BaseException:
        try:
            out.close()
            filesystem.delete_file(target)
        except (OSError, pa.ArrowException):
            pass
        raise
    out.close()


# copy_file_range is refused across file systems on older kernels, by some file systems (NFS,
# FUSE) and sandboxes, and missing where the C library lacks it: then the bytes pass through here
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM, errno.EINVAL}
_COPY_CHUNK = 8 << 20


def _copy_range(src: int, dst: int, count: int, src_at: int, dst_at: int, name: str) -> None:
    done = 0
    kernel_copy = getattr(os, "copy_file_range", None)
    while done < count and kernel_copy is not None:
        try:
            moved = kernel_copy(src, dst, count - done, src_at + done, dst_at + done)
        except OSError as exc:
            if exc.errno not in _NO_KERNEL_COPY:
                raise
            kernel_copy = None
            break
        if moved == 0:
            raise OSError(errno.EIO, f"{name}: shorter than its footer says")
        done += moved
    while done < count:
        chunk = os.pread(src, min(_COPY_CHUNK, count - done), src_at + done)
        if not chunk:
            raise OSError(errno.EIO, f"{name}: shorter than its footer says")
        written = 0
        while written < len(chunk):
            written += os.pwrite(dst, memoryview(chunk)[written:], dst_at + done + written)
        done += len(chunk)


def for_each(work, items, threads: int) -> None:
    """work(item) for every item, on up to ``threads`` threads (in this one where 1)."""
    items = list(items)
    if threads <= 1 or len(items) <= 1:
        for item in items:
            work(item)
        return
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        list(pool.map(work, items))


# Row groups: pyarrow's 1 Mi rows, or smaller where that gives every core a piece, down to
# 128 Ki rows (1 MB per 8-byte column: still large reads for any reader; DuckDB writes 120 Ki).
LARGEST_ROW_GROUP = 1024 * 1024
SMALLEST_ROW_GROUP = 128 * 1024


def row_group_rows(rows: int, threads: int) -> int:
    return max(SMALLEST_ROW_GROUP, min(LARGEST_ROW_GROUP, -(-rows // max(threads, 1))))


def write_table_parallel(table: pa.Table, target: str | os.PathLike, threads: int,
                         row_group_size: int | None = None, **options) -> None:
    """pq.write_table(table, target, row_group_size=..., **options) encoded on up to ``threads``
    cores: the table is cut at row-group boundaries into one piece per thread, each piece
    written by its own writer, and the pieces concatenated. The row groups, their
    statistics and pages are those a serial write with the same row groups makes. Without
    ``row_group_size``, row_group_rows chooses. Does not fsync."""
    row_group_size = row_group_size or row_group_rows(table.num_rows, threads)
    groups = -(-table.num_rows // row_group_size)
    pieces = max(1, min(threads, groups))
    if pieces == 1:
        pq.write_table(table, target, row_group_size=row_group_size, **options)
        return
    per_piece = -(-groups // pieces) * row_group_size
    slices = [table.slice(start, per_piece) for start in range(0, table.num_rows, per_piece)]
    # each piece goes to a file of its own beside the target (named after it, so a cleanup of
    # the target's temporaries finds them too), streamed as it encodes, not held in memory
    paths = [f"{target}-{i}.tmp" for i in range(len(slices))]
    try:
        for_each(lambda i: pq.write_table(slices[i], paths[i], row_group_size=row_group_size, **options),
              range(len(slices)), threads)
        concatenate_files(paths, target, threads)
    finally:
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
