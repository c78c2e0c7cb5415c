"""The one filesystem interface of the Parquet layer: every file the layer reads, lists or
writes goes through the ``Filesystem`` that ``resolve`` returns for a location (a local path,
a ``file://`` URI, or a store's URI: tasks.parquet.store.locations).

A ``Filesystem`` wraps a pyarrow ``FileSystem`` (``arrow``: Parquet reads go through
``pq.ParquetFile(arrow_path(p), filesystem=arrow)``, listings through ``FileSelector``) and
says what it can do beyond pyarrow's interface, each as an explicit capability:
- ``read_ranges(path, ranges, out)``: byte ranges of a file into one buffer (the page reader's
  column chunks): parallel preads on the local disk, ranged reads from a store;
- ``entry(path)`` / ``listdir(folder)``: what a path is (a folder, a regular file, or something
  else such as a FIFO) and the names in a folder, for dataset discovery (a store's folder is a
  key prefix);
- ``identity(path)``: what tells one version of a file from another, checked while the rows
  planned from its footer are read (the local disk: inode, size, mtime; a store: size, mtime);
- ``lock(folder)``: an exclusive lock that runs publishing into one folder take in turn
  (``locks``; a store has none: the block runs unlocked);
- ``exchange(a, b)``: an atomic swap of two paths (``exchanges``; a store has none);
- ``umask()``: the permission bits new local files get.
``LocalFilesystem`` is the local disk (all of them); ``ObjectStore`` is S3, GCS, Azure or HDFS
through pyarrow (credentials and endpoints the store's standard way: for S3 the AWS_*
environment variables, AWS_ENDPOINT_URL included, ~/.aws files, instance roles), or any other
scheme an fsspec filesystem serves, wrapped by pyarrow's ``FSSpecHandler`` (credentials as that
filesystem takes them; no buckets). A path in a store is a ``StorePath``: its text is the URI,
so every message names what the user gave.

Errors: discovery's questions raise tasks.errors.InputError naming the path; ``reason(exc)``
gives an OSError's text as the operating system says it, whichever layer raised it, and a
store's error as its first line.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import re
import stat
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.fs as pafs

from tasks.errors import InputError, OutputError
from tasks.parquet.store import locations

PREAD_PIECE = 16 << 20  # the local disk's parallel reads: bytes per pread at most


def reason(exc: OSError) -> str:
    """An OSError's text as the operating system words it ("No such file or directory"):
    pyarrow's own errors carry the errno with a longer message of their own; a store's error
    (no errno) is its first line, without the request id."""
    if exc.errno:
        return os.strerror(exc.errno)
    text = (exc.strerror or str(exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return re.sub(r"\s*\(Request ID: [^)]*\)", "", text)


@dataclass(frozen=True)
class Entry:
    """What discovery needs to know of one path: ``kind`` is "directory", "file" (a regular
    file) or what else it is ("a FIFO (named pipe)", ...); ``size`` in bytes; ``key`` tells
    two paths to one object apart from two objects (a folder or file reached by two links)."""

    path: Path | StorePath
    kind: str
    size: int
    key: object


_OTHER_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket",
                stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class StorePath:
    """A path in a store: ``uri`` as the user gives it (s3://bucket/key) and ``key``, the path
    pyarrow's filesystem takes (bucket/key). Joined with ``/``; ``name``, ``parent``, ``parts``
    and ``relative_to`` as pathlib's, over the key."""

    __slots__ = ("uri", "key")

    def __init__(self, uri: str, key: str):
        self.uri, self.key = uri.rstrip("/"), key.rstrip("/")

    def __truediv__(self, name: str) -> StorePath:
        return StorePath(f"{self.uri}/{name}", f"{self.key}/{name}")

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"StorePath({self.uri!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, StorePath) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(self.uri)

    def __lt__(self, other: StorePath) -> bool:
        return self.uri < other.uri

    @property
    def name(self) -> str:
        return PurePosixPath(self.key).name

    @property
    def parent(self) -> StorePath:
        uri, key = self.uri.rsplit("/", 1)[0], str(PurePosixPath(self.key).parent)
        return StorePath(uri, key) if "/" in self.key else self

    @property
    def parts(self) -> tuple[str, ...]:
        return PurePosixPath(self.key).parts

    @property
    def bucket(self) -> str:
        return self.parts[0]

    def relative_to(self, other: StorePath) -> PurePosixPath:
        return PurePosixPath(self.key).relative_to(other.key)


class Filesystem:
    """What every filesystem of the layer offers; this base holds a store's answers (no lock,
    no atomic exchange; identity by size and modification time)."""

    arrow: pafs.FileSystem
    locks = False
    exchanges = False

    def arrow_path(self, path) -> str:
        """``path`` as ``arrow`` takes it."""
        return path.key if isinstance(path, StorePath) else str(path)

    def lock(self, folder):
        return nullcontext()

    def exchange(self, a, b) -> bool:
        return False

    def read_ranges(self, path, ranges: list[tuple[int, int, int]], out) -> tuple[int, list[int]]:
        """Byte ranges of one file into a buffer: each ``(offset, size, at)`` of ``ranges``
        read into ``out[at:at + size]`` (``out``: a writable contiguous byte buffer, e.g. a
        pinned host array). Returns the file's size and the bytes each range got (fewer than
        ``size`` where the file ends first). A store: one ranged read per range."""
        view = memoryview(out).cast("B")
        with self.arrow.open_input_file(self.arrow_path(path)) as source:
            got = []
            for offset, size, at in ranges:
                data = source.read_at(size, offset) if size else b""
                view[at:at + len(data)] = data
                got.append(len(data))
            return source.size(), got


class LocalFilesystem(Filesystem):
    """The local disk (and mounts): pyarrow's LocalFileSystem for reads, the operating system
    for what pyarrow does not show (links, FIFOs, inodes) and for the publishing capabilities."""

    arrow = pafs.LocalFileSystem()
    locks = True  # flock on a folder
    exchanges = True  # renameat2 RENAME_EXCHANGE where the file system offers it (exchange says)

    def __reduce__(self):  # one instance per process: ranks receive it pickled
        return (local, ())

    def entry(self, path: Path) -> Entry:
        """stat() through links, without opening: a FIFO or a device is found before any read
        blocks. Raises InputError for a missing path, a dangling link or an unreadable one."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            if os.path.islink(path):
                raise InputError(f"{path}: dangling symbolic link (to {os.readlink(path)})") from None
            raise InputError(f"{path}: input not found") from None
        except OSError as exc:  # a link loop, a folder on the way that may not be entered
            raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
        if stat.S_ISDIR(st.st_mode):
            kind = "directory"
        elif stat.S_ISREG(st.st_mode):
            kind = "file"
        else:
            kind = _OTHER_KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        return Entry(Path(path), kind, st.st_size, (st.st_dev, st.st_ino))

    def listdir(self, folder: Path) -> list[str]:
        try:
            return os.listdir(folder)
        except OSError as exc:
            raise InputError(f"{folder}: cannot list folder ({exc.strerror})") from None

    def is_dir(self, path: Path) -> bool:
        return os.path.isdir(path)

    def exists(self, path: Path) -> bool:
        return os.path.exists(path)

    def read_ranges(self, path: Path, ranges: list[tuple[int, int, int]], out,
                    threads: int = 16) -> tuple[int, list[int]]:
        """``Filesystem.read_ranges`` by ``threads`` parallel preads straight into ``out`` (a
        pinned buffer on a GPU: no copy between the read and the upload; 16 threads of pread
        move ~37 GB/s from the page cache of an H200 host, one ~5). Ranges are split into
        pieces of at most 16 MiB, so a few large ones still spread over the threads."""
        view = memoryview(out).cast("B")
        pieces = [(k, at + skip, offset + skip, min(PREAD_PIECE, size - skip))
                  for k, (offset, size, at) in enumerate(ranges) for skip in range(0, size, PREAD_PIECE)]
        got = [0] * len(ranges)
        fd = os.open(path, os.O_RDONLY)
        try:
            def read(piece):
                k, at, offset, size = piece
                return k, os.preadv(fd, [view[at:at + size]], offset)

            with ThreadPoolExecutor(max_workers=max(1, min(threads, len(pieces)))) as pool:
                for k, n in pool.map(read, pieces):
                    got[k] += n
            return os.fstat(fd).st_size, got
        finally:
            os.close(fd)

    def identity(self, path: Path) -> tuple | None:
        """inode, size, mtime (None: gone). Not the device: a partitioned run's ranks may read a
        network mount that each host numbers its own way."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
        return st.st_ino, st.st_size, st.st_mtime_ns

    @contextmanager
    def lock(self, folder: str | os.PathLike):
        """An exclusive lock on ``folder`` for the block (flock on the folder itself, so nothing is
        added to it; the kernel releases it when the process ends, however it ends). Where the
        file system has no such lock (some network mounts) the block runs unlocked."""
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise OutputError(f"{folder}: cannot open output directory ({exc.strerror})") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                pass
            yield
        finally:
            os.close(fd)  # releases the lock

    def exchange(self, a: Path, b: Path) -> bool:
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

    def umask(self) -> int:
        """The process's umask, read from /proc where Linux shows it: reading it with os.umask
        means setting it, which races with other threads creating files."""
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


def _denied(exc: OSError) -> str:
    text = str(exc)
    if "ACCESS_DENIED" in text or "INVALID_ACCESS_KEY" in text or "SIGNATURE_DOES_NOT_MATCH" in text:
        return "; the store refused the credentials: check them (for S3: AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws)"
    return ""


class ObjectStore(Filesystem):
    """A store reached through pyarrow (S3, GCS, Azure, HDFS, or an fsspec filesystem): folders
    are key prefixes, a write replaces one object whole, and there is no rename, lock or atomic
    exchange. ``buckets``: the first part of a key names a bucket, whose absence is told apart
    from a missing key (pyarrow's object stores; not fsspec's filesystems)."""

    def __init__(self, scheme: str, arrow: pafs.FileSystem, buckets: bool = True):
        self.scheme, self.arrow, self.buckets = scheme, arrow, buckets

    def _info(self, path: StorePath, error=InputError) -> pafs.FileInfo:
        try:
            return self.arrow.get_file_info(path.key)
        except OSError as exc:
            raise error(f"{path}: cannot be read ({reason(exc)}){_denied(exc)}") from None

    def entry(self, path: StorePath) -> Entry:
        info = self._info(path)
        if info.type == pafs.FileType.NotFound:
            if self.buckets and len(path.parts) > 1 and self._info(StorePath(f"{self.scheme}://{path.bucket}", path.bucket)).type == pafs.FileType.NotFound:
                raise InputError(f"{path}: input not found (bucket {path.bucket!r} does not exist)")
            raise InputError(f"{path}: input not found")
        kind = {pafs.FileType.Directory: "directory", pafs.FileType.File: "file"}.get(info.type, "not a regular file")
        return Entry(path, kind, info.size or 0, path.key)

    def listdir(self, folder: StorePath) -> list[str]:
        try:
            found = self.arrow.get_file_info(pafs.FileSelector(folder.key, allow_not_found=True))
        except OSError as exc:
            raise InputError(f"{folder}: cannot list folder ({reason(exc)}){_denied(exc)}") from None
        return [PurePosixPath(info.path).name for info in found]

    def is_dir(self, path: StorePath) -> bool:
        return self._info(path).type == pafs.FileType.Directory

    def exists(self, path: StorePath) -> bool:
        return self._info(path).type != pafs.FileType.NotFound

    def identity(self, path: StorePath) -> tuple | None:
        """size and modification time (None: gone): an object replaced by a PUT of the same
        size within the store's clock resolution is not told apart."""
        info = self._info(path)
        if info.type == pafs.FileType.NotFound:
            return None
        return info.size, info.mtime_ns


_LOCAL = LocalFilesystem()


def local() -> LocalFilesystem:
    """The local disk's filesystem (one per process)."""
    return _LOCAL


def resolve(location, error=InputError) -> tuple[Filesystem, Path | StorePath]:
    """The filesystem that holds ``location`` (a path, a file:// URI or a store's URI) and the
    path within it. An unknown scheme, or a store that cannot be reached, raises ``error``
    (InputError for an input, OutputError for an output) in one line."""
    if isinstance(location, StorePath):
        location = location.uri
    try:
        found = locations.check_scheme(location)
    except ValueError as exc:
        raise error(str(exc)) from None
    if found is None or found == "file":
        return _LOCAL, Path(locations.local_path(location))
    uri = str(location).rstrip("/")
    if found not in locations.ARROW_SCHEMES:
        return _fsspec_store(found, uri, error)
    # made anew each time: credentials and endpoints are the environment's when asked (a served
    # flow lives for days); a run resolves a few locations, and its reads share the plan's
    try:
        arrow, key = pafs.FileSystem.from_uri(uri)
    except (OSError, pa.ArrowException) as exc:
        raise error(f"{location}: cannot reach the store ({_first_line(exc)})") from None
    return ObjectStore(found, arrow), StorePath(uri, key)


def _fsspec_store(scheme: str, uri: str, error) -> tuple[ObjectStore, StorePath]:
    """A scheme pyarrow.fs does not serve, through the fsspec filesystem registered for it."""
    import fsspec

    try:
        fs, key = fsspec.core.url_to_fs(uri)
    except ImportError as exc:
        raise error(f"{uri}: the {scheme}:// filesystem needs a package that is not installed "
                    f"({_first_line(exc)})") from None
    except (OSError, ValueError) as exc:
        raise error(f"{uri}: cannot reach the store ({_first_line(exc)})") from None
    return ObjectStore(scheme, pafs.PyFileSystem(pafs.FSSpecHandler(fs)), buckets=False), StorePath(uri, key)


def _first_line(exc: Exception) -> str:
    return reason(exc) if isinstance(exc, OSError) else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
