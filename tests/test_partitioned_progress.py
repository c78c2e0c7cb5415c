"""A partitioned command-line run shows its ranks' stages as it runs: `--partitions 2` on a CPU
printed nothing between 'partitioned-<stem> running' and its end, the run being one Prefect task
(rank 0's stage reports -> the driver -> a progress artifact of that task -> flows/progress.py)."""
import re

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from flows.cli import main
from tests.helpers import error_line, random_edges


def progress_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("progress ")]


def test_a_partitioned_run_shows_its_ranks_stages_in_order(cpu_cluster, prefect_server, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.setenv("GRAPH_PROGRESS_AFTER_SECONDS", "0.01")
    src, dst, weight = random_edges(seed=7, n=60, m=300)
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "weight": weight}),
                   path)
    code = main("pipeline", [str(path), "--source", "0", "--output", str(tmp_path / "out"), "--partitions", "2",
                             "--backend", "numpy", "--dask-address", cpu_cluster.scheduler_address])
    out, err = capsys.readouterr()
    assert code == 0, err
    progress = progress_lines(err)
    said = " ".join(progress)
    # every stage of the ranks ended, in the order the rank program runs them, inside the one task's lines
    at = [re.search(rf"\b{stage} done in \d+\.\d s", said) for stage in ("load", "bfs", "msf", "validate", "write")]
    assert all(at), progress
    assert [m.start() for m in at] == sorted(m.start() for m in at), progress
    task_started, task_ended = said.find("partitioned-g running"), said.find("partitioned-g done in")
    assert task_started < at[0].start() and at[-1].start() < task_ended, progress  # (a short task: seen done)
    assert not re.search(r"\b(load|bfs|msf|validate|write) failed", said), progress
    assert not any(line.startswith("progress") for line in out.splitlines())

    # the results are still right
    forest = pq.read_table(tmp_path / "out" / "mst_edges.parquet")
    simple = nx.Graph()
    for u, v, w in sorted(zip(src, dst, weight), key=lambda e: -e[2]):
        simple.add_edge(u, v, weight=w)  # the lightest of each pair last, so it stays
    expected = nx.minimum_spanning_tree(simple)
    assert forest.num_rows == expected.number_of_edges()
    assert np.isclose(sum(forest.column("weight").to_pylist()), expected.size(weight="weight"))
    bfs = pq.read_table(tmp_path / "out" / "bfs_distances.parquet").to_pydict()
    reached = {v: d for v, d in zip(bfs["vertex"], bfs["distance"]) if d is not None}
    assert reached == nx.single_source_shortest_path_length(simple, 0)


def test_a_failed_partitioned_run_leaves_no_stage_running(cpu_cluster, prefect_server, tmp_path, capsys,
                                                          monkeypatch):
    """A bad row in rank 1's share fails the run: the stage rank 0 was in is shown failed, not
    left running."""
    monkeypatch.setenv("GRAPH_PROGRESS_AFTER_SECONDS", "0.01")
    n = 300
    dst = pa.array([*range(1, 250), None, *range(251, n + 1)], pa.int64())
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"src": pa.array(range(n), pa.int64()), "dst": dst, "weight": np.ones(n)}), path)
    code = main("mst", [str(path), "--output", str(tmp_path / "out"), "--partitions", "2", "--backend", "numpy",
                        "--dask-address", cpu_cluster.scheduler_address])
    out, err = capsys.readouterr()
    assert code == 1
    assert "column 'dst' is null at row 249" in error_line("\n".join(
        line for line in err.splitlines() if not line.startswith("progress ")))
    said = " ".join(progress_lines(err))
    states = {}
    for stage, state in re.findall(r"\b(load|prepare|msf|validate|write) (running|done in|failed)", said):
        states[stage] = state
    assert states and "running" not in states.values(), said
