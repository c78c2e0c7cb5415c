"""The kernel benchmark (`python -m benchmarks`) writes records that say what they measured: run
as a user runs it, on a small Kronecker graph, into a results file that already holds a record."""
import json
import statistics

from benchmarks.__main__ import main


def test_bfs_and_scipy_records_cover_the_same_roots_and_are_appended(tmp_path):
    results = tmp_path / "results" / "cpu.json"
    results.parent.mkdir()
    results.write_text(json.dumps([{"algo": "earlier"}]))
    assert main(["--graph", "kron:10", "--algo", "bfs,csr", "--backend", "numpy", "--baseline", "scipy",
                 "--roots", "5", "--json", str(results)]) == 0
    earlier, bfs, csr = json.loads(results.read_text())
    assert earlier == {"algo": "earlier"}
    assert bfs["algo"] == "bfs" and csr["algo"] == "csr" and bfs["validated"] and csr["validated"]
    assert bfs["command"] == ("python -m benchmarks --graph kron:10 --algo bfs,csr --backend numpy --baseline "
                              f"scipy --roots 5 --json {results}")
    assert bfs["baseline"] == "scipy" and bfs["roots"] == 5 and len(bfs["root_seconds"]) == 5
    # seconds is the mean over the roots, the speedup the ratio of the two means
    assert abs(bfs["seconds"] - statistics.mean(bfs["root_seconds"])) < 1e-5
    assert abs(bfs["speedup"] - bfs["baseline_seconds"] / bfs["seconds"]) < 1e-9 * bfs["speedup"]
    assert bfs["vertices"] > 0 and bfs["edges"] == 16 << 10
    assert len(bfs["load_average"]) == 2  # the machine's load before and after the case
