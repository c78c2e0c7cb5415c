"""The batched page steps (kernels/parquet/batch.py; on CuPy kernels/cuda/parquet_values.cu)
decode what the page-by-page reference decodes, bit for bit, for every chunk they take; they
take every null-free PLAIN and dictionary chunk pyarrow writes, v1 and v2; they leave to the
reference every chunk with a null, another encoding, or a damaged page, and never return values
for a page the reference refuses. The Snappy walk that guards nvCOMP passes every stream
pyarrow's Snappy writes and passes no stream pyarrow's decoder refuses."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.parquet.batch import decode_pages
from kernels.parquet.decode import PageError
from kernels.parquet.snappy import stream_fault, stream_faults, stream_faults_on_gpu
from tasks.parquet.store.filesystem import local
from tasks.errors import InputError
from tasks.parquet.codec.decompress import decompress_pages_host
from tasks.parquet.read.pages import (batch_pages, decode_chunks, parse_page_headers, plan_column_chunks,
                                 read_chunk_bytes)
from tests.conftest import host

LOCAL = local()
TYPES = ["int32", "int64", "uint32", "uint64", "float32", "float64", "int16"]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def batch_of(path, xp, columns=("x",)):
    """The file's chunks as one batch (host codecs), with the reference's page bodies."""
    plan = plan_column_chunks(pq.ParquetFile(path).metadata, list(columns), str(path))
    stored = read_chunk_bytes(LOCAL, str(path), plan)
    pages = parse_page_headers(stored, plan, str(path))
    bodies = decompress_pages_host(stored, plan, pages, str(path))
    sizes = np.array([b.size for b in bodies], np.int64)
    body = np.concatenate(bodies) if bodies else np.zeros(0, np.uint8)
    batch = batch_pages(xp.asarray(body), np.cumsum(sizes) - sizes, pages, plan)
    return plan, pages, bodies, batch


def reference(xp, plan, pages, bodies, c):
    """The page-by-page decoder's (values, valid) of chunk c, or the PageError/InputError it raises."""
    try:
        return decode_chunks(xp, [plan[c]], pages.pages_of(c), [xp.asarray(bodies[i]) for i in pages.of_chunk(c)])[0]
    except (InputError, PageError) as exc:
        return exc


def assert_batched_agrees(xp, plan, pages, bodies, batch):
    """Every chunk the batched steps decode equals the reference's values bit for bit, and the
    reference finds no null and no fault there. Returns the reasons of the chunks left over."""
    left = []
    for c, (raw, reason) in enumerate(decode_pages(xp, batch)):
        expected = reference(xp, plan, pages, bodies, c)
        if raw is None:
            assert reason
            left.append(reason)
            continue
        assert not isinstance(expected, Exception), f"chunk {c} decoded, the reference refused: {expected}"
        values, valid = expected
        assert valid is None or bool(host(valid).all()), f"chunk {c} decoded despite a null"
        want = host(values)
        np.testing.assert_array_equal(host(raw), want.view(f"u{want.dtype.itemsize}"), err_msg=f"chunk {c}")
    return left


def table_of(dtype, n, distinct, nulls, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, max(distinct, 1), n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        values = values / np.dtype(dtype).type(3)
    mask = rng.random(n) < nulls if nulls else None
    return pa.table({"x": pa.array(values, mask=mask), "k": np.arange(n)})


@st.composite
def files(draw):
    return dict(dtype=draw(st.sampled_from(TYPES)), n=draw(st.integers(1, 4000)),
                distinct=draw(st.sampled_from([1, 7, 300, 5000])), nulls=draw(st.sampled_from([0.0, 0.0, 0.2])),
                dictionary=draw(st.sampled_from(["yes", "no", "fallback"])),
                version=draw(st.sampled_from(["1.0", "2.0"])), codec=draw(st.sampled_from(["none", "snappy", "zstd"])),
                page_size=draw(st.sampled_from([100, 1000, 1 << 20])),
                row_group=draw(st.sampled_from([333, 1 << 20])), nullable=draw(st.booleans()),
                seed=draw(st.integers(0, 2**32 - 1)))


def write(path, case):
    table = table_of(case["dtype"], case["n"], case["distinct"], case["nulls"], case["seed"])
    if not case["nullable"] and not case["nulls"]:
        table = table.cast(pa.schema([pa.field("x", table.schema.field("x").type, nullable=False),
                                      pa.field("k", pa.int64())]))
    pq.write_table(table, path, compression=case["codec"], data_page_version=case["version"],
                   data_page_size=case["page_size"], row_group_size=case["row_group"], write_batch_size=64,
                   use_dictionary=case["dictionary"] != "no",
                   dictionary_pagesize_limit=64 if case["dictionary"] == "fallback" else 1 << 20)
    return table


@settings(max_examples=40, **SETTINGS)
@given(case=files())
def test_pyarrow_chunks_decode_as_the_reference_decodes_them(tmp_path, xp, case):
    path = tmp_path / "g.parquet"
    table = write(path, case)
    left = assert_batched_agrees(xp, *batch_of(path, xp))
    has_nulls = table["x"].null_count > 0
    # every chunk without a null is taken: PLAIN, dictionary and fallback chunks, v1 and v2
    assert left == (["nulls or a page the reference names"] * len(left) if has_nulls else [])


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_dictionary_then_plain_pages_in_one_chunk(tmp_path, xp, version):
    """pyarrow's default chunk once its dictionary outgrows the limit: a dictionary page, its
    indexed pages, then PLAIN pages, all in one chunk of many pages."""
    case = dict(dtype="int64", n=20000, distinct=20000, nulls=0.0, dictionary="fallback", version=version,
                codec="snappy", page_size=2000, row_group=1 << 20, nullable=True, seed=3)
    write(tmp_path / "f.parquet", case)
    plan, pages, bodies, batch = batch_of(tmp_path / "f.parquet", xp)
    kinds = set(zip(pages.page_type.tolist(), pages.encoding.tolist()))
    assert {(2, 0), (0 if version == "1.0" else 3, 8), (0 if version == "1.0" else 3, 0)} <= kinds
    assert assert_batched_agrees(xp, plan, pages, bodies, batch) == []


def test_other_encodings_are_left_to_the_reference(tmp_path, xp):
    table = table_of("int64", 3000, 3000, 0.0, seed=1)
    for encoding in ("DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"):
        path = tmp_path / f"{encoding}.parquet"
        pq.write_table(table, path, use_dictionary=False, column_encoding={"x": encoding, "k": "PLAIN"})
        assert assert_batched_agrees(xp, *batch_of(path, xp)) == ["a value encoding decoded page by page"]


def damaged(body: np.ndarray, rng, flips: int) -> np.ndarray:
    out = body.copy()
    where = rng.integers(0, max(out.size, 1), flips)
    if out.size:
        out[where] ^= rng.integers(1, 256, flips).astype(np.uint8)
    return out


@settings(max_examples=60, **SETTINGS)
@given(case=files(), flips=st.integers(1, 4), target=st.sampled_from(["first", "any"]), seed=st.integers(0, 2**31))
def test_damaged_pages_are_never_decoded_unlike_the_reference(tmp_path, xp, case, flips, target, seed):
    """Bytes flipped in decompressed pages (levels, bit widths, run headers, indices, values):
    a chunk the batched steps still decode holds what the reference decodes from the same
    bytes; a page the reference refuses is always left to it."""
    path = tmp_path / "g.parquet"
    write(path, case)
    plan, pages, bodies, _ = batch_of(path, np)
    rng = np.random.default_rng(seed)
    # the first pages hold the levels' lengths, bit widths and dictionary indices of most chunks
    victims = [0] if target == "first" else rng.integers(0, len(bodies), 2)
    bodies = list(bodies)
    for i in victims:
        bodies[i] = damaged(bodies[i], rng, flips)
    sizes = np.array([b.size for b in bodies], np.int64)
    batch = batch_of(path, np)[3]
    batch.body = xp.asarray(np.concatenate(bodies))
    batch.body_start = np.cumsum(sizes) - sizes
    assert_batched_agrees(xp, plan, pages, bodies, batch)


@pytest.mark.parametrize("dictionary", [False, True], ids=["plain", "dictionary"])
def test_values_written_in_place_fill_their_rows_and_nothing_else(tmp_path, xp, dictionary):
    """Chunks given a place in a caller's array (``into``: the edge list being filled) land at
    their rows there, as the reference decodes them, and every byte outside those rows stays as
    it was; a chunk whose pages count other than its rows, or one whose page counts a negative
    number of values (which would move the pages after it before its first row), is left to the
    reference with its place untouched."""
    path = tmp_path / "x.parquet"
    values = np.arange(3000, dtype=np.int64) * 7 % 1000
    pq.write_table(pa.table({"x": values}), path, row_group_size=1000, data_page_size=512, write_batch_size=100,
                   use_dictionary=dictionary)
    plan, pages, bodies, batch = batch_of(path, xp)
    dest = xp.full(5000, 0xDEADBEEF, dtype=np.uint64)
    places = [(dest, 100, 1000), (dest, 1100, 1000), (dest, 3000, 999)]  # the last one row short
    results = decode_pages(xp, batch, into=places)
    assert results[2] == (None, "values counted other than its rows")
    expected = np.full(5000, 0xDEADBEEF, np.uint64)
    expected[100:2100] = values[:2000].view(np.uint64)
    np.testing.assert_array_equal(host(dest), expected)
    for c in (0, 1):
        np.testing.assert_array_equal(host(results[c][0]), values[1000 * c:1000 * (c + 1)].view(np.uint64))

    data = np.flatnonzero((pages.chunk == 1) & (pages.page_type != 2))  # chunk 1's data pages
    assert data.size >= 2
    counts = pages.num_values.copy()
    counts[data[0]], counts[data[1]] = -5, counts[data[1]] + counts[data[0]] + 5  # the total kept
    pages.columns["num_values"] = counts
    dest[:] = 0xDEADBEEF
    results = decode_pages(xp, batch, into=[(dest, 0, 1000), (dest, 1000, 1000), (dest, 2000, 1000)])
    assert results[1] == (None, "a negative value count")
    assert (host(dest)[1000:2000] == 0xDEADBEEF).all() and (host(dest)[:1000] == values[:1000].view(np.uint64)).all()


def test_empty_batch_and_required_columns(tmp_path, xp):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"x": pa.array([], pa.int64()), "k": pa.array([], pa.int64())}), path)
    plan, pages, bodies, batch = batch_of(path, xp)
    assert assert_batched_agrees(xp, plan, pages, bodies, batch) == []


# ---- the Snappy walk ----

def snappy(data: bytes) -> bytes:
    return pa.Codec("snappy").compress(data, asbytes=True)


def snappy_accepts(stream: bytes, size: int) -> bool:
    try:
        return len(pa.Codec("snappy").decompress(stream, decompressed_size=size)) == size
    except (pa.ArrowException, OSError):
        return False


STREAM_SOURCES = {
    "zeros": lambda rng, n: bytes(n),
    "random": lambda rng, n: rng.integers(0, 256, n, dtype=np.uint8).tobytes(),
    "repeats": lambda rng, n: (bytes(rng.integers(0, 256, 13, dtype=np.uint8)) * (n // 13 + 1))[:n],
    "ints": lambda rng, n: rng.integers(0, 1000, n // 8 + 1).astype(np.int64).tobytes()[:n],
}


@pytest.mark.parametrize("source", sorted(STREAM_SOURCES))
@pytest.mark.parametrize("n", [0, 1, 17, 4096, 70000, 300000])
def test_every_snappy_stream_pyarrow_writes_passes(source, n):
    data = STREAM_SOURCES[source](np.random.default_rng(n), n)
    assert stream_fault(snappy(data), n) == 0


@settings(max_examples=300, deadline=None)
@given(source=st.sampled_from(sorted(STREAM_SOURCES)), n=st.integers(0, 3000), seed=st.integers(0, 2**31),
       damage=st.sampled_from(["flip", "truncate", "extend", "size"]))
def test_no_damaged_snappy_stream_passes_that_the_decoder_refuses(source, n, seed, damage):
    rng = np.random.default_rng(seed)
    stream = bytearray(snappy(STREAM_SOURCES[source](rng, n)))
    declared = n
    if damage == "flip":
        for at in rng.integers(0, len(stream), rng.integers(1, 4)):
            stream[at] ^= int(rng.integers(1, 256))
    elif damage == "truncate":
        del stream[int(rng.integers(0, len(stream))):]
    elif damage == "extend":
        stream += bytes(rng.integers(0, 256, int(rng.integers(1, 5)), dtype=np.uint8))
    else:
        declared = int(rng.integers(0, 2 * n + 2))
    if stream_fault(bytes(stream), declared) == 0:
        assert snappy_accepts(bytes(stream), declared)


SNAPPY_RULES = [
    (b"\x05\x10abcde", 5, "a literal: passes"),
    (b"\x08\x0cabcd\x01\x04", 8, "copy-1 of 4 bytes at offset 4: passes"),
    (b"\x05\x10abcd", 5, "a literal past the stream's end"),
    (b"\x06\x10abcde", 6, "fewer bytes than declared"),
    (b"\x05\x10abcde", 4, "a preamble other than the declared size"),
    (b"\x08\x0cabcd\x01\x00", 8, "a copy at offset 0"),
    (b"\x08\x0cabcd\x01\x05", 8, "a copy reaching before the first byte"),
    (b"\x08\x0cabcd\x05\x04", 8, "a copy past the declared size"),
    (b"\x05\x10abcde\x00", 5, "bytes after the last element"),
    (b"\x80\x80\x80\x80\x80\x01", 0, "a preamble longer than 5 bytes"),
    (b"", 0, "no preamble"),
    (b"\x00", 0, "an empty stream: passes"),
]
# the GPU walks a stream a window of 1,024 bytes at a time: elements that end past a window
WINDOW_CASES = [
    (b"\x80\x10\xf4\xff\x07" + bytes(2048), 2048, "a literal of 2,048 bytes (two length bytes) across windows: passes"),
    (b"\x80\x10\xf4\xff\x08" + bytes(2048), 2048, "a literal longer than the stream, across windows"),
    (b"\x80\x80\x04\xf8\xff\xff\x00" + bytes(65536), 65536, "a literal of 65,536 bytes (three length bytes): passes"),
    (b"\xff\xff\xff\xff\x0f\xfc\xff\xff\xff\xff" + bytes(8), 0xffffffff, "a literal of 2^32 bytes (four length bytes)"),
    # (windows start after the preamble: window position p is stream byte p + 2 here)
    (b"\xe4\x12\x0cabcd" + b"\x01\x04" * 600, 2404, "two-byte copy elements, one across the first window's end: passes"),
    (b"\xe4\x12\x0cabcd" + b"\x01\x04" * 509 + b"\xe1\xff" + b"\x01\x04" * 90, 2404,
     "the copy across the first window's end reaching too far back"),
    (b"\x80\x08\xf4\xfb\x03" + bytes(1020) + b"\x0cabcd", 1024, "a literal starting at a window's last byte: passes"),
]


@pytest.mark.parametrize("stream, declared, case", SNAPPY_RULES + WINDOW_CASES)
def test_snappy_walk_rules(stream, declared, case):
    assert (stream_fault(stream, declared) == 0) == case.endswith("passes"), case
    if case.endswith("passes"):
        assert snappy_accepts(stream, declared)


def test_snappy_walk_on_the_gpu_agrees_with_the_reference(backend):
    if backend != "cupy":
        pytest.skip("the kernel runs on CuPy")
    import cupy as cp

    rng = np.random.default_rng(5)
    streams, declared = [], []
    for k in range(400):
        n = int(rng.integers(0, 5000 if k % 10 else 120000))  # some streams of many windows
        s = bytearray(snappy(STREAM_SOURCES[sorted(STREAM_SOURCES)[k % 4]](rng, n)))
        if k % 3 and s:
            s[int(rng.integers(0, len(s)))] ^= int(rng.integers(1, 256))
        streams.append(bytes(s))
        declared.append(n if k % 7 else n + 1)
    for stream, size, _ in SNAPPY_RULES + WINDOW_CASES:
        streams.append(stream)
        declared.append(size)
    lengths = np.array([len(s) for s in streams], np.int64)
    starts = np.cumsum(lengths) - lengths
    data = np.frombuffer(b"".join(streams), np.uint8)
    want = stream_faults(data, starts, lengths, np.array(declared))
    got = stream_faults_on_gpu(cp.asarray(data), starts, lengths, np.array(declared))
    np.testing.assert_array_equal(got, want)
    assert (want == 0).sum() > 50 and (want != 0).sum() > 50
