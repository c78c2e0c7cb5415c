"""Partitioned runs on GPUs: NCCL through CuPy inside dask-cuda workers. The same checks as
tests/test_partitioned.py: NCCL collectives against NumPy, real graphs against the one-partition
kernels, string ids (their bytes through NCCL), a killed rank (NCCL kernels left waiting on a dead peer
must be aborted, not hang), on two GPUs (skipped where fewer are usable); a one-rank NCCL run and the refusal of workers that
share a GPU on one."""
import uuid

import pytest

from kernels import backend as be


def gpus() -> int:
    if not be.cupy_usable():
        return 0
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


two_gpus = pytest.mark.skipif(gpus() < 2, reason="partitioned GPU runs need at least two usable GPUs")
one_gpu = pytest.mark.skipif(gpus() < 1, reason="needs a usable GPU")


@pytest.fixture(scope="module")
def client():
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    with LocalCUDACluster(n_workers=2, protocol="tcp", dashboard_address=None,
                          env={"NCCL_NVLS_ENABLE": "0"}) as cluster, Client(cluster) as c:
        yield c


def _nccl_collectives(token, rank, endpoints, unique_id):
    import cupy

    from tasks.partitioned.comm_tcp import Mesh
    from tasks.partitioned.comm_nccl import NcclCommunicator
    from tests.test_partition_comm import collectives

    with NcclCommunicator(unique_id, rank, len(endpoints), Mesh.connect(token, rank, endpoints, 60.0)) as comm:
        return collectives(comm, cupy)


@two_gpus
def test_nccl_collectives_give_what_numpy_gives(client):
    from distributed.comm import get_address_host

    from tasks.partitioned.comm_tcp import open_endpoint
    from tasks.partitioned.driver import ordered_workers
    from tasks.partitioned.rank import nccl_unique_id
    from tests.test_partition_comm import check_collectives

    workers = ordered_workers(client)[:2]
    token = uuid.uuid4().hex
    endpoints = client.gather([client.submit(open_endpoint, token, r, 2, get_address_host(w), workers=[w], pure=False)
                               for r, w in enumerate(workers)])
    unique_id = client.submit(nccl_unique_id, workers=[workers[0]], pure=False).result()
    results = client.gather([client.submit(_nccl_collectives, token, r, endpoints, unique_id, workers=[w], pure=False)
                             for r, w in enumerate(workers)])
    check_collectives(results, 2)


@two_gpus
@pytest.mark.parametrize("name", ["rome99", "bitcoinalpha", "luxembourg_osm", "email_eu_core"])
def test_real_graphs_on_two_gpus_give_the_one_partition_results(client, tmp_path, name):
    from tasks.partitioned.driver import run_partitioned
    from tests.conftest import realgraphs_dir
    from tests.test_partitioned import DIRECTED, check_bfs_output, check_forest_output, one_partition, read_columns

    path = realgraphs_dir() / f"{name}.parquet"
    src, dst, weight = read_columns(path)
    sources = [int(src[0]), int(dst[src.shape[0] // 2])]
    directed = name in DIRECTED
    ids, dense, search, forest, s, d = one_partition(src, dst, weight, sources, directed)
    for layout in ("file", "dataset"):
        out = tmp_path / layout
        summary = run_partitioned(str(path), str(out), 2, source=[str(v) for v in sources], directed=directed,
                                  output_layout=layout, client=client)
        assert summary["backend"] == "cupy" and summary["partitions"] == 2
        assert summary["levels"] == [search.levels] and summary["forest_edges"] == forest.shape[0]
        check_bfs_output(out / "bfs_distances.parquet", ids, dense, search, s, d, directed)
        check_forest_output(out / "mst_edges.parquet", src, dst, weight, forest)


@two_gpus
@pytest.mark.parametrize("kind", ["large_string", "dictionary"])
def test_string_ids_on_two_gpus_give_the_one_partition_results(client, tmp_path, kind):
    """String ids over NCCL: their lengths and bytes cross between the GPUs (uint8 and int64
    all-to-alls), the owners sort them on the host. A small graph of tricky ids (the empty
    string, Unicode forms) and a larger one; distances and forest against the serial references,
    a missing string source refused with its line."""
    from tasks.errors import InputError
    from tasks.partitioned.driver import run_partitioned
    from tests.helpers import string_graph
    from tests.references import assert_distances, assert_forest

    for n, m in ((40, 160), (20000, 100000)):
        path, src, dst, w = string_graph(tmp_path / f"g{n}.parquet", kind, n=n, m=m)
        sources = ["", "\u00e9", "vertex-5"]
        out = tmp_path / f"o{n}"
        summary = run_partitioned(str(path), str(out), 2, source=sources, client=client)
        assert summary["backend"] == "cupy" and summary["partitions"] == 2
        assert_forest(out / "mst_edges.parquet", src, dst, w)
        assert_distances(out / "bfs_distances.parquet", src, dst, sources)
    with pytest.raises(InputError, match=f"^{path}: source 'vertex-99999' is not a vertex of the graph$"):
        run_partitioned(str(path), str(tmp_path / "missing"), 2, source=["a", "vertex-99999"], client=client)
    assert not (tmp_path / "missing").exists()


@two_gpus
def test_a_killed_gpu_rank_fails_the_run_cleanly(client, tmp_path):
    from tasks.partitioned.driver import PartitionFailed, run_partitioned
    from tests.conftest import realgraphs_dir
    from tests.test_partitioned import KillRankAt

    marker = tmp_path / "killed"
    client.register_plugin(KillRankAt(str(marker), r"rank 1: csr"), name="kill-rank")
    try:
        with pytest.raises(PartitionFailed, match="rank 1.*nothing was written$"):
            run_partitioned(str(realgraphs_dir() / "bitcoinalpha.parquet"), str(tmp_path / "out"), 2, source=["1"],
                            client=client, timeout=120)
    finally:
        client.unregister_worker_plugin("kill-rank")
        client.wait_for_workers(2, timeout=120)
    assert marker.exists()
    assert not (tmp_path / "out").exists()
    # the cluster still runs partitioned work afterwards
    summary = run_partitioned(str(realgraphs_dir() / "netscience.parquet"), str(tmp_path / "again"), 2,
                              client=client)
    assert summary["forest_edges"] > 0


@one_gpu
def test_workers_sharing_one_gpu_are_refused_before_anything_is_read(tmp_path):
    """A plain LocalCluster on a GPU machine puts every worker on GPU 0; NCCL would fail (or
    hang) on two ranks of one GPU, so the run is refused with one line naming the workers."""
    from distributed import Client, LocalCluster

    from tasks.errors import InputError
    from tasks.partitioned.driver import run_partitioned
    from tests.conftest import realgraphs_dir

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                      env={"GRAPH_BACKEND": "cupy", "NCCL_NVLS_ENABLE": "0"}) as cluster, Client(cluster) as c:
        with pytest.raises(InputError, match="compute on the same GPU .*one worker per GPU"):
            run_partitioned(str(realgraphs_dir() / "netscience.parquet"), str(tmp_path / "out"), 2, source=["0"],
                            client=c)
    assert not (tmp_path / "out").exists()


@one_gpu
def test_one_rank_runs_back_to_back_on_one_gpu_give_the_one_partition_results(tmp_path):
    """One partition through the rank program on a GPU: a one-rank NCCL communicator for every
    run. The second run starts right after the first run returned, while the first one's
    communicator is still being destroyed (in a helper thread): both runs give the one-partition
    results."""
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    from tasks.partitioned.driver import run_partitioned
    from tests.conftest import realgraphs_dir
    from tests.test_partitioned import check_bfs_output, check_forest_output, one_partition, read_columns

    path = realgraphs_dir() / "bitcoinalpha.parquet"
    src, dst, weight = read_columns(path)
    sources = [int(src[0])]
    ids, dense, search, forest, s, d = one_partition(src, dst, weight, sources, False)
    with LocalCUDACluster(n_workers=1, protocol="tcp", dashboard_address=None,
                          env={"NCCL_NVLS_ENABLE": "0"}) as cluster, Client(cluster) as client:
        for run in range(2):
            out = tmp_path / f"run-{run}"
            summary = run_partitioned(str(path), str(out), 1, source=[str(v) for v in sources], client=client)
            assert summary["backend"] == "cupy" and summary["partitions"] == 1
            check_bfs_output(out / "bfs_distances.parquet", ids, dense, search, s, d, False)
            check_forest_output(out / "mst_edges.parquet", src, dst, weight, forest)


@one_gpu
def test_a_communicator_is_made_only_after_the_earlier_one_is_destroyed(monkeypatch):
    """NCCL calls on independent communicators of one device are not safe in parallel from
    several threads (NCCL's "Thread Safety"). A clean close destroys its communicator in a helper
    thread (0.25-0.3 s on an H200), so the next communicator of the process, made at once, must
    wait for that destroy to end before ncclCommInitRank; the spy looks as NCCL is called."""
    import threading

    import cupy
    from cupy.cuda import nccl

    from tasks.partitioned.comm_tcp import Mesh, open_endpoint
    from tasks.partitioned.comm_nccl import NcclCommunicator

    def destroying() -> bool:
        return any(t.name == "nccl-destroy" and t.is_alive() for t in threading.enumerate())

    made, overlapped = nccl.NcclCommunicator, []

    def spy(*args):
        overlapped.append(destroying())
        return made(*args)

    monkeypatch.setattr(nccl, "NcclCommunicator", spy)

    def one_rank() -> NcclCommunicator:
        token = uuid.uuid4().hex
        endpoint = open_endpoint(token, 0, 1, "127.0.0.1")
        return NcclCommunicator(nccl.get_unique_id(), 0, 1, Mesh.connect(token, 0, [endpoint], 60.0))

    for _ in range(3):
        comm = one_rank()
        assert int(comm.allreduce(cupy.arange(5)).sum()) == 10
        comm.close()
    assert overlapped == [False, False, False]
