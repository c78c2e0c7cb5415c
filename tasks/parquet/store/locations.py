"""Locations: a local path, or a URI of a store (``s3://bucket/key``), as the user gives them.

A location with a scheme (``name://``) is a URI and is never taken for a local folder: it is
not joined to the current folder, and ``join`` adds names with ``/`` (a local path joined by
pathlib would turn ``s3://b`` into ``s3:/b``). ``file://`` URIs are local paths. Schemes known:
file, the stores pyarrow.fs serves (``ARROW_SCHEMES``: s3, gs / gcs, abfs / abfss / az, hdfs /
viewfs), then any scheme one of fsspec's filesystems serves (``fsspec_knows``: memory, ftp,
sftp, http, ... where its package is installed); any other is refused by ``check_scheme`` with
one line.

Imports nothing heavy: the command line checks locations before the rest is imported (fsspec's
registry only for a scheme pyarrow does not serve). The filesystems behind the schemes are
tasks.parquet.store.filesystem's.
"""
from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlparse

ARROW_SCHEMES = ("s3", "gs", "gcs", "abfs", "abfss", "az", "hdfs", "viewfs")
SCHEMES = ("file", *ARROW_SCHEMES)
_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme(location: str | os.PathLike) -> str | None:
    """The URI scheme of ``location`` (lower case), None for a plain path."""
    if location is None or isinstance(location, os.PathLike):
        return None
    found = _URI.match(str(location))
    return found.group(1).lower() if found else None


def is_uri(location: str | os.PathLike) -> bool:
    return scheme(location) is not None


def is_store(location: str | os.PathLike) -> bool:
    """A location in a store (an object store, HDFS, any fsspec filesystem), not the local disk."""
    return scheme(location) not in (None, "file")


def fsspec_knows(name: str) -> bool:
    """Whether one of fsspec's filesystems serves the scheme ``name`` (registered, or known to
    fsspec and importable on demand; its package may still be missing: resolving says so)."""
    try:
        from fsspec.registry import known_implementations, registry
    except ImportError:
        return False
    return name in registry or name in known_implementations


def check_scheme(location: str | os.PathLike) -> str | None:
    """The scheme, checked to be one this software reads and writes; raises ValueError (one
    line) for any other."""
    found = scheme(location)
    if found is not None and found not in SCHEMES and not fsspec_knows(found):
        raise ValueError(f"{location}: unknown storage scheme {found}:// (known: {', '.join(s + '://' for s in SCHEMES)}, "
                         "a scheme of an fsspec filesystem, or a local path)")
    return found


def local_path(location: str | os.PathLike) -> str | os.PathLike:
    """A ``file://`` URI as the local path it names; any other location as it is."""
    if scheme(location) == "file":
        return unquote(urlparse(location).path)
    return location


def join(location: str | os.PathLike, *names: str) -> str:
    """``location`` with ``names`` below it: ``/`` for a URI, os.path.join for a path."""
    if is_uri(location):
        return "/".join([str(location).rstrip("/"), *names])
    return os.path.join(location, *names)


def absolute(location: str | os.PathLike) -> str:
    """A URI as it is; a path made absolute (os.path.abspath)."""
    return str(location) if is_uri(location) else os.path.abspath(location)


GLOB_MAGIC = re.compile(r"[*?[]")


def is_pattern(location: str | os.PathLike) -> bool:
    """Whether ``location`` holds a glob pattern (``*``, ``?``, ``[...]``; ``**`` for any folders)."""
    return GLOB_MAGIC.search(str(location)) is not None


def pattern_base(location: str | os.PathLike) -> str:
    """The part of a glob pattern before its first component with a wildcard: the folder its
    matches are searched below (data/parts for data/parts/*.parquet)."""
    text = str(location)
    scheme_end = text.find("://") + 3 if is_uri(text) else 0
    parts = text[scheme_end:].split("/")
    first = next(i for i, part in enumerate(parts) if GLOB_MAGIC.search(part))
    return text[:scheme_end] + ("/".join(parts[:first]) or ("/" if text[scheme_end:].startswith("/") else "."))

