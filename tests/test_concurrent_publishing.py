"""Runs that publish into one output folder at once, on the CPU: the folder ends with one run's
results, never a mix of two runs' files (threads switching every microsecond, and real command
lines, one of them a partitioned run on Dask); a run cleaning up an earlier kind of result
does not remove a concurrent run's fresh one; a reader holding a shared flock on the folder sees
the distances and the forest of one run while runs republish them."""
import os
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.parquet.publish.publish import publish_results
from tests.conftest import ROOT
from tests.helpers import listing, ring

pytestmark = pytest.mark.usefixtures("prefect_server")


def table(tag: int, rows: int = 2000) -> pa.Table:
    """A result-shaped table whose every distance is ``tag``: which run wrote a file."""
    return pa.table({"vertex": pa.array(range(rows), pa.int64()), "distance": pa.array([tag] * rows, pa.int32())})


def tag(path: Path) -> int:
    return pq.ParquetFile(path).read()["distance"][0].as_py()


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


def test_a_reader_holding_a_shared_lock_sees_one_runs_results(tmp_path):
    """A reader that takes a shared flock on OUTPUT while it opens the distances and the
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
