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
from kernels.partitioned import (_hash_owner, bfs_partitioned, build_local_graph, locate, msf_partitioned,
                                 renumber_partitioned)
from kernels.verify import verify_bfs
from tests.conftest import REAL_GRAPHS, host, realgraphs_dir
from tests.references import serial_bfs

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


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("size, empty", [(6, (1, 5)), (5, (0, 2))])
def test_ranks_owning_no_vertices_many_owners_several_sources_and_depth_limits(xp, size, empty, directed):
    # Ids picked by their hashed owner leave the `empty` ranks (first, middle, last) without a
    # vertex: equal consecutive bounds for the owner search and proposal regions of length 0.
    # One component is a path that changes owner at every hop, with a few chords, and a fan
    # vertex with a neighbour on each other non-empty rank: top-down levels, and with size 6 a
    # step that proposes to three other owners (three regions sent in rank order). The other is
    # a star whose hub, as a source, makes level 0 bottom-up (the sources as the frontier).
    # Several sources at once, some on one rank, and depth limits.
    candidates = np.arange(1, 400, dtype=np.int64)
    owner = _hash_owner(candidates, size)
    by_rank = [candidates[owner == r][:16] for r in range(size) if r not in empty]
    path = np.stack([ids[:12] for ids in by_rank], axis=1).reshape(-1)  # owners interleaved
    rng = np.random.default_rng(11)
    chords = rng.choice(path, (2, 4))
    fan, hub = by_rank[0][0], by_rank[0][12]
    leaves = np.concatenate([ids[12:] for ids in by_rank])[1:]
    src = np.concatenate([path[:-1], chords[0], np.full(len(by_rank) - 1, fan), np.full(leaves.shape[0], hub),
                          path[:2]])
    dst = np.concatenate([path[1:], chords[1], [ids[1] for ids in by_rank[1:]], leaves, path[:2]])  # + self-loops
    s1, d1, dense_ids = renumber(src, dst)
    steps = set()
    for source_ids in ([fan], [hub], [path[4], path[len(by_rank) * 6], path[-1], hub]):
        for depth_limit in (None, 1, 2):

            def program(comm):
                s, d, owned_ids, own = renumber_partitioned(comm, xp.asarray(src), xp.asarray(dst))
                graph = build_local_graph(comm, own, s, d, directed)
                dense = locate(comm, own, owned_ids, [int(v) for v in source_ids])
                search = bfs_partitioned(comm, graph, dense, depth_limit)
                return (own.owned, host(owned_ids), host(s), host(d), dense, host(search.distance),
                        host(search.predecessor), search.steps)

            ranks = run_ranks(size, program)
            assert [r for r in range(size) if ranks[r][0] == 0] == list(empty)
            owned_ids = np.concatenate([r[1] for r in ranks])
            distance = np.concatenate([r[5] for r in ranks])
            predecessor = np.concatenate([r[6] for r in ranks])
            expected = serial_bfs(dense_ids.shape[0], s1, d1, np.searchsorted(dense_ids, source_ids), directed,
                                  depth_limit)
            assert np.array_equal(distance, expected[np.searchsorted(dense_ids, owned_ids)]), (source_ids, depth_limit)
            s, d = np.concatenate([r[2] for r in ranks]), np.concatenate([r[3] for r in ranks])
            report = verify_bfs(s, d, owned_ids.shape[0], ranks[0][4], distance, predecessor, directed, depth_limit)
            assert not any(report.values()), (source_ids, depth_limit, report)
            steps |= {(bool(source_ids[0] == hub), step, level) for level, step in enumerate(ranks[0][7])}
    assert (True, "bottom-up", 0) in steps and (False, "top-down", 0) in steps
