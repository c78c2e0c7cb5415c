"""The Snappy walk made ahead, by a batch's fetch right after its upload (decompress.walk_snappy_streams),
covers exactly the streams the decompression hands nvCOMP, with the verdicts the walk gives each
stream alone: v1 and v2 pages (v2's levels stay outside the stream), dictionary pages, pages of
uncompressed chunks left out, a damaged stream found, and a stream it never walked not vouched
for (the decompression walks that one itself). A batch's long streams go to the host's codec
instead (decompress.long_streams): which ones, their bytes, and a damaged one's error. The GPU launch is replaced by its NumPy
reference (kernels.parquet.snappy.stream_faults, same inputs and outputs), so this runs anywhere;
tests/test_batched_page_decoding.py holds the launch to the reference on a GPU."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernels.parquet import snappy
from kernels.parquet.format import DATA_PAGE_V2
from tasks.parquet.codec import decompress
from tasks.parquet.read.pages import parse_page_headers, plan_column_chunks, read_chunk_bytes
from tasks.parquet.store.filesystem import local


@pytest.fixture(autouse=True)
def walk_on_the_host(monkeypatch):
    monkeypatch.setattr(snappy, "stream_faults_on_gpu", snappy.stream_faults)


def stored_batch(tmp_path, version: str, compression="snappy"):
    rng = np.random.default_rng(4)
    n = 20_000
    table = pa.table({"src": rng.integers(0, 500, n), "dst": rng.integers(0, 2**40, n), "weight": rng.random(n)})
    path = tmp_path / f"g-{version}.parquet"
    pq.write_table(table, path, compression=compression, row_group_size=7000, data_page_size=16 << 10,
                   data_page_version=version)
    plan = plan_column_chunks(pq.ParquetFile(path).metadata, ["src", "dst", "weight"], str(path))
    chunks = read_chunk_bytes(local(), str(path), plan)
    pages = parse_page_headers(chunks, plan, str(path))
    sizes = np.array([len(c) for c in chunks], np.int64)
    starts = np.cumsum(sizes) - sizes
    return np.frombuffer(b"".join(chunks), np.uint8).copy(), plan, pages, starts


def streams_given_to_nvcomp(plan, pages, starts):
    """(start, length, declared) of the Snappy streams the decompression sends to nvCOMP."""
    s = decompress.PageStreams.of(plan, pages, starts)
    mine = (s.codec == "SNAPPY") & s.compressed & ~s.on_host & (s.size - s.levels > 0)
    return s.page_in[mine] + s.levels[mine], (s.stored - s.levels)[mine], (s.size - s.levels)[mine]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_the_walk_ahead_gives_each_stream_its_own_verdict(tmp_path, version):
    data, plan, pages, starts = stored_batch(tmp_path, version)
    walked = decompress.walk_snappy_streams(data, plan, pages, starts)
    start, length, declared = streams_given_to_nvcomp(plan, pages, starts)
    # every page is a stream but a v2 page its writer stored uncompressed (random ids and
    # weights do not shrink): its is_compressed flag is 0
    through_codec = (pages.page_type != DATA_PAGE_V2) | (pages.is_compressed != 0)
    assert start.size == np.count_nonzero(through_codec) > 0
    assert (version == "2.0") == (not through_codec.all())
    order = np.random.default_rng(1).permutation(start.size)  # asked in any order
    got = walked.faults(start[order], length[order], declared[order])
    assert got is not None and (got == 0).all()
    assert (got == snappy.stream_faults(data, start[order], length[order], declared[order])).all()


def test_a_damaged_stream_is_found_ahead(tmp_path):
    data, plan, pages, starts = stored_batch(tmp_path, "1.0")
    start, length, declared = streams_given_to_nvcomp(plan, pages, starts)
    data[start[3]] ^= 0x7F  # the preamble: the stated size no longer the declared one
    walked = decompress.walk_snappy_streams(data, plan, pages, starts)
    got = walked.faults(start, length, declared)
    assert got[3] != 0 and np.count_nonzero(got) == 1


def test_a_stream_not_walked_is_not_vouched_for(tmp_path):
    data, plan, pages, starts = stored_batch(tmp_path, "1.0")
    start, length, declared = streams_given_to_nvcomp(plan, pages, starts)
    walked = decompress.walk_snappy_streams(data, plan, pages, starts)
    assert walked.faults(start + 1, length, declared) is None
    assert walked.faults(start, length, declared + 1) is None


def test_uncompressed_chunks_have_no_streams(tmp_path):
    data, plan, pages, starts = stored_batch(tmp_path, "1.0", compression="none")
    walked = decompress.walk_snappy_streams(data, plan, pages, starts)
    assert walked.start.size == 0
    assert walked.faults(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0
    assert walked.faults(np.array([4]), np.array([9]), np.array([30])) is None


def batch_with_a_long_dictionary(tmp_path):
    """One row group whose src and weight columns have dictionary pages of 450 KB (100,000
    distinct ids) and 1 MiB beside data pages of 16 KiB: the shape of pyarrow's default files at
    scale."""
    rng = np.random.default_rng(7)
    n = 300_000
    table = pa.table({"src": rng.permutation(n) % 100_000, "dst": rng.integers(0, 500, n), "weight": rng.random(n)})
    path = tmp_path / "long.parquet"
    pq.write_table(table, path, compression="snappy", data_page_size=16 << 10)
    plan = plan_column_chunks(pq.ParquetFile(path).metadata, ["src", "dst", "weight"], str(path))
    chunks = read_chunk_bytes(local(), str(path), plan)
    pages = parse_page_headers(chunks, plan, str(path))
    sizes = np.array([len(c) for c in chunks], np.int64)
    starts = np.cumsum(sizes) - sizes
    return path, np.frombuffer(b"".join(chunks), np.uint8).copy(), chunks, plan, pages, starts


def walk_with_the_host(tmp_path, damage=None):
    from concurrent.futures import ThreadPoolExecutor

    path, data, chunks, plan, pages, starts = batch_with_a_long_dictionary(tmp_path)
    if damage is not None:
        chunks = damage(chunks, pages)
    with ThreadPoolExecutor(2) as pool:
        walked = decompress.walk_snappy_streams(data, plan, pages, starts,
                                                host=(chunks, pool, lambda n: np.empty(n, np.uint8), str(path)))
        for f in walked.host.futures:
            f.exception()
    return walked, data, chunks, plan, pages, starts


def test_long_streams_are_the_outliers_within_a_share_of_the_bytes():
    assert not decompress.long_streams(np.full(50, 1 << 20)).any()  # all alike: the GPU takes them all
    lengths = np.r_[np.full(40, 150_000), 900_000, 1_000_000]
    assert decompress.long_streams(lengths).tolist() == [False] * 40 + [True, True]
    assert not decompress.long_streams(np.r_[np.full(40, 2_000), 30_000]).any()  # short for the walk anyway
    many = np.r_[np.full(30, 150_000), np.full(10, 1_000_000)]  # the longest, up to half of the bytes
    assert decompress.long_streams(many).tolist() == [False] * 30 + [True] * 7 + [False] * 3
    assert not decompress.long_streams(np.array([1 << 20])).any()


def test_the_host_takes_the_long_dictionary_page_and_the_walk_the_rest(tmp_path):
    walked, data, chunks, plan, pages, starts = walk_with_the_host(tmp_path)
    start, length, declared = streams_given_to_nvcomp(plan, pages, starts)
    host = walked.host
    assert sorted(host.length.tolist()) == sorted(length[length > 400_000].tolist()) and host.start.size == 2
    k = host.find(start, length, declared)
    assert (k >= 0).sum() == 2 and sorted(length[k >= 0].tolist()) == sorted(host.length.tolist())
    mine = k < 0
    assert walked.faults(start[mine], length[mine], declared[mine]) is not None
    assert walked.faults(start, length, declared) is None  # the host's stream was never walked
    for j in range(2):
        (page,) = np.flatnonzero(pages.offset + starts[pages.chunk] == host.start[j])
        expected = decompress.decompress_pages_host(chunks, plan, pages, select=[page])[page]
        assert host.futures[j].result() is None
        assert np.array_equal(host.into[host.at[j]:host.at[j] + host.declared[j]], expected)


def test_a_damaged_long_stream_raises_its_pages_error(tmp_path):
    from tasks.errors import InputError

    def flip_the_preamble(chunks, pages):
        (page,) = np.flatnonzero((pages.compressed_size > 400_000) & (pages.compressed_size < 500_000))
        c, at = int(pages.chunk[page]), int(pages.offset[page])
        damaged = bytearray(chunks[c])
        damaged[at] ^= 0x7F
        return [bytes(damaged) if j == c else b for j, b in enumerate(chunks)]

    walked, *_ = walk_with_the_host(tmp_path, damage=flip_the_preamble)
    damaged = int(np.argmin(walked.host.length))
    with pytest.raises(InputError, match=r"column 'src', row group 0, page 0: SNAPPY stream holds \d+ bytes"):
        walked.host.futures[damaged].result()
    assert walked.host.futures[1 - damaged].result() is None
