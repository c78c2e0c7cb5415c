"""A fourth search for wrong answers, on partitioned runs (2 and 3 ranks on the CPU). None was
found; these edge cases held and are pinned here against serial references written for the
test (Kruskal with union-find under the order (weight, input row); a queue BFS; predecessors
checked as valid parents), since the partitioned path could break each one on its own."""
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster

from tasks.partitioned.driver import run_partitioned
from tests.references import assert_distances, assert_forest


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=None,
                      env={"GRAPH_BACKEND": "numpy"}) as cluster, Client(cluster) as c:
        yield c


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
