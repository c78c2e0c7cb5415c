"""A seventh search for wrong answers and unclear failures, on the CPU (NumPy backend): runs
that publish into one output folder at once, runs interrupted or killed at different moments,
partitioned reruns that change the layout or the partition count, inputs that change while a
run reads them, and the exit codes of `python -m flows.X` for each class of failure. Faults are
pinned by named cases; the classes that held are pinned by compact cases against the serial
references of tests/references.py (Kruskal under the order (weight, input row); a queue BFS)."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tasks.errors import InputError
from tasks.parquet.plan import plan_input
from tasks.parquet.publish import publish_results
from tasks.parquet.read import read_edges, read_share
from tests.conftest import ROOT

pytestmark = pytest.mark.usefixtures("prefect_server")


def table(tag: int, rows: int = 2000) -> pa.Table:
    """A result-shaped table whose every distance is ``tag``: which run wrote a file."""
    return pa.table({"vertex": pa.array(range(rows), pa.int64()), "distance": pa.array([tag] * rows, pa.int32())})


def tag(path: Path) -> int:
    return pq.ParquetFile(path).read()["distance"][0].as_py()


def run(main, argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# Faults found


@pytest.fixture
def fine_thread_switching():
    """Threads switch every microsecond, so two publishing runs interleave their renames."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def at_once(*work):
    """Each job in a thread of its own, started together; the first error raised again."""
    start, errors = threading.Barrier(len(work)), []

    def run(job):
        start.wait()
        try:
            job()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.usefixtures("fine_thread_switching")
def test_two_runs_publishing_into_one_output_leave_one_runs_results(tmp_path):
    """Two pipeline runs into one OUTPUT each renamed their files into place one by one, so the
    folder could end with run A's bfs_distances.parquet beside run B's mst_edges.parquet: a
    pair no run computed, and both runs reported success (seen in 25 of 200 tries)."""
    out = tmp_path / "out"
    for _ in range(200):
        at_once(*(lambda k=k: publish_results({out / "bfs_distances.parquet": table(k),
                                                 out / "mst_edges.parquet": table(k)}, out) for k in (1, 2)))
        assert tag(out / "bfs_distances.parquet") == tag(out / "mst_edges.parquet")


@pytest.mark.usefixtures("fine_thread_switching")
def test_a_run_cleaning_up_does_not_remove_a_concurrent_runs_fresh_results(tmp_path):
    """A single-search run and a source-set run into one OUTPUT: each removes the other kind's
    results after placing its own, so the two could remove each other's fresh results and leave
    both or neither kind, each run reporting files that were gone. And the single search's run
    removed a source-set-K folder it found empty just as the other run was about to write into
    it, which failed that run with "cannot write results (No such file or directory)"."""
    out = tmp_path / "out"
    single = {out / "bfs_distances.parquet": table(1)}
    sets = {out / "source-set-0" / "bfs_distances.parquet": table(2),
            out / "source-set-1" / "bfs_distances.parquet": table(2)}
    whole = (["bfs_distances.parquet"],
             ["source-set-0", "source-set-0/bfs_distances.parquet", "source-set-1", "source-set-1/bfs_distances.parquet"])
    for _ in range(400):
        at_once(lambda: publish_results(single, out), lambda: publish_results(sets, out))
        assert listing(out) in whole


def edges(path: Path, src, dst, weight, **options) -> Path:
    pq.write_table(pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()),
                             "weight": pa.array(weight, pa.float64())}), path, **options)
    return path


PLAIN = dict(use_dictionary=False, compression="none")  # byte offsets depend on the row count alone


@pytest.mark.parametrize("change", ["same-layout", "other-layout", "removed"])
@pytest.mark.parametrize("reader", ["one-partition", "partitioned"])
def test_an_input_file_that_changes_after_its_footer_was_read_is_refused(tmp_path, change, reader):
    """Rows are read by the footer read when the run planned its input. A file replaced in
    between (an upstream job writing the next version, renamed into place) was read through the
    old footer: with the same layout the new rows were taken silently under the old plan (and a
    partitioned run's ranks could take one version each), with another layout the run failed
    with "corrupt Parquet data" naming a file that is fine, and a removed file was "not a
    readable Parquet file". A partitioned run's ranks read seconds after the plan (its cluster
    starts in between). Now the file must still be the one planned: same inode, size and mtime."""
    graph = edges(tmp_path / "g.parquet", [0, 1, 2, 3], [1, 2, 3, 0], [1.0, 2.0, 3.0, 4.0], **PLAIN)
    update = tmp_path / "next.parquet"
    if change == "same-layout":
        edges(update, [5, 6, 7, 8], [6, 7, 8, 5], [9.0, 9.0, 9.0, 9.0], **PLAIN)
    elif change == "other-layout":
        edges(update, list(range(100)), list(range(1, 101)), [1.0] * 100, row_group_size=10)

    def upstream_job(*_):
        if change == "removed":
            graph.unlink()
        else:
            os.replace(update, graph)

    with pytest.raises(InputError, match=rf"^{graph}: changed while the run read it"):
        if reader == "one-partition":  # before_reading: called once the footers are read
            read_edges(str(graph), before_reading=upstream_job)
        else:
            plan = plan_input(str(graph))
            upstream_job()
            read_share(plan, 1, 2)


def test_an_input_file_changed_between_two_runs_is_simply_read(tmp_path):
    """The check above compares with the run's own plan: a file rewritten (a new mtime) after
    one run is read by the next without complaint."""
    graph = edges(tmp_path / "g.parquet", [0, 1], [1, 2], [1.0, 1.0])
    before = os.stat(graph)
    assert read_edges(str(graph)).rows == 2
    os.utime(graph, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert read_edges(str(graph)).rows == 2


def test_a_one_partition_rerun_removes_the_staging_folder_of_a_killed_partitioned_run(tmp_path, capsys):
    """A partitioned run killed (SIGKILL, a lost machine) leaves its staging folder in OUTPUT,
    its ranks' part files in it; only a partitioned rerun removed it, so a one-partition rerun
    left it there for good (hidden, so not read, but as large as the results)."""
    graph = edges(tmp_path / "g.parquet", [0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0])
    out = tmp_path / "out"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id no process has now: the killed run's driver
    staging = out / f".partitioned~{socket.gethostname()}~{gone.pid}~0123abcd.partial"
    (staging / ".parts" / "mst_edges.parquet").mkdir(parents=True)
    edges(staging / ".parts" / "mst_edges.parquet" / "part-00000.parquet", [0], [1], [1.0])
    code, _, err = run(pipeline_cli.main, [graph, "--source", "0", "--output", out], capsys)
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["bfs_distances.parquet", "mst_edges.parquet"]


def test_a_rerun_with_fewer_searches_removes_a_killed_runs_source_set_folders(tmp_path, capsys):
    """A run of three source sets killed while encoding (SIGKILL) leaves source-set-0..2/, each
    holding only its hidden temporary file. A rerun with one search removed its own folder's
    temporaries only, so OUTPUT kept three source-set folders beside bfs_distances.parquet for
    good: a job counting the sets by their folders counted three."""
    graph = edges(tmp_path / "g.parquet", [0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0])
    out = tmp_path / "out"
    gone = subprocess.Popen(["true"])
    gone.wait()
    for k in range(3):
        (out / f"source-set-{k}").mkdir(parents=True)
        (out / f"source-set-{k}" / f".bfs_distances.parquet~{socket.gethostname()}~{gone.pid}~x1y2.tmp").write_bytes(b"PAR1")
    code, _, err = run(bfs_cli.main, [graph, "--source", "0", "--output", out], capsys)
    assert code == 0, err
    assert listing(out) == ["bfs_distances.parquet"]


# Classes that held (or hold with the fixes above), pinned


def test_a_reader_holding_a_shared_lock_sees_one_runs_results(tmp_path):
    """README: a reader that takes a shared flock on OUTPUT while it opens the distances and the
    forest sees both from one run, while runs republish them (a rerun renames one file, then
    the other)."""
    import fcntl

    out = tmp_path / "out"
    publish_results({out / "bfs_distances.parquet": table(0), out / "mst_edges.parquet": table(0)}, out)
    stop, seen = threading.Event(), []

    def reader():
        while not stop.is_set():
            fd = os.open(out, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                seen.append((tag(out / "bfs_distances.parquet"), tag(out / "mst_edges.parquet")))
            finally:
                os.close(fd)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for k in range(1, 80):
            publish_results({out / "bfs_distances.parquet": table(k), out / "mst_edges.parquet": table(k)}, out)
    finally:
        stop.set()
        thread.join()
    assert seen and all(a == b for a, b in seen)
    assert len({a for a, _ in seen}) > 1  # the reader did read during the reruns


def cli(*args):
    return subprocess.Popen([sys.executable, "-m", *map(str, args)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def ring(path: Path, n: int) -> Path:
    """A cycle of n vertices: n distance rows, a forest of n - 1 edges."""
    return edges(path, list(range(n)), [(i + 1) % n for i in range(n)], [1.0] * n)


def test_concurrent_command_lines_into_one_output_leave_one_runs_complete_results(tmp_path):
    """Real processes: a partitioned pipeline on a Dask LocalCluster (dataset layout) and a
    one-partition pipeline of another graph, into one OUTPUT at once, twice over. OUTPUT ends
    with one run's distances and forest (n rows and n - 1 rows of the same ring), nothing else."""
    out = tmp_path / "out"
    for _ in range(2):
        runs = [cli("flows.pipeline", ring(tmp_path / "a.parquet", 30), "--source", "0", "--output", out,
                    "--partitions", "2", "--runner", "dask", "--output-layout", "dataset", "--backend", "numpy"),
                cli("flows.pipeline", ring(tmp_path / "b.parquet", 50), "--source", "0", "--output", out,
                    "--runner", "threads")]
        for r in runs:
            _, err = r.communicate(timeout=300)
            assert r.returncode == 0, err
        assert sorted(os.listdir(out)) == ["bfs_distances.parquet", "mst_edges.parquet"]
        distances, forest = (pq.read_table(out / name) for name in ("bfs_distances.parquet", "mst_edges.parquet"))
        assert distances.num_rows in (30, 50) and forest.num_rows == distances.num_rows - 1


@pytest.mark.parametrize("limit, options", [(4, []), (6, ["--partitions", "2", "--backend", "numpy"])],
                         ids=["one-partition", "partitioned"])
def test_a_run_over_its_time_limit_publishes_nothing_and_says_so(tmp_path, capsys, limit, options):
    """A run past GRAPH_FLOW_TIMEOUT_SECONDS is marked failed (TimedOut), but its task runner
    waits for the tasks already running, so its results were renamed into place after all,
    over the earlier run's, by a run reported failed. The command printed Prefect's "error:
    Scope timed out after 4 second(s).". Here the run waits to publish while a reader holds a
    shared lock on OUTPUT (README) past the run's limit."""
    import fcntl

    out = tmp_path / "out"
    code, _, err = run(mst_cli.main, [ring(tmp_path / "earlier.parquet", 30), "--output", out], capsys)
    assert code == 0, err
    reader = os.open(out, os.O_RDONLY)
    fcntl.flock(reader, fcntl.LOCK_SH)
    try:
        late = subprocess.Popen([sys.executable, "-m", "flows.mst", str(ring(tmp_path / "late.parquet", 50)),
                                 "--output", str(out), "--runner", "threads", "--verbose", *options], cwd=ROOT,
                                text=True, env={**os.environ, "GRAPH_FLOW_TIMEOUT_SECONDS": str(limit),
                                                "PREFECT_LOGGING_LEVEL": "INFO"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        log = []
        for line in late.stderr:
            log.append(line)
            if "exceeded timeout" in line:
                break
        else:
            pytest.fail("the run did not time out:\n" + "".join(log[-20:]))
    finally:
        os.close(reader)  # the reader is done: the run may publish now, and must not
    _, rest = late.communicate(timeout=120)
    assert late.returncode == 1
    assert rest.strip().splitlines()[-1] == (f"error: the run took longer than its time limit of {limit} s and was "
                                            "stopped (GRAPH_FLOW_TIMEOUT_SECONDS sets the limit)")
    assert pq.read_table(out / "mst_edges.parquet").num_rows == 29  # the earlier run's forest
    assert sorted(os.listdir(out)) == ["mst_edges.parquet"]


def test_a_partitioned_rerun_with_fewer_partitions_and_sets_leaves_no_stale_part(tmp_path):
    """Three partitions and three source sets as datasets, then two partitions and one set: a
    dataset reader of OUTPUT must find two parts of one set, no third part or second set."""
    from distributed import Client, LocalCluster

    from tasks.partitioned.driver import run_partitioned
    from tests.references import assert_distances

    n = 40
    src, dst = list(range(n)), [(i + 1) % n for i in range(n)]
    graph = edges(tmp_path / "g.parquet", src, dst, [1.0] * n)
    out = tmp_path / "out"
    with LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=None,
                      env={"GRAPH_BACKEND": "numpy"}) as cluster, Client(cluster) as client:
        run_partitioned(str(graph), str(out), 3, source_sets=[["0"], ["1"], ["2"]], forest=False,
                        weight_col=None, output_layout="dataset", client=client)
        assert len(os.listdir(out / "source-set-2" / "bfs_distances.parquet")) == 3
        run_partitioned(str(graph), str(out), 2, source_sets=[["5"]], forest=False, weight_col=None,
                        output_layout="dataset", client=client)
    assert listing(out) == ["source-set-0", "source-set-0/bfs_distances.parquet",
                            "source-set-0/bfs_distances.parquet/part-00000.parquet",
                            "source-set-0/bfs_distances.parquet/part-00001.parquet"]
    assert_distances(out / "source-set-0" / "bfs_distances.parquet", src, dst, [5])


def test_a_command_killed_while_it_writes_leaves_hidden_files_only_and_the_rerun_removes_them(tmp_path, capsys):
    """SIGKILL (no handler runs) 30 ms after a three-set pipeline logged its last validation,
    i.e. while it encodes (seen: source-set-0..2/ holding only temporaries): OUTPUT holds whole
    results or none, plus hidden temporaries; a rerun with one search leaves exactly its own
    results (and the forest)."""
    from data.generators import kronecker

    src, dst, weight = kronecker(np, 15, seed=4)
    graph = tmp_path / "kron.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
    sets = [str(v) for v in src[:3]]
    out = tmp_path / "out"
    killed = subprocess.Popen([sys.executable, "-m", "flows.pipeline", str(graph), "--output", str(out), "--verbose",
                               "--runner", "threads", *(a for s in sets for a in ("--source-set", s))], cwd=ROOT,
                              text=True, env={**os.environ, "PREFECT_LOGGING_LEVEL": "INFO"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    passed = 0
    for line in killed.stderr:
        passed += "validation passed" in line
        if passed == 4:  # three searches and the forest: the write starts now
            time.sleep(0.03)
            killed.send_signal(signal.SIGKILL)
            break
    killed.communicate(timeout=60)
    for path in out.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            pq.ParquetFile(path).read()  # whole
    code, _, err = run(pipeline_cli.main, [graph, "--source", sets[0], "--output", out], capsys)
    assert code == 0, err
    assert listing(out) == ["bfs_distances.parquet", "mst_edges.parquet"]
