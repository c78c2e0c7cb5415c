"""The GPU's page headers and page CRC32s (kernels/parquet/gpu_headers.py) are the host's: the
table the host walk builds (kernels.parquet.headers.page_headers, through
tasks.parquet.read.pages.parse_page_headers), field for field, from pyarrow files of both
page versions, with and without CRCs, statistics, dictionaries and nulls, in several codecs and
page sizes, from DuckDB files and an empty file; a chunk status that is non-zero exactly where
that parser raises (truncated chunks, flipped header bytes, a page past the chunk's end, value
counts that do not add up, unknown Thrift fields of every type); and zlib.crc32 of pages of
every length around the kernel's segment size, at every alignment.

Each check runs on two engines: the CUDA source compiled for this machine's CPU by the host
C++ compiler under a small shim (one thread; no GPU needed), and the real kernels through CuPy
where a GPU is usable. The first checks the parse and the CRC arithmetic everywhere; only the
second can show what a GPU adds (its memory, its launch, its atomics)."""
from __future__ import annotations

import ctypes
import itertools
import shutil
import signal
import subprocess
import zlib

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernels import backend as be
from kernels.parquet import gpu_headers as gph
from kernels.cuda_source import DIRECTORY, parquet_preamble
from kernels.parquet.format import (NESTED_HEADER_FIELDS, PAGE_FIELDS, DataPageHeaderV2Field, PageHeaderField,
                                    uleb128)
from tasks.parquet.store.filesystem import local
from tasks.errors import InputError
from tasks.parquet.read.pages import ColumnChunk, parse_page_headers, plan_column_chunks, read_chunk_bytes

LOCAL = local()

# What the CUDA file needs from common.cuh and the CUDA runtime, for one CPU thread: a grid of
# one block of one thread, so every grid-stride loop and every block-wide table build is done
# by that thread, and __syncthreads has nothing to wait for.
SHIM = r"""
#include <cstddef>
typedef long long i64;
typedef unsigned long long u64;
#define U64_MAX 0xffffffffffffffffull
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)
struct Dim { unsigned x; };
static const Dim threadIdx = {0}, blockDim = {1};
static inline i64 thread_index() { return 0; }
static inline i64 thread_count() { return 1; }
static inline void __syncthreads() {}
struct uint4 { unsigned x, y, z, w; };
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline unsigned atomicXor(unsigned* p, unsigned v) { unsigned old = *p; *p ^= v; return old; }
"""


class HostBuild:
    """kernels/cuda/parquet_headers.cu compiled for the CPU, after the format's preamble the
    module puts before it (kernels.cuda_source.parquet_preamble); the driver's steps over NumPy."""

    def __init__(self, folder):
        source = folder / "parquet_headers.cpp"
        source.write_text(SHIM + parquet_preamble() + (DIRECTORY / "parquet_headers.cu").read_text())
        library = folder / "parquet_headers.so"
        subprocess.run(["g++", "-std=c++17", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)],
                       check=True, capture_output=True, timeout=300)
        self.lib = ctypes.CDLL(str(library))
        p, n = ctypes.c_void_p, ctypes.c_int64
        self.lib.page_headers_count.argtypes = [p, p, p, p, n, p]
        self.lib.page_headers_fill.argtypes = [p, p, p, p, n, p, p, n, p]
        self.lib.crc32_segments.argtypes = [p, p, p, p, n, p, p]

    def page_headers(self, buffer, starts, sizes, num_values):
        buffer = np.ascontiguousarray(buffer, dtype=np.uint8)
        starts, sizes, num_values = (np.ascontiguousarray(a, dtype=np.int64) for a in (starts, sizes, num_values))
        chunks = starts.shape[0]
        info = np.zeros((3, chunks), dtype=np.int64)
        args = (buffer.ctypes.data, starts.ctypes.data, sizes.ctypes.data, num_values.ctypes.data, chunks)
        self.lib.page_headers_count(*args, info.ctypes.data)
        first = np.concatenate([[0], np.cumsum(info[2])[:-1]]).astype(np.int64)
        total = int(info[2].sum())
        table = np.zeros((len(PAGE_FIELDS), total), dtype=np.int64)
        self.lib.page_headers_fill(*args, info.ctypes.data, first.ctypes.data, total, table.ctypes.data)
        return dict(zip(PAGE_FIELDS, table)), info[0], info[1]

    def crc32(self, buffer, starts, lengths):
        buffer = np.ascontiguousarray(buffer, dtype=np.uint8)
        starts, lengths = (np.ascontiguousarray(a, dtype=np.int64) for a in (starts, lengths))
        segments = np.concatenate([[0], np.cumsum(np.maximum(1, -(-lengths // gph.CRC_SEGMENT)))]).astype(np.int64)
        powers = gph.crc32_powers()
        crc = np.full(starts.shape[0], 0xFFFFFFFF, dtype=np.uint32)
        self.lib.crc32_segments(buffer.ctypes.data, starts.ctypes.data, lengths.ctypes.data, segments.ctypes.data,
                                starts.shape[0], powers.ctypes.data, crc.ctypes.data)
        return crc


class CupyKernels:
    """The driver itself, on the GPU."""

    def page_headers(self, buffer, starts, sizes, num_values):
        import cupy

        found = gph.page_headers(cupy.asarray(buffer), starts, sizes, num_values)
        return found.pages.columns, found.status, found.where

    def crc32(self, buffer, starts, lengths):
        import cupy

        return gph.crc32_pages(cupy.asarray(buffer), starts, lengths).get()


@pytest.fixture(scope="module", params=["host build", "cupy"])
def engine(request, tmp_path_factory):
    if request.param == "cupy":
        if not be.cupy_usable():
            pytest.skip("the CuPy engine needs a usable CUDA device")
        return CupyKernels()
    if shutil.which("g++") is None:
        pytest.skip("no host C++ compiler")
    return HostBuild(tmp_path_factory.mktemp("host_build"))


# ---- helpers ------------------------------------------------------------------------------

def packed(chunks, rng=None):
    """The chunks back to back in one uint8 buffer, each after a gap of 0..19 bytes (so starts
    fall at every alignment); their starts and sizes."""
    rng = rng or np.random.default_rng(0)
    parts, starts, at = [], [], 0
    for data in chunks:
        gap = int(rng.integers(0, 20))
        parts.append(rng.integers(0, 256, gap, dtype=np.uint8).tobytes() + bytes(data))
        starts.append(at + gap)
        at += gap + len(data)
    buffer = np.frombuffer(b"".join(parts) + b"\xff" * 7, dtype=np.uint8)
    return buffer, np.array(starts, np.int64), np.array([len(d) for d in chunks], np.int64)


def host_parse(data: bytes, num_values: int):
    """parse_page_headers on one chunk: its columns, or None where it raises."""
    chunk = ColumnChunk(row_group=0, column=0, name="x", physical_type="INT64", codec="UNCOMPRESSED",
                        offset=4, size=len(data), num_values=num_values, first_row=0, max_definition_level=1)
    try:
        return parse_page_headers([bytes(data)], [chunk]).columns
    except (InputError, OverflowError):
        return None


class TooSlow(Exception):
    pass


def host_parse_bounded(data: bytes, num_values: int, seconds: float = 2.0):
    """host_parse, or TooSlow where it takes longer than ``seconds``: the host parser walks a
    Thrift list or map element by element, even elements it need not read (bools, bytes,
    doubles), so a damaged count can keep it busy for minutes; the kernel skips such a
    container in one step (or refuses it, when it passes the chunk's end)."""
    def stop(*_):
        raise TooSlow

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return host_parse(data, num_values)
    except TooSlow:
        return TooSlow
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def gpu_parse(engine, chunks, num_values):
    buffer, starts, sizes = packed(chunks)
    return engine.page_headers(buffer, starts, sizes, np.asarray(num_values, np.int64))


def assert_agrees_chunk_by_chunk(engine, chunks, num_values):
    """Each chunk's status is non-zero exactly where the host parser raises for it, and an ok
    chunk's rows are the host parser's rows (chunks the host parser takes too long over left
    out: at most 1 %). Returns the statuses."""
    columns, status, where = gpu_parse(engine, chunks, num_values)
    assert status.shape == (len(chunks),)
    slow = 0
    for c, (data, n) in enumerate(zip(chunks, num_values)):
        want = host_parse_bounded(data, n)
        if want is TooSlow:
            slow += 1
            continue
        assert (status[c] == gph.OK) == (want is not None), (c, status[c], where[c])
        rows = columns["chunk"] == c
        if want is None:
            assert not rows.any() and 0 <= where[c] <= len(data)
            continue
        assert where[c] == -1
        for name in PAGE_FIELDS[1:]:
            np.testing.assert_array_equal(columns[name][rows], want[name], err_msg=f"chunk {c}: {name}")
    assert slow <= len(chunks) // 100
    return status


def file_chunks(path, columns):
    plan = plan_column_chunks(pq.ParquetFile(path).metadata, columns, str(path))
    return plan, read_chunk_bytes(LOCAL, str(path), plan)


def assert_same_table(engine, plan, chunk_bytes):
    """All chunks in one launch: the host parser's table, every status ok."""
    want = parse_page_headers(chunk_bytes, plan).columns
    columns, status, where = gpu_parse(engine, chunk_bytes, [c.num_values for c in plan])
    assert (status == gph.OK).all() and (where == -1).all()
    assert set(columns) == set(want)
    for name in PAGE_FIELDS:
        assert columns[name].dtype == np.int64
        np.testing.assert_array_equal(columns[name], want[name], err_msg=name)
    return want


def edge_table(n, nullable, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 50, n)
    mask = rng.random(n) < 0.2 if nullable else None
    strings = np.array([f"v{i % 37}" * (1 + i % 5) for i in range(n)], dtype=object)
    return pa.table({"x": pa.array(x, pa.int64(), mask=mask), "w": pa.array(rng.random(n)),
                     "s": pa.array(strings, pa.string())},
                    schema=pa.schema([pa.field("x", pa.int64(), nullable=nullable),
                                      pa.field("w", pa.float64(), nullable=False),
                                      pa.field("s", pa.string(), nullable=True)]))


# ---- real files ---------------------------------------------------------------------------

def test_pyarrow_files_of_every_page_option(engine, tmp_path):
    """Page version x CRC x statistics x dictionary, each with a tiny and a default page size,
    codecs and nullability in turn; all chunks of all 32 files in one launch."""
    plans, chunk_bytes = [], []
    codecs = itertools.cycle(["none", "snappy", "zstd", "gzip", "lz4", "brotli"])
    options = itertools.product(["1.0", "2.0"], [True, False], [True, False], [True, False], [64, 1 << 20])
    for k, (version, crc, stats, dictionary, page_size) in enumerate(options):
        path = tmp_path / f"f{k}.parquet"
        pq.write_table(edge_table(3000, k % 2 == 0, k), path, data_page_version=version,
                       write_page_checksum=crc, write_statistics=stats, use_dictionary=dictionary,
                       data_page_size=page_size, write_batch_size=97, row_group_size=1300,
                       compression=next(codecs))
        plan, data = file_chunks(path, ["x", "w", "s"])
        plans += plan
        chunk_bytes += data
    want = assert_same_table(engine, plans, chunk_bytes)
    assert len(want["chunk"]) > 1500  # many pages: the tiny page size
    assert {0, 2, 3} <= set(want["page_type"].tolist())  # v1, dictionary and v2 pages
    assert (want["crc"] >= 0).any() and (want["crc"] == -1).any()


@pytest.mark.parametrize("version", ["V1", "V2"])
def test_duckdb_files(engine, tmp_path, version):
    plans, chunk_bytes = [], []
    for k, codec in enumerate(["uncompressed", "snappy", "zstd", "gzip"]):
        path = tmp_path / f"d{k}.parquet"
        con = duckdb.connect()
        con.register("t", edge_table(5000, True, k))
        con.execute(f"COPY (SELECT * FROM t) TO '{path}' (FORMAT parquet, COMPRESSION {codec}, "
                    f"ROW_GROUP_SIZE 2048, PARQUET_VERSION {version})")
        con.close()
        plan, data = file_chunks(path, ["x", "w", "s"])
        plans += plan
        chunk_bytes += data
    assert_same_table(engine, plans, chunk_bytes)


def test_file_without_rows(engine, tmp_path):
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"x": pa.array([], pa.int32())}), path)
    plan, data = file_chunks(path, ["x"])
    assert_same_table(engine, plan, data)


def test_no_chunks_and_empty_chunks(engine):
    columns, status, where = gpu_parse(engine, [], [])
    assert status.shape == (0,) and all(columns[name].shape == (0,) for name in PAGE_FIELDS)
    assert assert_agrees_chunk_by_chunk(engine, [b"", b""], [0, 5]).tolist() == [gph.OK, gph.VALUE_COUNT]


# ---- damaged chunks -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_chunks(tmp_path_factory):
    """A few-page chunk of each page version, with CRCs, statistics and a dictionary page."""
    folder = tmp_path_factory.mktemp("small")
    out = []
    for version in ("1.0", "2.0"):
        path = folder / f"v{version}.parquet"
        pq.write_table(edge_table(60, True, 1), path, data_page_version=version, write_page_checksum=True,
                       data_page_size=64, write_batch_size=20, compression="snappy")
        plan, data = file_chunks(path, ["x", "s"])
        out += list(zip(data, [c.num_values for c in plan]))
    return out


def test_truncated_chunks(engine, small_chunks):
    chunks, counts = [], []
    for data, n in small_chunks:
        for cut in range(len(data)):
            chunks.append(data[:cut])
            counts.append(n)
    status = assert_agrees_chunk_by_chunk(engine, chunks, counts)
    assert set(status.tolist()) >= {gph.UNPARSABLE, gph.BAD_SIZE, gph.VALUE_COUNT}


def test_a_page_past_the_chunks_end(engine, small_chunks):
    data, n = small_chunks[0]
    status = assert_agrees_chunk_by_chunk(engine, [data[:-1]], [n])
    assert status.tolist() == [gph.BAD_SIZE]


def test_value_counts_that_do_not_add_up(engine, small_chunks):
    chunks = [d for d, _ in small_chunks] * 3
    counts = [n + delta for delta in (-1, 0, 1) for _, n in small_chunks]
    status = assert_agrees_chunk_by_chunk(engine, chunks, counts)
    k = len(small_chunks)
    assert (status[:k] == gph.VALUE_COUNT).all() and (status[k:2 * k] == gph.OK).all()
    assert (status[2 * k:] == gph.VALUE_COUNT).all()


def header_ranges(data, n):
    table = host_parse(data, n)
    return [(int(a), int(b)) for a, b in zip(table["header_offset"], table["offset"])]


def test_flipped_header_bytes(engine, small_chunks):
    """Every header byte of the first chunks xored with 0x01, 0x10, 0x80 and 0xff, one at a time."""
    chunks, counts = [], []
    for data, n in small_chunks[:2]:
        for a, b in header_ranges(data, n)[:6]:
            for at, flip in itertools.product(range(a, b), (0x01, 0x10, 0x80, 0xFF)):
                damaged = bytearray(data)
                damaged[at] ^= flip
                chunks.append(bytes(damaged))
                counts.append(n)
    status = assert_agrees_chunk_by_chunk(engine, chunks, counts)
    assert (status == gph.OK).any() and (status != gph.OK).any()


def test_random_bytes_over_headers(engine, small_chunks):
    rng = np.random.default_rng(5)
    chunks, counts = [], []
    for data, n in small_chunks:
        ranges = header_ranges(data, n)
        for _ in range(300):
            damaged = bytearray(data)
            a, b = ranges[int(rng.integers(len(ranges)))]
            for at in rng.integers(a, b, size=int(rng.integers(1, 4))):
                damaged[at] = int(rng.integers(256))
            chunks.append(bytes(damaged))
            counts.append(n)
    assert_agrees_chunk_by_chunk(engine, chunks, counts)


# ---- unknown Thrift fields ----------------------------------------------------------------

BOOL_TYPES, SCALAR_TYPES = (1, 2), (3, 4, 5, 6, 7, 8)


def zigzag(v: int) -> bytes:
    """The zigzag varint of any integer, int64 or beyond."""
    return uleb128(2 * v if v >= 0 else -2 * v - 1)


def thrift_value(rng, t: int, depth: int) -> bytes:
    """A value of compact type t (not a bool: those live in their field header)."""
    if t == 3:
        return rng.bytes(1)
    if t in (4, 5, 6):
        return zigzag(int(rng.integers(-2**40, 2**40)))
    if t == 7:
        return rng.bytes(8)
    if t == 8:
        n = int(rng.choice([0, 3, 130]))
        return uleb128(n) + rng.bytes(n)
    kinds = SCALAR_TYPES + ((9, 10, 11, 12) if depth < 3 else ())
    if t in (9, 10):
        e, n = int(rng.choice(kinds + BOOL_TYPES)), int(rng.choice([0, 2, 17]))
        head = bytes([min(n, 15) << 4 | e]) + (uleb128(n) if n >= 15 else b"")
        return head + b"".join(bytes([int(rng.choice(BOOL_TYPES))]) if e in BOOL_TYPES
                               else thrift_value(rng, e, depth + 1) for _ in range(n))
    if t == 11:  # no bool keys or values: pages.py's _skip reads those as taking no byte
        n = int(rng.choice([0, 1, 3]))
        if n == 0:
            return b"\x00"
        k, v = int(rng.choice(kinds)), int(rng.choice(kinds))
        return uleb128(n) + bytes([k << 4 | v]) + b"".join(
            thrift_value(rng, k, depth + 1) + thrift_value(rng, v, depth + 1) for _ in range(n))
    return thrift_struct(rng, depth + 1)


def thrift_field(rng, field_id: int, previous: int, depth: int, t: int = 0, value: bytes = b"") -> bytes:
    """A field (of random type unless t is given; its value `value` or random), its id as a
    delta from `previous` where one fits, else (and sometimes anyway) in long form."""
    t = t or int(rng.choice(BOOL_TYPES + SCALAR_TYPES + ((9, 10, 11, 12) if depth < 3 else ())))
    if value:
        return (bytes([t]) + zigzag(field_id)) + value
    delta = field_id - previous
    head = bytes([delta << 4 | t]) if 0 < delta <= 15 and rng.random() < 0.7 else bytes([t]) + zigzag(field_id)
    return head + (b"" if t in BOOL_TYPES else thrift_value(rng, t, depth))


def thrift_struct(rng, depth: int) -> bytes:
    out, previous = b"", 0
    for _ in range(int(rng.integers(0, 4))):
        field_id = previous + int(rng.integers(1, 20))
        out += thrift_field(rng, field_id, previous, depth)
        previous = field_id
    return out + b"\x00"


def unknown_field(rng, field_id: int) -> bytes:
    """A field of random type with a long-form id (so the previous field's id does not matter)."""
    t = int(rng.choice(BOOL_TYPES + SCALAR_TYPES + (9, 10, 11, 12)))
    return bytes([t]) + zigzag(field_id) + (b"" if t in BOOL_TYPES else thrift_value(rng, t, 0))


def with_unknown_fields(rng, data: bytes, n: int) -> bytes:
    """The chunk with an unknown field (id 30..) before each nested header's stop byte and one
    (id 20..) before each page header's."""
    out = b""
    pages = host_parse(data, n)
    for a, b, size in zip(pages["header_offset"], pages["offset"], pages["compressed_size"]):
        header = data[a:b]
        assert header[-2:] == b"\x00\x00"  # the nested header is the last field: its stop, then ours
        out += (header[:-2] + unknown_field(rng, int(rng.integers(30, 200))) + b"\x00"
                + unknown_field(rng, int(rng.integers(20, 200))) + b"\x00" + data[b:b + size])
    return out


def random_page(rng, values: int, size: int) -> bytes:
    """A page header of random fields, ids 1..11 of any type (so kept ids come with the wrong
    type too, and the nested headers with random fields of their own), ended by fields that
    make it a DATA_PAGE_V2 of `values` values and `size` bytes (the last value of a field is
    the one kept); then the page's bytes."""
    out, previous = b"", 0
    for _ in range(int(rng.integers(0, 6))):
        field_id = int(rng.integers(1, 12))
        if field_id in NESTED_HEADER_FIELDS and rng.random() < 0.6:
            nested, inner = b"", 0
            for _ in range(int(rng.integers(0, 6))):
                inner_id = int(rng.integers(1, 10))
                nested += thrift_field(rng, inner_id, inner, 1)
                inner = inner_id
            out += thrift_field(rng, field_id, previous, 0, 12, nested + b"\x00")
        else:
            out += thrift_field(rng, field_id, previous, 0)
        previous = field_id
    v2 = thrift_field(rng, DataPageHeaderV2Field.num_values, 0, 1, 5, zigzag(values)) + b"\x00"
    out += (thrift_field(rng, PageHeaderField.data_page_header_v2, 0, 0, 12, v2)
            + thrift_field(rng, PageHeaderField.type, 0, 0, 5, zigzag(3)))
    return (out + thrift_field(rng, PageHeaderField.compressed_page_size, 0, 0, 5, zigzag(size)) + b"\x00"
            + rng.bytes(size))


def with_bytes_replaced(rng, chunks, per_chunk: int) -> list[bytes]:
    """Each chunk with ``per_chunk`` bytes at random places set to random values."""
    damaged_chunks = []
    for data in chunks:
        damaged = bytearray(data)
        for at in rng.integers(0, len(data), size=per_chunk):
            damaged[at] = int(rng.integers(256))
        damaged_chunks.append(bytes(damaged))
    return damaged_chunks


def test_random_headers(engine):
    """Chunks of random pages, read alike; then with bytes replaced at random."""
    rng = np.random.default_rng(13)
    chunks, counts = [], []
    for _ in range(600):
        values = rng.integers(0, 1000, size=int(rng.integers(1, 5)))
        chunks.append(b"".join(random_page(rng, int(v), int(rng.integers(0, 40))) for v in values))
        counts.append(int(values.sum()))
    status = assert_agrees_chunk_by_chunk(engine, chunks, counts)
    assert (status == gph.OK).all()
    assert_agrees_chunk_by_chunk(engine, with_bytes_replaced(rng, chunks, 2), counts)


def test_unknown_fields_of_every_type_are_skipped(engine, small_chunks):
    rng = np.random.default_rng(11)
    chunks, counts = [], []
    for _ in range(40):
        for data, n in small_chunks:
            chunks.append(with_unknown_fields(rng, data, n))
            counts.append(n)
    status = assert_agrees_chunk_by_chunk(engine, chunks, counts)
    assert (status == gph.OK).all()
    # and damaged: bytes of those fields replaced at random
    assert_agrees_chunk_by_chunk(engine, with_bytes_replaced(rng, chunks, 3), counts)


def one_page(fields: bytes, size: int = 0, nested: bytes = b"") -> bytes:
    """A DATA_PAGE header (type 0, sizes `size`, DataPageHeader with 1 value and `nested`
    fields before its stop) followed by `fields` and the stop byte, then the page's bytes."""
    header = b"\x15\x00\x15" + zigzag(size) + b"\x15" + zigzag(size)
    header += b"\x2c\x15\x02\x15\x00\x15\x06" + nested + b"\x00" + fields + b"\x00"
    return header + bytes(size)


def test_nesting_depth(engine):
    """Structs nested 32 deep in an unknown field are read; 33 deep are refused here and read
    by the host parser (Python recurses until its recursion limit)."""
    def nested(depth):  # field 9 (delta 3 after field 5... long form id 9), a struct per level
        return b"\x0c" + zigzag(9) + b"\x1c" * (depth - 1) + b"\x00" * depth

    chunks = [one_page(nested(32), 3), one_page(nested(33), 3)]
    columns, status, where = gpu_parse(engine, chunks, [1, 1])
    assert status.tolist() == [gph.OK, gph.TOO_DEEP] and where.tolist() == [-1, 0]
    assert host_parse(chunks[1], 1) is not None


def test_long_varints_and_values_beyond_int64(engine):
    """A varint padded with zero continuation bytes is its value; one beyond 64 bits is
    refused (the host parser fails building its int64 table); crc -1 on the wire stays a
    stored CRC (0xffffffff)."""
    padded = b"\x15\x00\x15\x86\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00\x15\x06"  # uncompressed 3, 12 bytes
    crc = b"\x15\x01"  # field 4, zigzag -1
    ok = padded + crc + b"\x1c\x15\x02\x15\x00\x15\x06\x00\x00" + bytes(3)
    beyond = (b"\x15\x00\x15\x06\x15\x06\x15" + b"\xff" * 10 + b"\x01" +  # crc beyond 2**64
              b"\x1c\x15\x02\x15\x00\x15\x06\x00\x00" + bytes(3))
    status = assert_agrees_chunk_by_chunk(engine, [ok, beyond], [1, 1])
    assert status.tolist() == [gph.OK, gph.TOO_LARGE]
    columns, _, _ = gpu_parse(engine, [ok], [1])
    assert columns["uncompressed_size"].tolist() == [3] and columns["crc"].tolist() == [0xFFFFFFFF]


# ---- CRC32 --------------------------------------------------------------------------------

def test_crc_powers_are_shifts_by_zero_bytes():
    """powers[16k + d] is x^(8 d 16^k) mod P: the register 1 (bit 31) after d 16^k zero bytes,
    which zlib computes (crc32(zeros, ~r) = ~(r after the zeros))."""
    powers = gph.crc32_powers()
    for k, d in itertools.product(range(5), range(16)):
        after = zlib.crc32(bytes(d * 16**k), 0x7FFFFFFF) ^ 0xFFFFFFFF
        assert int(powers[16 * k + d]) == after, (k, d)


CRC_LENGTHS = [0, 1, 3, *range(4, 101), 4095, 4096, 4097, 8191, 8192, 12289, (1 << 20) + 7]


@pytest.mark.parametrize("fill", ["random", "zeros"])
def test_crc32_of_pages_of_every_length(engine, fill):
    rng = np.random.default_rng(2)
    pages = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() if fill == "random" else bytes(n)
             for n in CRC_LENGTHS]
    buffer, starts, lengths = packed(pages, rng)
    got = engine.crc32(buffer, starts, lengths)
    assert got.dtype == np.uint32
    assert got.tolist() == [zlib.crc32(p) for p in pages]


def test_crc32_at_every_alignment_and_of_overlapping_ranges(engine):
    rng = np.random.default_rng(3)
    buffer = rng.integers(0, 256, 20000, dtype=np.uint8)
    starts = np.array([a for a in range(32) for _ in range(3)], np.int64)
    lengths = np.array([n for _ in range(32) for n in (15, 4113, 16000)], np.int64)
    got = engine.crc32(buffer, starts, lengths)
    raw = buffer.tobytes()
    assert got.tolist() == [zlib.crc32(raw[a:a + n]) for a, n in zip(starts.tolist(), lengths.tolist())]


def test_crc32_of_no_pages(engine):
    assert engine.crc32(np.zeros(4, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (0,)


def test_crc32_of_many_pages_in_one_launch(engine):
    """600 pages of 1 KiB to 200 KiB (about 60 MB), back to back."""
    rng = np.random.default_rng(4)
    lengths = rng.integers(1 << 10, 200 << 10, 600)
    buffer = rng.integers(0, 256, int(lengths.sum()) + 1, dtype=np.uint8)
    starts = np.concatenate([[1], 1 + np.cumsum(lengths)[:-1]])
    got = engine.crc32(buffer, starts, lengths)
    raw = buffer.tobytes()
    assert got.tolist() == [zlib.crc32(raw[a:a + n]) for a, n in zip(starts.tolist(), lengths.tolist())]


@pytest.mark.skipif(not be.cupy_usable(), reason="needs a usable CUDA device")
def test_ranges_outside_the_buffer_are_refused():
    import cupy

    buffer = cupy.zeros(10, cupy.uint8)
    with pytest.raises(ValueError, match=r"range 1: \[8, 12\) is not inside the 10-byte buffer"):
        gph.crc32_pages(buffer, [0, 8], [4, 4])
    with pytest.raises(ValueError, match=r"range 0: \[-1, 3\) is not inside"):
        gph.page_headers(buffer, [-1], [4], [0])
    with pytest.raises(ValueError, match="the counts must agree"):
        gph.page_headers(buffer, [0, 1], [4], [0])
