"""Every bad input: one stderr line naming the file/column/row/vertex, exit 1, no output left."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows.mst import mst_flow

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
    return p, [], "corrupt or truncated"


def mixed_schemas(tmp_path):
    (tmp_path / "d").mkdir()
    pq.write_table(table(), tmp_path / "d" / "a.parquet")
    pq.write_table(table(src=pa.array(["0", "1", "2"])), tmp_path / "d" / "b.parquet")
    return tmp_path / "d", [], "mixed schemas"


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


MST_CASES = [missing, empty_dir, not_parquet, truncated, corrupt_pages, mixed_schemas, empty_table,
             missing_src, mapped_column_absent, weight_missing, float_ids, bool_ids, string_and_int_ids,
             null_ids, null_weight, nan_weight, inf_weight, neg_inf_weight, string_weight, output_is_a_file]


def listing(path):
    return sorted(p.relative_to(path) for p in path.rglob("*"))


@pytest.mark.parametrize("case", MST_CASES, ids=[c.__name__ for c in MST_CASES])
def test_mst_bad_input(tmp_path, capsys, case):
    path, extra, expected = case(tmp_path)
    out = tmp_path / "out"
    if "--output" not in extra:
        extra = extra + ["--output", str(out)]
    before = listing(tmp_path)
    code = mst_cli.main([str(path), *extra])
    _, err = capsys.readouterr()
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], err
    assert listing(tmp_path) == before  # nothing written, not even a temporary file


@pytest.mark.parametrize("argv, expected", [
    (["--source", "42"], "source '42' is not a vertex of the graph"),
    (["--source", "abc"], "source 'abc' is not an integer vertex id"),
], ids=["source-absent", "source-wrong-type"])
def test_bfs_bad_source(tmp_path, capsys, argv, expected):
    path = parquet(tmp_path, table(weight=None))
    code = bfs_cli.main([str(path), *argv, "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and expected in err[0]
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
