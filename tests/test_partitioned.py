"""Partitioned runs (tasks/partitioned.py) on a LocalCluster of three worker processes: with 2
and 3 partitions, the same distances and the same forest as the one-partition kernels, on every
real graph and on a generated graph with ties, parallel edges, self-loops, id gaps and several
components, read from a dataset of several files and row groups. Predecessors are checked by
Graph500's rules against the one-partition numbering. A dataset the one-partition reader reads
(uint64 beside signed ids, narrow weights, a skipped README) gives its results, types included;
bad input gets its messages. Then: both output layouts and replacing an output, bad input on
one rank, a rank killed mid-run, and the Prefect task on Dask workers. Last, edge cases that a
partitioned run could break on its own, against the serial references of tests/references.py
(Kruskal under the order (weight, input row), a queue BFS, parents checked as valid): ties
between 0.0 and -0.0 across the ranks' shares, a file without row groups between two, ranks
whose vertex ranges meet inside a word of the bottom-up frontier bitmap, ranks that own no
vertex or read no arc, extreme id and weight types differing by file, and a rerun with fewer
partitions and source sets. The cluster is tests/conftest.py's `cpu_cluster`."""
import logging
import math
import os
import re
import signal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed.diagnostics.plugin import WorkerPlugin
from scipy.sparse import csgraph, csr_matrix

from kernels.bfs import bfs
from kernels.graph import build_graph, edge_list, renumber
from kernels.msf import minimum_spanning_forest
from kernels.verify import verify_bfs
from tasks.errors import DeviceMemoryError, InputError
from tasks.parquet.dataset.plan import plan_input
from tasks.partitioned.driver import PartitionFailed, choose_partitions, count_partitions, run_partitioned
from tests.conftest import REAL_GRAPHS, realgraphs_dir
from tests.helpers import listing, write_edges
from tests.references import assert_distances, assert_forest, kruskal_rows, queue_bfs, scipy_msf_weight

DIRECTED = {"rome99", "email_eu_core"}  # road arcs and e-mails have a direction


def read_columns(path: Path):
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    tables = [pq.read_table(f) for f in files]
    cols = [np.concatenate([t[c].to_numpy().astype(np.int64 if c != "weight" else np.float64) for t in tables])
            for c in ("src", "dst", "weight")]
    return cols


def one_partition(src, dst, weight, sources, directed, depth_limit=None):
    """The reference: the single-GPU/CPU kernels on the whole edge list."""
    s, d, ids = renumber(src, dst)
    edges = edge_list(s, d, weight, int(ids.shape[0]))
    dense = np.searchsorted(ids, np.asarray(sources, dtype=ids.dtype))
    search = bfs(build_graph(edges, directed), dense, depth_limit)
    forest = minimum_spanning_forest(edges).edges  # edge index = input row, ascending
    return ids, dense, search, forest, s, d


def check_bfs_output(path, ids, dense, search, s, d, directed, depth_limit=None):
    out = pq.read_table(path)
    order = np.argsort(out["vertex"].to_numpy())
    vertex = out["vertex"].to_numpy()[order]
    np.testing.assert_array_equal(vertex, ids)
    distance = out["distance"].to_numpy(zero_copy_only=False)
    distance = np.where(np.isnan(distance), -1, distance).astype(np.int64)[order] if distance.dtype.kind == "f" \
        else distance[order]
    np.testing.assert_array_equal(distance, search.distance)
    parent = out["predecessor"].fill_null(ids[0]).to_numpy()[order]
    predecessor = np.where(distance > 0, np.searchsorted(ids, parent), -1)
    predecessor[dense] = dense
    report = verify_bfs(s, d, ids.shape[0], dense, distance.astype(np.int32), predecessor.astype(np.int32),
                        directed, depth_limit)
    assert all(v == 0 for v in report.values()), report


def check_forest_output(path, src, dst, weight, forest):
    out = pq.read_table(path)
    expected = pa.table({"src": src[forest], "dst": dst[forest], "weight": weight[forest]})
    assert out.cast(expected.schema).equals(expected)


@pytest.mark.parametrize("partitions", [2, 3])
@pytest.mark.parametrize("name", REAL_GRAPHS)
def test_real_graphs_give_the_one_partition_distances_and_forest(client, tmp_path, name, partitions):
    path = realgraphs_dir() / f"{name}.parquet"
    src, dst, weight = read_columns(path)
    sources = [int(src[0]), int(dst[src.shape[0] // 2])]
    directed = name in DIRECTED
    ids, dense, search, forest, s, d = one_partition(src, dst, weight, sources, directed)
    summary = run_partitioned(str(path), str(tmp_path / "out"), partitions, source=[str(v) for v in sources],
                              directed=directed, client=client)
    assert summary["partitions"] == partitions and summary["vertices"] == ids.shape[0]
    reached = np.asarray(search.distance) >= 0
    assert summary["reached"] == [int(reached.sum())] and summary["depth"] == [int(np.asarray(search.distance).max())]
    assert summary["forest_edges"] == forest.shape[0]
    check_bfs_output(tmp_path / "out" / "bfs_distances.parquet", ids, dense, search, s, d, directed)
    check_forest_output(tmp_path / "out" / "mst_edges.parquet", src, dst, weight, forest)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bfs_distances.parquet", "mst_edges.parquet"]


def tricky_dataset(directory: Path, seed: int = 7) -> Path:
    """Five components (one a vertex with only a self-loop), integer weights in 0..3 (heavy
    ties, negative ones too), every tenth edge repeated (some with another weight), self-loops,
    ids with gaps, negative ids and ids above 2**40; two files (int32 and int64 ids) of
    61-row groups."""
    rng = np.random.default_rng(seed)
    parts = []
    for c, size in enumerate([40, 25, 60, 2]):
        a = rng.integers(0, size, size * 3)
        b = rng.integers(0, size, size * 3)
        chain = np.arange(size - 1)
        parts.append((np.concatenate([chain, a]) + 1000 * c, np.concatenate([chain + 1, b]) + 1000 * c))
    src = np.concatenate([p[0] for p in parts] + [[5000]])
    dst = np.concatenate([p[1] for p in parts] + [[5000]])
    src = np.where(src % 7 == 3, -src, src)  # negative ids
    dst = np.where(dst % 7 == 3, -dst, dst)
    weight = rng.integers(-1, 3, src.shape[0]).astype(np.float64)
    repeat = np.arange(0, src.shape[0], 10)
    src = np.concatenate([src, dst[repeat]])  # parallel edges, reversed
    dst = np.concatenate([dst, src[repeat]])
    weight = np.concatenate([weight, np.where(repeat % 20 == 0, weight[repeat], weight[repeat] + 1)])
    directory.mkdir(parents=True)
    half = src.shape[0] // 2
    first = pa.table({"src": src[:half].astype(np.int32), "dst": dst[:half].astype(np.int32), "weight": weight[:half]})
    big = np.where(src[half:] > 3000, src[half:] + 2**40, src[half:])  # a 2**40 id, only in the int64 file
    second = pa.table({"src": big, "dst": dst[half:], "weight": weight[half:]})
    pq.write_table(first, directory / "part-a.parquet", row_group_size=61)
    pq.write_table(second, directory / "part-b.parquet", row_group_size=61)
    return directory


@pytest.mark.parametrize("partitions,layout", [(2, "dataset"), (3, "file")])
def test_ties_parallel_edges_self_loops_and_components(client, tmp_path, partitions, layout):
    path = tricky_dataset(tmp_path / "g")
    src, dst, weight = read_columns(path)
    sources = [int(src[0]), int(src[-1])]
    ids, dense, search, forest, s, d = one_partition(src, dst, weight, sources, False)
    summary = run_partitioned(str(path), str(tmp_path / "out"), partitions, source=[str(v) for v in sources],
                              output_layout=layout, client=client)
    check_bfs_output(tmp_path / "out" / "bfs_distances.parquet", ids, dense, search, s, d, False)
    check_forest_output(tmp_path / "out" / "mst_edges.parquet", src, dst, weight, forest)
    # independent of every kernel: scipy's forest weight and component count
    total, count = scipy_msf_weight(ids.shape[0], s, d, weight)
    components = csgraph.connected_components(csr_matrix((np.ones(s.shape[0]), (s, d)), shape=(ids.shape[0],) * 2),
                                              directed=False)[0]
    assert summary["forest_weight"] == pytest.approx(total) and summary["forest_edges"] == count
    assert summary["components"] == components == 5
    assert summary["self_loops"] == int((s == d).sum()) > 0
    if layout == "dataset":
        assert sorted(p.name for p in (tmp_path / "out" / "mst_edges.parquet").iterdir()) == \
            [f"part-{r:05d}.parquet" for r in range(partitions)]


def test_a_run_counts_the_workers_the_scheduler_has_not_the_clients_cached_table(client, tmp_path, monkeypatch):
    """The client's cached scheduler table lists no worker between two refreshes at times (its
    periodic refresh asks for totals only): a run reads the scheduler's own list, so such a table
    neither refuses the run for want of workers nor reports a live rank's worker as dead."""
    monkeypatch.setattr(client, "scheduler_info", lambda *a, **k: {"workers": {}})
    path = tricky_dataset(tmp_path / "g")
    src, dst, weight = read_columns(path)
    summary = run_partitioned(str(path), str(tmp_path / "out"), 3, client=client)
    s, d, ids = renumber(src, dst)
    total, count = scipy_msf_weight(ids.shape[0], s, d, weight)
    assert summary["partitions"] == 3
    assert summary["forest_weight"] == pytest.approx(total) and summary["forest_edges"] == count


def test_source_sets_depth_limit_and_directed(client, tmp_path):
    path = realgraphs_dir() / "rome99.parquet"
    src, dst, weight = read_columns(path)
    sets = [[int(src[10])], [int(src[100]), int(dst[2000])]]
    run_partitioned(str(path), str(tmp_path / "out"), 2, source_sets=[[str(v) for v in s] for s in sets],
                    forest=False, weight_col=None, directed=True, depth_limit=4, client=client)
    for k, sources in enumerate(sets):
        ids, dense, search, _, s, d = one_partition(src, dst, weight, sources, True, depth_limit=4)
        check_bfs_output(tmp_path / "out" / f"source-set-{k}" / "bfs_distances.parquet", ids, dense, search, s, d,
                         True, depth_limit=4)
    assert not (tmp_path / "out" / "mst_edges.parquet").exists()


def test_a_rerun_replaces_each_result_whole_whatever_its_layout(client, tmp_path):
    path = realgraphs_dir() / "netscience.parquet"
    out = tmp_path / "out"
    run_partitioned(str(path), str(out), 2, forest=True, client=client)
    as_file = pq.read_table(out / "mst_edges.parquet")
    run_partitioned(str(path), str(out), 3, forest=True, output_layout="dataset", client=client)
    assert (out / "mst_edges.parquet").is_dir()
    assert pq.read_table(out / "mst_edges.parquet").equals(as_file)
    run_partitioned(str(path), str(out), 2, forest=True, client=client)
    assert (out / "mst_edges.parquet").is_file() and pq.read_table(out / "mst_edges.parquet").equals(as_file)
    assert [p.name for p in out.iterdir()] == ["mst_edges.parquet"]  # no staging directory left


def test_a_one_partition_run_replaces_a_partitioned_runs_dataset_but_not_a_users_folder(client, tmp_path,
                                                                                        prefect_server):
    """A dataset folder a partitioned run left at a result's path is that result: the
    one-partition recipe replaces it with its file. A folder holding anything else is refused
    before reading, as before."""
    from flows.pipeline import pipeline_flow

    path = str(realgraphs_dir() / "netscience.parquet")
    out = tmp_path / "out"
    run_partitioned(path, str(out), 3, source=["0"], forest=True, output_layout="dataset", client=client)
    assert (out / "mst_edges.parquet").is_dir() and (out / "bfs_distances.parquet").is_dir()
    pipeline_flow(path, source=["0"], output=str(out), backend="numpy")
    pipeline_flow(path, source=["0"], output=str(tmp_path / "fresh"), backend="numpy")
    for name in ("bfs_distances.parquet", "mst_edges.parquet"):
        assert (out / name).is_file()
        assert pq.read_table(out / name).equals(pq.read_table(tmp_path / "fresh" / name))
    assert sorted(p.name for p in out.iterdir()) == ["bfs_distances.parquet", "mst_edges.parquet"]

    users = tmp_path / "users"
    (users / "mst_edges.parquet").mkdir(parents=True)
    (users / "mst_edges.parquet" / "part-00000.parquet").write_bytes(b"")
    (users / "mst_edges.parquet" / "notes.txt").write_text("mine")
    state = pipeline_flow(path, source=["0"], output=str(users), backend="numpy", return_state=True)
    assert state.is_failed() and "mst_edges.parquet: output path exists and is not a regular file" in state.message
    assert sorted(p.name for p in (users / "mst_edges.parquet").iterdir()) == ["notes.txt", "part-00000.parquet"]


def test_a_partitioned_rerun_leaves_no_bfs_result_of_an_earlier_run(client, tmp_path):
    """Source sets as result datasets, then one search as a file: the sets' folders go."""
    n = 40
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": pa.array(range(n), pa.int64()), "dst": pa.array([(i + 1) % n for i in range(n)]),
                             "weight": np.ones(n)}), path)
    out = tmp_path / "out"
    run_partitioned(str(path), str(out), 2, source_sets=[["0"], ["5", "6"]], forest=False,
                    output_layout="dataset", client=client)
    assert sorted(p.name for p in out.iterdir()) == ["source-set-0", "source-set-1"]
    run_partitioned(str(path), str(out), 2, source=["3"], forest=False, client=client)
    assert sorted(p.name for p in out.iterdir()) == ["bfs_distances.parquet"]
    assert pq.read_table(out / "bfs_distances.parquet").num_rows == n


def test_a_bad_row_in_one_ranks_share_fails_the_run_with_that_rows_error(client, tmp_path):
    n = 300
    dst = pa.array([*range(1, 250), None, *range(251, n + 1)], pa.int64())
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": pa.array(range(n), pa.int64()), "dst": dst, "weight": np.ones(n)}), path)
    with pytest.raises(InputError, match=f"^{path}: column 'dst' is null at row 249$"):
        run_partitioned(str(path), str(tmp_path / "out"), 3, client=client)
    assert not (tmp_path / "out").exists()


class _Rank:
    """A rank's future as the driver sees it: its status moves on between two reads, as a Dask
    future's does when the client's thread hears from the scheduler."""

    def __init__(self, statuses, error=None):
        self.statuses, self.error = list(statuses), error

    @property
    def status(self):
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def exception(self):
        return self.error

    def add_done_callback(self, callback):
        pass  # the driver then looks again after its poll interval


class _Scheduler:
    """A client as the driver uses it: the scheduler's workers (tasks.cluster.cluster_workers)
    and cancel."""

    class scheduler:
        @staticmethod
        def identity():
            return {"workers": {"w0": {}, "w1": {}, "w2": {}}}

    def sync(self, function, *args, **kwargs):
        return function(*args, **kwargs)

    def cancel(self, futures):
        pass


def test_a_ranks_own_error_is_reported_when_it_settles_while_its_peers_errors_are_read():
    """Rank 0 fails first with 'rank 2 closed its connection'; rank 2's input error lands while
    the driver is still reading the others. The input error, not the peer's, is the run's."""
    from tasks.partitioned.comm_tcp import PeerLost
    from tasks.partitioned.driver import await_ranks

    cause = InputError("g.parquet: column 'dst' is null at row 249")
    futures = [_Rank(["error"], PeerLost("rank 0: rank 2 closed its connection during alltoallv")),
               _Rank(["pending", "error"], PeerLost("rank 1: connection to rank 2 failed")),
               _Rank(["pending", "error"], cause)]
    with pytest.raises(InputError) as raised:
        await_ranks(_Scheduler(), futures, ["w0", "w1", "w2"])
    assert raised.value is cause


def one_partition_tables(path: Path, sources: list[str]) -> dict:
    """What a one-partition run writes, from the same reader and kernels (tasks.graph_tasks)."""
    from tasks.prepare import prepare_input
    from tasks.sources import dense_sources
    from tasks.parquet.write.tables import dense_bfs_table, dense_forest_table, vertex_names

    prepared = prepare_input(plan_input(str(path)), "numpy")
    graph = build_graph(prepared.edges, False)
    search = bfs(graph, dense_sources(prepared, sources))
    names, e, rows = vertex_names(prepared.names, prepared.ids), prepared.edges, minimum_spanning_forest(prepared.edges).edges
    return {"bfs_distances.parquet": dense_bfs_table(names, search.distance, search.predecessor),
            "mst_edges.parquet": dense_forest_table(names, e.src[rows], e.dst[rows], e.weight[rows])}


@pytest.mark.parametrize("spread", [1, 2**35], ids=["ids-adjacent", "ids-spread-over-2**40"])
def test_a_dataset_read_as_a_one_partition_run_reads_it(client, tmp_path, spread):
    """uint64 ids above 2**63 in one file beside int64 ids in another (the values decide the
    type: uint64), float16 and float32 weights (kept float32), row groups of 7 rows, and a
    README that is skipped: the results, types included, are the one-partition run's. The
    large ids lie next to one another or spread over 2**40 values."""
    data = tmp_path / "g"
    data.mkdir()
    rng = np.random.default_rng(3)
    big = np.uint64(2**63 + 10)
    spread = np.uint64(spread)
    a_src = rng.integers(0, 30, 60).astype(np.uint64) * spread + big
    a_dst = rng.integers(0, 30, 60).astype(np.uint64) * spread + big
    pq.write_table(pa.table({"src": a_src, "dst": a_dst, "weight": rng.random(60).astype(np.float32)}),
                   data / "part-0.parquet", row_group_size=7)
    b_src = rng.integers(0, 40, 50)
    b_dst = rng.integers(0, 40, 50)
    pq.write_table(pa.table({"src": b_src, "dst": b_dst, "weight": rng.random(50).astype(np.float16)}),
                   data / "part-1.parquet", row_group_size=7)
    (data / "README.md").write_text("edges of a test graph\n")
    source = str(int(a_src[0]))
    expected = one_partition_tables(data, [source])
    run_partitioned(str(data), str(tmp_path / "out"), 3, source=[source], client=client)
    for name, table in expected.items():
        got = pq.read_table(tmp_path / "out" / name)
        assert got.schema.equals(table.schema), name
        if name.startswith("bfs"):
            got, table = got.sort_by("vertex").drop_columns(["predecessor"]), table.sort_by("vertex").drop_columns(
                ["predecessor"])
        assert got.equals(table), name
    assert expected["mst_edges.parquet"]["weight"].type == pa.float32()
    assert expected["bfs_distances.parquet"]["vertex"].type == pa.uint64()


def _bad(tmp_path: Path, case: str) -> Path:
    path = tmp_path / f"{case}.parquet"
    n = 200
    src, dst = np.arange(n), np.arange(1, n + 1)
    weight = np.ones(n)
    if case == "nan-weight":
        weight[150] = np.nan
        table = pa.table({"src": src, "dst": dst, "weight": weight})
    elif case == "inexact-integer-weight":
        table = pa.table({"src": src, "dst": dst, "weight": np.where(np.arange(n) == 120, 2**60 + 1, 1)})
    elif case == "big-and-negative-ids":
        path = tmp_path / case
        path.mkdir()
        pq.write_table(pa.table({"src": src.astype(np.uint64) + np.uint64(2**63), "dst": dst.astype(np.uint64),
                                 "weight": weight}), path / "part-a.parquet", row_group_size=50)
        table = pa.table({"src": -src, "dst": dst, "weight": weight})
        path = path / "part-b.parquet"
    elif case == "missing-weight-column":
        table = pa.table({"src": src, "dst": dst, "w": weight})
    pq.write_table(table, path, row_group_size=50)
    return path if case != "big-and-negative-ids" else path.parent


@pytest.mark.parametrize("case", ["nan-weight", "inexact-integer-weight", "big-and-negative-ids",
                                  "missing-weight-column"])
def test_bad_input_is_refused_with_the_one_partition_runs_message(client, tmp_path, case):
    from tasks.parquet.read.reader import read_edges

    path = _bad(tmp_path, case)
    with pytest.raises(InputError) as one:
        read_edges(plan_input(str(path)))
    with pytest.raises(InputError) as three:
        run_partitioned(str(path), str(tmp_path / "out"), 3, client=client)
    assert str(three.value) == str(one.value)
    assert not (tmp_path / "out").exists()


def test_an_unknown_source_is_refused(client, tmp_path):
    path = realgraphs_dir() / "netscience.parquet"
    with pytest.raises(InputError, match="source '99999999' is not a vertex of the graph"):
        run_partitioned(str(path), str(tmp_path / "out"), 2, source=["99999999"], client=client)
    assert not (tmp_path / "out").exists()


def test_partition_count_auto_and_memory_refusal():
    gib = 2**30
    assert choose_partitions("auto", 10**9, [], "numpy", "g") == 1
    assert choose_partitions(3, 10**9, [], "numpy", "g") == 3
    def per_rank(rows):
        return lambda count: 100 * math.ceil(rows / count)

    assert choose_partitions("auto", 10**6, [80 * gib, 80 * gib], "cupy", "g", per_rank(10**6)) == 1
    assert choose_partitions("auto", 10**9, [80 * gib, 80 * gib], "cupy", "g", per_rank(10**9)) == 2
    with pytest.raises(DeviceMemoryError, match=r"^g: 4000000000 edges need about 186.26 GiB of GPU memory on each of 2"):
        choose_partitions("auto", 4 * 10**9, [80 * gib, 80 * gib], "cupy", "g", per_rank(4 * 10**9))
    with pytest.raises(InputError, match="3 partitions need 3 GPU workers; the cluster has 2"):
        choose_partitions(3, 10, [gib, gib], "cupy", "g", per_rank(10))
    with pytest.raises(InputError, match="partitions must be a positive integer or 'auto'"):
        choose_partitions("many", 10, [], "numpy", "g")
    graph = str(realgraphs_dir() / "netscience.parquet")
    assert count_partitions(graph, "auto", backend="numpy") == 1
    assert count_partitions(graph, "3", backend="numpy") == 3


class KillRankAt(WorkerPlugin):
    """SIGKILLs the worker process whose rank logs a message matching the regular expression
    ``pattern`` (once per test, across all worker processes, through a marker file). With
    ``spare_driver``, not a worker that also runs the run's driver (the partitioned_run task):
    then the rank's peers and the driver must notice."""

    def __init__(self, marker: str, pattern: str, spare_driver: bool = False):
        self.marker, self.pattern, self.spare_driver = marker, pattern, spare_driver

    def setup(self, worker):
        marker, pattern, spare_driver = self.marker, re.compile(self.pattern), self.spare_driver

        class Kill(logging.Handler):
            def emit(self, record):
                if not pattern.match(record.getMessage()):
                    return
                if spare_driver and any("partitioned_run" in str(key) for key, ts in worker.state.tasks.items()
                                        if ts.state in ("executing", "long-running")):
                    return
                try:
                    os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    return
                os.kill(os.getpid(), signal.SIGKILL)

        logger = logging.getLogger("graph.partitioned")
        logger.setLevel(logging.INFO)
        logger.addHandler(Kill())


@pytest.mark.parametrize("phase", ["rank 1: csr", "rank 2: msf"])
def test_a_killed_rank_fails_the_run_cleanly(client, tmp_path, phase):
    path = realgraphs_dir() / "bitcoinalpha.parquet"
    marker = tmp_path / "killed"
    client.register_plugin(KillRankAt(str(marker), re.escape(phase)), name="kill-rank")
    try:
        with pytest.raises(PartitionFailed) as failure:
            run_partitioned(str(path), str(tmp_path / "out"), 3, source=["1"], client=client, timeout=120)
    finally:
        client.unregister_worker_plugin("kill-rank")
        client.wait_for_workers(3, timeout=180)
    assert marker.exists(), "no rank was killed: the test did not test anything"
    message = str(failure.value)
    victim = phase.split(":")[0]
    assert "\n" not in message and victim in message and message.endswith("nothing was written"), message
    assert not (tmp_path / "out").exists()


def test_the_prefect_task_runs_the_ranks_on_the_flows_dask_workers(client, tmp_path, prefect_server):
    from prefect import flow
    from prefect_dask import DaskTaskRunner

    from tasks.partitioned_tasks import decide_partitions, partitioned_run

    path = realgraphs_dir() / "netscience.parquet"

    @flow(task_runner=DaskTaskRunner(address=client.scheduler.address))
    def partitioned_flow():
        plan = plan_input(str(path))
        auto = decide_partitions.submit(plan, "auto").result()
        return auto, partitioned_run.submit(plan, str(tmp_path / "out"), 3, source=["0"]).result()

    auto, summary = partitioned_flow()
    assert auto == 1  # on the CPU, auto keeps one partition
    assert summary["partitions"] == 3 and summary["reached"][0] > 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bfs_distances.parquet", "mst_edges.parquet"]


def zero_weights_of_both_signs(directory: Path):
    """Ties between 0.0 and -0.0 across the ranks' shares: one weight, so the input row decides."""
    src = [0, 1, 0, 2, 1, 2, 3, 3]
    dst = [1, 2, 2, 0, 0, 1, 0, 3]
    pq.write_table(pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()),
                             "weight": [0.0, -0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0]}), directory / "g.parquet",
                   row_group_size=3)
    return src, dst, [0]


def a_file_without_row_groups_between_two(directory: Path):
    """A dataset of three files, the middle one with no row group at all, row groups of 1 and 2."""
    first = pa.table({"src": pa.array([0, 1], pa.int64()), "dst": pa.array([1, 2], pa.int64()), "weight": [1.0, 1.0]})
    last = pa.table({"src": pa.array([2, 3, 4], pa.int64()), "dst": pa.array([3, 4, 0], pa.int64()),
                     "weight": [1.0, 1.0, 0.5]})
    pq.write_table(first, directory / "part-0.parquet", row_group_size=1)
    pq.ParquetWriter(directory / "part-1.parquet", first.schema).close()
    pq.write_table(last, directory / "part-2.parquet", row_group_size=2)
    return [0, 1, 2, 3, 4], [1, 2, 3, 4, 0], [4]


def frontier_bitmap_words_shared_by_ranks(directory: Path):
    """65 vertices (ids 2**40 apart): the ranks' vertex ranges meet inside a 32-bit word of the
    bottom-up frontier bitmap; a hub makes the search go bottom-up at once."""
    rng = np.random.default_rng(4)
    n = 65
    src = [0] * n + rng.integers(0, n, 6 * n).tolist()
    dst = list(range(n)) + rng.integers(0, n, 6 * n).tolist()
    ids = [v * 2**40 - 5 for v in range(n)]
    src, dst = [ids[v] for v in src], [ids[v] for v in dst]
    weight = rng.integers(0, 4, len(src)).astype(float)
    pq.write_table(pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight}),
                   directory / "g.parquet", row_group_size=50)
    return src, dst, [ids[0], ids[7]]


@pytest.mark.parametrize("graph", [zero_weights_of_both_signs, a_file_without_row_groups_between_two,
                                   frontier_bitmap_words_shared_by_ranks])
@pytest.mark.parametrize("partitions,layout,directed,limit", [(2, "file", False, None), (3, "dataset", True, 2)])
def test_partitioned_results_equal_the_serial_references(client, tmp_path, graph, partitions, layout, directed,
                                                         limit):
    data = tmp_path / "data"
    data.mkdir()
    src, dst, sources = graph(data)
    inputs = [pq.read_table(f) for f in sorted(data.iterdir())]
    weight = [w for t in inputs for w in t["weight"].to_pylist()]
    run_partitioned(str(data), str(tmp_path / "out"), partitions, source=[str(s) for s in sources],
                    directed=directed, depth_limit=limit, output_layout=layout, client=client)
    assert_forest(tmp_path / "out" / "mst_edges.parquet", src, dst, weight)
    assert_distances(tmp_path / "out" / "bfs_distances.parquet", src, dst, sources, directed, limit)


def owned_by(rank: int, size: int, count: int) -> list[int]:
    """``count`` ids that the partitioned renumbering sends to ``rank`` of ``size`` (its hash)."""
    from kernels.partitioned import _hash_owner

    candidates = np.arange(10_000, dtype=np.int64)
    return candidates[_hash_owner(candidates, size) == rank][:count].tolist()


def partitioned_case(files, src, dst, weight, sets, id_type=pa.int64(), weight_type=pa.float64(), owned=None) -> dict:
    """A partitioned case: the files (table, row-group size), the edge list as Python values
    (exact weights), the source sets, the result's types, and the vertices each rank owns."""
    return dict(files=files, src=src, dst=dst, weight=weight, sets=sets, id_type=id_type, weight_type=weight_type,
                owned=owned)


def every_id_owned_by_the_middle_rank():
    """Ranks 0 and 2 of 3 own no vertex but read a third of the rows each; ties everywhere."""
    ids = owned_by(1, 3, 40)
    rng = np.random.default_rng(8)
    src, dst = rng.choice(ids, 200).tolist(), rng.choice(ids, 200).tolist()
    weight = rng.integers(0, 3, 200).astype(float).tolist()
    table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight})
    return partitioned_case([(table, 17)], src, dst, weight, [[src[0], src[0], dst[5]], [dst[-1]]], owned=[0, 40, 0])


def uint64_ids_near_2_pow_64_and_int64_weights_beyond_2_pow_53():
    """Ids 2**64 - 1 - k, three files of 1, 4 and 2 row groups; int64 weights that float64 holds
    exactly (low bits zero) and that tie across the ranks' shares; self-loops and parallel edges
    whose copies lie in different ranks' shares."""
    top = 2**64 - 1
    src = [top, top - 1, top - 2, top, top - 3, top - 3, top - 1, top, top - 2, top - 4, top - 4, top - 1]
    dst = [top - 1, top - 2, top, top - 1, top - 3, top, top - 2, top - 1, top - 2, top - 3, top - 4, top - 4]
    weight = [2**60, 2**60, 2**60 + 256, 2**60, 2**62, -(2**63), 2**60, 2**60 - 256, 5, 2**60, 0, 2**60]
    table = pa.table({"src": pa.array(src, pa.uint64()), "dst": pa.array(dst, pa.uint64()),
                      "weight": pa.array(weight, pa.int64())})
    files = [(table.slice(0, 2), 2), (table.slice(2, 7), 2), (table.slice(9), 2)]
    return partitioned_case(files, src, dst, weight, [[top - 4, top - 4], [top]], id_type=pa.uint64())


def one_rank_reads_every_edge_that_is_not_a_self_loop():
    """The first two thirds of the rows are self-loops: ranks 0 and 1 read no arc at all."""
    loops = list(range(20)) * 2
    src, dst = loops + [0, 1, 2, 3, 4, 5, 0, 7, 8, 9], loops + [1, 2, 3, 4, 5, 0, 3, 8, 9, 7]
    weight = [0.5] * 40 + [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 2.0, 2.0, 2.0]
    table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight})
    return partitioned_case([(table, 7)], src, dst, weight, [[0], [19, 7]])


def id_and_weight_types_differing_by_file():
    """int8 ids and float16 weights; dictionary-encoded uint16 ids and float32 weights; int32
    ids and dictionary-encoded float32 weights: int32 ids and float32 weights come out."""
    src, dst = [-128, 127, 0, 300, 65535, 70000, -5], [127, 0, -128, 65535, 127, 300, 70000]
    weight = [0.5, 0.25, 0.5, 1.5, 0.25, 2.0, 2.0]  # exact in float16
    files = [(pa.table({"src": pa.array(src[:3], pa.int8()), "dst": pa.array(dst[:3], pa.int8()),
                        "weight": pa.array(np.array(weight[:3], np.float16))}), 1),
             (pa.table({"src": pa.array(src[3:5], pa.uint16()).dictionary_encode(),
                        "dst": pa.array(dst[3:5], pa.uint16()).dictionary_encode(),
                        "weight": pa.array(weight[3:5], pa.float32())}), 1),
             (pa.table({"src": pa.array(src[5:], pa.int32()), "dst": pa.array(dst[5:], pa.int32()),
                        "weight": pa.array(weight[5:], pa.float32()).dictionary_encode()}), 1)]
    return partitioned_case(files, src, dst, weight, [[-128], [70000, 0]], id_type=pa.int32(), weight_type=pa.float32())


PARTITIONED_CASES = [every_id_owned_by_the_middle_rank, uint64_ids_near_2_pow_64_and_int64_weights_beyond_2_pow_53,
                     one_rank_reads_every_edge_that_is_not_a_self_loop, id_and_weight_types_differing_by_file]


@pytest.mark.parametrize("make", PARTITIONED_CASES, ids=[c.__name__ for c in PARTITIONED_CASES])
@pytest.mark.parametrize("layout, directed, limit", [("dataset", False, None), ("file", True, 1)])
def test_partitioned_runs_equal_the_references(client, tmp_path, make, layout, directed, limit):
    c = make()
    src, dst, weight, sets = c["src"], c["dst"], c["weight"], c["sets"]
    data = tmp_path / "data"
    data.mkdir()
    for k, (table, row_group_size) in enumerate(c["files"]):
        pq.write_table(table, data / f"part-{k}.parquet", row_group_size=row_group_size)
    out = tmp_path / "out"
    summary = run_partitioned(str(data), str(out), 3, source_sets=[[str(s) for s in ids] for ids in sets],
                              directed=directed, depth_limit=limit, output_layout=layout, client=client)
    # the forest: Kruskal's rows under (exact weight, row), each weight as float64 (or float32) holds it
    rows = kruskal_rows(src, dst, weight)
    forest = pq.read_table(out / "mst_edges.parquet")
    assert list(zip(forest["src"].to_pylist(), forest["dst"].to_pylist(), forest["weight"].to_pylist())) == \
        [(src[i], dst[i], float(weight[i])) for i in rows]
    assert (forest.schema.field("src").type, forest.schema.field("weight").type) == (c["id_type"], c["weight_type"])
    exact = sum(Fraction(weight[i]) for i in rows)
    assert abs(Fraction(summary["forest_weight"]) - exact) <= abs(exact) / 2**40
    vertices = len(set(src) | set(dst))
    assert (summary["vertices"], summary["forest_edges"], summary["components"], summary["self_loops"]) == \
        (vertices, len(rows), vertices - len(rows), sum(a == b for a, b in zip(src, dst)))
    for k, ids in enumerate(sets):
        found = out / f"source-set-{k}" / "bfs_distances.parquet"
        assert_distances(found, src, dst, ids, directed, limit)
        expected, _ = queue_bfs(src, dst, ids, directed, limit)
        assert summary["reached"][k] == sum(d is not None for d in expected.values())
    if c["owned"] is not None and layout == "dataset":  # the case is what its name says
        parts = sorted((out / "source-set-0" / "bfs_distances.parquet").iterdir())
        assert [pq.ParquetFile(p).metadata.num_rows for p in parts] == c["owned"]


def test_a_partitioned_rerun_with_fewer_partitions_and_sets_leaves_no_stale_part(client, tmp_path):
    """Three partitions and three source sets as datasets, then two partitions and one set: a
    dataset reader of OUTPUT must find two parts of one set, no third part or second set."""
    n = 40
    src, dst = list(range(n)), [(i + 1) % n for i in range(n)]
    graph = write_edges(tmp_path / "g.parquet", src, dst, [1.0] * n)
    out = tmp_path / "out"
    run_partitioned(str(graph), str(out), 3, source_sets=[["0"], ["1"], ["2"]], forest=False,
                    weight_col=None, output_layout="dataset", client=client)
    assert len(os.listdir(out / "source-set-2" / "bfs_distances.parquet")) == 3
    run_partitioned(str(graph), str(out), 2, source_sets=[["5"]], forest=False, weight_col=None,
                    output_layout="dataset", client=client)
    assert listing(out) == ["source-set-0", "source-set-0/bfs_distances.parquet",
                            "source-set-0/bfs_distances.parquet/part-00000.parquet",
                            "source-set-0/bfs_distances.parquet/part-00001.parquet"]
    assert_distances(out / "source-set-0" / "bfs_distances.parquet", src, dst, [5])


@pytest.mark.parametrize("partitions,layout", [(2, "file"), (3, "dataset")])
def test_ranks_write_with_the_page_writer_the_tables_pyarrow_writes(client, tmp_path, partitions, layout):
    """`writer="gpu"` on CPU ranks: each rank's parts go to the page writer as its NumPy arrays
    (tasks.parquet.write.result_files.ResultWriter, the one-partition run's choice), and the
    results read back as the pyarrow writer's do, in either layout; string ids stay on pyarrow."""
    path = tricky_dataset(tmp_path / "g")
    sources = [str(int(read_columns(path)[0][0]))]
    written = {}
    for writer in ("host", "gpu"):
        summary = run_partitioned(str(path), str(tmp_path / writer), partitions, source=sources, writer=writer,
                                  output_layout=layout, client=client)
        expected = "host (pyarrow)" if writer == "host" else "gpu page writer on numpy, host snappy"
        assert summary["writers"] == [expected] * 2
        written[writer] = [pq.read_table(tmp_path / writer / name) for name in ("bfs_distances.parquet",
                                                                                 "mst_edges.parquet")]
    for host, pages in zip(written["host"], written["gpu"]):
        assert pages.schema.remove_metadata() == host.schema.remove_metadata()
        assert pages.equals(host.replace_schema_metadata(pages.schema.metadata))
    names = write_edges(tmp_path / "s.parquet", ["a", "b", "c"], ["b", "c", "a"], [1.0, 2.0, 3.0])
    summary = run_partitioned(str(names), str(tmp_path / "s"), 2, source=["a"], writer="gpu", client=client)
    assert summary["writers"] == ["host (pyarrow; the page writer takes no string vertex ids)"] * 2
