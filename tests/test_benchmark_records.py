"""What the benchmark records say they measured: the kernel benchmark (`python -m benchmarks`)
run as a user runs it, on a small Kronecker graph, appends records whose figures agree with
each other; the `code` field (benchmarks.orchestration.code_version) names the commit of the
checkout the benchmarks are imported from, whatever folder the command runs in, and marks
uncommitted changes to tracked files (against real git repositories)."""
import json
import statistics
import subprocess
from pathlib import Path

from benchmarks.__main__ import main
from tests.conftest import ROOT



def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_benchmarks_code_field_names_the_checkout_they_are_imported_from(tmp_path, monkeypatch):
    """The records' `code` (benchmarks.orchestration.code_version, used by benchmarks.partitioned
    and benchmarks.host_cores) asked git about the folder the command ran in: from any other
    folder it named nothing, or another repository's commit. It names this checkout's."""
    from benchmarks.orchestration import code_version

    monkeypatch.delenv("GRAPH_BENCH_CODE", raising=False)
    monkeypatch.chdir(tmp_path)  # not a repository
    assert code_version().removesuffix("-dirty") == git(ROOT, "rev-parse", "--short=7", "HEAD")


def test_the_benchmarks_code_field_marks_uncommitted_changes(tmp_path, monkeypatch):
    """A record of a run whose tracked files differ from their commit named that commit alone,
    as if it had measured it."""
    from benchmarks.orchestration import code_version

    monkeypatch.delenv("GRAPH_BENCH_CODE", raising=False)
    git(tmp_path, "init", "-q")
    (tmp_path / "kernel.py").write_text("A = 1\n")
    git(tmp_path, "add", "kernel.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "one")
    commit = git(tmp_path, "rev-parse", "--short=7", "HEAD")
    assert code_version(tmp_path) == commit
    (tmp_path / "kernel.py").write_text("A = 2\n")
    assert code_version(tmp_path) == f"{commit}-dirty"
    (tmp_path / "notes.txt").write_text("an untracked file is not code measured\n")
    (tmp_path / "kernel.py").write_text("A = 1\n")
    assert code_version(tmp_path) == commit


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
