"""Parquet files concatenated by copying pages under one footer (tasks/parquet/write/concat.py): what
the results are written with (a table encoded in pieces on several cores) and how a partitioned
run's parts become one file. Checked against pyarrow's own serial writer (same row groups, same
statistics, same pages) and read back by DuckDB, a reader that shares no code with pyarrow."""
import errno
import os
import struct
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.parquet.write.concat import ParquetConcatError, concatenate_files, row_group_rows, write_table_parallel
from kernels.parquet.thrift import decode_struct, encode_struct
from tasks.parquet.write.result_files import write_many


def result_like_table(rows: int, seed: int = 0) -> pa.Table:
    """The columns the results have: ids (uint64 beyond int64's range too), int32 distances,
    nullable predecessors, float weights; and a string column and key-value metadata."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 2**63, rows, dtype=np.uint64) + np.uint64(2**63 - 1)
    return pa.table({
        "vertex": pa.array(ids),
        "distance": pa.array(rng.integers(0, 9, rows).astype(np.int32)),
        "predecessor": pa.array(rng.integers(0, 2**40, rows), mask=rng.random(rows) < 0.05),
        "weight": pa.array(rng.random(rows).astype(np.float32)),
        "label": pa.array([f"v{i % 37}" for i in range(rows)], pa.string()),
    }).replace_schema_metadata({"written-by": "test"})


def footer_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    length = struct.unpack("<I", data[-8:-4])[0]
    return data[-8 - length:-8]


def duckdb_query(sql: str):
    return duckdb.connect().execute(sql)


def duckdb_rows(path: Path) -> pa.Table:
    return duckdb.connect().sql(f"select * from read_parquet('{path}')").to_arrow_table()


OPTIONS = {"compression": "snappy", "use_dictionary": ["distance", "label"]}


@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
def test_a_footer_decodes_and_encodes_to_the_same_bytes(tmp_path, compression):
    for rows in (0, 1, 5000, 20_000):  # 20 row groups: a list of 15 or more has a longer header
        path = tmp_path / f"t{rows}.parquet"
        pq.write_table(result_like_table(rows), path, compression=compression, row_group_size=1000)
        footer = footer_bytes(path)
        assert encode_struct(decode_struct(footer)) == footer


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_a_table_encoded_in_pieces_is_the_file_a_serial_writer_makes(tmp_path, threads):
    """Row groups of 1,000 rows, 20,500 rows: 21 groups (the last short) over up to 8 pieces."""
    table = result_like_table(20_500)
    serial, pieces = tmp_path / "serial.parquet", tmp_path / "pieces.parquet"
    pq.write_table(table, serial, row_group_size=1000, **OPTIONS)
    write_table_parallel(table, pieces, threads, row_group_size=1000, **OPTIONS)

    assert pq.read_table(pieces).equals(table)
    assert pq.read_schema(pieces).metadata == pq.read_schema(serial).metadata
    one, other = pq.ParquetFile(serial).metadata, pq.ParquetFile(pieces).metadata
    assert (other.num_rows, other.num_row_groups) == (one.num_rows, one.num_row_groups) == (20_500, 21)
    for g in range(one.num_row_groups):
        assert other.row_group(g).num_rows == one.row_group(g).num_rows
        for c in range(one.num_columns):
            a, b = one.row_group(g).column(c), other.row_group(g).column(c)
            assert (b.statistics, b.encodings, b.total_compressed_size) == (a.statistics, a.encodings, a.total_compressed_size)
            assert b.has_dictionary_page == a.has_dictionary_page
    # the same pages at the same places: the files differ in no byte
    assert pieces.read_bytes() == serial.read_bytes()
    assert duckdb_rows(pieces).equals(table)


def test_row_group_pruning_finds_rows_in_every_piece(tmp_path):
    table = pa.table({"vertex": pa.array(np.arange(9000, dtype=np.int64)),
                      "distance": pa.array(np.arange(9000, dtype=np.int32) // 100)})
    path = tmp_path / "p.parquet"
    write_table_parallel(table, path, 4, row_group_size=1000, **OPTIONS)
    for low in (0, 2500, 8999):  # in the first, a middle and the last piece
        picked = pq.read_table(path, filters=[("vertex", ">=", low), ("vertex", "<", low + 10)])
        assert picked["vertex"].to_pylist() == list(range(low, min(low + 10, 9000)))
    assert duckdb_query(f"select count(*), sum(vertex) from read_parquet('{path}') where distance = 42").fetchone() \
        == (100, sum(range(4200, 4300)))


def test_parts_concatenate_in_order_an_empty_part_included(tmp_path):
    tables = [result_like_table(rows, seed) for seed, rows in enumerate([3000, 0, 1, 2500])]
    parts = []
    for i, t in enumerate(tables):
        parts.append(tmp_path / f"part-{i:05d}.parquet")
        pq.write_table(t, parts[-1], row_group_size=1000, **OPTIONS)
    target = tmp_path / "one.parquet"
    concatenate_files(parts, target, threads=2)

    whole = pa.concat_tables(tables)
    assert pq.read_table(target).equals(whole)
    meta = pq.ParquetFile(target).metadata
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == \
        [1000, 1000, 1000, *([0] if pq.ParquetFile(parts[1]).metadata.num_row_groups else []), 1, 1000, 1000, 500]
    assert duckdb_rows(target).equals(whole)


def test_write_many_writes_large_results_in_pieces_that_read_as_the_table(tmp_path):
    """Two results of 2.2 M rows, each encoded in pieces where the machine has four cores or
    more, in 1 Mi-row groups or smaller where that gives each core a piece."""
    tables = {tmp_path / "out" / "a.parquet": result_like_table(2_200_000, 1).drop_columns(["label"]),
              tmp_path / "out" / "b.parquet": result_like_table(2_200_000, 2).drop_columns(["label"])}
    write_many(tables)
    for path, table in tables.items():
        cores_each = max(1, len(os.sched_getaffinity(0)) // 2)
        assert pq.ParquetFile(path).metadata.num_row_groups == -(-2_200_000 // row_group_rows(2_200_000, cores_each))
        assert pq.read_table(path).equals(table)
        assert duckdb_query(f"select count(*), count(predecessor) from read_parquet('{path}')").fetchone() \
            == (table.num_rows, table.num_rows - table["predecessor"].null_count)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.parquet", "b.parquet"]


def test_parts_with_different_schemas_are_refused_by_name(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"vertex": pa.array([1, 2], pa.int64())}), a)
    pq.write_table(pa.table({"vertex": pa.array([1, 2], pa.uint64())}), b)
    with pytest.raises(ParquetConcatError, match=f"^{b}: its schema differs from {a}'s$"):
        concatenate_files([a, b], tmp_path / "one.parquet")


def test_parts_holding_file_positions_among_their_pages_are_refused(tmp_path):
    """Page indexes and bloom filters point into their own file; copied, they would point
    elsewhere."""
    plain, indexed = tmp_path / "plain.parquet", tmp_path / "indexed.parquet"
    table = pa.table({"vertex": pa.array(range(100), pa.int64())})
    pq.write_table(table, plain)
    pq.write_table(table, indexed, write_page_index=True)
    with pytest.raises(ParquetConcatError, match=f"^{indexed}: has page indexes"):
        concatenate_files([plain, indexed], tmp_path / "one.parquet")


def test_a_file_that_is_not_parquet_is_refused_by_name(tmp_path):
    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    pq.write_table(pa.table({"vertex": pa.array([1], pa.int64())}), good)
    bad.write_bytes(b"vertex\n1\n")
    with pytest.raises(ParquetConcatError, match=f"^{bad}: not a plain Parquet file"):
        concatenate_files([good, bad], tmp_path / "one.parquet")


def test_weights_get_a_dictionary_only_where_they_repeat(tmp_path):
    """Small integer weights are dictionary-encoded; random real weights (all distinct, whose
    dictionary the writer would build and drop) are not; distances always, ids never."""
    rng = np.random.default_rng(5)
    rows = 100_000
    ids = pa.array(np.arange(rows, dtype=np.int64))
    tables = {tmp_path / "small.parquet": pa.table({"src": ids, "dst": ids, "weight": rng.integers(1, 10, rows) * 1.0}),
              tmp_path / "real.parquet": pa.table({"src": ids, "dst": ids, "weight": rng.random(rows)}),
              tmp_path / "bfs.parquet": pa.table({"vertex": ids, "distance": pa.array(np.arange(rows, dtype=np.int32) % 7),
                                                  "predecessor": ids})}
    write_many(tables)

    def dictionary_encoded(path):
        group = pq.ParquetFile(path).metadata.row_group(0)
        return {group.column(k).path_in_schema for k in range(group.num_columns)
                if "RLE_DICTIONARY" in group.column(k).encodings}

    assert dictionary_encoded(tmp_path / "small.parquet") == {"weight"}
    assert dictionary_encoded(tmp_path / "real.parquet") == set()
    assert dictionary_encoded(tmp_path / "bfs.parquet") == {"distance"}
    for path, table in tables.items():
        assert pq.read_table(path).equals(table)


def _parts(tmp_path, sizes=(3000, 2500)):
    tables, parts = [result_like_table(rows, seed) for seed, rows in enumerate(sizes)], []
    for i, t in enumerate(tables):
        parts.append(tmp_path / f"part-{i:05d}.parquet")
        pq.write_table(t, parts[-1], row_group_size=1000, **OPTIONS)
    return tables, parts


@pytest.mark.parametrize("refusal", [errno.ENOSYS, errno.EXDEV, errno.EOPNOTSUPP, None],
                         ids=["ENOSYS", "EXDEV", "EOPNOTSUPP", "no-copy_file_range"])
def test_where_the_kernel_will_not_copy_the_pages_pass_through_the_process(tmp_path, monkeypatch, refusal):
    """Old kernels, NFS, sandboxes and C libraries without copy_file_range: the same file."""
    tables, parts = _parts(tmp_path)
    if refusal is None:
        monkeypatch.delattr(os, "copy_file_range")
    else:
        def refuse(*args):
            raise OSError(refusal, os.strerror(refusal))
        monkeypatch.setattr(os, "copy_file_range", refuse)
    monkeypatch.setattr("tasks.parquet.write.concat._COPY_CHUNK", 4096)  # many chunks per part
    concatenate_files(parts, tmp_path / "one.parquet", threads=2)
    assert pq.read_table(tmp_path / "one.parquet").equals(pa.concat_tables(tables))


def test_a_part_with_a_damaged_footer_is_refused_by_name(tmp_path):
    _, parts = _parts(tmp_path)
    data = bytearray(parts[1].read_bytes())
    length = struct.unpack("<I", data[-8:-4])[0]
    data[-8 - length:-8] = bytes(length)  # the footer zeroed, its length and magic intact
    parts[1].write_bytes(bytes(data))
    with pytest.raises(ParquetConcatError, match=f"^{parts[1]}: its footer is not valid Parquet metadata$"):
        concatenate_files(parts, tmp_path / "one.parquet")
    data[-8 - length:-8] = bytes(range(256)) * (length // 256) + bytes(length % 256)  # noise
    parts[1].write_bytes(bytes(data))
    with pytest.raises(ParquetConcatError, match=f"^{parts[1]}: "):
        concatenate_files(parts, tmp_path / "one.parquet")


def test_a_target_that_is_one_of_the_parts_is_refused_and_kept(tmp_path):
    _, parts = _parts(tmp_path)
    before = parts[0].read_bytes()
    with pytest.raises(ParquetConcatError, match=f"^{parts[0]}: is one of the files to concatenate$"):
        concatenate_files(parts, parts[0])
    assert parts[0].read_bytes() == before


def test_pieces_leave_no_files_behind_when_the_write_fails(tmp_path):
    """A piece that cannot be written (an unknown compression) fails the write; no piece stays."""
    table = result_like_table(5000)
    with pytest.raises(Exception):
        write_table_parallel(table, tmp_path / "t.parquet", 4, row_group_size=1000, compression="no-such-codec")
    write_table_parallel(table, tmp_path / "ok.parquet", 4, row_group_size=1000, **OPTIONS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.parquet"]
