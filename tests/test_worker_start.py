"""The start-up a worker of a cluster that a flow run starts goes through (flows/worker_start.py)."""
import importlib
import logging
import threading

import pytest

from flows import worker_start
from flows.worker_start import warm_up
from kernels import backend as be


def test_the_warm_up_runs_the_whole_pipeline_on_its_graph_and_the_results_validate(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # its Parquet file goes, with its folder
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    warm_up(backend)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_gpu_start_is_logged_and_left_to_the_first_task(monkeypatch, caplog):
    """Without a usable GPU the start-up thread records and logs what it met, and does not stop
    the worker from starting."""
    monkeypatch.setattr(worker_start, "warm_up", lambda backend: (_ for _ in ()).throw(RuntimeError("no device")))
    monkeypatch.setattr(worker_start, "start_done", threading.Event())
    imported = threading.Event()
    imported.set()
    with caplog.at_level(logging.WARNING, logger="flows.worker_start"):
        worker_start._start_gpu(imported)
    assert worker_start.start_done.is_set()
    assert worker_start.start_report.startswith("warm-up failed: ")
    assert [r.getMessage() for r in caplog.records] == [f"GPU {worker_start.start_report}"]


@pytest.mark.skipif(not be.cupy_usable() or importlib.util.find_spec("dask_cuda") is None,
                    reason="a GPU worker's start needs a usable GPU and dask-cuda")
def test_a_gpu_worker_of_the_flows_cluster_warms_up_as_it_starts(monkeypatch, prefect_server):
    from distributed import Client

    from flows.runners import local_cluster

    monkeypatch.setenv("GRAPH_BACKEND", "cupy")
    with local_cluster(n_workers=1, CUDA_VISIBLE_DEVICES="0") as cluster, Client(cluster) as client:
        reports = client.run(lambda: (worker_start.start_done.wait(120), worker_start.start_report)[1])
    assert [r.startswith("warmed up in ") for r in reports.values()] == [True], reports
