"""The command line: argument errors, --help and the input path (answered before Prefect is
imported), the runner chosen by the input's size, and the temporary server of a run without
one configured."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from flows.inputs import command_plan
from flows.runner_choice import resolve_auto
from kernels import backend as be
from tasks.cluster import local_workers
from tasks.parquet.dataset.plan import plan_input
from tests.conftest import ROOT, SEED_EDGES
from tests.helpers import write_seed

SAMPLE = str(ROOT / "data" / "graph.parquet")


@pytest.mark.parametrize("main, argv, expected", [
    (bfs_cli.main, [SAMPLE, "--source", "0", "--depth-limit", "2.5"],
     "argument --depth-limit: expected a whole number of levels >= 0, got '2.5'"),
    (bfs_cli.main, [SAMPLE, "--source", "0", "--depth-limit", "-1"],
     "argument --depth-limit: expected a whole number of levels >= 0, got '-1'"),
    (bfs_cli.main, [SAMPLE, "--source", "0", "--depth-limit", "+1"],
     "argument --depth-limit: expected a whole number of levels >= 0, got '+1'"),
    (bfs_cli.main, [SAMPLE, "--source", "0", "--depth-limit", " 2"],
     "argument --depth-limit: expected a whole number of levels >= 0, got ' 2'"),
    (bfs_cli.main, [SAMPLE, "--sorce", "0"], "unrecognized arguments: --sorce"),
    (mst_cli.main, [SAMPLE, "--out", "x"], "unrecognized arguments: --out"),
    (mst_cli.main, [SAMPLE, "extra.parquet"], "unrecognized arguments: extra.parquet"),
    (mst_cli.main, [], "the following arguments are required: input"),
    (bfs_cli.main, [SAMPLE], "one of the arguments --source --source-set is required"),
    (bfs_cli.main, [SAMPLE, "--source", "0", "--source-set", "1"], "not allowed with argument"),
    (pipeline_cli.main, [SAMPLE, "--source-set", "1,,2"], "argument --source-set: source set '1,,2' has an empty id"),
    (pipeline_cli.main, [SAMPLE, "--source-set", "1,"], "argument --source-set: source set '1,' has an empty id"),
    (mst_cli.main, [SAMPLE, "--backend", "gpu"], "argument --backend: invalid choice: 'gpu'"),
    (mst_cli.main, [SAMPLE, "--runner", "processes"], "argument --runner: invalid choice: 'processes'"),
    (mst_cli.main, ["no/such/graph.parquet"], "no/such/graph.parquet: input not found"),
    (mst_cli.main, [SAMPLE, "--partitions", "0"], "argument --partitions: expected a whole number >= 1 or auto, got '0'"),
    (mst_cli.main, [SAMPLE, "--partitions", "2.5"], "argument --partitions: expected a whole number >= 1 or auto, got '2.5'"),
    (mst_cli.main, [SAMPLE, "--partitions", "all"], "argument --partitions: expected a whole number >= 1 or auto, got 'all'"),
    (mst_cli.main, [SAMPLE, "--partitions", "+2"], "argument --partitions: expected a whole number >= 1 or auto, got '+2'"),
    (mst_cli.main, [SAMPLE, "--partitions", "1_6"], "argument --partitions: expected a whole number >= 1 or auto, got '1_6'"),
    (mst_cli.main, [SAMPLE, "--output-layout", "parts"], "argument --output-layout: invalid choice: 'parts'"),
], ids=["fractional-depth", "negative-depth", "signed-depth", "padded-depth", "misspelt-option", "abbreviated-option", "extra-positional",
        "no-input", "no-source", "source-and-source-set", "empty-id-in-a-set", "trailing-comma-in-a-set", "unknown-backend",
        "unknown-runner", "missing-input", "zero-partitions", "fractional-partitions", "unknown-partitions",
        "signed-partitions", "underscored-partitions",
        "unknown-layout"])
def test_argument_errors_are_one_line_and_exit_1(main, argv, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written, not even output/
    assert main(argv) == 1
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], err
    assert list(tmp_path.iterdir()) == []


def test_runner_from_the_environment_is_checked_too(capsys, monkeypatch):
    monkeypatch.setenv("GRAPH_TASK_RUNNER", "process")
    assert mst_cli.main([SAMPLE]) == 1
    assert capsys.readouterr().err.strip() == "error: GRAPH_TASK_RUNNER=process: choose auto, dask or threads"


def test_partitions_from_the_environment_are_checked_too(capsys, monkeypatch):
    monkeypatch.setenv("GRAPH_PARTITIONS", "none")
    assert mst_cli.main([SAMPLE]) == 1
    assert capsys.readouterr().err.strip() == "error: GRAPH_PARTITIONS=none: choose a whole number >= 1 or auto"


@pytest.mark.parametrize("argv, environment, partitions, runner", [
    ([], {}, 1, "threads"),
    (["--partitions", "auto"], {}, "auto", "threads"),
    ([], {"GRAPH_PARTITIONS": "AUTO"}, "auto", "threads"),
    ([], {"GRAPH_PARTITIONS": "3"}, 3, "dask"),
    (["--partitions", "1"], {"GRAPH_PARTITIONS": "3"}, 1, "threads"),
    (["--partitions", "2", "--runner", "threads"], {}, 2, "dask"),
], ids=["default", "auto", "auto-from-environment", "from-environment", "option-beats-environment",
        "several-force-dask"])
def test_partitions_reach_the_flow_and_several_run_on_dask(argv, environment, partitions, runner, monkeypatch):
    from flows.arguments import build_parser, check, parameters

    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    args = build_parser("pipeline").parse_args([SAMPLE, "--source", "0", *argv])
    assert check(args) == runner  # (conftest sets GRAPH_TASK_RUNNER=threads)
    params = parameters("pipeline", args)
    assert params["partitions"] == partitions and params["output_layout"] == "file"
    dataset = build_parser("mst").parse_args([SAMPLE, "--output-layout", "dataset"])
    check(dataset)
    assert parameters("mst", dataset)["output_layout"] == "dataset"


def _in_fresh_process(argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    """flows.cli.main in a new interpreter; prints which heavy modules it imported, and the stack
    of pandas' first import to stderr (the call that brought it in)."""
    code = ("import sys, traceback\n"
            "class FirstPandasImport:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'pandas':\n"
            "            sys.meta_path.remove(self)\n"
            "            print('pandas imported by:', *traceback.format_stack(), file=sys.stderr)\n"
            "sys.meta_path.insert(0, FirstPandasImport())\n"
            "from flows.cli import main\ntry:\n    code = main('mst', sys.argv[1:])\n"
            "except SystemExit as exc:\n    code = exc.code\n"
            "print('imported:', sorted(m for m in ('prefect', 'dask', 'distributed', 'pyarrow', 'pandas')"
            " if m in sys.modules))\n"
            "sys.exit(code)")
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_help_and_a_missing_input_answer_before_prefect_is_imported(tmp_path):
    help_run = _in_fresh_process(["--help"])
    assert help_run.returncode == 0
    assert "Minimum spanning forest of a Parquet edge list" in help_run.stdout
    assert "imported: []" in help_run.stdout
    missing = _in_fresh_process([str(tmp_path / "nope.parquet")])
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"error: {tmp_path / 'nope.parquet'}: input not found"
    assert "imported: []" in missing.stdout
    partitions = _in_fresh_process([SAMPLE, "--partitions", "-2"])
    assert partitions.returncode == 1
    assert "argument --partitions: expected a whole number >= 1 or auto, got '-2'" in partitions.stderr
    assert "imported: []" in partitions.stdout


def test_python_m_help_describes_each_command():
    for kind in ("mst", "bfs", "pipeline"):
        done = subprocess.run([sys.executable, "-m", f"flows.{kind}", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        description = done.stdout.split("\n\n")[1]
        assert description.strip(), done.stdout
        assert "--runner {auto,dask,threads}" in done.stdout


def test_auto_runner_follows_the_edge_count_in_the_footers(tmp_path, monkeypatch):
    pq.write_table(pa.table({"src": [0, 1, 2], "dst": [1, 2, 0]}), tmp_path / "one.parquet")
    (tmp_path / "dataset").mkdir()
    for k in range(3):
        pq.write_table(pa.table({"src": [k, k + 1], "dst": [k + 1, k + 2]}), tmp_path / "dataset" / f"part-{k}.parquet")
    one, dataset = (plan_input(str(tmp_path / name), weight_col=None) for name in ("one.parquet", "dataset"))
    assert (one.rows, dataset.rows) == (3, 6)
    monkeypatch.setenv("GRAPH_DASK_MIN_EDGES", "6")
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "4")
    assert resolve_auto("auto", one) == "threads"
    # (on a GPU machine the workers are its GPUs: one GPU, one worker)
    assert resolve_auto("auto", dataset) == ("dask" if local_workers() > 1 else "threads")
    if not be.cupy_usable():
        # two CPU workers: threads keep both cores busy, and Dask would only add its start (the
        # runner-threshold records); one: nothing to spread
        for workers in ("2", "1"):
            monkeypatch.setenv("GRAPH_DASK_WORKERS", workers)
            assert resolve_auto("auto", dataset) == "threads"
        monkeypatch.setenv("GRAPH_DASK_WORKERS", "4")
    assert resolve_auto("threads", dataset) == "threads"  # an explicit choice stands


def test_default_runner_is_threads_outside_the_command_line(monkeypatch):
    """Flows called from Python or by a deployment start no worker processes unless asked."""
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.runners import task_runner

    monkeypatch.delenv("GRAPH_TASK_RUNNER", raising=False)
    monkeypatch.delenv("GRAPH_DASK_ADDRESS", raising=False)
    assert isinstance(task_runner(), ThreadPoolTaskRunner)
    assert isinstance(task_runner("auto"), ThreadPoolTaskRunner)
    assert not isinstance(task_runner("dask"), ThreadPoolTaskRunner)


def _processes_with(text: str) -> list[int]:
    """Live processes whose environment contains ``text`` (Linux /proc)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if text.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("reader", ["host", "gpu"])
def test_a_run_reads_and_writes_without_importing_pandas(prefect_server, tmp_path, reader):
    """pyarrow imports pandas at its first NumPy conversion (a fifth of a second of every
    command), and before pyarrow 26 at a type's to_pandas_dtype; the plan, the reader's checks
    and the result tables take dtypes and values through Arrow's type widths and buffers instead."""
    done = _in_fresh_process([SAMPLE, "--reader", reader, "--backend", "numpy", "--output", str(tmp_path / "out")],
                             timeout=180)
    assert done.returncode == 0, done.stderr
    assert "imported: ['prefect', 'pyarrow']" in done.stdout, done.stderr
    assert pq.read_table(tmp_path / "out" / "mst_edges.parquet").num_rows == 5


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="looks for leftover processes in /proc")
def test_without_a_server_the_command_starts_one_for_the_run_and_stops_it(tmp_path):
    """No PREFECT_API_URL: the run is recorded, with its logs, by a temporary server that the
    command stops before it exits."""
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPH_"))}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    done = subprocess.run([sys.executable, "-m", "flows.mst", SAMPLE, "--output", str(tmp_path / "out")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # (a run that lasts longer than GRAPH_PROGRESS_AFTER_SECONDS writes its stage lines there)
    assert [line for line in done.stderr.splitlines() if not line.startswith("progress ")] == []
    assert f"wrote {tmp_path / 'out' / 'mst_edges.parquet'}" in done.stdout
    assert _processes_with(str(home)) == []  # the server is gone
    import sqlite3

    with sqlite3.connect(home / "prefect.db") as db:
        runs = db.execute("SELECT id, name, state_type FROM flow_run").fetchall()
        assert [(name, state) for _, name, state in runs] == [("mst-graph", "COMPLETED")]
        messages = [m for (m,) in db.execute("SELECT message FROM log WHERE flow_run_id = ?", (runs[0][0],))]
    assert any(m.startswith("mst: ") and "validation passed" in m for m in messages), messages  # the last logs reached it


@pytest.mark.parametrize("after, lines", [("0.001", True), ("120", False)], ids=["long-run", "short-run"])
def test_a_run_longer_than_a_few_seconds_shows_a_line_per_stage(tmp_path, prefect_server, after, lines):
    """Without --verbose a command showed nothing for the 20-30 s of a laptop run. A run that
    lasts longer than GRAPH_PROGRESS_AFTER_SECONDS writes a line to stderr as each stage starts
    and ends, read from the server; a shorter one writes none, and stdout holds the results only."""
    from data.generators import kronecker

    src, dst, weight = kronecker(np, 17, seed=5)
    graph = tmp_path / "kron.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
    done = subprocess.run([sys.executable, "-m", "flows.mst", str(graph), "--output", str(tmp_path / "o")], cwd=ROOT,
                          env={**os.environ, "GRAPH_PROGRESS_AFTER_SECONDS": after}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert not any(line.startswith("progress") for line in done.stdout.splitlines())
    progress = [line for line in done.stderr.splitlines() if line.startswith("progress ")]
    if not lines:
        assert progress == [] and done.stderr == ""
        return
    said = " ".join(progress)
    for stage in ("load-kron", "msf", "validate-msf", "write"):
        assert re.search(rf"\b{stage} done in \d+\.\d s", said), progress
    assert len(progress) <= 2 * 4  # a line for what started and one for what ended, at most, per stage


def test_auto_counts_the_edges_of_a_dataset_that_holds_other_files(tmp_path, monkeypatch):
    """`--runner auto` (the default) runs threads below 16,000,000 input edges, counted from the
    Parquet footers before the run, and Dask above; files that are not Parquet (a README, notes)
    are skipped, in the count too. The count used to be pyarrow.dataset's, which fails on a
    README beside the parts: the count was then unknown and `auto` ran threads whatever the
    graph's size."""
    data = tmp_path / "data"
    for k in range(3):
        write_seed(data / f"part-{k}.parquet")
    (data / "README.md").write_text("nightly export of the edges\n")
    plan = command_plan(dict(input=str(data), src_col="src", dst_col="dst", weight_col="weight"))
    assert plan.rows == 3 * len(SEED_EDGES)
    monkeypatch.setenv("GRAPH_DASK_MIN_EDGES", str(3 * len(SEED_EDGES)))
    monkeypatch.setenv("GRAPH_DASK_WORKERS", "4")
    monkeypatch.setenv("GRAPH_BACKEND", "numpy")
    assert resolve_auto("auto", plan) == "dask"
