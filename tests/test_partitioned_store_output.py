"""A partitioned run writing to a store (a real S3 server, moto's, tests/conftest.py `s3`) gives
the tables the same run writes to a local folder, in both layouts; `_SUCCESS` lists exactly its
results; no staging object is left after a success, a failed rank, a refusal just before
publishing (a run over its time limit) or a communication time-out; and a rerun replaces the
earlier run's results whatever their layout."""
import logging
import re
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed.diagnostics.plugin import WorkerPlugin

from tasks import stopping
from tasks.errors import InputError, OutputError
from tasks.parquet.publish.store_staging import close_staging, open_staging, upload_parts
from tasks.partitioned.driver import PartitionFailed, run_partitioned
from tests.helpers import edge_dataset, store_listing
from tests.test_partitioned_staging import result_tables

SETS = [[0], [1, 2]]
RESULTS = ["mst_edges.parquet", "source-set-0/bfs_distances.parquet", "source-set-1/bfs_distances.parquet"]


@pytest.fixture(scope="module")
def store_client(s3, client):
    """The module's CPU cluster, its workers started after the S3 server (`s3` first): they
    reach the bucket through the endpoint and credentials they inherited."""
    import os

    seen = set(client.run(os.environ.get, "AWS_ENDPOINT_URL").values())
    assert seen == {os.environ["AWS_ENDPOINT_URL"]}
    return client


@pytest.fixture(scope="module")
def edges(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edges")
    edge_dataset(folder, seed=7, n=80, m=400)
    return str(folder)


def read_result(s3, prefix: str, name: str, layout: str) -> pa.Table:
    if layout == "file":
        return pq.read_table(f"{prefix}/{name}", filesystem=s3)
    parts = store_listing(s3, f"{prefix}/{name}")
    return pa.concat_tables(pq.read_table(f"{prefix}/{name}/{p}", filesystem=s3) for p in parts)


def read_local(folder, name: str) -> pa.Table:
    path = folder / name
    if path.is_dir():
        return pa.concat_tables(pq.read_table(p) for p in sorted(path.iterdir()))
    return pq.read_table(path)


def success(s3, prefix: str) -> list[str]:
    with s3.open_input_stream(f"{prefix}/_SUCCESS") as fh:
        return fh.read().decode().split()


def expected_objects(layout: str, partitions: int, results=RESULTS) -> list[str]:
    if layout == "file":
        return sorted(["_SUCCESS", *results])
    return sorted(["_SUCCESS", *(f"{r}/part-{k:05d}.parquet" for r in results for k in range(partitions))])


@pytest.mark.parametrize("layout", ["file", "dataset"])
@pytest.mark.parametrize("partitions", [2, 3])
def test_a_partitioned_run_to_a_bucket_writes_the_tables_it_writes_to_a_folder(store_client, s3, edges, tmp_path,
                                                                               partitions, layout):
    prefix = f"graphs/same-{partitions}-{layout}"
    options = dict(source_sets=SETS, forest=True, output_layout=layout, client=store_client)
    run_partitioned(edges, str(tmp_path / "local"), partitions, **options)
    summary = run_partitioned(edges, f"s3://{prefix}", partitions, **options)
    assert summary["outputs"] == [f"s3://{prefix}/{r}" for r in ["source-set-0/bfs_distances.parquet",
                                                                  "source-set-1/bfs_distances.parquet",
                                                                  "mst_edges.parquet"]]
    assert store_listing(s3, prefix) == expected_objects(layout, partitions)
    assert not [n for n in store_listing(s3, prefix, folders=True) if ".partitioned~" in n]  # not even a folder
    assert sorted(success(s3, prefix)) == sorted(RESULTS)
    for name in RESULTS:
        assert read_result(s3, prefix, name, layout).equals(read_local(tmp_path / "local", name)), name


def test_a_rerun_replaces_the_earlier_results_whatever_their_layout(store_client, s3, edges, tmp_path):
    """Three source sets as one file each, then one search and the forest as datasets of three
    parts, then of two parts, then as files: each run leaves exactly its own results."""
    prefix = "graphs/rerun"
    run_partitioned(edges, f"s3://{prefix}", 3, source_sets=[[0], [1], [2]], forest=True, client=store_client)
    assert len(store_listing(s3, prefix)) == 5
    plan = [(3, "dataset"), (2, "dataset"), (2, "file")]
    for partitions, layout in plan:
        run_partitioned(edges, f"s3://{prefix}", partitions, source=[0], forest=True, output_layout=layout,
                        client=store_client)
        run_partitioned(edges, str(tmp_path / layout / str(partitions)), partitions, source=[0], forest=True,
                        output_layout=layout, client=store_client)
        results = ["bfs_distances.parquet", "mst_edges.parquet"]
        assert store_listing(s3, prefix) == expected_objects(layout, partitions, results), (partitions, layout)
        assert success(s3, prefix) == results
        for name in results:
            assert read_result(s3, prefix, name, layout).equals(
                read_local(tmp_path / layout / str(partitions), name)), (partitions, layout, name)


def test_a_failed_rank_leaves_no_staging_object_and_the_earlier_results(store_client, s3, edges):
    """A source that is not a vertex, refused by the rank that looks it up."""
    prefix = "graphs/failed"
    with pytest.raises(InputError, match=r"source 9999 is not a vertex of the graph"):
        run_partitioned(edges, f"s3://{prefix}", 3, source=[9999], forest=True, client=store_client)
    assert store_listing(s3, prefix, folders=True) == []
    run_partitioned(edges, f"s3://{prefix}", 2, source=[0], forest=True, client=store_client)
    before = {name: s3.get_file_info(f"{prefix}/{name}").mtime_ns for name in store_listing(s3, prefix)}
    with pytest.raises(InputError, match=r"source 9999 is not a vertex of the graph"):
        run_partitioned(edges, f"s3://{prefix}", 3, source=[9999], forest=True, output_layout="dataset",
                        client=store_client)
    assert {name: s3.get_file_info(f"{prefix}/{name}").mtime_ns for name in store_listing(s3, prefix)} == before


@pytest.mark.parametrize("layout", ["file", "dataset"])
def test_a_run_refused_just_before_publishing_leaves_the_earlier_results_and_no_staging(store_client, s3, edges,
                                                                                      layout):
    """The refusal a run over its time limit meets (tasks.graph_tasks.check_flow_run_going),
    once every rank has uploaded its parts: they go, and nothing of the earlier run changes."""
    prefix = f"graphs/late-{layout}"
    run_partitioned(edges, f"s3://{prefix}", 2, source_sets=SETS, forest=True, client=store_client)
    before = {name: s3.get_file_info(f"{prefix}/{name}").mtime_ns for name in store_listing(s3, prefix)}
    staged = []

    def over_time():
        staged.extend(n for n in store_listing(s3, prefix) if n.startswith(".partitioned~"))
        raise stopping.Stopped("the flow run ended (over its time limit) before its results were published")

    with pytest.raises(stopping.Stopped, match="over its time limit"):
        run_partitioned(edges, f"s3://{prefix}", 3, source=[0], forest=True, output_layout=layout,
                        client=store_client, check=over_time)
    assert len([n for n in staged if n.endswith(".parquet")]) == 2 * 3  # the parts were there
    assert {name: s3.get_file_info(f"{prefix}/{name}").mtime_ns for name in store_listing(s3, prefix)} == before
    assert not [n for n in store_listing(s3, prefix, folders=True) if ".partitioned~" in n]


class SleepRankAt(WorkerPlugin):
    """The rank that logs a message matching ``pattern`` sleeps ``seconds`` there: its peers
    wait for it in their next collective past the run's communication time-out."""

    name = "sleep-rank"

    def __init__(self, pattern: str, seconds: float):
        self.pattern, self.seconds = pattern, seconds

    def setup(self, worker):
        pattern, seconds = re.compile(self.pattern), self.seconds

        class Sleep(logging.Handler):
            def emit(self, record):
                if pattern.match(record.getMessage()):
                    time.sleep(seconds)

        self.logger = logging.getLogger("graph.partitioned")
        self.level = self.logger.level
        self.logger.setLevel(logging.INFO)
        self.handler = Sleep()
        self.logger.addHandler(self.handler)

    def teardown(self, worker):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)


def test_a_run_past_its_communication_time_out_leaves_no_staging_object(store_client, s3, edges):
    prefix = "graphs/timeout"
    store_client.register_plugin(SleepRankAt(r"rank 2: validated", 6.0))
    try:
        with pytest.raises(PartitionFailed, match="nothing was written"):
            run_partitioned(edges, f"s3://{prefix}", 3, source=[0], forest=True, client=store_client, timeout=1.5)
        deadline = time.monotonic() + 60  # the sleeping rank goes on after the driver gave up
        while any(store_client.processing().values()):
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        store_client.unregister_worker_plugin("sleep-rank")
    assert store_listing(s3, prefix, folders=True) == []


@pytest.mark.parametrize("layout", ["file", "dataset"])
def test_a_rank_uploading_while_the_driver_gives_the_run_up_leaves_no_object(s3, layout):
    """As tests/test_partitioned_staging.py on the local disk: the driver closes the staging
    prefix while a rank uploads its parts; the rank fails and deletes what it put there, and
    nothing is left, whichever of them was first."""
    store, _, staging = open_staging("s3://graphs/given-up", "given-up")
    tables = result_tables(sets=5, rows=200_000)
    failed = []

    def rank():
        try:
            upload_parts(tables, str(staging), 0, layout)
        except OutputError as exc:
            failed.append(str(exc))

    writer = threading.Thread(target=rank)
    writer.start()
    deadline = time.monotonic() + 120
    while len(store_listing(s3, staging.key)) < 3:  # the marker and two parts
        assert time.monotonic() < deadline and writer.is_alive(), "the rank uploaded no part"
        time.sleep(0.01)
    close_staging(store, staging)  # the driver gives the run up
    writer.join()
    assert store_listing(s3, "graphs/given-up", folders=True) == []
    assert failed and "the run's staging directory is gone" in failed[0]


def test_a_one_partition_run_replaces_a_partitioned_runs_dataset_in_the_bucket(store_client, s3, edges):
    """The one-partition publishing (publish_to_store) deletes the parts at a result's path
    before it uploads the object there: a listing would otherwise show the result twice."""
    from tasks.parquet.publish.publish import publish_to_store

    prefix = "graphs/one-after-many"
    run_partitioned(edges, f"s3://{prefix}", 3, forest=True, output_layout="dataset", client=store_client)
    forest = read_result(s3, prefix, "mst_edges.parquet", "dataset")
    publish_to_store({f"s3://{prefix}/mst_edges.parquet": forest}, f"s3://{prefix}")
    assert store_listing(s3, prefix, folders=True) == ["_SUCCESS", "mst_edges.parquet"]  # no folder
    assert pq.read_table(f"{prefix}/mst_edges.parquet", filesystem=s3).equals(forest)
