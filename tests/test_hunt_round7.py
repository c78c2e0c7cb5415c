"""A seventh search for wrong answers and unclear failures, on the CPU (NumPy backend): runs
that publish into one output folder at once, runs interrupted or killed at different moments,
partitioned reruns that change the layout or the partition count, inputs that change while a
run reads them, and the exit codes of `python -m flows.X` for each class of failure. Faults are
pinned by named cases; the classes that held are pinned by compact cases against the serial
references of tests/references.py (Kruskal under the order (weight, input row); a queue BFS)."""
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.edges_io import publish_results
from tests.conftest import ROOT

pytestmark = pytest.mark.usefixtures("prefect_server")


def table(tag: int, rows: int = 2000) -> pa.Table:
    """A result-shaped table whose every distance is ``tag``: which run wrote a file."""
    return pa.table({"vertex": pa.array(range(rows), pa.int64()), "distance": pa.array([tag] * rows, pa.int32())})


def tag(path: Path) -> int:
    return pq.ParquetFile(path).read()["distance"][0].as_py()


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
