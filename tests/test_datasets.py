"""Valid inputs as tools and people leave them: dataset folders written by Spark, Dask and hand,
hive partitions and symlinked folders, mixed encodings across files, extreme weights, every
Arrow id and weight type (narrow, unsigned above 2**63, dictionary-encoded, string views,
subnormal and signed-zero floats, decimals), file layouts (empty row groups, one-row groups and
files, files without row groups, page versions and encodings), columns named alike or with dots,
and a forest given as the input. Each must give the right answer; the expected forests come from
networkx, the seeds' known one, or the serial references of tests/references.py (Kruskal under
the order (weight, input row), -0.0 and 0.0 one weight; a queue BFS)."""
import os
import subprocess
import sys
from collections import deque
from decimal import Decimal
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tasks.parquet.dataset.plan import plan_input
from tasks.parquet.read.reader import read_edges
from tasks.partitioned.driver import run_partitioned
from tests.conftest import ROOT, SEED_EDGES
from tests.helpers import EDGES, random_edges, run
from tests.references import assert_distances, assert_forest

pytestmark = pytest.mark.usefixtures("prefect_server")

SEED_FOREST = {(0, 2, 1.0), (1, 2, 2.0), (3, 4, 2.0), (4, 5, 3.0), (1, 3, 5.0)}
# an edge lighter than any seed edge between far-apart vertices: read by mistake, it joins the forest
DECOY = pa.table({"src": pa.array([0], pa.int64()), "dst": pa.array([5], pa.int64()), "weight": [0.5]})


def seed_parts(k):
    """The seeds' graph split into k tables."""
    s, d, w = (np.array(c) for c in zip(*SEED_EDGES))
    return [pa.table({"src": pa.array(a, pa.int64()), "dst": pa.array(b, pa.int64()), "weight": pa.array(c, pa.float64())})
            for a, b, c in zip(np.array_split(s, k), np.array_split(d, k), np.array_split(w, k))]


def write(path, table_or_bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(table_or_bytes, bytes):
        path.write_bytes(table_or_bytes)
    else:
        pq.write_table(table_or_bytes, path)
    return path


def forest(main, args, capsys, output):
    code = main([*map(str, args), "--output", str(output)])
    err = capsys.readouterr().err
    assert code == 0, err
    rows = pq.read_table(output / "mst_edges.parquet").to_pylist()
    return {(min(r["src"], r["dst"]), max(r["src"], r["dst"]), r["weight"]) for r in rows}


def test_spark_output_folder_reads_only_the_committed_parts(tmp_path, capsys):
    root = tmp_path / "edges"
    a, b, c = seed_parts(3)
    write(root / "part-00000-7d1e.snappy.parquet", a)
    write(root / "part-00001", b)  # suffix-less part: Parquet by its magic bytes
    write(root / "part-00002-7d1e.snappy.parquet", c)
    write(root / "_SUCCESS", b"")
    write(root / "._SUCCESS.crc", b"crc")
    write(root / ".part-00000-7d1e.snappy.parquet.crc", b"crc")
    write(root / "_temporary" / "0" / "_temporary" / "attempt_202611300000_0001_m_000003_3" / "part-00003.parquet", DECOY)
    write(root / ".ipynb_checkpoints" / "part-00000-checkpoint.parquet", DECOY)
    write(root / "README.md", b"edges of the network, written nightly\n")
    assert forest(mst_cli.main, [root], capsys, tmp_path / "o") == SEED_FOREST
    assert read_edges(plan_input(str(root))).skipped == [str(root / "README.md")]


def test_dask_output_folder_with_metadata_files(tmp_path, capsys):
    root = tmp_path / "edges"
    parts = seed_parts(2)
    for i, part in enumerate(parts):
        write(root / f"part.{i}.parquet", part)
    pq.write_metadata(parts[0].schema, root / "_common_metadata")
    write(root / "_metadata", b"PAR1 not a real summary PAR1")
    assert forest(mst_cli.main, [root], capsys, tmp_path / "o") == SEED_FOREST


def test_every_parquet_suffix_is_read(tmp_path, capsys):
    root = tmp_path / "edges"
    for name, part in zip(["a.parquet", "b.parq", "c.pq", "D.PARQUET"], seed_parts(4)):
        write(root / name, part)
    assert forest(mst_cli.main, [root], capsys, tmp_path / "o") == SEED_FOREST


def test_hive_partitions_and_symlinked_folders_are_each_read_once(tmp_path, capsys):
    root, elsewhere = tmp_path / "edges", tmp_path / "elsewhere"
    a, b, c = seed_parts(3)
    write(root / "day=1" / "part-0.parquet", a)
    write(elsewhere / "day2" / "part-0.parquet", b)
    os.symlink(elsewhere / "day2", root / "day=2")  # a partition folder that is a link
    write(root / "day=3" / "part-0.parquet", c)
    os.symlink("..", root / "day=3" / "up")  # a loop back to the dataset's root
    os.symlink(root / "day=1", root / "day=4")  # a second way into a folder already read
    os.symlink(root / "day=1" / "part-0.parquet", root / "day=3" / "part-1.parquet")  # and into a file
    table = read_edges(plan_input(str(root)))
    assert table.rows == len(SEED_EDGES)
    assert sorted(zip(table.src.tolist(), table.dst.tolist())) == sorted((s, d) for s, d, _ in SEED_EDGES)
    assert forest(mst_cli.main, [root], capsys, tmp_path / "o") == SEED_FOREST


def test_output_under_an_underscore_folder_of_the_input_is_not_read_back(tmp_path, capsys):
    root = tmp_path / "edges"
    for i, part in enumerate(seed_parts(2)):
        write(root / f"part-{i}.parquet", part)
    first = forest(mst_cli.main, [root], capsys, root / "_results")
    assert first == SEED_FOREST
    assert forest(mst_cli.main, [root], capsys, root / "_results") == first


def test_dictionary_and_plain_string_ids_across_files(tmp_path, capsys):
    root = tmp_path / "edges"
    write(root / "a.parquet", pa.table({"src": pa.array(["paris", "lyon"]).dictionary_encode(),
                                        "dst": pa.array(["lyon", "nice"]).dictionary_encode(), "weight": [3.0, 1.0]}))
    write(root / "b.parquet", pa.table({"src": pa.array(["nice", "lille"], pa.large_string()),
                                        "dst": pa.array(["paris", "lyon"], pa.large_string()), "weight": [2.0, 5.0]}))
    assert forest(mst_cli.main, [root], capsys, tmp_path / "o") == {
        ("lyon", "nice", 1.0), ("nice", "paris", 2.0), ("lille", "lyon", 5.0)}


@pytest.mark.parametrize("first, second, out_type", [
    (pa.array([0, 1], pa.int32()), pa.array([2, -3], pa.int64()), pa.int64()),
    (pa.array([0, 2**63 - 1], pa.uint64()), pa.array([2, -3], pa.int64()), pa.int64()),
    (pa.array([0, 2**64 - 1], pa.uint64()), pa.array([2, 3], pa.int64()), pa.uint64()),
    (pa.array([0, 2**64 - 1], pa.uint64()), pa.array([2, 3], pa.uint8()), pa.uint64()),
], ids=["int32-with-int64", "uint64-below-2-pow-63-with-negative-int64", "uint64-above-2-pow-63-with-non-negative-int64",
        "uint64-with-uint8"])
def test_integer_id_types_across_files_unify_exactly(tmp_path, capsys, first, second, out_type):
    """A path 0 - x - y - z over both files; distances name every id exactly as written."""
    root = tmp_path / "edges"
    ids = first.to_pylist() + second.to_pylist()
    write(root / "a.parquet", pa.table({"src": first, "dst": pa.array(first.to_pylist()[1:] + [second[0].as_py()], first.type)}))
    write(root / "b.parquet", pa.table({"src": second, "dst": pa.array(second.to_pylist()[1:] + [ids[0]] if
                                                                        second.type != pa.uint8() else [3, 0], second.type)}))
    code = bfs_cli.main([str(root), "--source", str(ids[0]), "--output", str(tmp_path / "o")])
    assert code == 0, capsys.readouterr().err
    table = pq.read_table(tmp_path / "o" / "bfs_distances.parquet")
    assert table["vertex"].type == out_type
    got = dict(zip(table["vertex"].to_pylist(), table["distance"].to_pylist()))
    graph = nx.Graph()
    for name in ("a", "b"):
        t = pq.read_table(root / f"{name}.parquet")
        graph.add_edges_from(zip(t["src"].to_pylist(), t["dst"].to_pylist()))
    assert got == nx.single_source_shortest_path_length(graph, ids[0])


def test_weights_near_float64_max_give_the_minimum_forest_and_no_warning(tmp_path):
    """Finite weights whose sums overflow float64: the forest is networkx's, its total is
    reported, and stderr holds nothing (no NumPy warning, no overflow error)."""
    rng = np.random.default_rng(7)
    n, m = 40, 200
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    weight = rng.choice([-1, 1], m) * np.finfo(np.float64).max * rng.uniform(0.5, 1.0, m)
    path = write(tmp_path / "g.parquet", pa.table({"src": src, "dst": dst, "weight": weight}))
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "GRAPH_TASK_RUNNER": "threads"}
    run = subprocess.run([sys.executable, "-W", "default", "-m", "flows.pipeline", str(path), "--source", str(src[0]),
                          "--output", str(tmp_path / "o")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    graph = nx.MultiGraph()
    graph.add_weighted_edges_from((int(a), int(b), float(w)) for a, b, w in zip(src, dst, weight) if a != b)
    expected = {(min(a, b), max(a, b), d["weight"]) for a, b, d in nx.minimum_spanning_edges(graph, keys=False, data=True)}
    rows = pq.read_table(tmp_path / "o" / "mst_edges.parquet").to_pylist()
    assert {(min(r["src"], r["dst"]), max(r["src"], r["dst"]), r["weight"]) for r in rows} == expected


def test_integer_weights_beyond_2_pow_53_that_float64_holds_are_carried_exactly(tmp_path, capsys):
    weight = pa.array([2**60, 2**60 + 2**8, 2**62, -(2**63)], pa.int64())  # each a float64 exactly
    path = write(tmp_path / "g.parquet", pa.table({"src": pa.array([0, 1, 2, 0]), "dst": pa.array([1, 2, 0, 3]),
                                                   "weight": weight}))
    assert forest(pipeline_cli.main, [path, "--source", "0"], capsys, tmp_path / "o") == {
        (0, 1, float(2**60)), (1, 2, float(2**60 + 2**8)), (0, 3, float(-(2**63)))}


@pytest.mark.parametrize("dtype", [pa.int64(), pa.uint64()])
def test_integer_weights_are_refused_exactly_when_float64_cannot_hold_them(tmp_path, dtype):
    """Random 64-bit weights, mostly with low bits cleared so that many are exact: the first row
    Python's own int -> float -> int round trip changes is the row named, or none is refused."""
    rng = np.random.default_rng(11)
    info = np.iinfo(dtype.to_pandas_dtype())
    for trial in range(40):
        values = rng.integers(info.min, info.max, 6, dtype=dtype.to_pandas_dtype(), endpoint=True)
        values &= ~dtype.to_pandas_dtype()((1 << int(rng.integers(0, 64))) - 1)  # clear k low bits
        path = write(tmp_path / f"w{trial}.parquet", pa.table({"src": np.arange(6), "dst": np.arange(1, 7),
                                                                 "weight": pa.array(values, dtype)}))
        inexact = [row for row, v in enumerate(values.tolist()) if int(float(v)) != v]
        if inexact:
            with pytest.raises(ValueError, match=rf"holds {values[inexact[0]]} at row {inexact[0]}, which float64"):
                read_edges(plan_input(str(path)))
        else:
            assert read_edges(plan_input(str(path))).weight.tolist() == [float(v) for v in values.tolist()]


def test_a_forest_given_as_the_input_is_an_edge_list(tmp_path, capsys):
    """Results alone (a forest file, or the folder holding only it) are read as edges: a search
    over the spanning forest is a use, not a mistake."""
    pq.write_table(EDGES, tmp_path / "g.parquet")
    assert run(mst_cli.main, [tmp_path / "g.parquet", "--output", tmp_path / "o"], capsys)[0] == 0
    forest = pq.read_table(tmp_path / "o" / "mst_edges.parquet")
    assert forest.num_rows == 3
    for given in (tmp_path / "o" / "mst_edges.parquet", tmp_path / "o"):
        code, _, err = run(bfs_cli.main, [given, "--source", "3", "--output", tmp_path / "b"], capsys)
        assert code == 0, err
        adjacent = {}
        for u, v in zip(forest["src"].to_pylist(), forest["dst"].to_pylist()):
            adjacent.setdefault(u, []).append(v)
            adjacent.setdefault(v, []).append(u)
        expected, queue = {3: 0}, deque([3])
        while queue:
            u = queue.popleft()
            for v in adjacent[u]:
                if v not in expected:
                    expected[v] = expected[u] + 1
                    queue.append(v)
        got = pq.read_table(tmp_path / "b" / "bfs_distances.parquet")
        assert dict(zip(got["vertex"].to_pylist(), got["distance"].to_pylist())) == expected


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
    assert pq.read_schema(tmp_path / "o" / "mst_edges.parquet").names == ["a.b", "x.y", "重さ"]


@pytest.mark.parametrize("partitions", [1, 2])
def test_columns_named_alike_are_told_apart(client, tmp_path, capsys, partitions):
    """Beside src, dst and weight: SRC and Weight (the same names but for case), a struct whose
    child is called src, a map column first, and a dotted top-level name; each holds values
    that would change the forest or the distances if read in place of the named column."""
    src, dst, weight = [0, 1, 2, 0, 3], [1, 2, 0, 2, 3], [1.0, 2.0, 3.0, 0.5, 1.0]
    table = pa.table({"m": pa.array([[("a", 1)], [], [("b", 2)], [], []], pa.map_(pa.string(), pa.int64())),
                      "SRC": [9, 9, 9, 9, 9], "src": src, "s": pa.array([{"src": 7}] * 5), "src.x": [8] * 5,
                      "dst": dst, "Weight": [0.0, 9.0, 9.0, 9.0, 9.0], "weight": weight})
    pq.write_table(table, tmp_path / "g.parquet", row_group_size=2)
    out = tmp_path / "o"
    if partitions == 1:
        code, _, err = run(pipeline_cli.main, [tmp_path / "g.parquet", "--source", "3", "--output", out], capsys)
        assert code == 0, err
    else:
        run_partitioned(str(tmp_path / "g.parquet"), str(out), 2, source=["3"], client=client)
    assert_forest(out / "mst_edges.parquet", src, dst, weight)
    assert_distances(out / "bfs_distances.parquet", src, dst, [3])
