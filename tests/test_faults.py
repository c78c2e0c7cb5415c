"""Faults a scheduled job meets: concurrent runs, reruns over existing outputs, an interrupted
command line, and a graph larger than the GPU's free memory. (A Dask worker killed mid-task is
in tests/test_dask.py.)"""
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

from data.generators import kronecker
from flows.mst import mst_flow
from flows.runners import task_runner
from kernels import backend as be
from kernels.footprint import gpu_bytes
from tasks import graph_tasks
from tasks.errors import DeviceMemoryError
from tests.conftest import ROOT
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
    for run in runs:
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
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
        graph_tasks.check_device_memory("big.parquet", 268_435_456)
    message = str(err.value)
    need = gpu_bytes(268_435_456) / 2**30
    assert message.startswith(f"big.parquet: 268435456 edges need about {need:.2f} GiB of GPU memory, 0.00 GiB is free")
    assert "--backend numpy" in message
    graph_tasks.check_device_memory("small.parquet", 1000)  # fits: no error


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
