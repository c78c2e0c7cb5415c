"""--filter / the flows' ``filter``: a hive-partitioned edge list (day=... / region=... folders)
read through a filter gives the answers of the same computation on the rows that
pyarrow.dataset(..., partitioning="hive").to_table(filter=...) keeps: forests by Kruskal's rows
and scipy's weight, distances by a queue BFS. Folders the partition values exclude are never
opened (their files are corrupt or unreadable here); a bad expression, an unknown column, or a
filter that keeps nothing is one error line, with nothing written."""
import os
import shutil

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from flows.mst import mst_flow
from tasks.parquet.dataset.plan import plan_input
from tasks.parquet.read.reader import read_edges
from tests.helpers import error_line, listing, run, write_edges
from tests.references import assert_distances, assert_forest, scipy_msf_weight

pytestmark = pytest.mark.usefixtures("prefect_server")

DAYS = ["2026-10-31", "2026-11-01", "2026-11-02"]
REGIONS = ["eu", "us"]
N = 40  # vertex ids 0..N-1


@pytest.fixture
def hive(tmp_path):
    """days x regions, one file each of 60 random edges in row groups of 20 (three per file);
    each file's weights ascend, so row-group statistics can rule groups out."""
    root = tmp_path / "edges"
    rng = np.random.default_rng(7)
    for day in DAYS:
        for region in REGIONS:
            src, dst = rng.integers(0, N, 60), rng.integers(0, N, 60)
            weight = np.sort(rng.integers(0, 1000, 60)) / 1000  # ties across files: the row order decides
            write_edges(root / f"day={day}" / f"region={region}" / "part-0.parquet", pa.array(src), pa.array(dst),
                        pa.array(weight), row_group_size=20)
    return root


def reference(root, expression):
    """The rows pyarrow.dataset keeps, in its order (files by path, rows in order): lists."""
    table = ds.dataset(root, partitioning="hive").to_table(filter=expression, use_threads=False)
    return table["src"].to_pylist(), table["dst"].to_pylist(), table["weight"].to_pylist()


def spoil(root, *folders):
    """The files below these folders made unreadable to any opener: one overwritten with bytes
    that are not Parquet, the next without read permission (where the tests run as root, also
    overwritten)."""
    for k, folder in enumerate(folders):
        part = root / folder / "part-0.parquet"
        if k % 2 == 0 or os.geteuid() == 0:
            part.write_bytes(b"not parquet at all")
        else:
            part.chmod(0)


def check_forest(out, rows):
    src, dst, weight = rows
    assert_forest(out / "mst_edges.parquet", src, dst, weight)
    forest = pq.read_table(out / "mst_edges.parquet")
    total, edges = scipy_msf_weight(N, np.array(src), np.array(dst), np.array(weight))
    assert (sum(forest["weight"].to_pylist()), forest.num_rows) == (pytest.approx(total), edges)


def test_a_partition_filter_never_opens_the_folders_it_excludes(hive, tmp_path, capsys):
    rows = reference(hive, ds.field("day") >= "2026-11-01")
    spoil(hive, "day=2026-10-31/region=eu", "day=2026-10-31/region=us")
    code, out, err = run(mst_cli.main, [hive, "--filter", "day >= '2026-11-01'", "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    check_forest(tmp_path / "o", rows)
    assert f"filter day >= '2026-11-01' kept 4 of 4 files read (1 partition folder excluded), {len(rows[0])} of " \
           "240 rows" in out


def test_a_data_column_filter_keeps_its_rows_and_skips_row_groups_by_statistics(hive, tmp_path, capsys):
    src, dst, _ = reference(hive, ds.field("weight") > 0.5)
    code, out, err = run(bfs_cli.main, [hive, "--filter", "weight > 0.5", "--source", src[0], "--output",
                                        tmp_path / "o"], capsys)
    assert code == 0, err
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, [src[0]])
    assert f", {len(src)} of 360 rows (" in out and "row groups skipped by statistics)" in out


def test_partition_and_data_columns_combined_in_the_pipeline(hive, tmp_path, capsys):
    expression = "region = 'eu' and (day in ('2026-11-01', '2026-11-02') or weight < 0.1) and not weight >= 0.9"
    rows = reference(hive, (ds.field("region") == "eu")
                     & (ds.field("day").isin(["2026-11-01", "2026-11-02"]) | (ds.field("weight") < 0.1))
                     & ~(ds.field("weight") >= 0.9))
    spoil(hive, *(f"day={d}/region=us" for d in DAYS))
    code, out, err = run(pipeline_cli.main, [hive, "--filter", expression, "--source", rows[0][0], "--output",
                                             tmp_path / "o"], capsys)
    assert code == 0, err
    check_forest(tmp_path / "o", rows)
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", rows[0], rows[1], [rows[0][0]])


def test_the_flow_takes_a_filter_and_reports_what_it_kept(hive, tmp_path):
    rows = reference(hive, (ds.field("day") == "2026-11-02") & (ds.field("weight") <= 0.5))
    summary = mst_flow(str(hive), output=str(tmp_path / "o"), filter="day = '2026-11-02' and weight <= 0.5")
    check_forest(tmp_path / "o", rows)
    assert summary["edges"] == len(rows[0])
    assert {k: v for k, v in summary.items() if k.startswith("filter")} == {
        "filter": "day = '2026-11-02' and weight <= 0.5", "filter_files": 2, "filter_files_read": 2,
        "filter_folders_excluded": 2, "filter_row_groups_skipped": summary["filter_row_groups_skipped"],
        "filter_rows_read": 120}
    assert summary["filter_row_groups_skipped"] >= 1  # each file's weights ascend


def test_the_flow_fails_on_a_bad_filter_before_reading(hive, tmp_path):
    state = mst_flow(str(hive), output=str(tmp_path / "o"), filter="day >= ", return_state=True)
    assert state.is_failed()
    assert "filter: expected a column or a value, found the end of 'day >= '" in state.message
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("expression, expected", [
    ("day >= ", "filter: expected a column or a value, found the end of 'day >= '"),
    ("day = '2026-11-01' weight > 1", "filter: expected and, or or the end, found 'weight' at character 20 of "
                                      "\"day = '2026-11-01' weight > 1\""),
    ("day = null", "filter: null is not a value to compare with; write COLUMN is null, found 'null' at "
                   "character 7 of 'day = null'"),
    ("day = __import__('os')", "filter: compare a column with a value, found '__import__' at character 7 of "
                               "\"day = __import__('os')\""),
    ("weight > 1 and", "filter: expected a column or a value, found the end of 'weight > 1 and'"),
    ("", "filter: an empty filter; give an expression such as day >= '2026-11-01', or leave it out"),
], ids=["no-value", "no-and", "null-literal", "a-call", "dangling-and", "empty"])
def test_a_bad_expression_is_one_line_before_anything_runs(hive, tmp_path, capsys, monkeypatch, expression, expected):
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    code, out, err = run(mst_cli.main, [hive, "--filter", expression], capsys)
    assert (code, out, err) == (1, "", f"error: {expected}\n")
    assert listing(tmp_path) == before


@pytest.mark.parametrize("expression, expected", [
    ("dy = '2026-11-01'", "filter: no column 'dy' in {hive} (columns: day, region, src, dst, weight)"),
    ("day >= '2027-01-01'", "filter: kept no files of {hive} (its partition values exclude 3 folders)"),
    ("weight > 5", "filter: kept no rows of {hive} (360 rows in 6 files read)"),
    ("day > 5", "filter: partition day=2026-11-02 is not an integer, which 5 is; quote the value ('5') to "
                "compare day as text"),
    ("weight > '0.5'", "filter: column 'weight' (double) holds numbers; write the value unquoted (compared "
                       "with '0.5')"),
    ("src < 99999999999999999999", "filter: the number 99999999999999999999 is out of range for column 'src' "
                                   "(int64)"),
    ("weight > 99999999999999999999", "filter: kept no rows of {hive} (360 rows in 6 files read)"),
], ids=["unknown-column", "no-partition-kept", "no-row-kept", "partition-type", "column-type", "integer-past-64-bits",
        "integer-past-64-bits-on-doubles"])
def test_a_filter_the_dataset_cannot_answer_is_one_line_and_no_output(hive, tmp_path, capsys, expression, expected):
    code, out, err = run(mst_cli.main, [hive, "--filter", expression, "--output", tmp_path / "o"], capsys)
    assert (code, out, err) == (1, "", f"error: {expected.format(hive=hive)}\n")
    assert not (tmp_path / "o").exists()


def test_value_checks_see_only_kept_rows_and_name_rows_of_the_file(tmp_path, capsys):
    """A bad weight in a row the filter drops is not read; in a kept row, the error names its
    row in the file, not its place among the kept rows."""
    path = write_edges(tmp_path / "d" / "part-0.parquet", [0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0],
                       [1.0, float("inf"), 2.0, 3.0, float("nan"), 1.0])
    code, out, err = run(mst_cli.main, [path.parent, "--filter", "src in (0, 2, 3, 5)", "--output", tmp_path / "o"],
                         capsys)
    assert code == 0, err
    assert pq.read_table(tmp_path / "o" / "mst_edges.parquet")["src"].to_pylist() == [0, 2, 3, 5]
    code, out, err = run(mst_cli.main, [path.parent, "--filter", "src >= 2", "--output", tmp_path / "p"], capsys)
    assert (code, out) == (1, "")
    assert error_line(err) == f"error: {path}: weight column 'weight' is nan at row 4; weights must be finite"


def test_a_partitioned_run_reads_the_same_filtered_rows(hive, tmp_path, capsys, cpu_cluster):
    expression = "day != '2026-10-31' and weight > 0.3"
    rows = reference(hive, (ds.field("day") != "2026-10-31") & (ds.field("weight") > 0.3))
    spoil(hive, "day=2026-10-31/region=eu", "day=2026-10-31/region=us")
    code, out, err = run(pipeline_cli.main, [hive, "--filter", expression, "--source", rows[0][0], "--partitions", "2",
                                             "--dask-address", cpu_cluster.scheduler_address, "--output",
                                             tmp_path / "o"], capsys)
    assert code == 0, err
    check_forest(tmp_path / "o", rows)
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", rows[0], rows[1], [rows[0][0]])
    assert f"filter {expression} kept 4 of 4 files read (1 partition folder excluded), {len(rows[0])} of 240 rows" in out


def test_partition_values_compare_in_the_literals_type(tmp_path, capsys):
    """hour=9 < hour=10 as integers; a quoted literal compares the folder's text; a value
    %-encoded in the folder name is compared decoded."""
    root = tmp_path / "h"
    for hour, (s, d) in zip(["9", "10", "11"], [(0, 1), (1, 2), (2, 3)]):
        write_edges(root / f"hour={hour}" / "part-0.parquet", [s], [d], [1.0])
    write_edges(root / "hour=a%2Fb" / "part-0.parquet", [3], [4], [1.0])
    code, out, err = run(mst_cli.main, [root, "--filter", "hour = 'a/b' or hour < '11' and hour > '0'",
                                        "--output", tmp_path / "o"], capsys)
    assert code == 0, err  # text: '10' < '11', '9' > '11' is not
    assert pq.read_table(tmp_path / "o" / "mst_edges.parquet")["src"].to_pylist() == [1, 3]
    shutil.rmtree(root / "hour=a%2Fb")  # a text value is not an integer (the error is tested above)
    code, out, err = run(mst_cli.main, [root, "--filter", "hour >= 10", "--output", tmp_path / "p"], capsys)
    assert code == 0, err  # integers
    assert pq.read_table(tmp_path / "p" / "mst_edges.parquet")["src"].to_pylist() == [1, 2]


def test_a_date_column_compares_with_a_quoted_date(tmp_path, capsys):
    """A data column of dates (not a partition): the quoted literal is read as a date, and the
    row groups of days before it are skipped by their statistics."""
    days = pa.array(np.repeat(np.arange(20_390, 20_400, dtype=np.int32), 6)).cast(pa.date32())
    rng = np.random.default_rng(3)
    table = pa.table({"src": rng.integers(0, N, 60), "dst": rng.integers(0, N, 60), "weight": rng.random(60),
                      "seen": days})
    pq.write_table(table, tmp_path / "edges.parquet", row_group_size=12)
    rows = reference(tmp_path / "edges.parquet", ds.field("seen") >= pa.scalar("2025-11-03").cast(pa.date32()))
    code, out, err = run(mst_cli.main, [tmp_path / "edges.parquet", "--filter", "seen >= '2025-11-03'", "--output",
                                        tmp_path / "o"], capsys)
    assert code == 0, err
    check_forest(tmp_path / "o", rows)
    assert f"{len(rows[0])} of 60 rows (2 row groups skipped by statistics)" in out


@pytest.mark.parametrize("expression", ["tag not in ('a')", "not tag in ('a', 'c')", "x not in (1, 2.5)",
                                        "not (x in (5) or tag = 'b')"])
def test_not_in_never_keeps_a_row_whose_column_is_null(tmp_path, expression):
    """SQL: null in (...) is null, and so is its negation; row groups of only nulls, of some
    nulls and of none (DuckDB is the reference)."""
    table = pa.table({"src": list(range(12)), "dst": list(range(1, 13)), "weight": [float(i) for i in range(12)],
                      "tag": [None, None, None, None, "a", None, "b", "a", "b", "b", "c", None],
                      "x": [1, 2, 3, None, 5, 6, 7, 8, 9, 10, 11, 12]})
    pq.write_table(table, tmp_path / "e.parquet", row_group_size=4)
    expected = [r[0] for r in duckdb.sql(f"SELECT src FROM '{tmp_path / 'e.parquet'}' WHERE {expression}").fetchall()]
    kept = read_edges(plan_input(str(tmp_path / "e.parquet"), filter=expression))
    assert sorted(kept.src.tolist()) == sorted(expected)


@pytest.mark.parametrize("expression", ["u >= 9223372036854775808", "u < 18446744073709551615", "u = 3"])
def test_an_unsigned_64_bit_column_compares_with_literals_past_int64(tmp_path, expression):
    """uint64 ids above 2**63 - 1 (DuckDB is the reference)."""
    table = pa.table({"src": list(range(6)), "dst": list(range(1, 7)), "weight": [1.0] * 6,
                      "u": pa.array([0, 3, 2**63 - 1, 2**63, 2**64 - 1, None], pa.uint64())})
    pq.write_table(table, tmp_path / "e.parquet", row_group_size=2)
    expected = [r[0] for r in duckdb.sql(f"SELECT src FROM '{tmp_path / 'e.parquet'}' WHERE {expression}").fetchall()]
    kept = read_edges(plan_input(str(tmp_path / "e.parquet"), filter=expression))
    assert sorted(kept.src.tolist()) == sorted(expected)
