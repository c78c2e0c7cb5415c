"""A fifth search for wrong answers, on the one-partition path (NumPy backend): Parquet types,
file layouts, values and output paths not tried before. Three faults are pinned by named cases;
the classes that held are pinned by compact parametrized cases against serial references
written for the test (Kruskal with union-find under the order (weight, input row), -0.0 and 0.0
one weight; a queue BFS; predecessors checked as valid parents)."""
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tests.references import assert_distances, assert_forest

pytestmark = pytest.mark.usefixtures("prefect_server")


def run(main, argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def contents(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() and not p.is_symlink() else None
            for p in path.rglob("*")}


# Faults found


def test_decimal_weights_are_read_as_the_nearest_float64(tmp_path, capsys):
    """Arrow's decimal -> float64 cast is not correctly rounded: 1.001 became 1.0010000000000001,
    and the two decimals below, whose nearest float64 values differ, became one float64. The
    heavier edge (row 0) then won the tie by its row and the forest was not the minimum one,
    silently: the validation saw the same rounded weights."""
    heavier, lighter = Decimal("0.08755227724079506"), Decimal("0.08755227724079505")
    assert float(lighter) < float(heavier)
    src, dst = [0, 1, 0, 3], [1, 2, 2, 4]
    weight = [heavier, Decimal("0.001"), lighter, Decimal("-1.001")]
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": pa.array(weight, pa.decimal128(38, 17))}), path)
    code, _, err = run(mst_cli.main, [path, "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    as_float = [float(w) for w in weight]
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, as_float)  # rows 1, 2 and 3


@pytest.mark.parametrize("layout", ["same-file", "input-is-a-link-to-the-result", "dataset-part-linked-to-the-result",
                                    "input-is-a-result-folder"])
@pytest.mark.parametrize("main, result, argv", [
    (mst_cli.main, "mst_edges.parquet", []),
    (bfs_cli.main, "bfs_distances.parquet", ["--source", "0"]),
    (pipeline_cli.main, "bfs_distances.parquet", ["--source", "0"]),
], ids=["mst", "bfs", "pipeline"])
def test_a_result_path_that_is_an_input_file_is_refused(tmp_path, capsys, layout, main, result, argv):
    """The output folder holds the input under a result's name (the file itself, the file a
    link given as the input points to, a dataset's part reached by a link, or a partitioned
    run's folder of parts read as the input): the run wrote its result over the input and
    reported success, the edge list lost. Now it is refused before reading."""
    edges = pa.table({"src": pa.array([0, 1, 2, 0], pa.int64()), "dst": pa.array([1, 2, 0, 2], pa.int64()),
                      "weight": [1.0, 2.0, 3.0, 0.5]})
    out = tmp_path / "out"
    out.mkdir()
    if layout == "input-is-a-result-folder":
        (out / result).mkdir()
        lost = out / result / "part-00000.parquet"
    else:
        lost = out / result
    pq.write_table(edges, lost)
    given = {"same-file": out / result, "input-is-a-result-folder": out / result,
             "input-is-a-link-to-the-result": tmp_path / "edges.parquet", "dataset-part-linked-to-the-result": tmp_path / "data"}[layout]
    if layout == "input-is-a-link-to-the-result":
        given.symlink_to(out / result)
        lost = given  # named as the user gave it
    if layout == "dataset-part-linked-to-the-result":
        given.mkdir()
        pq.write_table(edges, given / "part-0.parquet")
        (given / "part-1.parquet").symlink_to(out / result)
        lost = given / "part-1.parquet"
    before = contents(tmp_path)
    code, text, err = run(main, [given, *argv, "--output", out], capsys)
    assert code == 1 and text == ""
    assert err.strip().splitlines() == [
        f"error: {out / result}: the result would replace the input file {lost}; write the results elsewhere"]
    assert contents(tmp_path) == before


@pytest.mark.parametrize("main", [bfs_cli.main, pipeline_cli.main], ids=["bfs", "pipeline"])
def test_an_input_at_an_earlier_search_result_path_is_not_removed_as_one(tmp_path, capsys, main):
    """An edge list at OUTPUT/bfs_distances.parquet, searched with source sets into OUTPUT: the
    run wrote OUTPUT/source-set-0/ and then deleted its own input as an earlier run's single
    search. Only files whose footer names them a result are removed now."""
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "weight": [1.0, 2.0]}), out / "bfs_distances.parquet")
    before = (out / "bfs_distances.parquet").read_bytes()
    code, _, err = run(main, [out / "bfs_distances.parquet", "--source-set", "0", "--output", out], capsys)
    assert code == 0, err
    assert (out / "bfs_distances.parquet").read_bytes() == before
    assert_distances(out / "source-set-0" / "bfs_distances.parquet", [0, 1], [1, 2], [0])


def test_a_link_at_the_result_path_to_the_input_is_replaced_not_followed(tmp_path, capsys):
    """The other way round is fine: a link at the result's path is replaced by the result, and
    the input it pointed to is left as it was."""
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "weight": [1.0, 2.0]}), tmp_path / "g.parquet")
    before = (tmp_path / "g.parquet").read_bytes()
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "mst_edges.parquet").symlink_to(tmp_path / "g.parquet")
    code, _, err = run(mst_cli.main, [tmp_path / "g.parquet", "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    assert not (tmp_path / "o" / "mst_edges.parquet").is_symlink()
    assert (tmp_path / "g.parquet").read_bytes() == before


# Classes that held: a pipeline run equals the references


SRC, DST = [0, 1, 2, 3, 0, 4, 5, 5], [1, 2, 3, 0, 2, 5, 5, 4]
WEIGHT = [1.0, 1.0, 2.0, 1.0, 0.5, 3.0, 1.0, 3.0]


def ids_case(values, type_):
    """SRC/DST mapped through ``values`` (id k -> values[k]) in the Arrow type given."""
    src, dst = [values[v] for v in SRC], [values[v] for v in DST]
    return pa.table({"src": pa.array(src, type_), "dst": pa.array(dst, type_), "weight": WEIGHT}), src, dst, WEIGHT


def dictionary_ids(case):
    table, *rest = case
    return (table.set_column(0, "src", table["src"].dictionary_encode())
            .set_column(1, "dst", table["dst"].dictionary_encode()), *rest)


def weight_case(weights, type_=None):
    array = weights if isinstance(weights, pa.Array) else pa.array(weights, type_)
    as_float = [float(w) for w in array.to_pylist()] if not pa.types.is_dictionary(array.type) else \
        [float(w) for w in array.dictionary_decode().to_pylist()]
    return pa.table({"src": pa.array(SRC, pa.int64()), "dst": pa.array(DST, pa.int64()), "weight": array}), SRC, DST, as_float


ID_AND_WEIGHT_CASES = {
    "int8-ids-at-both-extremes": lambda: ids_case([-128, 127, 0, -1, 126, -127], pa.int8()),
    "int16-ids": lambda: ids_case([-32768, 32767, 0, 5, -5, 300], pa.int16()),
    "uint8-ids-at-both-extremes": lambda: ids_case([0, 255, 128, 1, 254, 127], pa.uint8()),
    "uint16-ids": lambda: ids_case([0, 65535, 1, 2, 3, 4], pa.uint16()),
    "uint32-ids": lambda: ids_case([0, 2**32 - 1, 2**31, 1, 2, 3], pa.uint32()),
    "uint64-ids-above-2-pow-63": lambda: ids_case([2**63, 2**64 - 1, 2**63 + 5, 2**64 - 2**60, 2**63 + 1, 2**64 - 7],
                                                  pa.uint64()),
    "int64-ids-at-both-extremes": lambda: ids_case([-2**63, 2**63 - 1, 0, -1, 2**62, -2**62], pa.int64()),
    "dictionary-encoded-int8-ids": lambda: dictionary_ids(ids_case([-128, 127, 0, -1, 126, -127], pa.int8())),
    "large-string-ids": lambda: ids_case(["a", "é", "", " ", "a\x00b", "日本"], pa.large_string()),
    "string-view-ids": lambda: ids_case(["a", "é", "", " ", "a\x00b", "日本"], pa.string_view()),
    "float16-weights-subnormal-and-extreme": lambda: weight_case(
        np.array([6e-8, 1e-7, 6e-5, 65504, -65504, 0.0, -0.0, 6e-8], np.float16)),
    "float32-weights-subnormal": lambda: weight_case(
        np.array([1e-45, 2e-45, 1e-38, 1e-45, 0.0, -1e-45, -0.0, 1e-45], np.float32)),
    "float64-weights-subnormal-and-signed-zero": lambda: weight_case(
        [5e-324, 1e-323, 2.5e-308, 5e-324, 0.0, -5e-324, -0.0, 0.0]),
    "weights-all-1.7e308": lambda: weight_case([1.7e308] * 8),
    "weights-all--1.7e308": lambda: weight_case([-1.7e308] * 8),
    "negative-weights": lambda: weight_case([-1.0, -2.0, -3.0, -1.0, -0.5, -3.0, -1.0, -3.0]),
    "int8-weights": lambda: weight_case([1, 1, 2, 1, -128, 127, 0, 127], pa.int8()),
    "uint64-weights-above-2-pow-63": lambda: weight_case([2**64 - 2**11, 1, 2, 1, 2**63, 3, 0, 2**63], pa.uint64()),
    "dictionary-encoded-float32-weights": lambda: weight_case(pa.array(np.array(WEIGHT, np.float32)).dictionary_encode()),
    "decimal256-weights": lambda: weight_case([Decimal(str(w)) for w in WEIGHT], pa.decimal256(40, 2)),
}


@pytest.mark.parametrize("case", ID_AND_WEIGHT_CASES, ids=list(ID_AND_WEIGHT_CASES))
def test_id_and_weight_types_give_the_reference_results(tmp_path, capsys, case):
    table, src, dst, weight = ID_AND_WEIGHT_CASES[case]()
    pq.write_table(table, tmp_path / "g.parquet")
    code, _, err = run(pipeline_cli.main, [tmp_path / "g.parquet", "--source", src[0], "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, weight)
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, [src[0]])


def random_edges(seed=3, n=30, m=120):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, n, m).tolist(), rng.integers(0, n, m).tolist(), rng.integers(0, 4, m).astype(float).tolist())


def empty_row_groups_between_full_ones(directory: Path, table: pa.Table) -> None:
    with pq.ParquetWriter(directory / "g.parquet", table.schema) as writer:
        for piece in (table.slice(0, 50), table.slice(0, 0), table.slice(0, 0), table.slice(50)):
            writer.write_table(piece)
    assert [g.num_rows for g in map(pq.ParquetFile(directory / "g.parquet").metadata.row_group, range(4))] == [50, 0, 0, 70]


def row_groups_of_one_row(directory: Path, table: pa.Table) -> None:
    pq.write_table(table, directory / "g.parquet", row_group_size=1)


def a_file_without_row_groups_between_two(directory: Path, table: pa.Table) -> None:
    pq.write_table(table.slice(0, 60), directory / "part-0.parquet", row_group_size=7)
    pq.ParquetWriter(directory / "part-1.parquet", table.schema).close()
    pq.write_table(table.slice(60), directory / "part-2.parquet", row_group_size=13)


def types_differing_by_file(directory: Path, table: pa.Table) -> None:
    """int16/uint8 ids and float16 weights; int64 ids and dictionary float32 weights; decimal
    weights in a file whose columns are declared non-null."""
    a, b, c = table.slice(0, 40), table.slice(40, 40), table.slice(80)
    pq.write_table(pa.table({"src": a["src"].cast(pa.int16()), "dst": a["dst"].cast(pa.uint8()),
                             "weight": a["weight"].cast(pa.float16())}), directory / "a.parquet")
    pq.write_table(pa.table({"src": b["src"], "dst": b["dst"],
                             "weight": b["weight"].cast(pa.float32()).dictionary_encode()}), directory / "b.parquet")
    schema = pa.schema([pa.field("src", pa.int64(), nullable=False), pa.field("dst", pa.int64(), nullable=False),
                        pa.field("weight", pa.decimal128(10, 2), nullable=False)])
    pq.write_table(pa.table({"src": c["src"], "dst": c["dst"], "weight": c["weight"].cast(pa.decimal128(10, 2))},
                            schema=schema), directory / "c.parquet")


def encodings_and_page_layouts(directory: Path, table: pa.Table) -> None:
    """Data page v2 with tiny pages, byte-stream-split weights, delta-encoded ids without
    statistics: one file each."""
    pq.write_table(table.slice(0, 40), directory / "a.parquet", data_page_version="2.0", data_page_size=64,
                   row_group_size=9)
    pq.write_table(table.slice(40, 40), directory / "b.parquet", use_dictionary=False, use_byte_stream_split=["weight"])
    pq.write_table(table.slice(80), directory / "c.parquet", use_dictionary=False, write_statistics=False,
                   column_encoding={"src": "DELTA_BINARY_PACKED", "dst": "DELTA_BINARY_PACKED"})


def one_row_files_named_out_of_numeric_order(directory: Path, table: pa.Table) -> None:
    """120 files of one row (part-10 sorts before part-9): rows come in path order, which
    breaks the ties between equal weights."""
    names = sorted(f"part-{k}.parquet" for k in range(table.num_rows))
    for row, name in enumerate(names):
        pq.write_table(table.slice(row, 1), directory / name)


LAYOUTS = [empty_row_groups_between_full_ones, row_groups_of_one_row, a_file_without_row_groups_between_two,
           types_differing_by_file, encodings_and_page_layouts, one_row_files_named_out_of_numeric_order]


@pytest.mark.parametrize("layout", LAYOUTS, ids=[f.__name__ for f in LAYOUTS])
def test_file_layouts_give_the_reference_results(tmp_path, capsys, layout):
    src, dst, weight = random_edges()
    data = tmp_path / "data"
    data.mkdir()
    layout(data, pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight}))
    given = data / "g.parquet" if (data / "g.parquet").exists() else data
    code, _, err = run(pipeline_cli.main, [given, "--source", src[0], "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, weight)
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, [src[0]])


@pytest.mark.parametrize("src, dst, weight, sources, options", [
    ([5, 7, 9], [5, 7, 9], [1.0, 2.0, 3.0], [7], []),
    ([0, 0, 0, 1, 1], [1, 1, 1, 0, 0], [3.0, 1.0, 2.0, 0.5, 0.75], [0], []),
    ([0, 1, 2], [1, 2, 3], [1.0, 1.0, 1.0], [3], ["--directed"]),
    ([0, 1, 2], [1, 2, 3], [1.0, 1.0, 1.0], [1], ["--depth-limit", "0"]),
    ([0, 1, 2], [1, 2, 3], [1.0, 1.0, 1.0], [1, 1, 2, 1], ["--directed", "--depth-limit", "1"]),
], ids=["self-loops-only", "parallel-edges-the-lightest-wins", "source-only-a-destination-directed",
        "depth-limit-0", "duplicate-sources"])
def test_small_graphs_give_the_reference_results(tmp_path, capsys, src, dst, weight, sources, options):
    pq.write_table(pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight}),
                   tmp_path / "g.parquet")
    argv = [tmp_path / "g.parquet", *[a for s in sources for a in ("--source", s)], *options, "--output", tmp_path / "o"]
    code, _, err = run(pipeline_cli.main, argv, capsys)
    assert code == 0, err
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, weight)
    limit = int(options[options.index("--depth-limit") + 1]) if "--depth-limit" in options else None
    assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, sources, "--directed" in options, limit)


@pytest.mark.parametrize("directed, limit", [(False, None), (True, 1)])
def test_overlapping_source_sets_each_give_the_reference_distances(tmp_path, capsys, directed, limit):
    src, dst, weight = random_edges(seed=5, n=25, m=60)
    pq.write_table(pa.table({"src": src, "dst": dst}), tmp_path / "g.parquet")
    sets = [[src[0]], [src[0], src[0]], [src[1], src[0]], [dst[3]] * 5]
    argv = [tmp_path / "g.parquet", *[a for s in sets for a in ("--source-set", ",".join(map(str, s)))],
            *(["--directed"] if directed else []), *(["--depth-limit", limit] if limit is not None else []),
            "--output", tmp_path / "o"]
    code, _, err = run(bfs_cli.main, argv, capsys)
    assert code == 0, err
    for k, sources in enumerate(sets):
        assert_distances(tmp_path / "o" / f"source-set-{k}" / "bfs_distances.parquet", src, dst, sources, directed, limit)


# Classes that held: refused with one line naming the file and column


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
    lines = err.strip().splitlines()
    assert code == 1 and out == "" and len(lines) == 1
    assert lines[0].startswith(f"error: {tmp_path / 'g.parquet'}: {expected}")
    assert not (tmp_path / "o").exists()


def test_a_dotted_column_name_beside_a_struct_of_the_same_path_reads_the_top_level_column(tmp_path, capsys):
    """Column 'a.b' and struct 'a' with field 'b' have the same Parquet path; the top-level
    column is the one asked for."""
    src, dst, weight = [0, 1, 2, 3, 0], [1, 2, 3, 0, 2], [1.0, 1.0, 2.0, 1.0, 0.5]
    pq.write_table(pa.table({"a": pa.array([{"b": 100 + i} for i in range(5)]), "a.b": src, "x.y": dst, "重さ": weight}),
                   tmp_path / "g.parquet")
    code, _, err = run(mst_cli.main, [tmp_path / "g.parquet", "--src-col", "a.b", "--dst-col", "x.y",
                                      "--weight-col", "重さ", "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, weight)
