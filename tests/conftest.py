"""Shared fixtures. Prefect runs against one session-wide test server in a temporary home.

Real graphs are found through one setting: $GRAPH_REALGRAPHS, else ../shared/realgraphs beside
the checkout, else .realgraphs/ inside it (what a GPU run carries)."""
import os
import tempfile
from pathlib import Path

os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="prefect-home-")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_TASKS_DEFAULT_NO_CACHE", "true")
# flows run their tasks in threads unless a test asks for Dask workers (tests/test_dask.py)
os.environ["GRAPH_TASK_RUNNER"] = "threads"
# a command's stage lines on stderr (flows/progress.py) only where a test asks for them: a loaded
# machine makes a small run last longer than the default few seconds
os.environ.setdefault("GRAPH_PROGRESS_AFTER_SECONDS", "3600")
os.environ.pop("GRAPH_DASK_ADDRESS", None)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kernels import backend as be  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SEED_EDGES = [(2, 3, 8), (0, 1, 4), (3, 4, 2), (1, 2, 2), (0, 2, 1), (4, 5, 3), (2, 4, 10), (3, 5, 6), (1, 3, 5)]
REAL_GRAPHS = ["rome99", "bitcoinalpha", "luxembourg_osm", "netscience", "email_eu_core"]


def realgraphs_dir() -> Path:
    for candidate in (os.environ.get("GRAPH_REALGRAPHS"), ROOT.parent / "shared" / "realgraphs", ROOT / ".realgraphs"):
        if candidate and Path(candidate, "rome99.parquet").exists():
            return Path(candidate)
    if os.environ.get("CI"):  # in CI a silent skip would hide the real-graph tests
        pytest.fail("real graphs not found: set GRAPH_REALGRAPHS or provide ../shared/realgraphs")
    pytest.skip("real graphs not found: set GRAPH_REALGRAPHS")


@pytest.fixture(params=["numpy", "cupy"])
def backend(request):
    """Each kernel test runs on every backend this machine can run."""
    if request.param == "cupy" and not be.cupy_usable():
        pytest.skip("CuPy backend needs a usable CUDA device")
    return request.param


@pytest.fixture
def xp(backend):
    return be.module(backend)


@pytest.fixture(scope="session")
def prefect_server():
    from prefect.testing.utilities import prefect_test_harness

    from prefect.settings import PREFECT_API_URL

    with prefect_test_harness(server_startup_timeout=90):
        # Dask worker processes and CLI subprocesses find the same server through the environment
        os.environ["PREFECT_API_URL"] = PREFECT_API_URL.value()
        yield
        del os.environ["PREFECT_API_URL"]


@pytest.fixture(scope="module")
def cpu_workers_folder(tmp_path_factory):
    """The folder the CPU cluster's worker processes start in and keep as their working folder."""
    return tmp_path_factory.mktemp("cpu-workers")


@pytest.fixture(scope="module")
def cpu_cluster(cpu_workers_folder):
    """A running Dask cluster of three CPU worker processes (distributed.LocalCluster), one per
    test module. Its workers compute on NumPy, on a GPU machine too: partitioned runs on it run
    the CPU rank program and its TCP collectives (tests/test_partitioned_gpu.py runs the NCCL
    ranks). They start in a folder of their own, not the tests' (as a `dask worker` started from
    a user's home would): a path resolved in a worker's folder instead of the command's is seen.
    A module that runs flows on it asks for `prefect_server` too, which starts first (session
    scope), so the workers inherit PREFECT_API_URL."""
    from distributed import LocalCluster

    before = os.getcwd()
    os.chdir(cpu_workers_folder)
    try:
        cluster = LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=None,
                               env={"GRAPH_BACKEND": "numpy"})
    finally:
        os.chdir(before)
    with cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cpu_cluster):
    """A Dask client of the module's CPU cluster."""
    from distributed import Client

    with Client(cpu_cluster) as c:
        yield c


@pytest.fixture(scope="module")
def s3():
    """A bucket ``graphs`` on a real S3 server (moto's, on a loopback port), reached through
    AWS_ENDPOINT_URL as pyarrow would reach MinIO or R2; yields pyarrow's filesystem for it.
    Processes started while it is up (a module's Dask workers, asked for after it) inherit the
    endpoint and credentials."""
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    from tests.helpers import restore, use_endpoint

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    before = use_endpoint(f"http://{host}:{port}")
    try:
        fs, _ = pafs.FileSystem.from_uri("s3://graphs")
        pafs.S3FileSystem(allow_bucket_creation=True, endpoint_override=f"http://{host}:{port}").create_dir("graphs")
        yield fs
    finally:
        restore(before)
        server.stop()


def host(a):
    return be.to_host(a)


def as_np(*arrays):
    return [np.asarray(host(a)) for a in arrays]
