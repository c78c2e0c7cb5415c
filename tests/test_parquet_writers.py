"""Edge lists as other writers write them are read by both readers into the values pyarrow reads:
pandas with fastparquet (its default Snappy pages, several row groups, OPTIONAL and REQUIRED
columns, a hive folder with its _metadata files), Polars (its default Zstd, Snappy, small row
groups and pages, dictionary and plain), DuckDB's COPY (its default, small row groups, Parquet
v2 with DELTA_BINARY_PACKED and BYTE_STREAM_SPLIT, Zstd). A valid file is never refused, and the
page reader decodes the id and weight chunks itself (no fallback) wherever the writer used an
encoding it takes. Each writer's rule the readers rely on, from the Parquet spec:
- a v1 data page holds levels and values and nothing else, but fastparquet ends each one with 8
  zero bytes counted in its uncompressed size: readers decode the values the header counts and
  ignore what follows them;
- a column chunk may mix dictionary-encoded and PLAIN pages (a dictionary that outgrew its limit);
- a REQUIRED column has no definition levels; an OPTIONAL one without nulls still has them."""
import warnings

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from kernels.parquet.decode import PageError, decode_plain
from tests.conftest import host
from tests.test_page_reader import read_alike


def fastparquet():
    return pytest.importorskip("fastparquet")


def polars():
    return pytest.importorskip("polars")

ROWS = 24_186  # several pages and row groups for every writer below


def edges(rows: int = ROWS, seed: int = 3) -> pd.DataFrame:
    """A graph's edges with repeated ids (dictionary pages are worth writing) and float weights."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"src": rng.integers(0, 3000, rows), "dst": rng.integers(0, 3000, rows),
                         "weight": rng.random(rows).round(3)})


def fastparquet_default(path, frame):
    fastparquet()
    with warnings.catch_warnings():  # pandas 3 says the engine will go; it is what users have today
        warnings.simplefilter("ignore")
        frame.to_parquet(path / "g.parquet", engine="fastparquet")


def fastparquet_row_groups(path, frame):
    fastparquet().write(str(path / "g.parquet"), frame, compression="SNAPPY", row_group_offsets=5000)


def fastparquet_required_uncompressed(path, frame):
    fastparquet().write(str(path / "g.parquet"), frame, has_nulls=False, row_group_offsets=10_000)


def fastparquet_hive_folder(path, frame):
    fastparquet().write(str(path / "g"), frame, file_scheme="hive", row_group_offsets=8000, compression="SNAPPY")


def fastparquet_int32_ids(path, frame):
    frame = frame.astype({"src": np.int32, "dst": np.int32})
    fastparquet().write(str(path / "g.parquet"), frame, compression="ZSTD", row_group_offsets=7000)


def polars_default(path, frame):
    polars().from_pandas(frame).write_parquet(path / "g.parquet")


def polars_small_groups_snappy(path, frame):
    polars().from_pandas(frame).write_parquet(path / "g.parquet", compression="snappy", row_group_size=4000,
                                            data_page_size=8192, statistics=True)


def polars_uncompressed(path, frame):
    polars().from_pandas(frame).write_parquet(path / "g.parquet", compression="uncompressed", row_group_size=9000)


def duckdb_copy(path, frame, options=""):
    with duckdb.connect() as db:
        db.register("frame", frame)
        db.execute(f"COPY frame TO '{path / 'g.parquet'}' (FORMAT parquet{options})")


def duckdb_default(path, frame):
    duckdb_copy(path, frame)


def duckdb_small_groups(path, frame):
    duckdb_copy(path, frame, ", ROW_GROUP_SIZE 3000")


def duckdb_v2_zstd(path, frame):
    duckdb_copy(path, frame, ", PARQUET_VERSION V2, COMPRESSION zstd, ROW_GROUP_SIZE 10000")


WRITERS = [fastparquet_default, fastparquet_row_groups, fastparquet_required_uncompressed,
           fastparquet_hive_folder, fastparquet_int32_ids, polars_default, polars_small_groups_snappy,
           polars_uncompressed, duckdb_default, duckdb_small_groups, duckdb_v2_zstd]


def written(path, writer, frame):
    writer(path, frame)
    return path / "g" if (path / "g").is_dir() else path / "g.parquet"


@pytest.mark.parametrize("writer", WRITERS, ids=[w.__name__ for w in WRITERS])
def test_other_writers_files_read_as_pyarrow_reads_them(tmp_path, xp, writer):
    frame = edges()
    given = written(tmp_path, writer, frame)
    got = read_alike(given, xp)  # both readers, the same arrays (or the same refusal)
    expected = pq.read_table(given, columns=["src", "dst", "weight"])
    for column in ("src", "dst", "weight"):
        assert host(getattr(got, column)).tolist() == expected[column].to_pylist(), column
    assert got.report["fallbacks"] == {}, got.report  # the page reader decoded every chunk itself
    assert all(set(by) == {"gpu"} for by in got.report["columns"].values()), got.report


def test_plain_values_are_read_up_to_the_count_and_bytes_after_them_ignored():
    """fastparquet's padding at the page level: 3 int64 values and 8 zero bytes decode as the
    3 values; 2 values' bytes for 3 values are refused, naming the shortfall."""
    values = np.array([7, -1, 2**40], np.int64)
    padded = np.frombuffer(values.tobytes() + bytes(8), np.uint8)
    assert decode_plain(np, padded, np.int64, 3).tolist() == values.tolist()
    with pytest.raises(PageError, match="16 bytes of PLAIN values for 3 values of 8 bytes"):
        decode_plain(np, padded[:16], np.int64, 3)
