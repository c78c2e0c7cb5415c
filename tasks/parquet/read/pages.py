"""Column chunks read from a Parquet file, their page headers parsed into arrays, their pages
decoded.

The plan is one ``ColumnChunk`` per (row group, column), taken from the footer pyarrow parsed.
Each chunk's bytes come through the input's ``Filesystem`` (``read_ranges``); the page
headers in them are parsed into a ``PageTable`` by kernels.parquet.headers (its refusals become
InputErrors naming the file, column and row group here), and the pages decoded by
kernels.parquet.decode, or handed to kernels.parquet.batch as a batch.

Limits: flat columns only (no repetition levels: the edge-list columns are top-level);
INDEX_PAGE headers are parsed and skipped; a chunk whose pages do not tile its byte range
exactly, or whose data pages' value counts do not add up to the footer's, is refused.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.parquet.batch import BatchPages
from kernels.parquet.decode import (DataPage, PageError, decode_data_page,
                                    decode_dictionary_page)
from kernels.parquet.format import DATA_PAGE_V2, DATA_PAGES, DICTIONARY_PAGE, PHYSICAL_DTYPES
from kernels.parquet.headers import HeaderError, PageTable, page_headers
from tasks.errors import InputError
from tasks.parquet.store.filesystem import Filesystem


@dataclass(frozen=True)
class ColumnChunk:
    """One column of one row group: where its bytes lie and how they are coded."""

    row_group: int
    column: int  # index of the leaf column in the file's schema
    name: str
    physical_type: str  # 'INT32', 'INT64', 'FLOAT', 'DOUBLE', ...
    codec: str  # pyarrow's name: 'UNCOMPRESSED', 'SNAPPY', 'GZIP', 'LZ4', 'ZSTD', 'BROTLI', ...
    offset: int  # file offset of the chunk's first page header
    size: int  # bytes from ``offset``: every page header and page of the chunk
    num_values: int  # values in the chunk, nulls included (= rows for a flat column)
    first_row: int  # file row of the chunk's first value
    max_definition_level: int  # 0: REQUIRED column (no definition levels stored), 1: OPTIONAL


def plan_column_chunks(metadata, columns, path: str = "") -> list[ColumnChunk]:
    """The chunks of ``columns`` (names) in every row group of ``metadata``, row group order."""
    schema = metadata.schema
    names = [schema.column(i).name for i in range(metadata.num_columns)]
    plan = []
    for name in columns:
        if name not in names:
            raise InputError(f"{path}: no column {name!r} in the file")
        index = names.index(name)
        leaf = schema.column(index)
        if leaf.max_repetition_level != 0:
            raise InputError(f"{path}: column {name!r} is repeated (nested); only flat columns are read")
    first_row = 0
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        for name in columns:
            index = names.index(name)
            chunk = group.column(index)
            # The chunk starts at its dictionary page, if any, else its first data page; writers
            # store 0 for an absent one (pyarrow's data page offset of an empty chunk too).
            offsets = [chunk.data_page_offset]
            if chunk.has_dictionary_page:
                offsets.append(chunk.dictionary_page_offset)
            start = min((o for o in offsets if o and o > 0), default=chunk.data_page_offset)
            if chunk.num_values != group.num_rows:
                raise InputError(
                    f"{path}: column {name!r}, row group {rg}: {chunk.num_values} values for "
                    f"{group.num_rows} rows")
            plan.append(ColumnChunk(
                row_group=rg, column=index, name=name, physical_type=chunk.physical_type,
                codec=chunk.compression, offset=start, size=chunk.total_compressed_size,
                num_values=chunk.num_values, first_row=first_row,
                max_definition_level=schema.column(index).max_definition_level))
        first_row += group.num_rows
    return plan


def read_chunk_bytes(filesystem: Filesystem, path, plan) -> list[bytes]:
    """Each chunk's byte range of ``path``, in plan order: ``read_chunks_into``'s reads and
    checks, one bytes object per chunk (the reference steps' input)."""
    sizes = np.array([c.size for c in plan], np.int64)
    starts = np.cumsum(sizes) - sizes
    buffer = np.empty(int(sizes.sum()), np.uint8)
    read_chunks_into(filesystem, path, plan, buffer, starts)
    return [buffer[s:s + n].tobytes() for s, n in zip(starts.tolist(), sizes.tolist())]


def read_chunks_into(filesystem: Filesystem, path, plan, out: np.ndarray, starts) -> None:
    """Each chunk's byte range of ``path`` (a path of ``filesystem``) into ``out`` (uint8) at
    ``starts[c]``, by the filesystem's ``read_ranges`` (parallel preads on the local disk); a
    range outside the file's pages, or a short read, is refused naming the chunk."""
    file_size, got = filesystem.read_ranges(path, [(c.offset, c.size, int(at)) for c, at in zip(plan, starts)], out)
    for chunk in plan:
        if chunk.offset < 4 or chunk.offset + chunk.size > file_size - 8:
            raise InputError(
                f"{path}: column {chunk.name!r}, row group {chunk.row_group}: byte range "
                f"[{chunk.offset}, {chunk.offset + chunk.size}) lies outside the file's "
                f"pages ({file_size} bytes)")
    for chunk, n in zip(plan, got):
        _check_length(path, chunk, n)


def _check_length(path, chunk, got: int) -> None:
    if got != chunk.size:
        raise InputError(f"{path}: column {chunk.name!r}, row group {chunk.row_group}: "
                         f"read {got} of {chunk.size} bytes")


def parse_page_headers(chunk_bytes, plan, path: str = "") -> PageTable:
    """Every page header of every chunk of ``plan`` (kernels.parquet.headers.page_headers),
    checked to tile the chunk and count its values; a refusal names the file and the chunk."""
    try:
        return page_headers(chunk_bytes, [chunk.num_values for chunk in plan])
    except HeaderError as exc:
        chunk = plan[exc.chunk]
        raise InputError(f"{path}: column {chunk.name!r}, row group {chunk.row_group}: {exc}") from None


def data_page_fields(pages: PageTable, i: int, chunk: ColumnChunk) -> DataPage:
    """What the decoder needs from data page ``i``'s header."""
    c = pages.columns
    if c["page_type"][i] == DATA_PAGE_V2:
        return DataPage(version=2, num_values=int(c["num_values"][i]),
                        encoding=int(c["encoding"][i]),
                        max_definition_level=chunk.max_definition_level,
                        definition_levels_length=int(c["definition_levels_length"][i]),
                        repetition_levels_length=int(c["repetition_levels_length"][i]),
                        num_nulls=int(c["num_nulls"][i]))
    return DataPage(version=1, num_values=int(c["num_values"][i]), encoding=int(c["encoding"][i]),
                    max_definition_level=chunk.max_definition_level,
                    definition_level_encoding=int(c["definition_level_encoding"][i]))


def decode_chunks(xp, plan, pages: PageTable, bodies, path: str = "") -> list:
    """(values, valid) per chunk of the plan: ``bodies`` are the pages' uncompressed bytes
    (arrays of backend ``xp``); ``valid`` is None for a chunk without nulls."""
    out = []
    for c, chunk in enumerate(plan):
        if chunk.physical_type not in PHYSICAL_DTYPES:
            raise InputError(f"{path}: column {chunk.name!r} has physical type "
                             f"{chunk.physical_type}; this reader takes "
                             f"{', '.join(PHYSICAL_DTYPES)}")
        dtype = PHYSICAL_DTYPES[chunk.physical_type]
        dictionary = None
        parts, masks = [], []
        for k, i in enumerate(pages.of_chunk(c)):
            kind = pages.columns["page_type"][i]
            where = f"{path}: column {chunk.name!r}, row group {chunk.row_group}, page {k}"
            try:
                if kind == DICTIONARY_PAGE:
                    if dictionary is not None:
                        raise PageError("a second dictionary page")
                    dictionary = decode_dictionary_page(
                        xp, bodies[i], int(pages.columns["encoding"][i]),
                        int(pages.columns["num_values"][i]), dtype)
                elif kind in DATA_PAGES:
                    values, valid = decode_data_page(
                        xp, bodies[i], data_page_fields(pages, i, chunk), dtype, dictionary)
                    parts.append(values)
                    masks.append(valid)
            except PageError as exc:
                raise InputError(f"{where}: {exc}") from None
        values = xp.concatenate(parts) if parts else xp.zeros(0, dtype=dtype)
        if all(m is None for m in masks):
            valid = None
        else:
            valid = xp.concatenate([xp.ones(p.shape[0], dtype=bool) if m is None else m
                                    for p, m in zip(parts, masks)])
        out.append((values, valid))
    return out


def batch_pages(body, body_start, pages: PageTable, plan) -> BatchPages:
    """The pages of ``plan``'s chunks as kernels.parquet.batch's input: ``body`` holds their
    uncompressed bytes (an array of the backend), page i from ``body_start[i]``."""
    return BatchPages(
        body=body, body_start=np.asarray(body_start, np.int64), headers=pages,
        itemsize=np.array([np.dtype(PHYSICAL_DTYPES[chunk.physical_type]).itemsize for chunk in plan], np.int64),
        max_definition_level=np.array([chunk.max_definition_level for chunk in plan], np.int64))
