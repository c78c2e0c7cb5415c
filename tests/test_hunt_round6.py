"""A sixth search for wrong answers and unclear failures, on the CPU (NumPy backend): source ids as the command line and Python give them, directed and depth-limited
searches on graphs shaped to switch direction, forests with ties and extreme weights, flow
parameters as the UI and a deployment send them, and the verifiers' power to refuse a wrong
answer. Two faults are pinned by named cases; the classes that held are pinned by compact
parametrized cases against the serial references of tests/references.py (Kruskal under the
order (weight, input row); a queue BFS; predecessors checked as valid parents)."""
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows.bfs import bfs_flow
from flows.pipeline import pipeline_flow
from kernels.bfs import bfs
from kernels.graph import build_graph, edge_list
from kernels.msf import minimum_spanning_forest
from kernels.verify import verify_bfs, verify_forest
from tests.references import assert_distances, assert_forest, kruskal_rows, serial_bfs

pytestmark = pytest.mark.usefixtures("prefect_server")


def run(main, argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write(path, src, dst, weight=None):
    columns = {"src": src, "dst": dst, **({"weight": weight} if weight is not None else {})}
    pq.write_table(pa.table(columns), path)
    return path


# Faults found


@pytest.mark.parametrize("ids, argv, sources", [
    ([-1, -2, 0, 3], ["--source-set", "-1,-2"], [[-1, -2]]),
    ([-1, -2, 0, 3], ["--source-set", "-1,-2", "--source-set", "-2", "--source-set", "0,-1"], [[-1, -2], [-2], [0, -1]]),
    (["-a", "b", "c", "-"], ["--source", "-a"], [["-a"]]),
    (["-a", "b", "c", "-"], ["--source-set", "-a,-"], [["-a", "-"]]),
], ids=["negative-ids-in-a-set", "several-sets-of-negative-ids", "string-id-starting-with-a-dash",
        "a-set-of-string-ids-starting-with-a-dash"])
def test_source_ids_that_start_with_a_dash_are_values(tmp_path, capsys, ids, argv, sources):
    """README: ids may be negative. `--source-set -1,-2` was refused with 'unrecognized
    arguments: -1,-2' (argparse reads only a lone negative number as a value), and so was
    `--source -a` on a graph of string ids: a dash-led value after an option that takes one is
    now that option's value."""
    src, dst = [ids[0], ids[1], ids[2], ids[3]], [ids[1], ids[2], ids[3], ids[0]]
    path = write(tmp_path / "g.parquet", src, dst)
    code, _, err = run(bfs_cli.main, [path, *argv, "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    if argv[0] == "--source":
        assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, sources[0])
    else:
        for k, s in enumerate(sources):
            assert_distances(tmp_path / "o" / f"source-set-{k}" / "bfs_distances.parquet", src, dst, s)


@pytest.mark.parametrize("partitions", [1, 2])
def test_an_empty_source_set_from_python_is_refused_however_the_graph_is_split(tmp_path, partitions):
    """bfs_flow(..., source_sets=[["0"], []]): one partition refused the empty set, but a
    partitioned run searched from no vertex and wrote a file of unreached vertices for it,
    which passed validation (from nowhere nothing is reachable). Both refuse it now."""
    path = write(tmp_path / "g.parquet", [0, 1, 2], [1, 2, 3])
    # NumPy: two partitions on a machine with one GPU would be refused for want of a second
    state = bfs_flow(str(path), source_sets=[["0"], []], output=str(tmp_path / "o"), partitions=partitions,
                     backend="numpy", return_state=True)
    assert state.is_failed()
    with pytest.raises(Exception, match=f"^{path}: a BFS source set is empty$"):
        state.result()
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, expected", [
    (["--source", "-a"], "source '-a' is not an integer vertex id"),
    (["--source", "0", "--depth-limit", "-2,3"], "argument --depth-limit: expected a whole number of levels >= 0, got '-2,3'"),
    (["--source", "--directed"], "argument --source: expected one argument"),
], ids=["dash-led-string-on-an-integer-graph", "dash-led-depth-limit", "an-option-is-not-taken-for-a-value"])
def test_dash_led_values_are_checked_as_values(tmp_path, capsys, argv, expected):
    path = write(tmp_path / "g.parquet", [0, 1], [1, 2])
    code, out, err = run(bfs_cli.main, [path, *argv, "--output", tmp_path / "o"], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and out == "" and len(lines) == 1 and expected in lines[0]
    assert not (tmp_path / "o").exists()


# Classes that held: searches that switch direction equal the queue BFS


def star(n):
    return np.zeros(n - 1, np.int32), np.arange(1, n, dtype=np.int32), n


def path_beside_a_dense_core(n, core=150, chords=12000):
    """A dense core of `core` vertices (bottom-up pays there) with a path of n - core vertices
    hanging from vertex 0 (top-down again)."""
    rng = np.random.default_rng(6)
    path = np.arange(core, n, dtype=np.int32)
    src = np.concatenate([rng.integers(0, core, chords), [0], path[:-1]]).astype(np.int32)
    dst = np.concatenate([rng.integers(0, core, chords), [core], path[1:]]).astype(np.int32)
    return src, dst, n


def two_stars_with_loops_and_twins(n):
    half = n // 2
    src = np.concatenate([np.zeros(half - 2), np.ones(n - half), [0, 0, 5, 5]]).astype(np.int32)
    dst = np.concatenate([np.arange(2, half), np.arange(half, n), [1, 1, 5, 5]]).astype(np.int32)
    return src, dst, n


@pytest.mark.parametrize("shape, sources", [
    (lambda: star(4000), [0]), (lambda: star(4000), [7]), (lambda: star(4000), [7, 9, 0]),
    (lambda: path_beside_a_dense_core(2500), [2499]), (lambda: path_beside_a_dense_core(2500), [5]),
    (lambda: two_stars_with_loops_and_twins(5000), [4]), (lambda: two_stars_with_loops_and_twins(5000), [4, 3000, 5]),
], ids=["star-from-the-centre", "star-from-a-leaf", "star-from-leaves-and-centre", "path-end-into-a-core",
        "core-out-along-a-path", "two-stars", "two-stars-several-sources"])
@pytest.mark.parametrize("directed, limit", [(False, None), (True, None), (False, 2), (True, 1)])
def test_direction_switching_searches_equal_the_queue_bfs(shape, sources, directed, limit):
    src, dst, n = shape()
    result = bfs(build_graph(edge_list(src, dst, None, n), directed), sources, limit)
    assert result.distance.tolist() == serial_bfs(n, src, dst, sources, directed, limit).tolist()
    report = verify_bfs(src, dst, n, sources, result.distance, result.predecessor, directed, limit)
    assert not any(report.values()), report


def test_the_shapes_above_do_switch_direction():
    """A star's leaf goes top-down then bottom-up; the core goes bottom-up and back top-down
    along the path."""
    steps = bfs(build_graph(edge_list(*star(4000)[:2], None, 4000), False), [7]).steps
    assert steps[0] == "top-down" and "bottom-up" in steps, steps
    src, dst, n = path_beside_a_dense_core(2500)
    steps = bfs(build_graph(edge_list(src, dst, None, n), False), [5]).steps
    assert "top-down" in steps[steps.index("bottom-up"):], steps


# Classes that held: the verifiers refuse every wrong answer they are shown


def valid_bfs_answer(src, dst, n, sources, directed, limit, distance, predecessor) -> bool:
    """Distances equal the queue BFS's, and every reached non-source has a parent one level
    closer joined to it by an arc (sources are their own parents, unreached vertices have none)."""
    expected = serial_bfs(n, src, dst, sources, directed, limit)
    if distance.tolist() != expected.tolist():
        return False
    arcs = set(zip(src.tolist(), dst.tolist())) | (set() if directed else set(zip(dst.tolist(), src.tolist())))
    for v in range(n):
        p = int(predecessor[v])
        if expected[v] < 0 or expected[v] == 0:
            if p != (-1 if expected[v] < 0 else v):
                return False
        elif not (0 <= p < n and expected[p] == expected[v] - 1 and (p, v) in arcs):
            return False
    return True


def valid_forest(src, dst, weight, n, chosen) -> bool:
    """Distinct rows, no self-loop, no cycle (union-find), as many edges and as light as Kruskal's."""
    if len(set(chosen)) != len(chosen) or any(not 0 <= e < len(src) for e in chosen):
        return False
    parent = list(range(n))

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for e in chosen:
        a, b = root(int(src[e])), root(int(dst[e]))
        if a == b:
            return False
        parent[a] = b
    best = kruskal_rows(src.tolist(), dst.tolist(), weight.tolist())
    return len(chosen) == len(best) and sorted(weight[chosen].tolist()) == sorted(weight[best].tolist())


@pytest.mark.parametrize("seed", range(4))
def test_mutated_answers_are_refused_exactly_when_wrong(seed):
    """Random small multigraphs (self-loops, twins, ties, float32 and float64), directed or not,
    depth-limited or not, several sources; each correct answer is mutated at random and the
    verifier must report a violation exactly when an independent check finds the answer wrong."""
    rng = np.random.default_rng(seed)
    shown = {"bfs": 0, "forest": 0}
    for _ in range(150):
        n, m = int(rng.integers(1, 10)), int(rng.integers(0, 20))
        src, dst = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
        weight = rng.integers(-1, 3, m).astype(rng.choice([np.float32, np.float64]))
        directed, limit = bool(rng.integers(0, 2)), (None if rng.random() < 0.5 else int(rng.integers(0, 3)))
        sources = rng.integers(0, n, int(rng.integers(1, 3)))
        search = bfs(build_graph(edge_list(src, dst, None, n), directed), sources, limit)
        for _ in range(4):
            distance, predecessor = search.distance.copy(), search.predecessor.copy()
            v, u = rng.integers(0, n, 2)
            kind = int(rng.integers(0, 4))
            if kind == 0:
                distance[v] = max(-1, distance[v] + int(rng.choice([-2, -1, 1, 2])))
            elif kind == 1:
                predecessor[v] = int(rng.integers(-1, n))
            elif kind == 2:
                distance[v], predecessor[v] = int(rng.integers(-1, 4)), int(rng.integers(-1, n))
            else:
                distance[[v, u]], predecessor[[v, u]] = distance[[u, v]], predecessor[[u, v]]
            report = verify_bfs(src, dst, n, sources, distance, predecessor, directed, limit)
            wrong = not valid_bfs_answer(src, dst, n, sources, directed, limit, distance, predecessor)
            assert any(report.values()) == wrong, (src, dst, sources, directed, limit, distance, predecessor, report)
            shown["bfs"] += wrong
        forest = minimum_spanning_forest(edge_list(src, dst, weight, n)).edges.tolist()
        for _ in range(4):
            chosen = list(forest)
            kind = int(rng.integers(0, 3))
            if kind == 0 and chosen:
                chosen.pop(int(rng.integers(0, len(chosen))))
            elif kind == 1 and m:
                chosen.append(int(rng.integers(0, m)))
            elif m and chosen:
                chosen[int(rng.integers(0, len(chosen)))] = int(rng.integers(0, m))
            report = verify_forest(src, dst, weight, n, np.array(chosen, dtype=np.int64))
            wrong = not valid_forest(src, dst, weight, n, chosen)
            assert any(report.values()) == wrong, (src, dst, weight, chosen, forest, report)
            shown["forest"] += wrong
    assert shown["bfs"] > 100 and shown["forest"] > 100, shown


# Classes that held: forests with ties and extreme weights, and the summary against the files


def twins(weight_type):
    """Thirty parallel edges 0-1 of one weight, and a triangle of equal weights: rows decide."""
    src, dst = [0] * 30 + [1, 2, 3], [1] * 30 + [2, 3, 1]
    return src, dst, pa.array([2.0] * 30 + [2.0, 2.0, 2.0], weight_type)


WEIGHT_CASES = {
    "ties-across-thirty-parallel-edges-float64": lambda: twins(pa.float64()),
    "ties-across-thirty-parallel-edges-float32": lambda: twins(pa.float32()),
    "integer-weights-one-float64-step-apart-near-2-pow-60": lambda: (
        [0, 1, 0, 2, 3], [1, 2, 2, 3, 0], pa.array([2**60 + 256, 2**60, 2**60 + 512, 2**60 + 256, 2**60], pa.int64())),
    "integers-beyond-2-pow-53-with-zero-low-bits": lambda: (
        [0, 1, 0], [1, 2, 2], pa.array([2**62, 2**62 + 2**10, -(2**63)], pa.int64())),
    "float32-weights-one-ulp-apart": lambda: (
        [0, 1, 0], [1, 2, 2], pa.array(np.array([1.0, np.nextafter(np.float32(1), np.float32(2)), 1.0], np.float32))),
    "isolated-vertices-only-in-self-loops-and-many-components": lambda: (
        [0, 2, 4, 6, 8, 9, 9, 10], [1, 3, 5, 7, 8, 9, 10, 10], pa.array([1.0, -1.0, 0.0, -0.0, 5.0, 5.0, 3.0, 1.0])),
}


@pytest.mark.parametrize("case", WEIGHT_CASES, ids=list(WEIGHT_CASES))
def test_forests_and_summaries_agree_with_the_references_and_the_files(tmp_path, capsys, case):
    src, dst, weight = WEIGHT_CASES[case]()
    write(tmp_path / "g.parquet", src, dst, weight)
    summary = pipeline_flow(str(tmp_path / "g.parquet"), source_sets=[[str(src[0])], [str(dst[-1]), str(src[1])]],
                            output=str(tmp_path / "o"))
    as_float = [float(w) for w in weight.to_pylist()]
    assert_forest(tmp_path / "o" / "mst_edges.parquet", src, dst, as_float)
    forest = pq.read_table(tmp_path / "o" / "mst_edges.parquet")
    assert forest.schema.field("weight").type == (pa.float32() if weight.type == pa.float32() else pa.float64())
    vertices = len(set(src) | set(dst))
    assert summary["vertices"] == vertices and summary["edges"] == len(src)
    assert summary["self_loops"] == sum(a == b for a, b in zip(src, dst))
    assert summary["forest_edges"] == forest.num_rows and summary["components"] == vertices - forest.num_rows
    exact = sum(Fraction(w) for w in forest["weight"].to_pylist())
    assert summary["forest_weight"] == float(exact)
    searches = [pq.read_table(tmp_path / "o" / f"source-set-{k}" / "bfs_distances.parquet") for k in range(2)]
    assert summary["reached"] == [t.num_rows - t["distance"].null_count for t in searches]
    assert all(t.num_rows == vertices for t in searches)
    assert summary["outputs"] == [str(tmp_path / "o" / f"source-set-{k}" / "bfs_distances.parquet") for k in range(2)] + \
        [str(tmp_path / "o" / "mst_edges.parquet")]


# Classes that held: source ids, exact for strings and checked for integers


@pytest.mark.parametrize("names, argv, sources", [
    (["007", "7", "07", "x"], ["--source", "7"], ["7"]),
    (["007", "7", "07", "x"], ["--source-set", "007,07"], ["007", "07"]),
    (["\u00e9", "e\u0301", "a", "b"], ["--source", "e\u0301"], ["e\u0301"]),
    (["", " ", "a", " a"], ["--source", ""], [""]),
    (["", " ", "a", " a"], ["--source-set", " , a"], [" ", " a"]),
    (["-0", "0", "1", "+1"], ["--source-set", "-0,+1"], ["-0", "+1"]),
], ids=["integer-looking-strings-are-distinct", "zero-padded-strings-in-a-set", "unicode-forms-are-not-merged",
        "the-empty-string-id", "space-ids-in-a-set", "signed-looking-strings"])
def test_string_ids_are_matched_exactly(tmp_path, capsys, names, argv, sources):
    src, dst = [names[0], names[1], names[2], names[3], names[0]], [names[1], names[2], names[3], names[3], names[3]]
    path = write(tmp_path / "g.parquet", src, dst)
    code, _, err = run(bfs_cli.main, [path, *argv, "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    found = tmp_path / "o" / ("bfs_distances.parquet" if argv[0] == "--source" else "source-set-0/bfs_distances.parquet")
    assert_distances(found, src, dst, sources)


@pytest.mark.parametrize("id_type, given, expected", [
    (pa.int64(), "5.0", "source '5.0' is not an integer vertex id"),
    (pa.int64(), "0x10", "source '0x10' is not an integer vertex id"),
    (pa.int64(), "", "source '' is not an integer vertex id"),
    (pa.int64(), "1e3", "source '1e3' is not an integer vertex id"),
    (pa.int64(), str(2**64 + 1), f"source '{2**64 + 1}' is not a vertex of the graph"),
    (pa.int64(), str(-2**63 - 1), f"source '{-2**63 - 1}' is not a vertex of the graph"),
    (pa.uint64(), "-1", "source '-1' is not a vertex of the graph"),
    (pa.int8(), "300", "source '300' is not a vertex of the graph"),
    (pa.int8(), "-0", None),
], ids=["decimal-point", "hexadecimal", "empty", "exponent", "beyond-uint64", "below-int64", "negative-on-uint64",
        "beyond-int8", "minus-zero-is-zero"])
def test_integer_source_ids_are_checked(tmp_path, capsys, id_type, given, expected):
    src, dst = [0, 1, 2], [1, 2, 0]
    path = write(tmp_path / "g.parquet", pa.array(src, id_type), pa.array(dst, id_type))
    code, out, err = run(bfs_cli.main, [path, f"--source={given}", "--output", tmp_path / "o"], capsys)
    if expected is None:
        assert code == 0, err
        assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, [0])
        return
    assert code == 1 and out == "" and err.strip().splitlines() == [f"error: {path}: {expected}"]
    assert not (tmp_path / "o").exists()


# Classes that held: flow parameters as the UI's form and a deployment send them


def test_parameters_sent_as_json_text_give_the_typed_runs_results(tmp_path):
    """The UI sends what its form holds: numbers as text, booleans as text; the run equals the
    one given Python values."""
    src, dst = [0, 1, 2, 3, 4], [1, 2, 3, 4, 0]
    path = write(tmp_path / "g.parquet", src, dst, [1.0] * 5)
    typed = pipeline_flow(str(path), source_sets=[["0"], ["3", "0"]], output=str(tmp_path / "a"), directed=True,
                          depth_limit=2, partitions=1)
    sent = pipeline_flow(**{"input": str(path), "source_sets": [["0"], ["3", "0"]], "output": str(tmp_path / "b"),
                            "directed": "true", "depth_limit": "2", "partitions": "1"})
    timing = ("outputs", "gteps", "edges_per_second")
    assert {k: v for k, v in typed.items() if not k.endswith("seconds") and k not in timing} == \
        {k: v for k, v in sent.items() if not k.endswith("seconds") and k not in timing}
    for k, sources in enumerate([[0], [3, 0]]):
        for out in ("a", "b"):
            assert_distances(tmp_path / out / f"source-set-{k}" / "bfs_distances.parquet", src, dst, sources, True, 2)
