"""A NumPy run that would not fit in the host's memory is refused once the footers are read,
before any column is decoded, with the figures (kernels/footprint.py host_bytes, measured per
edge by algorithm): one line, a Failed run, no output. GRAPH_HOST_MEMORY_LIMIT caps what a run
may take on a shared machine."""
import os
import subprocess
import sys

import pytest

from kernels.backend import host_memory_available
from kernels.footprint import HOST_BYTES_PER_EDGE, host_bytes
from tests.conftest import ROOT
from tests.helpers import child_pythonpath

SAMPLE = str(ROOT / "data" / "graph.parquet")  # 9 edges


def command(flow, *args, limit=None, tmp_path):
    """`python -m flows.FLOW SAMPLE ARGS` on NumPy, against the suite's server where one runs."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": child_pythonpath(), "GRAPH_BACKEND": "numpy",
           "PREFECT_HOME": str(tmp_path / "home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.update({k: v for k, v in os.environ.items() if k in ("PREFECT_API_URL", "HOME")})
    if limit is not None:
        env["GRAPH_HOST_MEMORY_LIMIT"] = str(limit)
    return subprocess.run([sys.executable, "-m", f"flows.{flow}", SAMPLE, "--output", str(tmp_path / "out"), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_estimate_grows_with_the_algorithms_a_run_computes():
    assert host_bytes(10, ("bfs",)) < host_bytes(10, ("msf",)) < host_bytes(10, ("bfs", "msf"))
    assert host_bytes(10**6, ("bfs", "msf")) == 10**6 * HOST_BYTES_PER_EDGE["bfs+msf"]


def test_available_host_memory_is_read_on_linux():
    available = host_memory_available()
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    assert available is not None and 0 < available <= total


@pytest.mark.usefixtures("prefect_server")
def test_a_run_over_the_limit_is_refused_with_its_figures_and_writes_nothing(tmp_path):
    # 9 edges: the forest alone needs 900 bytes, the pipeline 1,260: a limit between them
    # refuses the pipeline and lets the forest run
    refused = command("pipeline", "--source", "0", limit=1000, tmp_path=tmp_path)
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines()[-1] == (
        f"error: {SAMPLE}: 9 edges need about 1.23 KiB of host memory, 1000 bytes GRAPH_HOST_MEMORY_LIMIT "
        "allows; run on a GPU (--backend cupy), split the graph over workers (--partitions N), or on a "
        "machine with more memory")
    assert not (tmp_path / "out").exists()
    allowed = command("mst", limit=1000, tmp_path=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert (tmp_path / "out" / "mst_edges.parquet").exists()


@pytest.mark.usefixtures("prefect_server")
def test_a_flow_over_the_limit_fails(tmp_path, monkeypatch):
    from flows.mst import mst_flow

    monkeypatch.setenv("GRAPH_HOST_MEMORY_LIMIT", "100")
    state = mst_flow(SAMPLE, output=str(tmp_path / "out"), backend="numpy", return_state=True)
    assert state.is_failed()
    with pytest.raises(Exception, match="9 edges need about 900 bytes of host memory, 100 bytes "
                                        "GRAPH_HOST_MEMORY_LIMIT allows"):
        state.result()
    assert not (tmp_path / "out").exists()


def test_an_unusable_limit_is_one_line_naming_the_setting(tmp_path):
    done = command("mst", limit="64G", tmp_path=tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        "error: GRAPH_HOST_MEMORY_LIMIT=64G: expected a whole number >= 1; leave it unset for the default")
