"""The partitioned kernels (kernels/partitioned.py) with their ranks as threads of one process on
one device, talking through an in-process communicator: so the CuPy rank program (its bottom-up
kernel, its bitmap exchange) runs on a machine with one GPU, and the NumPy one without Dask.
Against the one-partition kernels: the same distances by input id, parents valid by Graph500's
rules over the partitioned numbering, the same forest (ascending input rows)."""
import threading
from functools import reduce

import numpy as np
import pyarrow.parquet as pq
import pytest

from kernels.bfs import bfs
from kernels.graph import build_graph, edge_list, renumber
from kernels.msf import minimum_spanning_forest
from kernels.partitioned import bfs_partitioned, build_local_graph, locate, msf_partitioned, renumber_partitioned
from kernels.verify import verify_bfs
from tests.conftest import REAL_GRAPHS, host, realgraphs_dir

DIRECTED = {"rome99", "email_eu_core"}


class ThreadComm:
    """kernels/partitioned.py's communicator protocol for ranks that are threads of this process
    on one device: each collective puts this rank's part in a shared slot, waits for every rank,
    reads what it needs, and waits again before the slots can be reused."""

    def __init__(self, rank: int, size: int, slots: list, barrier: threading.Barrier):
        self.rank, self.size, self._slots, self._barrier = rank, size, slots, barrier

    def _everyone(self, mine, take):
        self._slots[self.rank] = mine
        self._barrier.wait()
        result = take(list(self._slots))
        self._barrier.wait()
        return result

    def allreduce(self, x, op="sum"):
        xp = _module_of(x)
        combine = {"sum": xp.add, "max": xp.maximum, "min": xp.minimum}[op]
        return self._everyone(x, lambda parts: reduce(combine, parts))

    def allgatherv(self, x):
        xp = _module_of(x)
        return self._everyone(x, lambda parts: (xp.concatenate(parts),
                                                np.array([p.shape[0] for p in parts], dtype=np.int64)))

    def alltoallv(self, send, counts, recv_counts=None):
        xp = _module_of(send)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

        def mine(parts):
            got = [s[o[self.rank]:o[self.rank + 1]] for s, o in parts]
            return xp.concatenate(got), np.array([g.shape[0] for g in got], dtype=np.int64)

        return self._everyone((send, offsets), mine)

    def broadcast(self, x, root):
        return self._everyone(x, lambda parts: parts[root].copy())


def _module_of(x):
    from kernels.backend import array_module

    return array_module(x)


def run_ranks(size: int, program):
    """program(comm) on `size` threads at once; their results in rank order. A failing rank
    breaks the barrier, so the others raise too instead of waiting."""
    slots, barrier = [None] * size, threading.Barrier(size)
    results, errors = [None] * size, []

    def rank(r):
        try:
            results[r] = program(ThreadComm(r, size, slots, barrier))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def partitioned(xp, src, dst, weight, size: int, source_id, directed: bool):
    """Each rank takes a contiguous share of the rows, as a partitioned run reads them."""
    bounds = np.linspace(0, src.shape[0], size + 1).astype(np.int64)

    def program(comm):
        lo, hi = bounds[comm.rank], bounds[comm.rank + 1]
        s, d, owned_ids, own = renumber_partitioned(comm, xp.asarray(src[lo:hi]), xp.asarray(dst[lo:hi]))
        graph = build_local_graph(comm, own, s, d, directed)
        dense = locate(comm, own, owned_ids, [int(source_id)])
        search = bfs_partitioned(comm, graph, dense)
        forest = msf_partitioned(comm, s, d, xp.asarray(weight[lo:hi]), own.n, int(lo))
        return (host(owned_ids), host(s), host(d), dense, host(search.distance), host(search.predecessor),
                search.steps, host(forest.rows))

    return run_ranks(size, program)


def read(name: str):
    table = pq.read_table(realgraphs_dir() / f"{name}.parquet")
    return [table[c].to_numpy() for c in ("src", "dst", "weight")]


def check(xp, src, dst, weight, size, directed):
    source_id = src[0]
    ranks = partitioned(xp, src, dst, weight, size, source_id, directed)
    owned_ids = np.concatenate([r[0] for r in ranks])  # input id of each partitioned dense id
    s, d = np.concatenate([r[1] for r in ranks]), np.concatenate([r[2] for r in ranks])
    distance = np.concatenate([r[4] for r in ranks])
    predecessor = np.concatenate([r[5] for r in ranks])
    dense = ranks[0][3]
    # the reference: one partition on the host
    s1, d1, ids = renumber(src, dst)
    edges = edge_list(s1, d1, weight, int(ids.shape[0]))
    one = bfs(build_graph(edges, directed), np.searchsorted(ids, [source_id]))
    assert np.array_equal(distance, one.distance[np.searchsorted(ids, owned_ids)])
    report = verify_bfs(s, d, owned_ids.shape[0], dense, distance, predecessor, directed)
    assert not any(report.values()), report
    assert np.array_equal(ranks[0][7], minimum_spanning_forest(edges).edges)
    assert all(np.array_equal(r[7], ranks[0][7]) for r in ranks)
    return ranks[0][6]


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("name", REAL_GRAPHS)
def test_real_graphs_partitioned_over_thread_ranks_match_one_partition(xp, name, size):
    src, dst, weight = read(name)
    check(xp, src, dst, weight, size, name in DIRECTED)


def test_a_dense_graph_takes_bottom_up_steps_and_matches_one_partition(xp):
    # 2,000 vertices of mean degree 40 with a few hubs and isolated pairs: wide frontiers, so
    # the search goes bottom-up (the rank kernel on the GPU), with long in-lists for the warp
    rng = np.random.default_rng(5)
    n, m = 2_000, 40_000
    src = rng.integers(0, n, m) * 3  # id gaps
    dst = np.where(rng.random(m) < 0.2, rng.integers(0, 5, m) * 3, rng.integers(0, n, m) * 3)
    src = np.concatenate([src, [10**9, 10**9 + 1]])
    dst = np.concatenate([dst, [10**9 + 1, 10**9]])
    weight = rng.integers(1, 20, src.shape[0]).astype(np.float64)  # ties
    for size in (2, 3):
        steps = check(xp, src, dst, weight, size, directed=False)
        assert "bottom-up" in steps
