"""The page reader's host reference (plan -> page headers -> decompression -> decoding
kernels) yields what pyarrow reads, value for value and null for null, from files pyarrow
and DuckDB write in every encoding, codec and page version they produce; and it refuses a
bad page CRC, a page holding other than its header's value count, a page decompressing to
other than its declared size, and a codec it cannot decompress, naming the page or column."""
from __future__ import annotations

import dataclasses
import itertools

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.parquet import decode as pd
from kernels.parquet.format import DATA_PAGE, PLAIN, RLE_DICTIONARY, uleb128
from kernels.parquet.headers import PageTable
from tasks.parquet.store.filesystem import local
from tasks.errors import InputError
from tasks.parquet.codec.decompress import (check_page_crcs, decompress_pages_host,
                                      hadoop_lz4_frames)
from tasks.parquet.read.page_reader import read_columns
from tasks.parquet.read.pages import decode_chunks, parse_page_headers, plan_column_chunks, read_chunk_bytes
from tests.conftest import host

LOCAL = local()
FILE_NUMBERS = itertools.count()
PYARROW_COMPRESSIONS = ["none", "snappy", "zstd", "lz4", "gzip", "brotli"]
INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_TYPES = ["float32", "float64"]


def assert_reads_as_pyarrow(path, xp=np, expected=None):
    """Our values and nulls equal ``expected`` (a table), by default pq.read_table's."""
    expected = pq.read_table(path) if expected is None else expected
    got = read_columns(LOCAL, str(path), expected.column_names, xp=xp)
    for name in expected.column_names:
        column = expected[name]
        values, valid = got[name]
        values = host(values)
        want_valid = column.is_valid().to_numpy(zero_copy_only=False)
        assert values.shape[0] == len(column), name
        assert values.dtype == column.type.to_pandas_dtype(), name
        if valid is None:
            assert want_valid.all(), f"{name}: nulls not reported"
        else:
            np.testing.assert_array_equal(host(valid), want_valid, err_msg=name)
        want = column.fill_null(pa.scalar(0, column.type)).to_numpy()
        # bit for bit at the valid rows (floats compared as their bits)
        np.testing.assert_array_equal(values[want_valid].view(f"u{values.dtype.itemsize}"),
                                      want[want_valid].view(f"u{values.dtype.itemsize}"),
                                      err_msg=name)


def values_of(dtype, n, distinct, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        pool = rng.standard_normal(distinct).astype(dtype) * 1e3
        pool[: min(2, distinct)] = [np.inf, -0.0][: min(2, distinct)]
    else:
        info = np.iinfo(dtype)
        pool = rng.integers(info.min, info.max, size=distinct, dtype=dtype, endpoint=True)
        pool[0] = info.min
        if distinct > 1:
            pool[1] = info.max
    return pool[rng.integers(0, distinct, size=n)]


def table_of(dtype, n, null_fraction, nullable, distinct, seed):
    rng = np.random.default_rng(seed)
    data = values_of(dtype, n, distinct, rng)
    mask = rng.random(n) < null_fraction if nullable else None
    arrow_type = pa.from_numpy_dtype(np.dtype(dtype))
    array = pa.array(data, type=arrow_type, mask=mask)
    return pa.table({"x": array, "k": pa.array(np.arange(n, dtype=np.int64))},
                    schema=pa.schema([pa.field("x", arrow_type, nullable=nullable),
                                      pa.field("k", pa.int64(), nullable=False)]))


def write_pyarrow(path, table, encoding, codec, version, page_size, batch, row_group):
    options = dict(compression=codec, data_page_version=version, data_page_size=page_size,
                   write_batch_size=batch, row_group_size=row_group, write_page_checksum=True)
    if encoding == "dictionary":
        options["use_dictionary"] = True
    elif encoding == "dictionary_fallback":  # a dictionary page, its pages, then PLAIN pages
        options.update(use_dictionary=True, dictionary_pagesize_limit=64)
    else:
        options.update(use_dictionary=False, column_encoding={"x": encoding, "k": "PLAIN"})
    pq.write_table(table, path, **options)


ENCODINGS = ["dictionary", "dictionary_fallback", "PLAIN", "DELTA_BINARY_PACKED",
             "BYTE_STREAM_SPLIT"]


@st.composite
def pyarrow_cases(draw):
    dtype = draw(st.sampled_from(INT_TYPES + FLOAT_TYPES))
    encodings = [e for e in ENCODINGS
                 if not (e == "DELTA_BINARY_PACKED" and dtype in FLOAT_TYPES)]
    n = draw(st.integers(1, 3000))
    nullable = draw(st.booleans())
    return dict(
        dtype=dtype, n=n, nullable=nullable,
        null_fraction=draw(st.sampled_from([0.0, 0.1, 0.7, 1.0])) if nullable else 0.0,
        distinct=draw(st.sampled_from([1, 5, 300, n])),
        encoding=draw(st.sampled_from(encodings)), codec=draw(st.sampled_from(PYARROW_COMPRESSIONS)),
        version=draw(st.sampled_from(["1.0", "2.0"])),
        page_size=draw(st.sampled_from([64, 700, 1 << 20])),
        batch=draw(st.sampled_from([7, 100, 1024])),
        row_group=draw(st.sampled_from([97, 1000, 1 << 20])),
        seed=draw(st.integers(0, 2**32 - 1)))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=pyarrow_cases())
def test_pyarrow_files_read_as_pyarrow_reads_them(tmp_path, case):
    table = table_of(case["dtype"], case["n"], case["null_fraction"], case["nullable"],
                     case["distinct"], case["seed"])
    path = tmp_path / "g.parquet"
    write_pyarrow(path, table, case["encoding"], case["codec"], case["version"],
                  case["page_size"], case["batch"], case["row_group"])
    assert_reads_as_pyarrow(path)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", PYARROW_COMPRESSIONS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_encoding_codec_and_page_version(tmp_path, xp, encoding, codec, version):
    """The whole grid once, with nulls, several pages and row groups, on every backend."""
    dtype = "int64" if encoding == "DELTA_BINARY_PACKED" else "float64"
    for column_type, distinct in ((dtype, 40), ("int32", 2000)):
        table = table_of(column_type, 2500, 0.2, True, distinct, seed=7)
        path = tmp_path / f"{column_type}.parquet"
        write_pyarrow(path, table, encoding, codec, version, 900, 128, 1100)
        metadata = pq.ParquetFile(path).metadata
        assert metadata.num_row_groups == 3 and metadata.row_group(0).column(0).total_compressed_size
        assert_reads_as_pyarrow(path, xp)


def test_file_without_rows(tmp_path):
    path = tmp_path / "empty.parquet"
    write_pyarrow(path, table_of("int32", 0, 0.0, True, 1, 0), "dictionary", "snappy", "1.0",
                  1 << 20, 1024, 1 << 20)
    assert_reads_as_pyarrow(path)


def test_dictionary_fallback_mixes_dictionary_and_plain_pages_in_one_chunk(tmp_path):
    table = table_of("int64", 20000, 0.05, True, 20000, seed=3)
    path = tmp_path / "fallback.parquet"
    write_pyarrow(path, table, "dictionary_fallback", "snappy", "1.0", 4096, 512, 1 << 20)
    plan = plan_column_chunks(pq.ParquetFile(path).metadata, ["x"])
    pages = parse_page_headers(read_chunk_bytes(LOCAL, str(path), plan), plan)
    data = pages.encoding[pages.page_type == DATA_PAGE]
    assert {RLE_DICTIONARY, PLAIN} <= set(data.tolist())
    assert_reads_as_pyarrow(path)


DUCKDB_TYPES = {"TINYINT": "int8", "SMALLINT": "int16", "INTEGER": "int32", "BIGINT": "int64",
                "UTINYINT": "uint8", "USMALLINT": "uint16", "UINTEGER": "uint32",
                "UBIGINT": "uint64", "FLOAT": "float32", "DOUBLE": "float64"}


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sql_type=st.sampled_from(sorted(DUCKDB_TYPES)),
       codec=st.sampled_from(["uncompressed", "snappy", "zstd", "gzip", "lz4", "brotli"]),
       version=st.sampled_from(["V1", "V2"]), n=st.integers(1, 5000),
       distinct=st.sampled_from([3, 5000]), null_fraction=st.sampled_from([0.0, 0.3]),
       row_group=st.sampled_from([2048, 122880]), seed=st.integers(0, 2**32 - 1))
def test_duckdb_files_read_as_pyarrow_reads_them(tmp_path, sql_type, codec, version, n,
                                                 distinct, null_fraction, row_group, seed):
    table = table_of(DUCKDB_TYPES[sql_type], n, null_fraction, True, distinct, seed)
    path = tmp_path / f"d{next(FILE_NUMBERS)}.parquet"  # one file per example: no overwrite
    con = duckdb.connect()
    con.register("t", table)
    con.execute(f"COPY (SELECT CAST(x AS {sql_type}) AS x, k FROM t ORDER BY k) TO '{path}' "
                f"(FORMAT parquet, COMPRESSION {codec}, ROW_GROUP_SIZE {row_group}, "
                f"PARQUET_VERSION {version})")
    # DuckDB reads its own file back as the reference: pyarrow 26 fails on some of its V2
    # files (a one-row DELTA_BINARY_PACKED UINTEGER page: "InitHeader EOF")
    expected = con.sql(f"SELECT x, k FROM '{path}'").arrow()
    con.close()
    if not isinstance(expected, pa.Table):  # DuckDB versions differ: a reader or a table
        expected = expected.read_all()
    assert_reads_as_pyarrow(path, expected=expected)


def test_duckdb_v2_writes_delta_and_byte_stream_split(tmp_path):
    table = table_of("int64", 5000, 0.1, True, 5000, seed=5)
    path = tmp_path / "d2.parquet"
    con = duckdb.connect()
    con.register("t", table)
    con.execute(f"COPY (SELECT x, CAST(x AS DOUBLE) / 7 AS w, k FROM t ORDER BY k) TO '{path}' "
                "(FORMAT parquet, PARQUET_VERSION V2)")
    con.close()
    encodings = {e for rg in range(pq.ParquetFile(path).metadata.num_row_groups)
                 for c in range(3)
                 for e in pq.ParquetFile(path).metadata.row_group(rg).column(c).encodings}
    assert {"DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"} & encodings
    assert_reads_as_pyarrow(path)


def chunk_pages(path, columns=("x",)):
    plan = plan_column_chunks(pq.ParquetFile(path).metadata, list(columns), str(path))
    chunk_bytes = read_chunk_bytes(LOCAL, str(path), plan)
    return plan, chunk_bytes, parse_page_headers(chunk_bytes, plan, str(path))


def test_corrupted_page_crc_is_refused_naming_the_page(tmp_path):
    path = tmp_path / "crc.parquet"
    write_pyarrow(path, table_of("int64", 3000, 0.0, False, 3000, 1), "PLAIN", "snappy", "1.0",
                  4096, 256, 1 << 20)
    plan, chunk_bytes, pages = chunk_pages(path)
    assert check_page_crcs(chunk_bytes, plan, pages, str(path)) == len(pages)
    victim = 2
    assert pages.page_type[victim] == DATA_PAGE
    at = plan[0].offset + int(pages.offset[victim]) + int(pages.compressed_size[victim]) // 2
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x40
    path.write_bytes(bytes(raw))
    with pytest.raises(OSError):  # pyarrow, asked to verify, agrees the page is corrupt
        pq.read_table(path, page_checksum_verification=True)
    with pytest.raises(InputError, match=r"column 'x', row group 0, page 2: CRC32"):
        read_columns(LOCAL, str(path), ["x"])


def test_page_whose_values_disagree_with_its_header_is_refused(tmp_path):
    """Page 0 claims 51 values and page 1 49: their sum still matches the footer's 100, so
    only the per-page check sees that page 0 holds 50."""
    path = tmp_path / "count.parquet"
    pq.write_table(pa.table({"x": pa.array(np.arange(100, dtype=np.int64))},
                            schema=pa.schema([pa.field("x", pa.int64(), nullable=False)])),
                   path, compression="none", use_dictionary=False, write_statistics=False,
                   data_page_size=64, write_batch_size=50)
    plan, _, pages = chunk_pages(path)
    assert pages.num_values.tolist() == [50, 50]
    raw = bytearray(path.read_bytes())
    for page, claim in ((0, 51), (1, 49)):
        start = plan[0].offset + int(pages.header_offset[page])
        header = raw[start:plan[0].offset + int(pages.offset[page])]
        # DataPageHeader (field 5 after field 3: 0x2c), its num_values (i32, zigzag 50 = 100)
        at = start + bytes(header).index(b"\x2c\x15\x64") + 2
        raw[at] = claim * 2
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match=r"column 'x', row group 0, page 0: 400 bytes of PLAIN "
                                         r"values for 51 values"):
        read_columns(LOCAL, str(path), ["x"])


@pytest.mark.parametrize("codec", ["snappy", "zstd", "lz4", "gzip", "brotli"])
@pytest.mark.parametrize("declared", [-1, 1])
def test_page_decompressing_to_another_size_is_refused(tmp_path, codec, declared):
    path = tmp_path / "size.parquet"
    write_pyarrow(path, table_of("float64", 500, 0.0, False, 500, 2), "PLAIN", codec, "1.0",
                  1 << 20, 1024, 1 << 20)
    plan, chunk_bytes, pages = chunk_pages(path)
    columns = dict(pages.columns)
    columns["uncompressed_size"] = columns["uncompressed_size"] + declared
    with pytest.raises(InputError, match=r"column 'x', row group 0, page 0: "):
        decompress_pages_host(chunk_bytes, plan, PageTable(columns), str(path))


def test_unsupported_codec_is_named(tmp_path):
    path = tmp_path / "codec.parquet"
    write_pyarrow(path, table_of("int32", 100, 0.0, False, 100, 2), "PLAIN", "snappy", "1.0",
                  1 << 20, 1024, 1 << 20)
    plan, chunk_bytes, pages = chunk_pages(path)
    lzo = [dataclasses.replace(c, codec="LZO") for c in plan]
    with pytest.raises(InputError, match=r"column 'x', row group 0, page 0: codec LZO is not "
                                         r"supported"):
        decompress_pages_host(chunk_bytes, lzo, pages, str(path))


def hadoop_framed(body: bytes, pieces: int) -> bytes:
    """``body`` as Hadoop-framed LZ4: [BE u32 size][BE u32 compressed size][LZ4 block] ..."""
    codec = pa.Codec("lz4_raw")
    cuts = np.linspace(0, len(body), pieces + 1).astype(int)
    out = b""
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        block = codec.compress(body[a:b], asbytes=True)
        out += (b - a).to_bytes(4, "big") + len(block).to_bytes(4, "big") + block
    return out


def test_hadoop_framed_lz4_pages_decode(tmp_path):
    """The deprecated LZ4 codec's framing: an uncompressed file's pages re-stored as Hadoop
    frames (pyarrow writes only LZ4_RAW) decode to pyarrow's values."""
    path = tmp_path / "plain.parquet"
    write_pyarrow(path, table_of("int64", 4000, 0.3, True, 50, 4), "dictionary", "none", "1.0",
                  2048, 256, 1 << 20)
    plan, chunk_bytes, pages = chunk_pages(path)
    stored, offsets, sizes = b"", [], []
    for i in range(len(pages)):
        body = chunk_bytes[0][int(pages.offset[i]):int(pages.offset[i] + pages.compressed_size[i])]
        framed = hadoop_framed(body, 1 + i % 3)
        assert hadoop_lz4_frames(framed, len(body)) is not None
        offsets.append(len(stored))
        sizes.append(len(framed))
        stored += framed
    columns = dict(pages.columns)
    columns.update(offset=np.array(offsets, np.int64), compressed_size=np.array(sizes, np.int64),
                   crc=np.full(len(pages), -1, np.int64))
    framed_pages = PageTable(columns)
    lz4 = [dataclasses.replace(plan[0], codec="LZ4")]
    bodies = decompress_pages_host([stored], lz4, framed_pages, str(path))
    (values, valid), = decode_chunks(np, lz4, framed_pages, bodies, str(path))
    column = pq.read_table(path)["x"]
    want_valid = column.is_valid().to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(valid, want_valid)
    np.testing.assert_array_equal(values[want_valid], column.drop_null().to_numpy())


def test_hybrid_runs_of_every_width(xp):
    """RLE and bit-packed runs (the hybrid's two kinds) at widths 0..32, against values packed
    here bit by bit."""
    rng = np.random.default_rng(0)
    for width in range(0, 33):
        values = rng.integers(0, 1 << width, size=24, dtype=np.uint64) if width else \
            np.zeros(24, np.uint64)
        bits = [(int(v) >> b) & 1 for v in values for b in range(width)]
        packed = np.packbits(np.array(bits, np.uint8), bitorder="little").tobytes()
        rle_value = int(values[0]).to_bytes((width + 7) // 8, "little")
        stream = bytes([(3 << 1) | 1]) + packed + bytes([5 << 1]) + rle_value
        got, used = pd.decode_hybrid(xp, xp.asarray(np.frombuffer(stream, np.uint8)), width, 29)
        assert used == len(stream)
        np.testing.assert_array_equal(host(got), np.concatenate([values, [values[0]] * 5]))


def test_short_hybrid_stream_is_refused(xp):
    with pytest.raises(pd.PageError, match="bit-packed run"):
        pd.decode_hybrid(xp, xp.asarray(np.array([(2 << 1) | 1, 0xFF], np.uint8)), 3, 16)


@pytest.mark.parametrize("stream, width, expected", [
    (uleb128(2**33 << 1) + b"\x01", 1, [1] * 10),  # an RLE run of 2**33 copies
    (uleb128((2**30 << 1) | 1), 0, [0] * 10),  # a bit-packed run of 2**33 values of width 0
])
def test_a_run_longer_than_the_page_asks_is_not_allocated(xp, stream, width, expected):
    """A damaged run length far past the values a page holds yields the values asked for; it
    does not size an array (2**33 values would take 64 GiB)."""
    values, _ = pd.decode_hybrid(xp, xp.asarray(np.frombuffer(stream, np.uint8)), width, 10)
    assert host(values).tolist() == expected
