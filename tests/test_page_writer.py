"""The page writer (--writer gpu) writes every result file that pyarrow's writer writes: pyarrow
reads back the same table (schema, values, nulls, row order, the result key in the footer),
DuckDB reads the same values, every page's CRC32 verifies, and each row group's statistics are
those pyarrow computes; for every result, compression, with and without nulls, for no row, one
row, several pages and several row groups, int32 and int64 ids, float32 and float64 weights.
Its hybrid encoder round-trips through the page reader's decoder, a dictionary that would pass
1 MiB gives way to PLAIN, and its files are no larger than pyarrow's. A flow run with --writer
gpu writes the same tables as one with --writer host and says which writer wrote each file;
string ids stay on pyarrow's writer, which the summary says. Runs on NumPy and, where a GPU is
usable, on CuPy."""
import os
import subprocess
import sys

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows import pipeline as pipeline_cli
from flows.arguments import build_parser, parameters
from flows.pipeline import pipeline_flow
from kernels import backend as be
from kernels.parquet.decode import decode_hybrid
from kernels.parquet import encode as enc
from kernels.parquet.encode import hybrid, interleave, present_levels
from tasks.errors import OutputError
from tasks.parquet.codec.decompress import nvcomp_usable
from tasks.parquet.write.page_writer import DICTIONARY_PAGE_LIMIT, write_columns
from tasks.parquet.write.results import COMPRESSIONS, RESULT_KEY
from tasks.parquet.write.tables import dense_bfs_columns, dense_bfs_table, dense_forest_columns, dense_forest_table
from tasks.parquet.write.result_files import dictionary_columns, resolve_writer, write_many
from tasks.report import summary_rows
from tests.conftest import host
from tests.helpers import assert_same_results, child_pythonpath, random_edges, run, string_graph, write_edges

ROWS = {"no rows": 0, "one row": 1, "several pages": 300, "several row groups": 700}
ROW_GROUP_ROWS = 256  # small pages and row groups, so a few hundred rows make several of each
PAGE_BYTES = 512


def bfs_result(rows: int, ids_dtype, nulls: bool, seed: int = 0):
    """(ids, distance, predecessor) of a made-up search over ``rows`` vertices: distances in
    runs (as a search in vertex order has them), -1 (unreached) and 0 (sources, no predecessor)
    only ``nulls``."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.arange(-rows, 2 * rows))[:rows].astype(ids_dtype)
    distance = np.repeat(rng.integers(-1 if nulls else 1, 6, rows), rng.integers(1, 20, rows))[:rows].astype(np.int32)
    predecessor = rng.integers(0, max(rows, 1), rows)
    return ids, distance, predecessor


def forest_result(rows: int, ids_dtype, weight_dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    vertices = 2 * rows + 1
    ids = rng.permutation(vertices).astype(ids_dtype)
    weight = np.concatenate([[-0.0, 0.0, 2.5e-3], rng.normal(size=rows)])[:rows].astype(weight_dtype)
    return ids, rng.integers(0, vertices, rows), rng.integers(0, vertices, rows), weight


def both_forms(xp, kind, arrays):
    """(ResultColumns on ``xp``, the pyarrow table the host writer takes) of one result."""
    ids = arrays[0]
    if kind == "bfs":
        _, distance, predecessor = arrays
        columns = dense_bfs_columns(xp, xp.asarray(ids), xp.asarray(distance), xp.asarray(predecessor))
        return columns, dense_bfs_table(pa.array(ids), distance, predecessor)
    _, src, dst, weight = arrays
    columns = dense_forest_columns(xp, xp.asarray(ids), xp.asarray(src), xp.asarray(dst), xp.asarray(weight))
    return columns, dense_forest_table(pa.array(ids), src, dst, weight)


def named(table, name):
    return table.replace_schema_metadata({RESULT_KEY: name.encode()})


def assert_statistics_match(path, reference):
    """Each row group's min, max and null count as pyarrow's writer computes them for the
    same row groups (pyarrow writes one empty row group for no rows; the page writer none)."""
    ours, theirs = pq.ParquetFile(path).metadata, pq.ParquetFile(reference).metadata
    assert ours.num_row_groups == (theirs.num_row_groups if theirs.num_rows else 0)
    for g in range(ours.num_row_groups):
        assert ours.row_group(g).num_rows == theirs.row_group(g).num_rows
        for c in range(ours.num_columns):
            a, b = ours.row_group(g).column(c).statistics, theirs.row_group(g).column(c).statistics
            assert a is not None and a.null_count == b.null_count, (g, c)
            assert a.has_min_max == b.has_min_max, (g, c)
            if a.has_min_max:
                assert (a.min, a.max) == (b.min, b.max), (g, c)
                assert np.signbit(a.min) == np.signbit(b.min) and np.signbit(a.max) == np.signbit(b.max)


def check_file(path, expected: pa.Table, reference=None):
    """pyarrow reads ``expected`` back, schema and footer metadata included, with every page's
    CRC32 verified; DuckDB reads the same rows; statistics match ``reference``'s."""
    assert pq.ParquetFile(path, page_checksum_verification=True).read().equals(expected, check_metadata=True)
    got = pq.read_table(path)
    assert got.equals(expected, check_metadata=True)
    assert got.schema.metadata[RESULT_KEY] == expected.schema.metadata[RESULT_KEY]
    rows = duckdb.sql(f"SELECT * FROM read_parquet('{path}')").fetchall()
    assert rows == [tuple(r.values()) for r in expected.to_pylist()]
    if reference is not None:
        assert_statistics_match(path, reference)


def write_three_ways(tmp_path, name, columns, table, compression) -> None:
    """One result written by the host writer (host/NAME), by the page writer (NAME) and by a plain
    pq.write_table in the page writer's row groups (the statistics' reference), then checked."""
    write_many({tmp_path / "host" / name: table}, compression)
    write_columns(named(columns, name), tmp_path / name, compression, dictionary=dictionary_columns(columns),
                  row_group_rows=ROW_GROUP_ROWS, page_bytes=PAGE_BYTES)
    pq.write_table(named(table, name), tmp_path / "reference.parquet", row_group_size=ROW_GROUP_ROWS)
    check_file(tmp_path / name, pq.read_table(tmp_path / "host" / name), tmp_path / "reference.parquet")


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("rows", ROWS.values(), ids=ROWS.keys())
@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64], ids=["int32 ids", "int64 ids"])
@pytest.mark.parametrize("nulls", [True, False], ids=["nulls", "no nulls"])
def test_a_bfs_result_reads_back_as_pyarrows_writer_writes_it(xp, tmp_path, compression, rows, ids_dtype, nulls):
    columns, table = both_forms(xp, "bfs", bfs_result(rows, ids_dtype, nulls))
    name = "bfs_distances.parquet"
    write_three_ways(tmp_path, name, columns, table, compression)
    if rows:
        assert pq.ParquetFile(tmp_path / name).metadata.row_group(0).column(1).statistics.null_count == (
            int((table["distance"].slice(0, ROW_GROUP_ROWS).null_count)))


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("rows", ROWS.values(), ids=ROWS.keys())
@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64], ids=["int32 ids", "int64 ids"])
@pytest.mark.parametrize("weight_dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_a_forest_reads_back_as_pyarrows_writer_writes_it(xp, tmp_path, compression, rows, ids_dtype, weight_dtype):
    columns, table = both_forms(xp, "forest", forest_result(rows, ids_dtype, weight_dtype))
    write_three_ways(tmp_path, "mst_edges.parquet", columns, table, compression)


def test_the_footer_describes_the_columns_as_pyarrow_does(xp, tmp_path):
    """Physical types, repetition (OPTIONAL), no logical type, encodings and codec, chunk by chunk."""
    columns, table = both_forms(xp, "bfs", bfs_result(100, np.int64, True))
    write_columns(columns, tmp_path / "ours.parquet", "zstd", dictionary=["distance"])
    pq.write_table(table, tmp_path / "theirs.parquet", compression="zstd", use_dictionary=["distance"])
    ours, theirs = (pq.ParquetFile(tmp_path / f).metadata for f in ("ours.parquet", "theirs.parquet"))
    assert ours.schema.equals(theirs.schema)
    for c in range(3):
        a, b = ours.row_group(0).column(c), theirs.row_group(0).column(c)
        assert (a.physical_type, a.compression, a.has_dictionary_page) == (b.physical_type, b.compression,
                                                                           b.has_dictionary_page)
        assert set(a.encodings) == set(b.encodings)
    assert ours.created_by.startswith("parquet-graph-pipeline page writer")


def test_write_many_publishes_result_columns_with_the_result_key(xp, tmp_path):
    """Through the shared seam: a temporary file renamed into place, the result named in it."""
    columns, table = both_forms(xp, "forest", forest_result(50, np.int64, np.float64))
    target = tmp_path / "out" / "mst_edges.parquet"
    assert write_many({target: columns}, "snappy") == [target]
    assert [p.name for p in target.parent.iterdir()] == ["mst_edges.parquet"]
    assert pq.read_table(target).equals(named(table, "mst_edges.parquet"), check_metadata=True)
    pq.ParquetFile(target, page_checksum_verification=True).read()


def test_pages_are_bounded_and_row_groups_hold_the_rows_asked(tmp_path):
    columns, _ = both_forms(np, "bfs", bfs_result(1000, np.int64, True))
    write_columns(columns, tmp_path / "r.parquet", "none", row_group_rows=300, page_bytes=800)
    meta = pq.ParquetFile(tmp_path / "r.parquet").metadata
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [300, 300, 300, 100]
    # 100 int64 values a page (800 bytes), 3 pages a full row group
    header_bytes = meta.row_group(0).column(0).total_uncompressed_size - 300 * 8
    assert 3 * 10 < header_bytes < 3 * 60


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("kind", ["bfs", "forest"])
def test_a_result_written_in_parts_is_the_file_written_at_once(xp, tmp_path, monkeypatch, compression, kind):
    """Row groups encoded two at a time, each part's pages written while the next is encoded:
    the same bytes as all row groups encoded before the first write, and read back alike."""
    from tasks.parquet.write import page_writer

    arrays = bfs_result(1900, np.int64, True) if kind == "bfs" else forest_result(1900, np.int64, np.float64)
    columns, table = both_forms(xp, kind, arrays)
    columns = named(columns, "r.parquet")
    files = {}
    for name, part_rows in (("at-once", 1 << 30), ("in-parts", 2 * ROW_GROUP_ROWS)):
        monkeypatch.setattr(page_writer, "WRITE_PART_ROWS", part_rows)
        files[name] = tmp_path / f"{name}.parquet"
        write_columns(columns, files[name], compression, dictionary=dictionary_columns(columns),
                      row_group_rows=ROW_GROUP_ROWS, page_bytes=PAGE_BYTES)
    assert pq.ParquetFile(files["in-parts"]).metadata.num_row_groups == 8  # four parts, the last one short
    assert files["in-parts"].read_bytes() == files["at-once"].read_bytes()
    check_file(files["in-parts"], named(table, "r.parquet"))


@pytest.mark.parametrize("compression", [c for c in COMPRESSIONS if c != "none"])
def test_pages_compressed_by_several_host_threads_read_back(tmp_path, compression):
    """Every host codec on two threads at once, in a process of its own: a codec shared by the
    threads crashed the process with gzip (a segmentation fault, which would end the suite)."""
    script = f"""
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from tasks.parquet.write.page_writer import write_columns
n = 2_000_000
table = pa.table({{"vertex": np.arange(n), "distance": np.arange(n) % 7, "predecessor": np.arange(n)[::-1]}})
for k in range(3):
    write_columns(table, {str(tmp_path)!r} + f"/r{{k}}.parquet", {compression!r}, threads=2)
    assert pq.read_table({str(tmp_path)!r} + f"/r{{k}}.parquet").equals(table)
"""
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": child_pythonpath()},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 32).flatmap(lambda w: st.tuples(
    st.just(w), st.lists(st.integers(0, 2**w - 1), max_size=200),
    st.lists(st.integers(0, 200), max_size=4))))
def test_the_hybrid_encoding_decodes_to_the_values_page_by_page(case):
    """Runs, bit-packed groups and page cuts anywhere: the page reader's decoder gives the values back."""
    width, values, cuts = case
    values = np.array(values, np.uint64)
    # long runs of one value too, so RLE runs appear beside bit-packed ones
    values = np.concatenate([values, np.full(len(values) % 37, values[0] if len(values) else 0, np.uint64)])
    starts = np.unique(np.clip([0, *cuts, len(values)], 0, len(values)))
    starts = np.append(starts, len(values)) if starts[-1] != len(values) else starts
    data, offsets = hybrid(np, values, starts, width)
    for p in range(len(starts) - 1):
        count = int(starts[p + 1] - starts[p])
        page = data[offsets[p]:offsets[p + 1]]
        decoded, used = decode_hybrid(np, page, width, count)
        assert used == page.shape[0]
        assert decoded.tolist() == values[starts[p]:starts[p + 1]].tolist()


@pytest.mark.skipif(not be.cupy_usable(), reason="the GPU encoders need a GPU")
def test_the_gpu_encoders_give_the_host_encoders_bytes():
    """The hybrid encoding of levels (bool) and of dictionary indices (uint32, widths 1 to 32),
    with runs, bit-packed groups, short last groups and empty pages; and dictionaries of floats
    (-0.0 beside 0.0, NaN payloads) and integers: byte for byte the NumPy encoder's."""
    import cupy as cp

    rng = np.random.default_rng(12)
    for case in range(120):
        n = int(rng.integers(0, 3000))
        width = 1 if case % 3 == 0 else int(rng.integers(1, 33))
        values = rng.random(n) < rng.random() if width == 1 and case % 2 else \
            rng.integers(0, 2**width, n, dtype=np.uint64).astype(np.uint32)
        if case % 4 == 1 and n:  # long runs of one value
            values = np.repeat(values[:-(-n // 50)], 50)[:n]
        starts = np.concatenate([[0], np.sort(rng.integers(0, n + 1, int(rng.integers(0, 5)))), [n]]).astype(np.int64)
        want, want_at = hybrid(np, values, starts, width)
        got, got_at = hybrid(cp, cp.asarray(values), starts, width)
        assert host(got).tobytes() == want.tobytes() and got_at.tolist() == want_at.tolist(), (case, n, width, starts)
    for dtype in (np.float32, np.float64, np.int32, np.int64):
        for n in (0, 1, 5000):
            values = rng.integers(-40, 40, n).astype(dtype)
            if dtype in (np.float32, np.float64) and n > 1:
                values[::7] = -0.0
                values[::11] = np.nan
                values[1] = np.array(0x7FC00001 if dtype == np.float32 else 0x7FF0000000000001,
                                     dtype=np.uint32 if dtype == np.float32 else np.uint64).view(dtype)
            distinct, index = enc.dictionary(np, values)
            got_distinct, got_index = enc.dictionary(cp, cp.asarray(values))
            assert host(got_distinct).tobytes() == distinct.tobytes() and host(got_index).tolist() == index.tolist()
            assert enc.distinct_count(cp, cp.asarray(values)) == enc.distinct_count(np, values) == distinct.shape[0]


def test_levels_of_a_column_without_nulls_are_the_hybrid_encoding_of_ones(xp):
    """Pages of 0 rows, under and over a group of 8, at each ULEB128 length of the run header
    (1, 2 and 3 bytes), and pyarrow's 20,000 and 1 Mi rows: the bytes the general encoder gives."""
    counts = np.array([0, 1, 7, 8, 9, 63, 64, 65, 8191, 8192, 20000, 2**20, 0, 3], np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    want, want_at = hybrid(np, np.ones(int(starts[-1]), np.uint8), starts, 1)
    got, got_at = present_levels(xp, counts)
    assert host(got).tobytes() == want.tobytes() and got_at.tolist() == want_at.tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.binary(max_size=20), min_size=3, max_size=3), max_size=8))
def test_pages_assembled_from_their_streams(xp, pages):
    """Page p of the body is page p of every stream in turn: NumPy's page-by-page copies and
    the GPU's one launch for every page, empty parts and empty pages included."""
    streams = []
    for s in range(3):
        parts = [page[s] for page in pages]
        offsets = np.zeros(len(parts) + 1, np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        streams.append((xp.asarray(np.frombuffer(b"".join(parts) or b"", np.uint8)), offsets))
    body, offsets = interleave(xp, streams)
    assert host(body).tobytes() == b"".join(b"".join(page) for page in pages)
    assert offsets.tolist() == np.cumsum([0] + [sum(len(p) for p in page) for page in pages]).tolist()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-1, 3), min_size=1, max_size=400), st.sampled_from(COMPRESSIONS),
       st.integers(1, 64), st.integers(8, 256))
def test_any_distances_read_back(tmp_path_factory, distances, compression, row_group_rows, page_bytes):
    path = tmp_path_factory.mktemp("any") / "bfs_distances.parquet"
    distance = np.array(distances, np.int32)
    ids = np.arange(len(distance), dtype=np.int64)
    predecessor = (ids + 1) % len(distance)
    columns = dense_bfs_columns(np, ids, distance, predecessor)
    write_columns(columns, path, compression, dictionary=["distance"], row_group_rows=row_group_rows,
                  page_bytes=page_bytes)
    expected = dense_bfs_table(pa.array(ids), distance, predecessor)
    assert pq.ParquetFile(path, page_checksum_verification=True).read().equals(expected)


def test_a_dictionary_past_one_mebibyte_gives_way_to_plain(tmp_path):
    """Weights that repeat in the sample but not after it: the chunk is written PLAIN."""
    rows = DICTIONARY_PAGE_LIMIT // 8 + 70_000
    weight = np.concatenate([np.ones(65_536), np.arange(rows - 65_536, dtype=np.float64)])
    ids = np.arange(rows + 1, dtype=np.int64)
    columns = dense_forest_columns(np, ids, ids[:-1], ids[1:], weight)
    assert "weight" in dictionary_columns(columns)
    write_columns(columns, tmp_path / "f.parquet", "snappy", dictionary=dictionary_columns(columns))
    chunk = pq.ParquetFile(tmp_path / "f.parquet").metadata.row_group(0).column(2)
    assert not chunk.has_dictionary_page and "RLE_DICTIONARY" not in chunk.encodings
    assert pq.read_table(tmp_path / "f.parquet")["weight"].to_numpy().tolist() == weight.tolist()


def test_files_are_no_larger_than_pyarrows(tmp_path):
    ids, distance, predecessor = bfs_result(200_000, np.int64, True)
    columns, table = both_forms(np, "bfs", (ids, distance, predecessor))
    for compression in ("snappy", "zstd", "none"):
        write_many({tmp_path / compression / "host" / "bfs_distances.parquet": table}, compression)
        write_many({tmp_path / compression / "bfs_distances.parquet": columns}, compression)
        ours, theirs = ((tmp_path / compression / sub / "bfs_distances.parquet").stat().st_size
                        for sub in (".", "host"))
        assert ours <= theirs * 1.02, compression


def test_auto_is_pyarrow_without_a_gpu_and_gpu_runs_on_numpy():
    assert resolve_writer("auto", np) == "host" and resolve_writer(None, np) == "host"
    assert resolve_writer("gpu", np) == "gpu" and resolve_writer("host", np) == "host"
    with pytest.raises(OutputError, match=r"unknown Parquet writer 'fast' \(choose from auto, gpu, host\)"):
        resolve_writer("fast", np)


def test_the_page_writer_refuses_what_it_does_not_encode(tmp_path):
    table = pa.table({"vertex": pa.array(["a", "b"], pa.large_string())})
    with pytest.raises(ValueError, match=r"the page writer takes no large_string column 'vertex'"):
        write_columns(table, tmp_path / "x.parquet", "snappy")
    assert not (tmp_path / "x.parquet").exists()


def test_the_writer_option_reaches_the_flows():
    for kind in ("mst", "bfs", "pipeline"):
        extra = [] if kind == "mst" else ["--source", "0"]
        args = build_parser(kind).parse_args(["g.parquet", "--writer", "gpu", *extra])
        assert parameters(kind, args)["writer"] == "gpu"
        assert parameters(kind, build_parser(kind).parse_args(["g.parquet", *extra]))["writer"] == "auto"


@pytest.mark.usefixtures("prefect_server")
def test_both_writers_write_identical_results_and_the_summary_names_the_writer(tmp_path, capsys):
    src, dst, weight = random_edges(seed=5, n=60, m=400)
    edges = write_edges(tmp_path / "g.parquet", pa.array(src, pa.int32()), pa.array(dst, pa.int32()), weight)
    for w in ("host", "gpu"):
        code, _, err = run(pipeline_cli.main, [edges, "--source", "0", "--writer", w, "--output", tmp_path / w], capsys)
        assert code == 0, err
    for name in ("mst_edges.parquet", "bfs_distances.parquet"):
        gpu, host_file = tmp_path / "gpu" / name, tmp_path / "host" / name
        assert_same_results(pq.read_table(gpu), pq.read_table(host_file), check_metadata=True)
        assert pq.ParquetFile(gpu).metadata.created_by.startswith("parquet-graph-pipeline page writer")
        pq.ParquetFile(gpu, page_checksum_verification=True).read()
    summary = pipeline_flow(str(edges), source=["0"], output=str(tmp_path / "summary"), writer="gpu")
    on = be.resolve(None)
    by = f"gpu page writer on {on}, {'nvCOMP' if on == 'cupy' and nvcomp_usable() else 'host'} snappy"
    assert summary["writers"] == [by] * 2
    assert {"quantity": "Parquet writer", "value": by} in summary_rows(summary)
    summary = pipeline_flow(str(edges), source=["0"], output=str(tmp_path / "summary"), writer="host")
    assert summary["writers"] == ["host (pyarrow)"] * 2


@pytest.mark.usefixtures("prefect_server")
def test_string_ids_stay_on_pyarrows_writer_and_the_summary_says_why(tmp_path):
    path = tmp_path / "g.parquet"
    string_graph(path, "large_string")
    summary = pipeline_flow(str(path), source=[pq.read_table(path)["src"][0].as_py()], output=str(tmp_path / "out"),
                            writer="gpu")
    assert summary["writers"] == ["host (pyarrow; the page writer takes no string vertex ids)"] * 2
    assert pq.ParquetFile(tmp_path / "out" / "mst_edges.parquet").metadata.created_by.startswith("parquet-cpp")


def test_a_host_copy_of_device_columns_is_what_was_written(xp, tmp_path):
    """Nothing of the device arrays is changed by writing them (the encoder works on copies)."""
    ids, distance, predecessor = bfs_result(300, np.int64, True)
    columns, _ = both_forms(xp, "bfs", (ids, distance, predecessor))
    before = [host(v).copy() for v in columns.values]
    write_columns(columns, tmp_path / "b.parquet", "snappy", dictionary=["distance"], page_bytes=PAGE_BYTES)
    assert all(np.array_equal(host(v), b) for v, b in zip(columns.values, before))
