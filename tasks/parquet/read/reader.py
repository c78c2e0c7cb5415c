"""The reader: rows of a planned edge list (tasks.parquet.dataset.plan), checked, into arrays of the
compute backend (NumPy or CuPy). One interface serves both paths:
- ``read_edges(plan, ...)``: the whole edge list (a one-partition run), as an ``EdgeTable``;
- ``read_share(plan, rank, size)``: global rows [rows * r // P, rows * (r + 1) // P) of a
  partitioned run's rank r of P (``InputPlan.share``), as a ``Share``: the row groups that
  overlap that range, cut to it (a row group on a boundary is decoded by both neighbours).
Both ask a ``ReaderBackend`` for ``Rows`` of the plan; a backend is registered once in
``BACKENDS`` and chosen by name (``reader``, tasks.parameters.READERS):
- "host": ``HostReader`` (tasks.parquet.read.host_reader), pyarrow's decoder on the host's cores;
- "gpu": ``PageReader`` (tasks.parquet.read.page_reader), the page reader on the compute backend's
  arrays (CuPy on a GPU, NumPy elsewhere), column chunks it does not take left to the host
  reader;
- "auto": "gpu" where the compute backend is CuPy and nvCOMP is usable, else "host".
Both backends make the same checks and give the same arrays; the read's ``report`` (encoding
in tasks.parquet.read.host_reader) says which reader decoded each column's chunks, and why any fell
back.

``EdgeTable`` encoding (arrays of the compute backend):
- ``src``, ``dst``: integer arrays of one dtype (the narrowest that holds every file's ids) or,
  for string ids, int32 codes into ``names`` (a pyarrow large_string array over src and dst).
- ``weight``: float32 when every file's weights are float16 or float32, else float64 (integers
  and decimals included), or None; ``rows``: number of input rows; ``path``: input name.
- ``skipped``: files of a dataset directory that were looked at and are not data (not Parquet);
  ``selection``: what a filter kept (tasks.parquet.dataset.selection), None without one.
``Share`` encoding: ``src``/``dst`` the ids in the plan's integer dtype (int64 bit patterns
while uint64 ids sit beside signed ones: ``signs`` then says, per row group, which ids only one
of int64 and uint64 can hold, and the ranks agree on one type), or for string ids int32 codes
into ``names`` (the share's own distinct ids, as an EdgeTable's); ``weight`` as above; the
share's first global row is ``row_offset``.
Rows are the dataset's files in discovery order, each file's rows in order (with a filter, only
the rows it keeps: edge e is the e-th row kept). Every check runs on
one row group of one file at a time (tasks.parquet.read.checks), and an error names that file and
the row within it (counted from 0).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from tasks.errors import InputError
from tasks.parameters import READERS
from tasks.parquet.read.checks import Signs, unify_signs
from tasks.parquet.codec.decompress import nvcomp_usable
from tasks.parquet.read.assembly import ReaderBackend
from tasks.parquet.read.host_reader import HostReader
from tasks.parquet.read.page_reader import PageReader
from tasks.parquet.dataset.plan import InputPlan


@dataclass
class EdgeTable:
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    names: pa.Array | None  # string ids: vertex code -> name
    path: str
    skipped: list[str] = field(default_factory=list)
    selection: dict | None = None  # what a filter kept (tasks.parquet.dataset.selection)
    report: dict = field(default_factory=dict)  # which reader decoded what (tasks.parquet.read.host_reader)

    @property
    def rows(self) -> int:
        return int(self.src.shape[0])


@dataclass
class Share:
    src: object  # arrays of the rank's backend (NumPy or CuPy)
    dst: object
    weight: object | None
    row_offset: int
    signs: list[Signs] = field(default_factory=list)
    names: pa.Array | None = None  # string ids: code -> id (this share's ids only)
    report: dict = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return int(self.src.shape[0])


def read_edges(plan: InputPlan, xp=np, before_reading=None, reader: str = "auto") -> EdgeTable:
    """Read and check the edge list ``plan`` holds (with a filter, the rows it keeps) into
    arrays of the backend ``xp`` (numpy or cupy), row groups decoded in parallel.
    ``before_reading(rows, vertex_bound, weight_dtype)``, if given, is called before any array
    is allocated (a memory check can refuse the input there, from the footers' figures).
    ``reader``: auto, gpu or host (the module's docstring)."""
    backend = reader_backend(resolve_reader(reader, xp))
    footers = plan.footers
    if before_reading is not None:
        before_reading(footers.rows, footers.vertex_bound, footers.weight_type)
    rows = backend.read_rows(plan, 0, footers.rows, xp)
    skipped = [str(p) for p in footers.skipped]
    if footers.strings:
        src, dst, names = string_codes(rows.strings, xp)
        return EdgeTable(src, dst, rows.weight, names, plan.path, skipped, footers.selection, rows.report)
    src, dst = rows.src, rows.dst
    if footers.mixed_signs:
        unified = unify_signs(rows.signs)
        src, dst = src.view(unified), dst.view(unified)
    return EdgeTable(src, dst, rows.weight, None, plan.path, skipped, footers.selection, rows.report)


def string_codes(pieces: list[tuple], xp):
    """String ids read as (src, dst) large_string pieces per unit, in row order: int32 codes
    (arrays of ``xp``) into the distinct ids, numbered in the order they first appear down src,
    then down dst; returns ``(src_codes, dst_codes, names)``."""
    both = pa.chunked_array([chunk for end in (0, 1) for pair in pieces for chunk in pair[end].chunks],
                            type=pa.large_string()).combine_chunks().dictionary_encode()
    codes = xp.asarray(both.indices.to_numpy(zero_copy_only=False).astype(np.int32))
    n = len(both) // 2
    return codes[:n], codes[n:], both.dictionary


def read_share(plan: InputPlan, rank: int, size: int, xp=np, reader: str = "auto") -> Share:
    """This rank's rows of the edge list, checked, in arrays of the backend ``xp``."""
    start, stop = plan.share(rank, size)
    rows = reader_backend(resolve_reader(reader, xp)).read_rows(plan, start, stop, xp)
    if plan.footers.strings:
        src, dst, names = string_codes(rows.strings, xp)
        return Share(src, dst, rows.weight, start, names=names, report=rows.report)
    return Share(rows.src, rows.dst, rows.weight, start, rows.signs, report=rows.report)


BACKENDS: dict[str, ReaderBackend] = {"host": HostReader(), "gpu": PageReader()}


def resolve_reader(name: str | None, xp) -> str:
    """The registered reader that ``name`` (auto, gpu or host; None: auto) means for a read into
    arrays of ``xp``: auto is gpu where the arrays are CuPy's and nvCOMP is usable (pages
    decompressed and decoded on the device), else host (pyarrow's decoder on the host's cores,
    then one upload)."""
    name = name or "auto"
    if name not in READERS:
        raise InputError(f"unknown Parquet reader {name!r} (choose from {', '.join(READERS)})")
    if name == "auto":
        return "gpu" if xp is not np and nvcomp_usable() else "host"
    return name


def reader_backend(name: str) -> ReaderBackend:
    """The reader backend registered as ``name``."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise InputError(f"unknown Parquet reader {name!r} (choose from {', '.join(BACKENDS)})") from None


