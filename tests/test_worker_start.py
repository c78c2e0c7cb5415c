"""The warm-up a GPU worker runs as it starts (flows/worker_start.py)."""
from flows.worker_start import warm_up


def test_the_warm_up_runs_the_whole_pipeline_on_its_graph_and_the_results_validate(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # its Parquet file goes, with its folder
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    warm_up(backend)
    assert list(tmp_path.iterdir()) == []
