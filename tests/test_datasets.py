"""Valid inputs as tools and people leave them: dataset folders written by Spark, Dask and hand,
hive partitions and symlinked folders, mixed encodings across files, extreme weights. Each must
give the right answer; the expected forests come from networkx or are the seeds' known one."""
import os
import subprocess
import sys

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tasks.parquet.read import read_edges
from tests.conftest import ROOT, SEED_EDGES

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
    assert read_edges(str(root)).skipped == [str(root / "README.md")]


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
    table = read_edges(str(root))
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
                read_edges(str(path))
        else:
            assert read_edges(str(path)).weight.tolist() == [float(v) for v in values.tolist()]
