"""An eighth search for wrong answers and unclear failures, on the CPU (NumPy backend): the
partitioned path over ranks that own nothing or everything, extreme id and weight types across
files, schema oddities, and command-line paths and parameters. Faults are pinned by named cases;
the classes that held are pinned by compact cases against the serial references of
tests/references.py (Kruskal under the order (weight, input row); a queue BFS)."""
import os
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster

from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tasks.partitioned.driver import run_partitioned
from tests.references import assert_distances, assert_forest, kruskal_rows, queue_bfs

pytestmark = pytest.mark.usefixtures("prefect_server")


def run(main, argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def edges(path: Path, src, dst, weight=None, **options) -> Path:
    columns = {"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64())}
    if weight is not None:
        columns["weight"] = pa.array(weight, pa.float64())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path, **options)
    return path


# Faults


@pytest.fixture(scope="module")
def cluster_started_elsewhere(prefect_server, tmp_path_factory):
    """A running Dask cluster of three CPU workers whose processes started in another folder
    than the command's (a `dask worker` started from the user's home, say); yields the cluster
    and that folder. The partitioned cases below run their ranks on it too."""
    where = tmp_path_factory.mktemp("workers-folder")
    before = os.getcwd()
    os.chdir(where)  # the worker processes start here and keep it as their working directory
    try:
        cluster = LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=None,
                               env={"GRAPH_BACKEND": "numpy"})
    finally:
        os.chdir(before)
    with cluster:
        yield cluster, where


@pytest.fixture(scope="module")
def client(cluster_started_elsewhere):
    with Client(cluster_started_elsewhere[0]) as c:
        yield c


@pytest.mark.parametrize("partitions", ["1", "2"])
def test_relative_paths_on_a_running_cluster_mean_the_commands_folder(tmp_path, capsys, monkeypatch,
                                                                    cluster_started_elsewhere, partitions):
    """`python -m flows.pipeline data/g.parquet --dask-address ...`: the command checked
    data/g.parquet in its own folder, but the tasks resolved the relative paths in their
    workers' folder, where another data/g.parquet was: they read that graph and wrote its
    results there, and the command printed them with exit 0. Paths are now made absolute in
    the flow, against the folder the run was started from."""
    cluster, workers_folder = cluster_started_elsewhere
    address = cluster.scheduler_address
    mine = ([0, 1, 2, 0], [1, 2, 0, 2], [1.0, 2.0, 3.0, 0.5])
    edges(tmp_path / "data" / "g.parquet", *mine)
    edges(workers_folder / "data" / "g.parquet", [0, 1], [1, 5], [7.0, 7.0])  # another graph, vertex 0 included
    monkeypatch.chdir(tmp_path)
    code, out, err = run(pipeline_cli.main, ["data/g.parquet", "--source", "0", "--partitions", partitions,
                                             "--backend", "numpy", "--dask-address", address], capsys)
    assert code == 0, err
    results = tmp_path / "output" / "g"
    wrote = [line for line in out.splitlines() if line.startswith("wrote ")]
    assert wrote == [f"wrote {results / name}" for name in ("bfs_distances.parquet", "mst_edges.parquet")]
    assert_forest(results / "mst_edges.parquet", *mine)
    assert_distances(results / "bfs_distances.parquet", *mine[:2], [0])
    assert not (workers_folder / "output").exists()


LATIN1 = os.fsdecode(b"caf\xe9")  # a name in Latin-1, as Python holds it: with a surrogate escape


@pytest.mark.parametrize("where", ["input", "--output", "--source"])
def test_an_argument_that_is_not_utf8_is_named_in_one_line(tmp_path, capsys, monkeypatch, where):
    """A file or folder named in another encoding than UTF-8 (or such an id): the run failed with
    "'utf-8' codec can't encode character '\\udce9' in position 256: surrogates not allowed",
    naming neither the argument nor the path. It is now refused before the run, named."""
    monkeypatch.chdir(tmp_path)
    graph = edges(tmp_path / "g.parquet", [0, 1], [1, 2], [1.0, 1.0])
    if where == "input":  # (pyarrow cannot open such a path itself)
        graph = graph.rename(tmp_path / f"{LATIN1}.parquet")
    argv = [graph, "--source", LATIN1 if where == "--source" else "0",
            "--output", tmp_path / (LATIN1 if where == "--output" else "o")]
    code, out, err = run(pipeline_cli.main, argv, capsys)
    shown = {"input": f"{tmp_path}/caf\\xe9.parquet", "--output": f"{tmp_path}/caf\\xe9", "--source": "caf\\xe9"}[where]
    assert code == 1 and out == ""
    assert err.splitlines() == [f"error: {where} '{shown}' is not UTF-8 text, which a run needs to record it; "
                                + ("give it in UTF-8" if where == "--source" else "rename it")]
    assert sorted(p.name for p in tmp_path.iterdir()) == [graph.name]


@pytest.mark.parametrize("partitions", [1, 2])
@pytest.mark.parametrize("heavier, lighter, type_", [
    (Decimal(2**53 + 1), Decimal(2**53), pa.decimal128(38, 0)),
    (Decimal("0.333333333333333334"), Decimal("0.333333333333333333"), pa.decimal128(38, 18)),
], ids=["integers-beyond-2-pow-53", "scale-18-ratios-one-unit-apart"])
def test_decimal_weights_that_round_to_one_float64_are_refused(tmp_path, capsys, heavier, lighter, type_, partitions):
    """Decimals become their nearest float64. Two distinct ones can share it (a decimal(38, 0)
    weight of 2**53 + 1 beside 2**53, or two decimal(38, 18) ratios one unit apart): they
    would tie, the lower row would win, and the forest would hold the heavier edge while its
    validation (on the rounded weights) passed. A decimal with more significant digits than
    float64 tells apart is refused, naming file, column, row and value, as int64 weights
    beyond 2**53 are, on one partition and on several."""
    src, dst, weight = [0, 1, 0, 2], [1, 2, 2, 3], [heavier, Decimal(1), lighter, Decimal(1)]
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": pa.array(weight, type_)}), path)
    argv = [path, "--output", tmp_path / "o"] + (["--partitions", "2", "--runner", "dask", "--backend", "numpy"]
                                                 if partitions > 1 else [])
    code, _, err = run(mst_cli.main, argv, capsys)
    assert code == 1, err
    assert f"{path}: weight column 'weight' holds {heavier} at row 0, which float64 cannot tell" in err, err
    assert not (tmp_path / "o").exists()


def test_long_decimal_types_whose_values_float64_keeps_apart_are_read_exactly(tmp_path, capsys):
    """A decimal(38, 17) column of ordinary values (-1.001, 0.1: not exact in binary, but each
    the shortest text of its float64) and 16-17 digit values that are such texts too: read,
    and the forest is Kruskal's under the exact weights."""
    weight = [Decimal("-1.00100000000000000"), Decimal("0.10000000000000000"), Decimal("0.12345678901234560"),
              Decimal("0.12345678901234561"), Decimal("1234567890.12345670")]
    src, dst = [0, 1, 2, 0, 3], [1, 2, 0, 2, 1]
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": pa.array(weight, pa.decimal128(38, 17))}), path)
    code, _, err = run(mst_cli.main, [path, "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    forest = pq.read_table(tmp_path / "o" / "mst_edges.parquet")
    rows = kruskal_rows(src, dst, weight)  # over the exact Decimal weights
    assert list(zip(forest["src"].to_pylist(), forest["dst"].to_pylist())) == [(src[r], dst[r]) for r in rows]
    assert forest["weight"].to_pylist() == [float(weight[r]) for r in rows]


# Classes that held: partitioned runs over ranks that own nothing or hold every edge, with
# extreme id and weight types, equal Kruskal's forest and the queue BFS (tests/references.py)


def owned_by(rank: int, size: int, count: int) -> list[int]:
    """``count`` ids that the partitioned renumbering sends to ``rank`` of ``size`` (its hash)."""
    from kernels.partitioned import _hash_owner

    candidates = np.arange(10_000, dtype=np.int64)
    return candidates[_hash_owner(candidates, size) == rank][:count].tolist()


def case(files, src, dst, weight, sets, id_type=pa.int64(), weight_type=pa.float64(), owned=None) -> dict:
    """A partitioned case: the files (table, row-group size), the edge list as Python values
    (exact weights), the source sets, the result's types, and the vertices each rank owns."""
    return dict(files=files, src=src, dst=dst, weight=weight, sets=sets, id_type=id_type, weight_type=weight_type,
                owned=owned)


def every_id_owned_by_the_middle_rank():
    """Ranks 0 and 2 of 3 own no vertex but read a third of the rows each; ties everywhere."""
    ids = owned_by(1, 3, 40)
    rng = np.random.default_rng(8)
    src, dst = rng.choice(ids, 200).tolist(), rng.choice(ids, 200).tolist()
    weight = rng.integers(0, 3, 200).astype(float).tolist()
    table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight})
    return case([(table, 17)], src, dst, weight, [[src[0], src[0], dst[5]], [dst[-1]]], owned=[0, 40, 0])


def uint64_ids_near_2_pow_64_and_int64_weights_beyond_2_pow_53():
    """Ids 2**64 - 1 - k, three files of 1, 4 and 2 row groups; int64 weights that float64 holds
    exactly (low bits zero) and that tie across the ranks' shares; self-loops and parallel edges
    whose copies lie in different ranks' shares."""
    top = 2**64 - 1
    src = [top, top - 1, top - 2, top, top - 3, top - 3, top - 1, top, top - 2, top - 4, top - 4, top - 1]
    dst = [top - 1, top - 2, top, top - 1, top - 3, top, top - 2, top - 1, top - 2, top - 3, top - 4, top - 4]
    weight = [2**60, 2**60, 2**60 + 256, 2**60, 2**62, -(2**63), 2**60, 2**60 - 256, 5, 2**60, 0, 2**60]
    table = pa.table({"src": pa.array(src, pa.uint64()), "dst": pa.array(dst, pa.uint64()),
                      "weight": pa.array(weight, pa.int64())})
    files = [(table.slice(0, 2), 2), (table.slice(2, 7), 2), (table.slice(9), 2)]
    return case(files, src, dst, weight, [[top - 4, top - 4], [top]], id_type=pa.uint64())


def one_rank_reads_every_edge_that_is_not_a_self_loop():
    """The first two thirds of the rows are self-loops: ranks 0 and 1 read no arc at all."""
    loops = list(range(20)) * 2
    src, dst = loops + [0, 1, 2, 3, 4, 5, 0, 7, 8, 9], loops + [1, 2, 3, 4, 5, 0, 3, 8, 9, 7]
    weight = [0.5] * 40 + [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 2.0, 2.0, 2.0]
    table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight})
    return case([(table, 7)], src, dst, weight, [[0], [19, 7]])


def id_and_weight_types_differing_by_file():
    """int8 ids and float16 weights; dictionary-encoded uint16 ids and float32 weights; int32
    ids and dictionary-encoded float32 weights: int32 ids and float32 weights come out."""
    src, dst = [-128, 127, 0, 300, 65535, 70000, -5], [127, 0, -128, 65535, 127, 300, 70000]
    weight = [0.5, 0.25, 0.5, 1.5, 0.25, 2.0, 2.0]  # exact in float16
    files = [(pa.table({"src": pa.array(src[:3], pa.int8()), "dst": pa.array(dst[:3], pa.int8()),
                        "weight": pa.array(np.array(weight[:3], np.float16))}), 1),
             (pa.table({"src": pa.array(src[3:5], pa.uint16()).dictionary_encode(),
                        "dst": pa.array(dst[3:5], pa.uint16()).dictionary_encode(),
                        "weight": pa.array(weight[3:5], pa.float32())}), 1),
             (pa.table({"src": pa.array(src[5:], pa.int32()), "dst": pa.array(dst[5:], pa.int32()),
                        "weight": pa.array(weight[5:], pa.float32()).dictionary_encode()}), 1)]
    return case(files, src, dst, weight, [[-128], [70000, 0]], id_type=pa.int32(), weight_type=pa.float32())


PARTITIONED_CASES = [every_id_owned_by_the_middle_rank, uint64_ids_near_2_pow_64_and_int64_weights_beyond_2_pow_53,
                     one_rank_reads_every_edge_that_is_not_a_self_loop, id_and_weight_types_differing_by_file]


@pytest.mark.parametrize("make", PARTITIONED_CASES, ids=[c.__name__ for c in PARTITIONED_CASES])
@pytest.mark.parametrize("layout, directed, limit", [("dataset", False, None), ("file", True, 1)])
def test_partitioned_runs_equal_the_references(client, tmp_path, make, layout, directed, limit):
    c = make()
    src, dst, weight, sets = c["src"], c["dst"], c["weight"], c["sets"]
    data = tmp_path / "data"
    data.mkdir()
    for k, (table, row_group_size) in enumerate(c["files"]):
        pq.write_table(table, data / f"part-{k}.parquet", row_group_size=row_group_size)
    out = tmp_path / "out"
    summary = run_partitioned(str(data), str(out), 3, source_sets=[[str(s) for s in ids] for ids in sets],
                              directed=directed, depth_limit=limit, output_layout=layout, client=client)
    # the forest: Kruskal's rows under (exact weight, row), each weight as float64 (or float32) holds it
    rows = kruskal_rows(src, dst, weight)
    forest = pq.read_table(out / "mst_edges.parquet")
    assert list(zip(forest["src"].to_pylist(), forest["dst"].to_pylist(), forest["weight"].to_pylist())) == \
        [(src[i], dst[i], float(weight[i])) for i in rows]
    assert (forest.schema.field("src").type, forest.schema.field("weight").type) == (c["id_type"], c["weight_type"])
    exact = sum(Fraction(weight[i]) for i in rows)
    assert abs(Fraction(summary["forest_weight"]) - exact) <= abs(exact) / 2**40
    vertices = len(set(src) | set(dst))
    assert (summary["vertices"], summary["forest_edges"], summary["components"], summary["self_loops"]) == \
        (vertices, len(rows), vertices - len(rows), sum(a == b for a, b in zip(src, dst)))
    for k, ids in enumerate(sets):
        found = out / f"source-set-{k}" / "bfs_distances.parquet"
        assert_distances(found, src, dst, ids, directed, limit)
        expected, _ = queue_bfs(src, dst, ids, directed, limit)
        assert summary["reached"][k] == sum(d is not None for d in expected.values())
    if c["owned"] is not None and layout == "dataset":  # the case is what its name says
        parts = sorted((out / "source-set-0" / "bfs_distances.parquet").iterdir())
        assert [pq.ParquetFile(p).metadata.num_rows for p in parts] == c["owned"]


# Classes that held: schema oddities read the columns named, and only those


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
