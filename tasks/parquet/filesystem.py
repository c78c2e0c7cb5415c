"""The one filesystem interface of the Parquet layer: every file the layer reads, lists or
writes goes through a ``Filesystem`` that ``resolve`` returns for a location.

A ``Filesystem`` wraps a pyarrow ``FileSystem`` (``arrow``: Parquet reads go through
``pq.ParquetFile(path, filesystem=arrow)`` and ranged reads through ``open_input_file``) and
says what it can do beyond pyarrow's interface, each as an explicit capability:
- ``entry(path)`` / ``listdir(folder)``: what a path is (a folder, a regular file, or something
  else such as a FIFO) and the names in a folder, for dataset discovery;
- ``identity(path)``: what tells one version of a file from another, checked while the rows
  planned from its footer are read;
- ``lock(folder)``: an exclusive lock that runs publishing into one folder take in turn;
- ``exchange(a, b)``: an atomic swap of two paths;
- ``umask()``: the permission bits new files get.
The local disk (``LocalFilesystem``, the only one so far) has all of them; a store that lacks
one says so (``locks``, ``exchanges`` False) and its callers take the documented fallback.

Errors: discovery's questions raise tasks.errors.InputError naming the path; ``reason(exc)``
gives an OSError's text as the operating system says it, whichever layer raised it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from tasks.errors import InputError, OutputError


def reason(exc: OSError) -> str:
    """An OSError's text as the operating system words it ("No such file or directory"):
    pyarrow's own errors carry the errno with a longer message of their own."""
    if exc.errno:
        return os.strerror(exc.errno)
    return exc.strerror or str(exc)


@dataclass(frozen=True)
class Entry:
    """What discovery needs to know of one path: ``kind`` is "directory", "file" (a regular
    file) or what else it is ("a FIFO (named pipe)", ...); ``size`` in bytes; ``key`` tells
    two paths to one object apart from two objects (a folder or file reached by two links)."""

    path: Path
    kind: str
    size: int
    key: object


_OTHER_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket",
                stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class LocalFilesystem:
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


_LOCAL = LocalFilesystem()


def local() -> LocalFilesystem:
    """The local disk's filesystem (one per process)."""
    return _LOCAL


Filesystem = LocalFilesystem  # the interface every filesystem of the layer offers


def resolve(location: str | os.PathLike) -> tuple[Filesystem, Path]:
    """The filesystem that holds ``location`` and the path within it."""
    return _LOCAL, Path(location)
