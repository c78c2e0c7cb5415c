"""The page reader as a reader backend (--reader gpu) reads every input the host reader (pyarrow)
reads into the same arrays, bit for bit, refuses every bad input with the same line (corrupt
data: the same line up to the decoder's own words in parentheses), leaves the column chunks it
does not take (string ids, decimal and float16 weights) to the host reader and says so, and
gives the same results and a summary that names the reader when a flow runs with it. The
inputs are the ones the other suites build (tests/test_datasets.py, tests/test_bad_input.py).
Read-level cases run on NumPy and, where a GPU is usable, on CuPy."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import pipeline as pipeline_cli
from flows.arguments import build_parser, parameters
from flows.mst import mst_flow
from kernels import backend as be
from tasks.errors import InputError
from tasks.parquet.read import page_reader
from tasks.parquet.codec.decompress import nvcomp_usable
from tasks.parquet.dataset.plan import plan_input
from tasks.parquet.read.reader import read_edges, read_share, resolve_reader
from tasks.report import merge_reader_reports, reader_text
from tests import test_bad_input as bad_input
from tests import test_datasets as datasets
from tests.conftest import host
from tests.helpers import assert_same_results, random_edges, run, write_edges

READERS = ("host", "gpu")


def outcome(read):
    """What a read gave: its result, or the exception it raised."""
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 -- compared between the readers below
        return exc


def assert_same_arrays(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    a, b = host(a), host(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()  # weights bit for bit


def assert_same_tables(by_host, by_pages):
    assert (by_pages.path, by_pages.skipped) == (by_host.path, by_host.skipped)
    for a, b in ((by_host.src, by_pages.src), (by_host.dst, by_pages.dst), (by_host.weight, by_pages.weight)):
        assert_same_arrays(a, b)
    assert (by_host.names is None) == (by_pages.names is None)
    if by_host.names is not None:
        assert by_pages.names.equals(by_host.names)


def assert_same_refusal(by_host: Exception, by_pages: Exception):
    """The same line; for damaged data the same line up to the decoder's own detail."""
    assert type(by_pages) is type(by_host), (by_host, by_pages)
    if "corrupt Parquet data in column" in str(by_host):
        assert str(by_pages).split(" (")[0] == str(by_host).split(" (")[0]
    else:
        assert str(by_pages) == str(by_host)


def read_alike(path, xp=np, **columns):
    """Both readers' outcomes, compared; the page reader's table (or error)."""
    by_host, by_pages = (outcome(lambda: read_edges(plan_input(str(path), **columns), xp=xp, reader=r))
                         for r in READERS)
    if isinstance(by_host, Exception):
        assert isinstance(by_pages, Exception), f"the host reader refused ({by_host}), the page reader did not"
        assert_same_refusal(by_host, by_pages)
    else:
        assert not isinstance(by_pages, Exception), f"the page reader refused: {by_pages}"
        assert_same_tables(by_host, by_pages)
        assert by_host.report["reader"] == "host" and by_pages.report["reader"] == "gpu"
    return by_pages


def fallbacks(table) -> dict:
    return table.report["fallbacks"]


@pytest.mark.parametrize("case", datasets.ID_AND_WEIGHT_CASES, ids=list(datasets.ID_AND_WEIGHT_CASES))
def test_id_and_weight_types_read_alike(tmp_path, xp, case):
    table, *_ = datasets.ID_AND_WEIGHT_CASES[case]()
    pq.write_table(table, tmp_path / "g.parquet")
    got = read_alike(tmp_path / "g.parquet", xp)
    expected = {"string-ids": "string ids", "view-ids": "string ids", "decimal": "decimal weights",
                "float16": "float16 weights"}
    reason = next((r for key, r in expected.items() if key in case), None)
    chunks = 2 if reason == "string ids" else 1  # src and dst
    assert fallbacks(got) == ({reason: chunks} if reason else {})
    column = "weight" if reason and "weights" in reason else "src"
    assert got.report["columns"][column] == ({"host": 1} if reason else {"gpu": 1})


@pytest.mark.parametrize("layout", datasets.LAYOUTS, ids=[f.__name__ for f in datasets.LAYOUTS])
def test_file_layouts_read_alike(tmp_path, xp, layout):
    """Empty row groups, row groups of one row, files without row groups, types differing by
    file (int16/uint8 ids, float16, dictionary float32 and decimal weights), data page v2,
    BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED, 120 files of one row."""
    src, dst, weight = random_edges()
    layout(tmp_path, pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight}))
    given = tmp_path / "g.parquet" if (tmp_path / "g.parquet").exists() else tmp_path
    got = read_alike(given, xp)
    if layout is datasets.types_differing_by_file:
        assert fallbacks(got) == {"float16 weights": 1, "decimal weights": 1}
        assert got.report["columns"]["weight"] == {"host": 2, "gpu": 1}
    else:
        assert fallbacks(got) == {}


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd", "lz4", "gzip", "brotli"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_codecs_page_versions_and_checksums_read_alike(tmp_path, xp, codec, version):
    """Several row groups of several pages, nullable columns without nulls, page CRCs."""
    rng = np.random.default_rng(5)
    n = 5000
    path = write_edges(tmp_path / "g.parquet", pa.array(rng.integers(-2**40, 2**40, n)),
                       pa.array(rng.integers(0, 2**31, n).astype(np.uint32)), pa.array(rng.random(n)),
                       compression=codec, data_page_version=version, row_group_size=1200, data_page_size=2000,
                       write_page_checksum=True)
    got = read_alike(path, xp)
    assert got.report["columns"] == {c: {"gpu": 5} for c in ("src", "dst", "weight")}


@pytest.mark.parametrize("codec", ["zstd", "lz4", "gzip", "brotli"])
def test_pages_without_crc32s_in_codecs_nvcomp_may_trap_on_read_alike(tmp_path, xp, codec):
    """No page CRC32s, so on a GPU the host's codecs decompress these chunks (runs of pages on a
    pool of threads into one pinned buffer, one upload): five row groups of several pages read
    alike; then a byte of row group 3's weight pages flipped, read alike too (refused alike, or
    the same values where the codec cannot tell)."""
    rng = np.random.default_rng(6)
    n = 20000
    path = write_edges(tmp_path / "g.parquet", pa.array(rng.integers(-2**40, 2**40, n)),
                       pa.array(rng.integers(0, 300, n)), pa.array(rng.random(n)),
                       compression=codec, row_group_size=4000, data_page_size=3000)
    got = read_alike(path, xp)
    assert got.report["columns"] == {c: {"gpu": 5} for c in ("src", "dst", "weight")}
    if xp is not np and nvcomp_usable():
        assert got.report["host_decompressed"] == {page_reader.UNVERIFIED: 15}
    chunk = pq.ParquetFile(path).metadata.row_group(3).column(2)
    data = bytearray(path.read_bytes())
    data[chunk.data_page_offset + chunk.total_compressed_size // 2] ^= 0x5A
    path.write_bytes(bytes(data))
    read_alike(path, xp)


def write_long_dictionaries(path, rows: int, row_groups: int):
    """pyarrow's shape at scale: per row group, a src dictionary page of about 320 KB (40,000
    distinct ids) beside data pages of 16 KiB, its bytes a small share of the row group's, so on
    a GPU the host's codec takes the dictionary pages (decompress.long_streams) and the GPU the
    rest."""
    rng = np.random.default_rng(12)
    return write_edges(path, pa.array(rng.permutation(rows) % 40_000), pa.array(rng.integers(0, 500, rows)),
                       pa.array(rng.integers(0, 1000, rows) / 7), compression="snappy", data_page_size=16 << 10,
                       row_group_size=rows // row_groups)


def test_long_snappy_streams_read_alike(tmp_path, xp):
    """Three row groups, each with a long dictionary page, read alike; on a GPU those three
    pages are decompressed on the host and counted so."""
    got = read_alike(write_long_dictionaries(tmp_path / "g.parquet", 600_000, 3), xp)
    assert got.report["columns"] == {c: {"gpu": 3} for c in ("src", "dst", "weight")}
    on_gpu = xp is not np and nvcomp_usable()
    assert got.report["host_streams"] == ({page_reader.LONG_STREAMS: 3} if on_gpu else {})
    said = "; decompressed on the host beside the GPU: Snappy pages far longer than their batch's others: 3"
    assert reader_text(got.report).endswith(said) == on_gpu


def test_a_damaged_long_snappy_stream_is_refused_alike(tmp_path, xp):
    """A byte flipped in row group 1's src dictionary page (no CRC32s): refused alike, the page
    named by the page reader."""
    path = write_long_dictionaries(tmp_path / "g.parquet", 600_000, 3)
    chunk = pq.ParquetFile(path).metadata.row_group(1).column(0)
    data = bytearray(path.read_bytes())
    data[chunk.dictionary_page_offset + 40] ^= 0x5A  # inside the page's header or its Snappy preamble
    path.write_bytes(bytes(data))
    by_pages = read_alike(path, xp)
    assert isinstance(by_pages, InputError) and "column 'src', row group 1" in str(by_pages)


def read_batches_in_flight(monkeypatch, xp):
    """Every row group a batch of its own, BATCHES_IN_FLIGHT batches read, uploaded and decoded
    at once, each with a slot of its own: the page reader's way on a GPU, here on NumPy too
    (there it decodes batches on a pool of threads)."""
    monkeypatch.setattr(page_reader, "BATCH_BYTES", 1)
    if xp is np:
        monkeypatch.setattr(page_reader, "run_in_order", lambda work, batches, threads: work.__self__.in_flight(batches))


def test_batches_in_flight_read_alike(tmp_path, xp, monkeypatch):
    """Twelve batches over two files (the second file's first batches read while the first
    file's last are decoded), two codecs."""
    read_batches_in_flight(monkeypatch, xp)
    rng = np.random.default_rng(8)
    for k, codec in enumerate(["snappy", "none"]):
        n = 3000
        write_edges(tmp_path / f"part-{k}.parquet", pa.array(rng.integers(0, 2**40, n)), pa.array(rng.integers(0, 99, n)),
                    pa.array(rng.random(n)), compression=codec, row_group_size=500, write_page_checksum=True)
    got = read_alike(tmp_path, xp)
    assert got.report["columns"] == {c: {"gpu": 12} for c in ("src", "dst", "weight")}


# weights of the two files -> the row groups (of twelve) whose every value is written in place
IN_PLACE = {"plain": 12, "dictionary": 12, "float32": 12, "float32 beside float64": 6, "byte_stream_split": 0,
            "int64": 0}


@pytest.mark.parametrize("weights", list(IN_PLACE))
def test_values_written_in_place_read_alike(tmp_path, xp, monkeypatch, weights):
    """Ids and weights whose physical type is the edge list's dtype (int64 ids; float64 weights,
    or float32 where every file's are) of whole row groups are written by the batched steps where
    they stay in the edge list (PLAIN and dictionary pages); beside them a column the batched
    steps leave to the page decoder (BYTE_STREAM_SPLIT) or one that needs more than a copy
    (float32 weights widened beside another file's float64, integer weights checked for
    exactness) is stored as before. Six row groups a file in batches of one or two, two files:
    both readers give the same arrays, and the row groups written in place are those expected."""
    monkeypatch.setattr(page_reader, "BATCH_BYTES", 2 * 500 * 24)
    checked = []
    check_in_place = page_reader.PageRead.check_in_place
    monkeypatch.setattr(page_reader.PageRead, "check_in_place",
                        lambda self, units: checked.append(len(units)) or check_in_place(self, units))
    rng = np.random.default_rng(12)
    n = 3000
    options = dict(row_group_size=500, use_dictionary=weights == "dictionary")
    if weights == "byte_stream_split":
        options.update(column_encoding={"src": "PLAIN", "dst": "PLAIN", "weight": "BYTE_STREAM_SPLIT"})
    for k in range(2):
        values = {"plain": rng.random(n), "dictionary": rng.integers(0, 9, n) / 4, "byte_stream_split": rng.random(n),
                  "float32": rng.random(n).astype(np.float32), "int64": rng.integers(-2**53, 2**53, n),
                  "float32 beside float64": rng.random(n).astype(np.float32) if k == 0 else rng.random(n)}[weights]
        write_edges(tmp_path / f"part-{k}.parquet", pa.array(rng.integers(0, 2**40, n)), pa.array(rng.integers(0, 99, n)),
                    pa.array(values), **options)
    got = read_alike(tmp_path, xp)
    assert got.report["columns"] == {c: {"gpu": 12} for c in ("src", "dst", "weight")}
    assert sum(checked) == IN_PLACE[weights]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nonfinite_weight_in_a_batch_written_in_place_is_named_by_its_row(tmp_path, xp, monkeypatch, bad):
    """Four row groups in one batch, their values written in place: the first non-finite
    weight (row group 2; another in row group 3) is named by its row, as the host reader names
    it."""
    monkeypatch.setattr(page_reader, "BATCH_BYTES", 1 << 20)
    rng = np.random.default_rng(13)
    n = 2000
    weight = rng.random(n)
    weight[1234], weight[1777] = bad, np.nan
    path = write_edges(tmp_path / "g.parquet", pa.array(rng.integers(0, 2**40, n)), pa.array(rng.integers(0, 99, n)),
                       pa.array(weight), row_group_size=500)
    got = outcome(lambda: read_alike(path, xp))
    assert isinstance(got, InputError) and "at row 1234;" in str(got)


def test_batches_in_flight_raise_the_first_damaged_batchs_error(tmp_path, xp, monkeypatch):
    """Row groups 2 and 4 damaged (one value byte each, under a CRC32): the error names row
    group 2, as the host reader's does, though row groups 3 and 4 are read beside it."""
    read_batches_in_flight(monkeypatch, xp)
    rng = np.random.default_rng(9)
    n = 3000
    path = write_edges(tmp_path / "g.parquet", pa.array(rng.integers(0, 2**40, n)), pa.array(rng.integers(0, 99, n)),
                       pa.array(rng.random(n)), compression="none", row_group_size=500, write_page_checksum=True,
                       use_dictionary=False)
    metadata = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for group in (2, 4):
        chunk = metadata.row_group(group).column(1)  # dst: its last byte is a value byte
        data[chunk.data_page_offset + chunk.total_compressed_size - 1] ^= 0x5A
    path.write_bytes(bytes(data))
    by_pages = read_alike(path, xp)
    assert isinstance(by_pages, InputError) and "column 'dst', row group 2 " in str(by_pages)


@pytest.mark.parametrize("first, second, out_type", [
    (pa.array([0, 1], pa.int32()), pa.array([2, -3], pa.int64()), np.int64),
    (pa.array([0, 2**63 - 1], pa.uint64()), pa.array([2, -3], pa.int64()), np.int64),
    (pa.array([0, 2**64 - 1], pa.uint64()), pa.array([2, 3], pa.int64()), np.uint64),
    (pa.array([0, 2**64 - 1], pa.uint64()), pa.array([2, 3], pa.uint8()), np.uint64),
], ids=["int32-with-int64", "uint64-below-2-pow-63-with-negative-int64", "uint64-above-2-pow-63-with-non-negative-int64",
        "uint64-with-uint8"])
def test_integer_id_types_across_files_unify_alike(tmp_path, xp, first, second, out_type):
    write_edges(tmp_path / "a.parquet", first, first)
    write_edges(tmp_path / "b.parquet", second, second)
    got = read_alike(tmp_path, xp, weight_col=None)
    assert got.src.dtype == out_type


BAD_INPUT = [c for c in bad_input.MST_CASES if "fifo" not in c.__name__]  # a FIFO would wait for a writer


@pytest.mark.parametrize("case", BAD_INPUT, ids=[c.__name__ for c in BAD_INPUT])
def test_bad_input_is_refused_alike(tmp_path, case):
    """Each bad input of tests/test_bad_input.py, read by both readers: the same refusal (the
    cases about output paths read fine, alike)."""
    path, extra, expected = case(tmp_path)
    options = dict(zip(extra[::2], extra[1::2]))
    columns = {name: options[flag] for flag, name in (("--src-col", "src_col"), ("--dst-col", "dst_col"),
                                                      ("--weight-col", "weight_col")) if flag in options}
    got = read_alike(path, **columns)
    if isinstance(got, Exception) and "corrupt" not in expected:
        assert expected in str(got) or case is bad_input.missing  # the command line names a missing input


def test_a_null_in_a_later_row_group_of_a_later_file_is_named_alike(tmp_path):
    write_edges(tmp_path / "a.parquet", list(range(100)), list(range(1, 101)), [1.0] * 100, row_group_size=30)
    write_edges(tmp_path / "b.parquet", list(range(100)), pa.array([1] * 77 + [None] + [1] * 22, pa.int64()),
                [1.0] * 100, row_group_size=30)
    error = read_alike(tmp_path)
    assert str(error) == f"{tmp_path / 'b.parquet'}: column 'dst' is null at row 77"


def test_an_encoding_the_page_reader_does_not_take_goes_to_pyarrow(tmp_path):
    """A data page whose header claims DELTA_LENGTH_BYTE_ARRAY for int64 ids: the page reader
    leaves the chunk to pyarrow, which refuses it with the host reader's own line."""
    path = write_edges(tmp_path / "g.parquet", [1, 2, 3], [2, 3, 1], [1.0, 1.0, 1.0], use_dictionary=False,
                       compression="none")
    data = bytearray(path.read_bytes())
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    # DataPageHeader in Thrift's compact protocol: num_values 3, encoding PLAIN, levels in RLE
    # (each an i32 field, header byte 0x15, then its zigzag varint: 3 -> 6, PLAIN -> 0, RLE -> 6)
    fields = data.index(bytes([0x15, 0x06, 0x15, 0x00, 0x15, 0x06]), chunk.data_page_offset)
    data[fields + 3] = 12  # zigzag(6): DELTA_LENGTH_BYTE_ARRAY
    path.write_bytes(bytes(data))
    error = read_alike(path)
    assert isinstance(error, InputError) and "corrupt Parquet data in column 'src', row group 0" in str(error)


@pytest.mark.parametrize("size", [2, 3])
def test_partitioned_shares_read_alike(tmp_path, size):
    """Every rank's share of a dataset of several files and row groups, mixed uint64 and int64
    ids: the same rows, row offset and signs; a row group on a share boundary is cut alike."""
    rng = np.random.default_rng(11)
    write_edges(tmp_path / "a.parquet", pa.array(rng.integers(0, 2**62, 700).astype(np.uint64)),
                pa.array(rng.integers(0, 2**62, 700).astype(np.uint64)), pa.array(rng.random(700), pa.float32()),
                row_group_size=250)
    write_edges(tmp_path / "b.parquet", pa.array(rng.integers(-50, 50, 500)), pa.array(rng.integers(0, 50, 500)),
                pa.array(rng.integers(0, 9, 500)), row_group_size=90, compression="zstd")
    plan = plan_input(tmp_path)
    reports = []
    for rank in range(size):
        by_host, by_pages = (read_share(plan, rank, size, reader=r) for r in READERS)
        for a, b in ((by_host.src, by_pages.src), (by_host.dst, by_pages.dst), (by_host.weight, by_pages.weight)):
            assert_same_arrays(a, b)
        assert by_pages.row_offset == by_host.row_offset and by_pages.signs == by_host.signs
        reports.append(by_pages.report)
    merged = merge_reader_reports(reports)
    assert sum(merged["columns"]["src"].values()) >= 3 + 6  # every row group, those on a boundary twice


def test_a_null_in_a_rank_share_is_named_alike(tmp_path):
    write_edges(tmp_path / "g.parquet", list(range(100)), list(range(1, 101)),
                pa.array([1.0] * 60 + [None] + [1.0] * 39), row_group_size=40)
    plan = plan_input(tmp_path / "g.parquet")
    assert read_share(plan, 0, 2, reader="gpu").rows == 50  # the null is in rank 1's rows
    errors = [outcome(lambda: read_share(plan, 1, 2, reader=r)) for r in READERS]
    assert str(errors[0]) == str(errors[1]) == f"{tmp_path / 'g.parquet'}: weight column 'weight' is null at row 60"


def test_auto_is_the_host_reader_without_a_gpu_and_gpu_runs_on_numpy():
    assert resolve_reader("auto", np) == "host" and resolve_reader(None, np) == "host"
    assert resolve_reader("gpu", np) == "gpu" and resolve_reader("host", np) == "host"
    with pytest.raises(InputError, match=r"unknown Parquet reader 'fast' \(choose from auto, gpu, host\)"):
        resolve_reader("fast", np)


def test_auto_reads_with_the_page_reader_where_cupy_and_nvcomp_are_usable(tmp_path, xp):
    path = write_edges(tmp_path / "g.parquet", [1, 2, 3], [2, 3, 1], [1.0, 2.0, 3.0])
    on_gpu = xp is not np and nvcomp_usable()
    assert read_edges(plan_input(str(path)), xp=xp).report["reader"] == ("gpu" if on_gpu else "host")


def test_the_reader_option_reaches_the_flows():
    for kind in ("mst", "bfs", "pipeline"):
        extra = [] if kind == "mst" else ["--source", "0"]
        args = build_parser(kind).parse_args(["g.parquet", "--reader", "gpu", *extra])
        assert parameters(kind, args)["reader"] == "gpu"
        assert parameters(kind, build_parser(kind).parse_args(["g.parquet", *extra]))["reader"] == "auto"


def mixed_dataset(root):
    """Two files of float64 weights beside one of decimal weights, several row groups each."""
    src, dst, weight = random_edges(seed=4, n=40, m=300)
    table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight})
    root.mkdir()
    pq.write_table(table.slice(0, 100), root / "a.parquet", row_group_size=30)
    pq.write_table(table.slice(100, 100), root / "b.parquet", row_group_size=50, compression="zstd")
    pq.write_table(table.slice(200).set_column(2, "weight", table["weight"].slice(200).cast(pa.decimal128(12, 3))),
                   root / "c.parquet", row_group_size=40)
    return root


@pytest.mark.usefixtures("prefect_server")
def test_both_readers_write_identical_results_and_the_summary_names_the_reader(tmp_path, capsys):
    root = mixed_dataset(tmp_path / "edges")
    for r in READERS:
        code, _, err = run(pipeline_cli.main, [root, "--source", "0", "--reader", r, "--output", tmp_path / r], capsys)
        assert code == 0, err
    for name in ("mst_edges.parquet", "bfs_distances.parquet"):
        assert_same_results(pq.read_table(tmp_path / "gpu" / name), pq.read_table(tmp_path / "host" / name))
    summary = mst_flow(str(root), output=str(tmp_path / "summary"), reader="gpu")
    assert summary["reader"]["reader"] == "gpu"
    assert summary["reader"]["columns"] == {"src": {"gpu": 9}, "dst": {"gpu": 9}, "weight": {"gpu": 6, "host": 3}}
    assert summary["reader"]["fallbacks"] == {"decimal weights": 3}
    assert summary["reader"]["page_decoded"] == {}  # every chunk went through the batched steps
    on = be.resolve(None)
    decompression = "nvCOMP" if on == "cupy" and nvcomp_usable() else "host"
    # b.parquet's 6 Zstd chunks carry no CRC32s: nvCOMP decodes only Snappy streams the GPU walked first
    unverified = "; decompressed on the host: chunks without CRC32s in a codec nvCOMP may trap on: 6" \
        if decompression == "nvCOMP" else ""
    assert reader_text(summary["reader"]) == (
        f"gpu page reader on {on}, {decompression} decompression: src 9/9 column chunks, dst 9/9, weight 6/9; "
        f"host reader for 3 (decimal weights: 3){unverified}")
    assert mst_flow(str(root), output=str(tmp_path / "host-summary"), reader="host")["reader"]["reader"] == "host"


@pytest.mark.usefixtures("prefect_server")
def test_a_partitioned_run_with_either_reader_writes_identical_results(tmp_path, client):
    from tasks.partitioned.driver import run_partitioned

    root = mixed_dataset(tmp_path / "edges")
    summaries = {r: run_partitioned(str(root), str(tmp_path / r), 2, source=["0"], client=client, reader=r)
                 for r in READERS}
    for name in ("mst_edges.parquet", "bfs_distances.parquet"):
        assert pq.read_table(tmp_path / "gpu" / name).equals(pq.read_table(tmp_path / "host" / name))
    report = summaries["gpu"]["reader"]
    assert report["reader"] == "gpu" and set(report["fallbacks"]) == {"decimal weights"}
    assert sum(report["columns"]["src"].values()) >= 9  # a row group on the share boundary counts twice
