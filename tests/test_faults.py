"""Faults a scheduled job meets: concurrent runs, reruns over existing outputs, an interrupted
command line, a command killed (SIGKILL) while it writes and the leftovers of killed runs that
a rerun removes, an input file replaced while a run reads it, a run over its time limit, and a
graph larger than the GPU's free memory. (A Dask worker killed mid-task is in
tests/test_dask.py; runs publishing into one folder at once in
tests/test_concurrent_publishing.py.)"""
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

from data.generators import kronecker
from flows import bfs as bfs_cli
from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from flows.mst import mst_flow
from flows.runners import task_runner
from kernels import backend as be
from kernels.footprint import gpu_bytes
from tasks import memory
from tasks.parquet.read.reader import read_edges, read_share
from tasks.errors import DeviceMemoryError, InputError
from tasks.parquet.dataset.plan import plan_input
from tests.conftest import ROOT
from tests.helpers import listing, ring, run, write_edges
from tests.references import result_tables

pytestmark = pytest.mark.usefixtures("prefect_server")


def kron_file(path: Path, scale: int, seed: int = 1) -> str:
    src, dst, weight = kronecker(np, scale, seed=seed)
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), path)
    return str(path)


def cli(*args, **env):
    return subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, env={**os.environ, **env}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def leftovers(directory: Path) -> list:
    """Hidden (temporary) files anywhere under ``directory``."""
    return [p for p in directory.rglob(".*")] if directory.exists() else []


def test_concurrent_runs_to_different_outputs_do_not_interfere(tmp_path):
    graph = kron_file(tmp_path / "kron.parquet", 12)
    serial = mst_flow(graph, output=str(tmp_path / "serial"))
    runs = [cli("flows.pipeline", graph, "--source", "0", "--output", str(tmp_path / f"run{k}"), "--runner", "threads")
            for k in range(3)]
    for process in runs:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    expected = pq.read_table(tmp_path / "serial" / "mst_edges.parquet")
    first = result_tables(tmp_path / "run0")
    for k in range(3):
        assert pq.read_table(tmp_path / f"run{k}" / "mst_edges.parquet").equals(expected)
        assert result_tables(tmp_path / f"run{k}") == first
        assert not leftovers(tmp_path / f"run{k}")
    assert serial["forest_edges"] == expected.num_rows


def test_rerun_replaces_outputs_atomically_while_a_reader_reads(tmp_path):
    """A reader polling the output during a rerun sees the old table or the new one, whole."""
    out = tmp_path / "out"
    mst_flow(kron_file(tmp_path / "a.parquet", 11, seed=1), output=str(out))
    old = pq.read_table(out / "mst_edges.parquet")
    seen, errors, stop = [], [], threading.Event()

    def read_forever():
        # one open per read: pq.read_table(path) opens a file twice (its footer, then its pages),
        # so a replacement between the two opens mixes two files whatever the writer does
        while not stop.is_set():
            try:
                with open(out / "mst_edges.parquet", "rb") as handle:
                    seen.append(pq.read_table(handle))
            except Exception as exc:  # a partial file would fail to parse
                errors.append(exc)

    reader = threading.Thread(target=read_forever)
    reader.start()
    try:
        for _ in range(3):
            mst_flow(kron_file(tmp_path / "b.parquet", 12, seed=2), output=str(out))
    finally:
        stop.set()
        reader.join()
    new = pq.read_table(out / "mst_edges.parquet")
    assert not errors, errors[:1]
    assert not new.equals(old)
    assert seen and all(t.equals(old) or t.equals(new) for t in seen)
    assert sorted(p.name for p in out.iterdir()) == ["mst_edges.parquet"]


@pytest.mark.parametrize("runner", ["threads", "dask"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", ["read ", "validation passed"], ids=["after-load", "before-write"])
def test_interrupted_cli_leaves_no_temporary_files(tmp_path, runner, signum, moment):
    """The signal arrives when --verbose logs ``moment``; the run stops with exit 130 (or, if it
    was already done, 0) and leaves either whole outputs or none, and no temporary file."""
    graph = kron_file(tmp_path / "kron.parquet", 13)
    source = str(pq.read_table(graph, columns=["src"])["src"][0])  # vertex 0 is not in this graph
    out = tmp_path / "out"
    run = cli("flows.pipeline", graph, "--source", source, "--output", str(out), "--runner", runner, "--verbose",
              PREFECT_LOGGING_LEVEL="INFO")
    log = []
    for line in run.stderr:
        log.append(line)
        if moment in line:
            run.send_signal(signum)
            break
    else:
        pytest.fail(f"the run never logged {moment!r}:\n{''.join(log[-20:])}")
    run.communicate(timeout=120)
    assert run.returncode in (130, 0)
    assert not leftovers(out)
    for name in ("bfs_distances.parquet", "mst_edges.parquet"):
        if (out / name).exists():
            pq.read_table(out / name)  # whole, not partial


def test_graph_too_large_for_free_gpu_memory_names_the_need_and_the_fallback(monkeypatch):
    """The check that runs before any upload to the GPU (here given 1 MiB free)."""
    monkeypatch.setattr(be, "device_memory_free", lambda: 1 << 20)
    with pytest.raises(DeviceMemoryError) as err:
        memory.check_device_memory("big.parquet", 268_435_456)
    message = str(err.value)
    need = gpu_bytes(268_435_456) / 2**30
    assert message.startswith(f"big.parquet: 268435456 edges need about {need:.2f} GiB of GPU memory, 0.00 GiB is free")
    assert "--backend numpy" in message
    memory.check_device_memory("small.parquet", 1000)  # fits: no error


@pytest.mark.skipif(not be.cupy_usable(), reason="needs a usable CUDA device")
def test_flow_on_a_gpu_without_room_fails_with_one_clear_error(tmp_path):
    """On a real GPU whose CuPy pool is capped at 64 MiB, a 2M-edge graph fails the flow
    before computing, with the message the CLI prints, and writes nothing."""
    import cupy

    graph = kron_file(tmp_path / "kron.parquet", 17)
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    pool.set_limit(size=64 << 20)
    try:
        state = mst_flow.with_options(task_runner=task_runner("threads"))(
            graph, output=str(tmp_path / "out"), backend="cupy", return_state=True)
    finally:
        pool.set_limit(size=0)
    assert state.is_failed()
    assert "need about" in state.message and "GiB is free" in state.message and "--backend numpy" in state.message
    assert not (tmp_path / "out").exists()


PLAIN_UNCOMPRESSED = dict(use_dictionary=False, compression="none")  # byte offsets depend on the row count alone


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
    graph = write_edges(tmp_path / "g.parquet", [0, 1, 2, 3], [1, 2, 3, 0], [1.0, 2.0, 3.0, 4.0], **PLAIN_UNCOMPRESSED)
    update = tmp_path / "next.parquet"
    if change == "same-layout":
        write_edges(update, [5, 6, 7, 8], [6, 7, 8, 5], [9.0, 9.0, 9.0, 9.0], **PLAIN_UNCOMPRESSED)
    elif change == "other-layout":
        write_edges(update, list(range(100)), list(range(1, 101)), [1.0] * 100, row_group_size=10)

    def upstream_job(*_):
        if change == "removed":
            graph.unlink()
        else:
            os.replace(update, graph)

    with pytest.raises(InputError, match=rf"^{graph}: changed while the run read it"):
        if reader == "one-partition":  # before_reading: called once the footers are read
            read_edges(plan_input(str(graph)), before_reading=upstream_job)
        else:
            plan = plan_input(str(graph))
            upstream_job()
            read_share(plan, 1, 2)


def test_an_input_file_changed_between_two_runs_is_simply_read(tmp_path):
    """The check above compares with the run's own plan: a file rewritten (a new mtime) after
    one run is read by the next without complaint."""
    graph = write_edges(tmp_path / "g.parquet", [0, 1], [1, 2], [1.0, 1.0])
    before = os.stat(graph)
    assert read_edges(plan_input(str(graph))).rows == 2
    os.utime(graph, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert read_edges(plan_input(str(graph))).rows == 2


def test_a_one_partition_rerun_removes_the_staging_folder_of_a_killed_partitioned_run(tmp_path, capsys):
    """A partitioned run killed (SIGKILL, a lost machine) leaves its staging folder in OUTPUT,
    its ranks' part files in it; only a partitioned rerun removed it, so a one-partition rerun
    left it there for good (hidden, so not read, but as large as the results)."""
    graph = write_edges(tmp_path / "g.parquet", [0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0])
    out = tmp_path / "out"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id no process has now: the killed run's driver
    staging = out / f".partitioned~{socket.gethostname()}~{gone.pid}~0123abcd.partial"
    (staging / ".parts" / "mst_edges.parquet").mkdir(parents=True)
    write_edges(staging / ".parts" / "mst_edges.parquet" / "part-00000.parquet", [0], [1], [1.0])
    code, _, err = run(pipeline_cli.main, [graph, "--source", "0", "--output", out], capsys)
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["bfs_distances.parquet", "mst_edges.parquet"]


def test_a_rerun_with_fewer_searches_removes_a_killed_runs_source_set_folders(tmp_path, capsys):
    """A run of three source sets killed while encoding (SIGKILL) leaves source-set-0..2/, each
    holding only its hidden temporary file. A rerun with one search removed its own folder's
    temporaries only, so OUTPUT kept three source-set folders beside bfs_distances.parquet for
    good: a job counting the sets by their folders counted three."""
    graph = write_edges(tmp_path / "g.parquet", [0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0])
    out = tmp_path / "out"
    gone = subprocess.Popen(["true"])
    gone.wait()
    for k in range(3):
        (out / f"source-set-{k}").mkdir(parents=True)
        (out / f"source-set-{k}" / f".bfs_distances.parquet~{socket.gethostname()}~{gone.pid}~x1y2.tmp").write_bytes(b"PAR1")
    code, _, err = run(bfs_cli.main, [graph, "--source", "0", "--output", out], capsys)
    assert code == 0, err
    assert listing(out) == ["bfs_distances.parquet"]


@pytest.mark.parametrize("limit, options", [(4, []), (6, ["--partitions", "2", "--backend", "numpy"])],
                         ids=["one-partition", "partitioned"])
def test_a_run_over_its_time_limit_publishes_nothing_and_says_so(tmp_path, capsys, limit, options):
    """A run past GRAPH_FLOW_TIMEOUT_SECONDS is marked failed (TimedOut), but its task runner
    waits for the tasks already running, so its results were renamed into place after all,
    over the earlier run's, by a run reported failed. The command printed Prefect's "error:
    Scope timed out after 4 second(s).". Here the run waits to publish while a reader holds a
    shared lock on OUTPUT (which publishing waits for) past the run's limit."""
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
