"""Inputs and outputs in object storage, against a real S3 server on a loopback port (moto's
server, the S3 HTTP API; pyarrow reaches it through AWS_ENDPOINT_URL as it would MinIO or R2):
a dataset read from a bucket and results written to one give the local run's answers; a URI is
never taken for a local folder; a missing bucket, a missing key, an unknown scheme and refused
credentials each fail with one line. A scheme pyarrow.fs does not serve goes through fsspec's
filesystem for it (memory://, a real fsspec filesystem in this process)."""
import io
import os
import socket
import subprocess
import sys
import time

import duckdb
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from flows import mst as mst_cli
from flows import pipeline as pipeline_cli
from tests.helpers import assert_same_results, edge_dataset, restore, run, store_listing, upload, use_endpoint

pytestmark = pytest.mark.usefixtures("prefect_server")

def test_a_dataset_in_a_bucket_gives_the_local_answers_and_its_results_land_in_the_bucket(s3, tmp_path, capsys,
                                                                                          monkeypatch):
    edge_dataset(tmp_path / "edges")
    upload(s3, tmp_path / "edges", "graphs/edges")
    code, _, err = run(pipeline_cli.main, [tmp_path / "edges", "--source", "0", "--output", tmp_path / "local"], capsys)
    assert code == 0, err
    monkeypatch.chdir(tmp_path)  # a URI taken for a folder would appear here as s3:/
    code, out, err = run(pipeline_cli.main, ["s3://graphs/edges", "--source", "0", "--output", "s3://graphs/results"],
                         capsys)
    assert code == 0, err
    assert "s3://graphs/results/mst_edges.parquet" in out + err
    assert not (tmp_path / "s3:").exists()
    listed = sorted(i.path for i in s3.get_file_info(pafs.FileSelector("graphs/results", recursive=True)))
    assert listed == ["graphs/results/_SUCCESS", "graphs/results/bfs_distances.parquet",
                      "graphs/results/mst_edges.parquet"]
    with s3.open_input_stream("graphs/results/_SUCCESS") as fh:
        assert fh.read().decode().split() == ["bfs_distances.parquet", "mst_edges.parquet"]
    for name in ("bfs_distances.parquet", "mst_edges.parquet"):
        local = pq.read_table(tmp_path / "local" / name)
        remote = pq.read_table(f"graphs/results/{name}", filesystem=s3)
        assert_same_results(remote, local)
        # the object as another reader sees it: DuckDB reads a copy of its bytes
        copy = tmp_path / f"copy-{name}"
        pafs.copy_files(f"graphs/results/{name}", str(copy), source_filesystem=s3)
        assert duckdb.sql(f"SELECT count(*) FROM '{copy}'").fetchall() == [(local.num_rows,)]


def test_a_flow_run_from_python_reads_and_writes_a_bucket(s3, tmp_path):
    """The flow itself (a real Prefect run), as a deployment calls it."""
    edge_dataset(tmp_path / "edges", seed=1)
    upload(s3, tmp_path / "edges", "graphs/flow-edges")
    local = mst_cli.mst_flow(input=str(tmp_path / "edges"), output=str(tmp_path / "out"))
    summary = mst_cli.mst_flow(input="s3://graphs/flow-edges", output="s3://graphs/flow-out")
    assert summary["input"] == "s3://graphs/flow-edges"
    assert summary["outputs"] == ["s3://graphs/flow-out/mst_edges.parquet"]
    assert summary["forest_weight"] == local["forest_weight"]
    assert pq.read_table("graphs/flow-out/mst_edges.parquet", filesystem=s3).equals(
        pq.read_table(tmp_path / "out" / "mst_edges.parquet"))


def test_a_rerun_with_one_search_removes_the_earlier_runs_source_sets_from_the_bucket(s3, tmp_path, capsys):
    from flows import bfs as bfs_cli

    edge_dataset(tmp_path / "edges", seed=2)
    upload(s3, tmp_path / "edges", "graphs/sets-edges")
    code, _, err = run(bfs_cli.main, ["s3://graphs/sets-edges", "--source-set", "0", "--source-set", "1",
                                      "--output", "s3://graphs/sets-out"], capsys)
    assert code == 0, err
    code, _, err = run(bfs_cli.main, ["s3://graphs/sets-edges", "--source", "0", "--output", "s3://graphs/sets-out"],
                       capsys)
    assert code == 0, err
    listed = sorted(i.path for i in s3.get_file_info(pafs.FileSelector("graphs/sets-out", recursive=True))
                    if i.type == pafs.FileType.File)
    assert listed == ["graphs/sets-out/_SUCCESS", "graphs/sets-out/bfs_distances.parquet"]


@pytest.mark.parametrize("argv, line", [
    (["s3://no-such-bucket/edges.parquet"], "error: s3://no-such-bucket/edges.parquet: input not found (bucket "
                                            "'no-such-bucket' does not exist)"),
    (["s3://graphs/no-such-key.parquet"], "error: s3://graphs/no-such-key.parquet: input not found"),
    (["INPUT", "--output", "s3://no-such-bucket/out"], "error: s3://no-such-bucket/out/mst_edges.parquet: bucket "
                                                       "'no-such-bucket' does not exist"),
    (["nosuch://host/edges.parquet"], "error: nosuch://host/edges.parquet: unknown storage scheme nosuch:// (known: "
                                      "file://, s3://, gs://, gcs://, abfs://, abfss://, az://, hdfs://, viewfs://, a "
                                      "scheme of an fsspec filesystem, or a local path)"),
    (["INPUT", "--output", "nosuch://host/out"], "error: nosuch://host/out: unknown storage scheme nosuch:// (known: "
                                                 "file://, s3://, gs://, gcs://, abfs://, abfss://, az://, hdfs://, "
                                                 "viewfs://, a scheme of an fsspec filesystem, or a local path)"),
    (["oci://bucket@space/edges.parquet"], "error: oci://bucket@space/edges.parquet: the oci:// filesystem needs a "
                                           "package that is not installed (Install ocifs to access OCI Object "
                                           "Storage)"),
], ids=["missing-bucket", "missing-key", "output-bucket-missing", "unknown-scheme", "unknown-output-scheme",
        "fsspec-package-missing"])
def test_what_is_missing_in_a_store_is_one_line(s3, tmp_path, capsys, monkeypatch, argv, line):
    edge_dataset(tmp_path / "edges", seed=3)
    monkeypatch.chdir(tmp_path)
    argv = [str(tmp_path / "edges") if a == "INPUT" else a for a in argv]
    code, out, err = run(mst_cli.main, argv, capsys)
    assert code != 0
    assert err.strip().splitlines()[-1] == line
    assert not any(tmp_path.glob("*:"))  # no URI taken for a local folder


def test_a_scheme_pyarrow_does_not_serve_goes_through_fsspec(tmp_path, capsys, monkeypatch):
    """memory:// is fsspec's (pyarrow.fs has no such filesystem): a dataset there gives the local
    answers, and the results and _SUCCESS land there. Threads: a memory filesystem is this
    process's."""
    import fsspec

    memory = fsspec.filesystem("memory")
    edge_dataset(tmp_path / "edges", seed=5)
    for name in os.listdir(tmp_path / "edges"):
        memory.put_file(str(tmp_path / "edges" / name), f"/fsspec-graphs/edges/{name}")
    try:
        code, _, err = run(pipeline_cli.main, [tmp_path / "edges", "--source", "0", "--output", tmp_path / "local"],
                           capsys)
        assert code == 0, err
        monkeypatch.chdir(tmp_path)
        code, out, err = run(pipeline_cli.main, ["memory://fsspec-graphs/edges", "--source", "0", "--runner", "threads",
                                                 "--output", "memory://fsspec-graphs/results"], capsys)
        assert code == 0, err
        assert "memory://fsspec-graphs/results/mst_edges.parquet" in out
        assert sorted(memory.ls("/fsspec-graphs/results", detail=False)) == [
            "/fsspec-graphs/results/_SUCCESS", "/fsspec-graphs/results/bfs_distances.parquet",
            "/fsspec-graphs/results/mst_edges.parquet"]
        for name in ("bfs_distances.parquet", "mst_edges.parquet"):
            remote = pq.read_table(io.BytesIO(memory.cat(f"/fsspec-graphs/results/{name}")))
            assert_same_results(remote, pq.read_table(tmp_path / "local" / name))
        assert not any(tmp_path.glob("*:"))
    finally:
        memory.rm("/fsspec-graphs", recursive=True)


def test_a_file_uri_is_the_local_path_it_names(tmp_path, capsys):
    edge_dataset(tmp_path / "edges", seed=4)
    code, _, err = run(mst_cli.main, [f"file://{tmp_path / 'edges'}", "--output", f"file://{tmp_path / 'out'}"], capsys)
    assert code == 0, err
    assert pq.read_table(tmp_path / "out" / "mst_edges.parquet").num_rows > 0


@pytest.fixture
def guarded_s3():
    """An S3 server that checks credentials (moto_server with authentication on from the first
    request), in a process of its own; yields its endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "moto_server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_refused_credentials_are_one_line(guarded_s3, tmp_path, capsys):
    before = use_endpoint(guarded_s3, key="AKIANOBODYKNOWS", secret="wrong")
    try:
        code, _, err = run(mst_cli.main, ["s3://graphs/edges.parquet", "--output", tmp_path / "out"], capsys)
    finally:
        restore(before)
    assert code != 0
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: s3://graphs/edges.parquet: cannot be read (")
    assert last.endswith("the store refused the credentials: check them (for S3: AWS_ACCESS_KEY_ID, AWS_PROFILE, "
                         "~/.aws)")
    assert not (tmp_path / "out").exists()


def test_a_partitioned_command_reads_a_bucket_and_writes_to_one(s3, tmp_path, capsys):
    """Its ranks, Dask worker processes, read their shares from the bucket and upload their
    parts themselves; the result is the one-partition run's (tests/test_partitioned_store_output.py
    covers the layouts, failures and reruns)."""
    edge_dataset(tmp_path / "edges", seed=5)
    upload(s3, tmp_path / "edges", "graphs/part-edges")
    code, _, err = run(mst_cli.main, [tmp_path / "edges", "--output", tmp_path / "one"], capsys)
    assert code == 0, err
    code, out, err = run(mst_cli.main, ["s3://graphs/part-edges", "--output", "s3://graphs/part-out",
                                        "--partitions", "2", "--backend", "numpy"], capsys)
    assert code == 0, err
    assert "s3://graphs/part-out/mst_edges.parquet" in out + err
    assert store_listing(s3, "graphs/part-out") == ["_SUCCESS", "mst_edges.parquet"]
    assert pq.read_table("graphs/part-out/mst_edges.parquet", filesystem=s3).equals(
        pq.read_table(tmp_path / "one" / "mst_edges.parquet"))


def test_a_partitioned_run_to_memory_is_refused_in_one_line(tmp_path, capsys):
    """memory:// is each process's own: the ranks would write into their workers' memories."""
    edge_dataset(tmp_path / "edges", seed=6)
    code, _, err = run(mst_cli.main, [tmp_path / "edges", "--output", "memory://graphs/out", "--partitions", "2",
                                      "--backend", "numpy"], capsys)
    assert code != 0
    assert err.strip().splitlines()[-1] == (
        "error: memory://graphs/out/mst_edges.parquet: a partitioned run cannot write to memory:// (each Dask "
        "worker process has a memory of its own); write to a store or a folder, or run with one partition")


@pytest.mark.parametrize("output", ["memory:///fsspec-inside/edges/out", "memory://fsspec-inside/edges/day=1/out"])
def test_an_output_inside_the_input_is_refused_however_the_uri_spells_it(tmp_path, capsys, output):
    """memory:///a and memory://a are one key: the output check compares keys, not spellings."""
    import fsspec

    memory = fsspec.filesystem("memory")
    edge_dataset(tmp_path / "edges", seed=5)
    for name in os.listdir(tmp_path / "edges"):
        memory.put_file(str(tmp_path / "edges" / name), f"/fsspec-inside/edges/day=1/{name}")
    try:
        code, out, err = run(mst_cli.main, ["memory://fsspec-inside/edges", "--runner", "threads", "--output", output],
                             capsys)
        assert (code, err.strip().splitlines()[-1]) == (
            1, f"error: {output}: output folder is inside the input dataset memory://fsspec-inside/edges, so a "
               "later run would read the results as input; write them elsewhere")
        assert sorted(memory.ls("/fsspec-inside/edges/day=1", detail=False)) == sorted(
            f"/fsspec-inside/edges/day=1/{name}" for name in os.listdir(tmp_path / "edges"))
    finally:
        memory.rm("/fsspec-inside", recursive=True)
