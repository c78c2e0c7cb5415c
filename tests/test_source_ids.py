"""Source vertices as the command line and Python give them: dash-led values (negative ids,
string ids starting with '-') are the option's values and are checked as values; string ids are
matched exactly (no number parsing, no Unicode normalisation, spaces kept); integer ids are
checked against the id column's type, each refusal one line naming the source; an empty source
set from Python is refused, on one partition and on several. Distances against the queue BFS of
tests/references.py."""
import pyarrow as pa
import pytest

from flows import bfs as bfs_cli
from flows.bfs import bfs_flow
from tests.helpers import error_line, run, write_edges
from tests.references import assert_distances

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.mark.parametrize("ids, argv, sources", [
    ([-1, -2, 0, 3], ["--source-set", "-1,-2"], [[-1, -2]]),
    ([-1, -2, 0, 3], ["--source-set", "-1,-2", "--source-set", "-2", "--source-set", "0,-1"], [[-1, -2], [-2], [0, -1]]),
    (["-a", "b", "c", "-"], ["--source", "-a"], [["-a"]]),
    (["-a", "b", "c", "-"], ["--source-set", "-a,-"], [["-a", "-"]]),
], ids=["negative-ids-in-a-set", "several-sets-of-negative-ids", "string-id-starting-with-a-dash",
        "a-set-of-string-ids-starting-with-a-dash"])
def test_source_ids_that_start_with_a_dash_are_values(tmp_path, capsys, ids, argv, sources):
    """Ids may be negative, and string ids may start with a dash. `--source-set -1,-2` was
    refused with 'unrecognized arguments: -1,-2' (argparse reads only a lone negative number as
    a value), and so was
    `--source -a` on a graph of string ids: a dash-led value after an option that takes one is
    now that option's value."""
    src, dst = [ids[0], ids[1], ids[2], ids[3]], [ids[1], ids[2], ids[3], ids[0]]
    path = write_edges(tmp_path / "g.parquet", src, dst)
    code, _, err = run(bfs_cli.main, [path, *argv, "--output", tmp_path / "o"], capsys)
    assert code == 0, err
    if argv[0] == "--source":
        assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, sources[0])
    else:
        for k, s in enumerate(sources):
            assert_distances(tmp_path / "o" / f"source-set-{k}" / "bfs_distances.parquet", src, dst, s)


@pytest.mark.parametrize("argv, expected", [
    (["--source", "-a"], "source '-a' is not an integer vertex id"),
    (["--source", "0", "--depth-limit", "-2,3"], "argument --depth-limit: expected a whole number of levels >= 0, got '-2,3'"),
    (["--source", "--directed"], "argument --source: expected one argument"),
], ids=["dash-led-string-on-an-integer-graph", "dash-led-depth-limit", "an-option-is-not-taken-for-a-value"])
def test_dash_led_values_are_checked_as_values(tmp_path, capsys, argv, expected):
    path = write_edges(tmp_path / "g.parquet", [0, 1], [1, 2])
    code, out, err = run(bfs_cli.main, [path, *argv, "--output", tmp_path / "o"], capsys)
    assert code == 1 and out == "" and expected in error_line(err)
    assert not (tmp_path / "o").exists()


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
    path = write_edges(tmp_path / "g.parquet", src, dst)
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
    path = write_edges(tmp_path / "g.parquet", pa.array(src, id_type), pa.array(dst, id_type))
    code, out, err = run(bfs_cli.main, [path, f"--source={given}", "--output", tmp_path / "o"], capsys)
    if expected is None:
        assert code == 0, err
        assert_distances(tmp_path / "o" / "bfs_distances.parquet", src, dst, [0])
        return
    assert code == 1 and out == "" and error_line(err) == f"error: {path}: {expected}"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("partitions", [1, 2])
def test_an_empty_source_set_from_python_is_refused_however_the_graph_is_split(tmp_path, partitions):
    """bfs_flow(..., source_sets=[["0"], []]): one partition refused the empty set, but a
    partitioned run searched from no vertex and wrote a file of unreached vertices for it,
    which passed validation (from nowhere nothing is reachable). Both refuse it now."""
    path = write_edges(tmp_path / "g.parquet", [0, 1, 2], [1, 2, 3])
    # NumPy: two partitions on a machine with one GPU would be refused for want of a second
    state = bfs_flow(str(path), source_sets=[["0"], []], output=str(tmp_path / "o"), partitions=partitions,
                     backend="numpy", return_state=True)
    assert state.is_failed()
    with pytest.raises(Exception, match=f"^{path}: a BFS source set is empty$"):
        state.result()
    assert not (tmp_path / "o").exists()
