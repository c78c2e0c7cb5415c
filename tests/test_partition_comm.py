"""The CPU communicator of partitioned runs (tasks/comm.py): real TCP sockets between ranks run
as threads of this process. Collectives against NumPy computed on the gathered inputs; a dead
peer, a failed peer and a silent peer; ranks that finish at different times."""
import threading
import time
import uuid

import numpy as np
import pytest

from tasks.partitioned.comm_tcp import CommError, CommTimeout, Mesh, PeerLost, TcpCommunicator, open_endpoint


def run_ranks(size, program, timeout=30.0):
    """Run ``program(comm)`` on ``size`` connected ranks (threads); returns each rank's result
    or the exception it raised."""
    token = uuid.uuid4().hex
    endpoints = [open_endpoint(token, r, size, "127.0.0.1") for r in range(size)]
    results = {}

    def rank(r):
        try:
            with TcpCommunicator(Mesh.connect(token, r, endpoints, timeout)) as comm:
                results[r] = program(comm)
        except BaseException as exc:  # handed to the test
            results[r] = exc

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    return [results[r] for r in range(size)]


def inputs(rank, size):
    """Per-rank arrays of varied lengths (rank 1 sends nothing anywhere)."""
    rng = np.random.default_rng(rank)
    counts = np.array([0 if rank == 1 else (rank + 2 * dest) % 4 for dest in range(size)], dtype=np.int64)
    return rng.integers(-1000, 1000, 5), rng.random(rank * 3), counts, rng.integers(0, 10**12, int(counts.sum()))


def collectives(comm, xp=np):
    """Every collective once, on arrays of ``xp``; the results as host arrays."""
    small, floats, counts, send = inputs(comm.rank, comm.size)
    last = comm.size - 1
    flags = np.array([comm.rank == 0, False])
    got = (comm.allreduce(xp.asarray(small), "sum"), comm.allreduce(xp.asarray(small), "max"),
           comm.allreduce(xp.asarray(small), "min"), *comm.allgatherv(xp.asarray(floats)),
           *comm.alltoallv(xp.asarray(send), counts),
           comm.broadcast(xp.asarray(floats if comm.rank == last else np.empty(0)), last),
           comm.allreduce(xp.asarray(flags), "max"))
    return [a if isinstance(a, np.ndarray) else a.get() for a in got]


def check_collectives(results, size):
    """Each rank's results equal NumPy's on the inputs of all ranks."""
    every = [inputs(r, size) for r in range(size)]
    smalls = np.stack([e[0] for e in every])
    for r, got in enumerate(results):
        assert not isinstance(got, BaseException), got
        total, most, least, gathered, gathered_counts, received, received_counts, root, flags = got
        np.testing.assert_array_equal(total, smalls.sum(axis=0))
        np.testing.assert_array_equal(most, smalls.max(axis=0))
        np.testing.assert_array_equal(least, smalls.min(axis=0))
        np.testing.assert_array_equal(gathered, np.concatenate([e[1] for e in every]))
        assert gathered_counts.tolist() == [3 * q for q in range(size)]
        expected = []
        for _, _, counts, send in every:
            start = int(counts[:r].sum())
            expected.append(send[start:start + counts[r]])
        np.testing.assert_array_equal(received, np.concatenate(expected))
        assert received_counts.tolist() == [e.shape[0] for e in expected]
        np.testing.assert_array_equal(root, every[size - 1][1])
        assert flags.tolist() == [True, False]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_collectives_give_what_numpy_gives_on_the_gathered_inputs(size):
    check_collectives(run_ranks(size, collectives), size)


def test_large_messages_cross_in_both_directions_at_once():
    """Several MB each way at the same time: neither rank may block on a full socket buffer."""
    def program(comm):
        mine = np.full(3_000_000, comm.rank, dtype=np.int64)
        received, counts = comm.alltoallv(np.concatenate([mine, mine]), np.array([3_000_000, 3_000_000]))
        return int(received.sum()), counts.tolist()

    assert run_ranks(2, program) == [(3_000_000, [3_000_000, 3_000_000])] * 2


def test_ranks_that_disagree_on_the_dtype_raise_instead_of_misreading():
    def program(comm):
        return comm.allgatherv(np.zeros(4, dtype=np.int32 if comm.rank == 0 else np.float32))

    for got in run_ranks(2, program):
        assert isinstance(got, CommError) and "sent" in str(got)


def test_a_rank_that_dies_mid_collective_makes_its_peers_raise_peer_lost_not_wait():
    """Rank 2 drops its connections (as the kernel does for a killed process) while ranks 0
    and 1 wait for it; they raise PeerLost, well before the 60 s timeout would (the first to
    notice gives up and closes too, so the other may see either peer go)."""
    def program(comm):
        comm.allreduce(np.ones(2))
        if comm.rank == 2:
            comm.mesh.close(clean=False)
            return "gone"
        return comm.allgatherv(np.ones(3))

    started = time.monotonic()
    results = run_ranks(3, program, timeout=60.0)
    assert results[2] == "gone"
    assert all(isinstance(got, PeerLost) for got in results[:2]), results
    assert any("rank 2" in str(got).split(":", 1)[1] for got in results[:2]), results
    assert time.monotonic() - started < 60.0


def test_a_rank_that_fails_stops_its_peers_in_their_next_collective():
    def program(comm):
        if comm.rank == 1:
            raise ValueError("rank 1 found a bad row")
        comm.allreduce(np.ones(1))
        return "finished"

    results = run_ranks(3, program, timeout=60.0)
    assert isinstance(results[1], ValueError)
    assert all(isinstance(got, PeerLost) for got in (results[0], results[2])), results


def test_ranks_finishing_at_different_times_do_not_fail_the_slow_ones():
    """Rank 2 arrives late at the last collective; ranks that finish it first close while the
    others are still reading: a clean close must not look like a death."""
    def program(comm):
        for _ in range(5):
            if comm.rank == 2:
                time.sleep(0.05)
            total = comm.allreduce(np.array([comm.rank]), "sum")
        return int(total[0])

    assert run_ranks(3, program) == [3, 3, 3]


def test_a_silent_peer_raises_comm_timeout():
    def program(comm):
        if comm.rank == 1:
            time.sleep(1.5)
            return "slept"
        return comm.allreduce(np.ones(1))

    results = run_ranks(2, program, timeout=0.5)
    assert isinstance(results[0], CommTimeout) and "rank" in str(results[0]) and results[1] == "slept"
