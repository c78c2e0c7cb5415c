"""Every bad input: one stderr line naming the file/column/row/vertex/path, exit 1, no output
left and older outputs untouched."""
import os
import struct
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from flows.mst import mst_flow
from kernels.parquet.format import FileMetaDataField, RowGroupField
from kernels.parquet.thrift import decode_struct, encode_struct, field
from tests.helpers import EDGES, error_line, listing, run, write_seed

pytestmark = pytest.mark.usefixtures("prefect_server")


def table(**cols):
    base = {"src": pa.array([0, 1, 2], pa.int64()), "dst": pa.array([1, 2, 0], pa.int64()),
            "weight": pa.array([1.0, 2.0, 3.0])}
    base.update(cols)
    return pa.table({k: v for k, v in base.items() if v is not None})


def parquet(tmp_path, t, name="g.parquet"):
    pq.write_table(t, tmp_path / name)
    return tmp_path / name


def missing(tmp_path):
    return tmp_path / "nope.parquet", [], "input not found"


def empty_dir(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("x")
    return tmp_path / "d", [], "holds no Parquet files"


def not_parquet(tmp_path):
    (tmp_path / "g.parquet").write_text("src,dst\n0,1\n")
    return tmp_path / "g.parquet", [], "not a readable Parquet file"


def truncated(tmp_path):
    p = parquet(tmp_path, table())
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    return p, [], "not a readable Parquet file"


def corrupt_pages(tmp_path):
    p = parquet(tmp_path, table(src=pa.array(np.arange(5000)), dst=pa.array(np.arange(1, 5001)),
                                weight=pa.array(np.ones(5000))))
    data = bytearray(p.read_bytes())
    data[100:4000] = bytes(3900)  # zero the first data pages, keep the footer
    p.write_bytes(bytes(data))
    return p, [], "corrupt Parquet data in column 'src', row group 0"


def mixed_schemas(tmp_path):
    (tmp_path / "d").mkdir()
    pq.write_table(table(), tmp_path / "d" / "a.parquet")
    pq.write_table(table(src=pa.array(["0", "1", "2"]), dst=pa.array(["1", "2", "0"])), tmp_path / "d" / "b.parquet")
    return tmp_path / "d", [], f"d/b.parquet: column 'src' holds string ids but {tmp_path / 'd' / 'a.parquet'} holds integer"


def empty_table(tmp_path):
    return parquet(tmp_path, table().slice(0, 0)), [], "empty (0 rows)"


def missing_src(tmp_path):
    return parquet(tmp_path, table(src=None)), [], "column 'src' not found"


def mapped_column_absent(tmp_path):
    return parquet(tmp_path, table()), ["--dst-col", "to"], "column 'to' not found"


def weight_missing(tmp_path):
    return parquet(tmp_path, table(weight=None)), [], "column 'weight' not found"


def float_ids(tmp_path):
    return parquet(tmp_path, table(src=pa.array([0.0, 1.0, 2.0]))), [], "'src' has type double"


def bool_ids(tmp_path):
    return parquet(tmp_path, table(dst=pa.array([True, False, True]))), [], "'dst' has type bool"


def string_and_int_ids(tmp_path):
    return parquet(tmp_path, table(src=pa.array(["a", "b", "c"]))), [], "ids must share one type"


def null_ids(tmp_path):
    return parquet(tmp_path, table(dst=pa.array([1, None, 0], pa.int64()))), [], "'dst' is null at row 1"


def null_weight(tmp_path):
    return parquet(tmp_path, table(weight=pa.array([1.0, 2.0, None]))), [], "'weight' is null at row 2"


def nan_weight(tmp_path):
    return parquet(tmp_path, table(weight=pa.array([1.0, float("nan"), 2.0]))), [], "is nan at row 1"


def inf_weight(tmp_path):
    return parquet(tmp_path, table(weight=pa.array([float("inf"), 1.0, 2.0]))), [], "is inf at row 0"


def neg_inf_weight(tmp_path):
    return parquet(tmp_path, table(weight=pa.array([1.0, 1.0, -float("inf")]))), [], "is -inf at row 2"


def string_weight(tmp_path):
    return parquet(tmp_path, table(weight=pa.array(["1", "2", "3"]))), [], "weights must be numeric"


def output_is_a_file(tmp_path):
    (tmp_path / "taken").write_text("x")
    return parquet(tmp_path, table()), ["--output", str(tmp_path / "taken")], "exists and is not a directory"


def dataset(tmp_path, **files):
    """A dataset folder: name -> table (written as Parquet) or bytes."""
    root = tmp_path / "d"
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (root / name).write_bytes(content)
        else:
            pq.write_table(content, root / name)
    return root


def id_only_in_partition_folder_names(tmp_path):
    root = dataset(tmp_path, **{"src=0/part-0.parquet": table(src=None)})
    return root, [], "column 'src' not found (columns: dst, weight); partition folder values are not read as columns"


def dangling_link_part(tmp_path):
    root = dataset(tmp_path, **{"part-0.parquet": table()})
    os.symlink("moved-away.parquet", root / "part-1.parquet")
    return root, [], f"{root / 'part-1.parquet'}: dangling symbolic link (to moved-away.parquet)"


def dangling_link_input(tmp_path):
    os.symlink("moved-away.parquet", tmp_path / "g.parquet")
    return tmp_path / "g.parquet", [], "g.parquet: dangling symbolic link"


def part_that_is_not_parquet(tmp_path):
    root = dataset(tmp_path, **{"part-00000.parquet": table(), "part-00001": b"src,dst\n0,1\n"})
    return root, [], f"{root / 'part-00001'}: a part of the dataset that is not readable Parquet"


def parq_part_truncated(tmp_path):
    whole = parquet(tmp_path, table(), "whole.parquet").read_bytes()
    root = dataset(tmp_path, **{"a.parquet": table(), "b.parq": whole[:-10]})
    return root, [], f"{root / 'b.parq'}: a part of the dataset that is not readable Parquet (it starts as Parquet"


def parquet_under_another_name(tmp_path):
    # an editor's backup copy: Parquet inside, but not named as data, so neither read nor skipped
    whole = parquet(tmp_path, table(), "whole.parquet").read_bytes()
    root = dataset(tmp_path, **{"g.parquet": table(), "g.parquet~": whole})
    return root, [], f"{root / 'g.parquet~'}: a Parquet file whose name is not *.parquet"


def fifo_input(tmp_path):
    os.mkfifo(tmp_path / "g.parquet")
    return tmp_path / "g.parquet", [], "g.parquet: is a FIFO (named pipe); Parquet is read from regular files only"


def fifo_in_dataset(tmp_path):
    root = dataset(tmp_path, **{"part-0.parquet": table()})
    os.mkfifo(root / "part-1.parquet")
    return root, [], f"{root / 'part-1.parquet'}: is a FIFO (named pipe)"


def delta_lake_table(tmp_path):
    root = dataset(tmp_path, **{"part-0.parquet": table(), "_delta_log/00000000000000000000.json": b"{}"})
    return root, [], "is a Delta Lake table (_delta_log/)"


def unfinished_spark_write(tmp_path):
    root = dataset(tmp_path, **{"part-00000.parquet": table(),
                                "_temporary/0/task_1/part-00001.parquet": table()})
    return root, [], "_temporary: a Spark/Hadoop write that did not finish (no _SUCCESS beside it)"


def page_checksum_mismatch(tmp_path):
    # ids stored plain and uncompressed, with page CRCs (as Spark writes them); one bit flipped
    # in a data page still decodes to a valid id, so only the checksum can tell
    ids = np.arange(10**12, 10**12 + 1000, dtype=np.int64)
    p = tmp_path / "g.parquet"
    pq.write_table(table(src=pa.array(ids), dst=pa.array(ids + 1), weight=pa.array(np.ones(1000))), p,
                   compression="none", use_dictionary=False, write_page_checksum=True)
    data = bytearray(p.read_bytes())
    data[data.find(ids[500].tobytes())] ^= 1
    p.write_bytes(bytes(data))
    assert pq.read_table(p)["src"][500].as_py() != ids[500]  # read blindly, the id is wrong
    # the detail in parentheses is the reader's own (pyarrow's, or the page reader's CRC32s)
    return p, [], f"{p}: corrupt Parquet data in column 'src', row group 0 ("


def forge_footer(path, file_rows=None, group_rows=None):
    """Rewrite a Parquet footer's FileMetaData.num_rows and/or the first RowGroup.num_rows."""
    data = path.read_bytes()
    length = struct.unpack("<i", data[-8:-4])[0]
    meta = decode_struct(data[-8 - length:-8])
    if file_rows is not None:
        field(meta, FileMetaDataField.num_rows)[2] = file_rows
    if group_rows is not None:
        field(field(meta, FileMetaDataField.row_groups)[2][1][0], RowGroupField.num_rows)[2] = group_rows
    footer = encode_struct(meta)
    path.write_bytes(data[:-8 - length] + footer + struct.pack("<i", len(footer)) + b"PAR1")


def footer_claims_2_pow_31_rows(tmp_path):
    p = parquet(tmp_path, table())
    forge_footer(p, file_rows=2**31)
    assert pq.ParquetFile(p).metadata.num_rows == 2**31
    return p, [], f"{p}: corrupt footer: it claims 2147483648 rows but its row groups hold 3"


def row_group_claims_fewer_rows(tmp_path):
    # footer and row group both say 2 rows: read blindly, pyarrow 26 silently drops the third
    # edge (pyarrow 25 still returns it)
    p = parquet(tmp_path, table())
    forge_footer(p, file_rows=2, group_rows=2)
    assert pq.ParquetFile(p).metadata.num_rows == 2 and pq.ParquetFile(p).metadata.row_group(0).num_rows == 2
    return p, [], f"{p}: corrupt footer: row group 0 claims 2 rows but column 'src' holds 3 values"


def invalid_utf8_id(tmp_path):
    offsets = pa.py_buffer(np.array([0, 1, 3, 4], dtype=np.int32).tobytes())
    bad = pa.Array.from_buffers(pa.string(), 3, [None, offsets, pa.py_buffer(b"a\xffzc")])
    return parquet(tmp_path, table(src=bad, dst=pa.array(["b", "c", "a"]))), [], \
        "column 'src' holds a string that is not valid UTF-8 at row 1"


def duplicate_column(tmp_path):
    t = pa.Table.from_arrays([pa.array([0, 1]), pa.array([5, 6]), pa.array([1, 2]), pa.array([1.0, 1.0])],
                             names=["src", "src", "dst", "weight"])
    return parquet(tmp_path, t), [], "column 'src' appears 2 times; name each column once"


def same_column_for_both_ends(tmp_path):
    return parquet(tmp_path, table()), ["--dst-col", "src"], "the source and destination columns are both 'src'"


def weight_column_that_is_an_id_column(tmp_path):
    return parquet(tmp_path, table()), ["--weight-col", "dst"], "the weight column 'dst' is also the destination column"


def uint64_above_int64_with_negative_ids(tmp_path):
    root = dataset(tmp_path, **{
        "a.parquet": table(src=pa.array([0, 2**64 - 1, 2], pa.uint64()), dst=pa.array([1, 2, 0], pa.uint64())),
        "b.parquet": table(src=pa.array([0, -5, 2], pa.int64()))})
    return root, [], (f"{root / 'a.parquet'}: column 'src' holds 18446744073709551615 at row 1 (above 2**63-1), "
                      f"but {root / 'b.parquet'}: column 'src' holds -5 at row 1 (negative)")


def integer_weight_beyond_2_pow_53(tmp_path):
    root = dataset(tmp_path, **{"a.parquet": table(weight=pa.array([1, 2, 3], pa.int64())),
                                "b.parquet": table(weight=pa.array([4, 2**53 + 1, 2**60], pa.int64()))})
    return root, [], f"{root / 'b.parquet'}: weight column 'weight' holds 9007199254740993 at row 1, which float64 cannot hold exactly"


def output_inside_the_input_dataset(tmp_path):
    root = dataset(tmp_path, **{"part-0.parquet": table()})
    return root, ["--output", str(root / "results")], "results: output folder is inside the input dataset"


def output_reached_through_a_link_in_the_dataset(tmp_path):
    """The dataset follows a folder link to elsewhere/: results written there would be read."""
    root = dataset(tmp_path, **{"part-0.parquet": table()})
    (tmp_path / "elsewhere" / "runs").mkdir(parents=True)
    (root / "more").symlink_to(tmp_path / "elsewhere")
    return root, ["--output", str(tmp_path / "elsewhere" / "runs" / "today")], \
        "today: output folder is inside the input dataset"


def output_file_taken_by_a_directory(tmp_path):
    (tmp_path / "o" / "mst_edges.parquet").mkdir(parents=True)
    return parquet(tmp_path, table()), ["--output", str(tmp_path / "o")], \
        f"{tmp_path / 'o' / 'mst_edges.parquet'}: output path exists and is not a regular file"


MST_CASES = [missing, empty_dir, not_parquet, truncated, corrupt_pages, mixed_schemas, empty_table,
             missing_src, mapped_column_absent, weight_missing, float_ids, bool_ids, string_and_int_ids,
             null_ids, null_weight, nan_weight, inf_weight, neg_inf_weight, string_weight, output_is_a_file,
             id_only_in_partition_folder_names, dangling_link_part, dangling_link_input, part_that_is_not_parquet, parq_part_truncated,
             parquet_under_another_name, fifo_input, fifo_in_dataset, delta_lake_table, unfinished_spark_write,
             page_checksum_mismatch, footer_claims_2_pow_31_rows, row_group_claims_fewer_rows, invalid_utf8_id,
             duplicate_column, same_column_for_both_ends, weight_column_that_is_an_id_column, uint64_above_int64_with_negative_ids,
             integer_weight_beyond_2_pow_53, output_inside_the_input_dataset, output_reached_through_a_link_in_the_dataset,
             output_file_taken_by_a_directory]


def unblock_after(seconds, path):
    """If a FIFO input were opened, the open would wait for a writer: be that writer after a
    while, so that a regression fails the test instead of hanging it."""
    def write():
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # fails at once when no reader waits
        except OSError:
            return
        os.write(fd, b"not parquet")
        os.close(fd)
    timer = threading.Timer(seconds, write)
    timer.start()
    return timer


@pytest.mark.parametrize("case", MST_CASES, ids=[c.__name__ for c in MST_CASES])
def test_mst_bad_input(tmp_path, capsys, case):
    path, extra, expected = case(tmp_path)
    out = tmp_path / "out"
    if "--output" not in extra:
        extra = extra + ["--output", str(out)]
        out.mkdir()
        (out / "mst_edges.parquet").write_bytes(b"an older result")
    before = listing(tmp_path)
    fifos = [p for p in tmp_path.rglob("*") if p.is_fifo()]
    timers = [unblock_after(20, p) for p in fifos]
    code = mst_cli.main([str(path), *extra])
    _, err = capsys.readouterr()
    for timer in timers:
        timer.cancel()
    assert code == 1
    assert expected in error_line(err), err
    assert listing(tmp_path) == before  # nothing written, not even a temporary file
    if (out / "mst_edges.parquet").is_file():
        assert (out / "mst_edges.parquet").read_bytes() == b"an older result"


def test_pipeline_writes_nothing_when_one_result_path_is_taken(tmp_path, capsys):
    """The forest's file name is taken by a folder: refused before reading, so the distances
    (which would be written first) are not written either."""
    path = parquet(tmp_path, table())
    (tmp_path / "o" / "mst_edges.parquet").mkdir(parents=True)
    code = pipeline_cli.main([str(path), "--source", "0", "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and "mst_edges.parquet: output path exists and is not a regular file" in error_line(err)
    assert listing(tmp_path / "o") == ["mst_edges.parquet"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_part_is_named(tmp_path, capsys):
    root = dataset(tmp_path, **{"part-0.parquet": table(), "part-1.parquet": table()})
    (root / "part-1.parquet").chmod(0)
    code = mst_cli.main([str(root), "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == [f"error: {root / 'part-1.parquet'}: cannot be read (Permission denied)"]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, expected", [
    (["--source", "42"], "source '42' is not a vertex of the graph"),
    (["--source", "abc"], "source 'abc' is not an integer vertex id"),
    # what Python's int() takes but a vertex id is not written as: likelier a typo than vertex 10
    (["--source", "1_0"], "source '1_0' is not an integer vertex id"),
    (["--source", "+1"], "source '+1' is not an integer vertex id"),
    (["--source", " 1"], "source ' 1' is not an integer vertex id"),
    (["--source", "\u0661"], "source '\u0661' is not an integer vertex id"),
    (["--source-set", "0,1_0"], "source '1_0' is not an integer vertex id"),
], ids=["source-absent", "source-wrong-type", "digit-separator", "plus-sign", "padded", "arabic-indic-digit",
        "in-a-source-set"])
def test_bfs_bad_source(tmp_path, capsys, argv, expected):
    path = parquet(tmp_path, table(weight=None))
    code = bfs_cli.main([str(path), *argv, "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and expected in error_line(err)
    assert not (tmp_path / "o").exists()


def test_bfs_negative_depth_limit_is_a_usage_error(tmp_path, capsys):
    path = parquet(tmp_path, table())
    assert bfs_cli.main([str(path), "--source", "0", "--depth-limit", "-1"]) == 1
    assert "--depth-limit: expected a whole number of levels >= 0" in capsys.readouterr().err


def test_bad_input_fails_the_flow_state_with_the_same_message(tmp_path):
    path = parquet(tmp_path, table(weight=pa.array([1.0, float("nan"), 2.0])))
    state = mst_flow(str(path), output=str(tmp_path / "o"), return_state=True)
    assert state.is_failed()
    with pytest.raises(ValueError, match=r"'weight' is nan at row 1"):
        state.result()
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("make", [
    lambda: table(src=pa.array([0, 1, 2], pa.int32()), dst=pa.array([1, 2, 0], pa.int32())),
    lambda: table(src=pa.array([0, 1, 2], pa.uint32()), dst=pa.array([1, 2, 0], pa.uint32())),
    lambda: table(weight=pa.array([1.0, 2.0, 3.0], pa.float32())),
    lambda: table(src=pa.array(["a", "b", "c"]).dictionary_encode(), dst=pa.array(["b", "c", "a"]).dictionary_encode()),
    lambda: table(extra=pa.array(["x", "y", "z"])),
    lambda: table(src=pa.array([0, 1, 2], pa.int32()), dst=pa.array([1, 2, 0], pa.int64())),
], ids=["int32-ids", "uint32-ids", "float32-weights", "dictionary-string-ids", "extra-columns", "int32-with-int64"])
def test_inputs_worth_supporting(tmp_path, capsys, make):
    path = parquet(tmp_path, make())
    assert mst_cli.main([str(path), "--output", str(tmp_path / "o")]) == 0, capsys.readouterr().err
    assert pq.read_table(tmp_path / "o" / "mst_edges.parquet").num_rows == 2


def test_dataset_split_over_files_with_codecs(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    for i, codec in enumerate(["zstd", "snappy", "gzip"]):
        pq.write_table(pa.table({"src": pa.array([i]), "dst": pa.array([i + 1]), "weight": pa.array([1.0])}),
                       tmp_path / "d" / f"part-{i}.parquet", compression=codec)
    assert mst_cli.main([str(tmp_path / "d"), "--output", str(tmp_path / "o")]) == 0, capsys.readouterr().err
    assert pq.read_table(tmp_path / "o" / "mst_edges.parquet").num_rows == 3


@pytest.mark.parametrize("partitions", [None, ("--partitions", "2", "--output-layout", "file"),
                                        ("--partitions", "2", "--output-layout", "dataset")],
                         ids=["one-partition", "partitioned-file", "partitioned-dataset"])
def test_a_result_written_inside_a_dataset_is_not_read_back_as_edges(tmp_path, capsys, monkeypatch, partitions):
    """A run on one file of a dataset writes its forest into a folder of the dataset (the default
    output/ when the dataset folder is the current directory). A later run on the whole dataset
    read the forest's rows as more edges, silently: the forest has the columns of an edge list."""
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(EDGES, data / "part-0.parquet")
    if partitions:
        monkeypatch.setenv("GRAPH_DASK_WORKERS", "1")
        partitions = [*partitions, "--runner", "dask", "--backend", "numpy"]
    code, _, err = run(mst_cli.main, [data / "part-0.parquet", "--output", data / "results", *(partitions or [])], capsys)
    assert code == 0, err
    result = data / "results" / "mst_edges.parquet"
    first = sorted(result.rglob("*.parquet"))[0] if result.is_dir() else result
    before = listing(tmp_path)
    code, out, err = run(mst_cli.main, [data, "--output", tmp_path / "out"], capsys)
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert lines == [f"error: {first}: is the mst_edges.parquet result of an earlier run, but {data / 'part-0.parquet'} "
                     f"is an edge list of the same input {data}; move the result out of it, or start its name or "
                     "folder with _ to skip it"]
    assert listing(tmp_path) == before


@pytest.mark.parametrize("columns, expected", [
    ({"src": pa.array([b"a", b"b"]), "dst": pa.array([b"b", b"a"])}, "column 'src' has type binary"),
    ({"src": pa.array([b"aa", b"bb"], pa.binary(2)), "dst": pa.array([b"bb", b"aa"], pa.binary(2))},
     "column 'src' has type fixed_size_binary[2]"),
    ({"src": pa.array([0, 1]).cast(pa.timestamp("ms")), "dst": pa.array([1, 0]).cast(pa.timestamp("ms"))},
     "column 'src' has type timestamp[ms]"),
    ({"src": pa.array([0, 1], pa.int32()).cast(pa.date32()), "dst": pa.array([1, 0], pa.int32()).cast(pa.date32())},
     "column 'src' has type date32[day]"),
    ({"src": pa.array([0, 1]).cast(pa.decimal128(19, 0)), "dst": pa.array([1, 0]).cast(pa.decimal128(19, 0))},
     "column 'src' has type decimal128(19, 0)"),
    ({"src": pa.array([[0], [1]]), "dst": pa.array([1, 0])}, "column 'src' has type list<element: int64>"),
    ({"weight": pa.array([True, False])}, "weight column 'weight' has type bool; weights must be numeric"),
    ({"weight": pa.array([{"v": 1.0}, {"v": 2.0}])}, "weight column 'weight' has type struct<v: double>"),
], ids=["binary-ids", "fixed-size-binary-ids", "timestamp-ids", "date-ids", "decimal-ids", "list-ids", "bool-weights",
        "struct-weights"])
def test_unusable_column_types_are_refused_naming_file_and_column(tmp_path, capsys, columns, expected):
    table = {"src": pa.array([0, 1]), "dst": pa.array([1, 0]), "weight": pa.array([1.0, 2.0]), **columns}
    pq.write_table(pa.table(table), tmp_path / "g.parquet")
    code, out, err = run(mst_cli.main, [tmp_path / "g.parquet", "--output", tmp_path / "o"], capsys)
    assert code == 1 and out == ""
    assert error_line(err).startswith(f"error: {tmp_path / 'g.parquet'}: {expected}")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("marker, expected", [
    ({"_temporary/0/task_1/part-00001.parquet": True}, "_temporary: a Spark/Hadoop write that did not finish"),
    ({"_delta_log/00000000000000000000.json": False}, "is a Delta Lake table (_delta_log/)"),
    ({"metadata/v1.metadata.json": False}, "is an Apache Iceberg table (metadata/*.metadata.json)"),
], ids=["unfinished-spark-write", "delta-lake", "iceberg"])
def test_a_table_format_or_unfinished_write_below_the_dataset_is_refused(tmp_path, capsys, marker, expected):
    """Refused with one line naming the path, anywhere below the folder given: a Delta Lake
    (`_delta_log/`) or Iceberg (`metadata/*.metadata.json`) table, whose folders also hold files
    of older versions, and a `_temporary/` folder without `_SUCCESS` beside it (a Spark/Hadoop
    write that did not finish). Only the dataset's own folder used to be looked at: one day's folder of a dataset of
    daily Spark outputs (`edges/day=2/`, still being written), or a Delta table below the
    folder given, was read silently, older versions' files and half a write included."""
    data = tmp_path / "edges"
    write_seed(data / "day=1" / "part-00000.parquet")
    (data / "day=1" / "_SUCCESS").write_text("")
    table = data / "day=2"
    write_seed(table / "part-00000.parquet")
    for name, parquet in marker.items():
        if parquet:
            write_seed(table / name)
        else:
            (table / name).parent.mkdir(parents=True, exist_ok=True)
            (table / name).write_text("{}")
    code, out, err = run(mst_cli.main, [data, "--output", tmp_path / "out"], capsys)
    assert code == 1 and out == ""
    line = error_line(err)
    assert line.startswith(f"error: {table}") and expected in line, err
    assert not (tmp_path / "out").exists()
