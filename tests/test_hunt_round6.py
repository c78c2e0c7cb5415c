"""A sixth search for wrong answers and unclear failures, on the one-partition path (NumPy
backend): source ids as the command line and Python give them, directed and depth-limited
searches on graphs shaped to switch direction, forests with ties and extreme weights, flow
parameters as the UI and a deployment send them, and the verifiers' power to refuse a wrong
answer. Faults are pinned by named cases; the classes that held are pinned by compact
parametrized cases against the serial references of tests/references.py (Kruskal under the
order (weight, input row); a queue BFS; predecessors checked as valid parents)."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows.bfs import bfs_flow
from tests.references import assert_distances

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
    state = bfs_flow(str(path), source_sets=[["0"], []], output=str(tmp_path / "o"), partitions=partitions,
                     return_state=True)
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
