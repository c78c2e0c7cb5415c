"""The collectives of kernels.partitioned's protocol on CuPy arrays, through NCCL
(``cupy.cuda.nccl``): one communicator per run, one rank per GPU worker.

- allreduce: ncclAllReduce. allgatherv: the counts by ncclAllGather, then one ncclBroadcast per
  rank in one group (exact sizes, no padding). alltoallv: the count matrix by ncclAllGather
  (skipped when the caller knows what it receives), then grouped ncclSend / ncclRecv. broadcast:
  the length, then the data.
- NCCL calls only enqueue work; each collective then waits for its stream by polling, and while
  it polls it watches the run's TCP mesh (tasks.partitioned.comm_tcp.Mesh): a peer whose process died or that
  gave up closes its connections, and this rank then aborts its communicator (ncclCommAbort,
  which makes the spinning kernels return) and raises PeerLost instead of hanging. A collective
  that outlasts the timeout aborts too (CommTimeout). The communicator's creation (which blocks
  until every rank has joined) runs in a helper thread for the same reason.
- NCCL_NVLS_ENABLE=0 is set before NCCL is first used in the process: NVLink multicast stays off.
"""
from __future__ import annotations

import atexit
import os
import threading
import time

import numpy as np

from tasks.partitioned.comm_tcp import CommError, CommTimeout, Mesh, PeerLost

os.environ["NCCL_NVLS_ENABLE"] = "0"

import cupy as cp  # noqa: E402
from cupy.cuda import nccl  # noqa: E402

_TYPES = {
    np.dtype(np.int8): nccl.NCCL_INT8, np.dtype(np.uint8): nccl.NCCL_UINT8, np.dtype(np.bool_): nccl.NCCL_UINT8,
    np.dtype(np.int32): nccl.NCCL_INT32, np.dtype(np.uint32): nccl.NCCL_UINT32,
    np.dtype(np.int64): nccl.NCCL_INT64, np.dtype(np.uint64): nccl.NCCL_UINT64,
    np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
    np.dtype(np.float64): nccl.NCCL_FLOAT64,
}
_OPS = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}
# a collective first spins this many polls of its stream (tiny per-level reductions finish in
# microseconds), then sleeps between polls: at most POLL_SHORT seconds while the wait is younger
# than SHORT_WAIT (a BFS level's kernel and exchange take about a millisecond, and a doubling
# sleep would overshoot them by as much), then up to POLL_MAX
SPIN_POLLS = 200
POLL_SHORT = 5e-5
SHORT_WAIT = 0.05
POLL_MAX = 0.002
WATCH_SECONDS = 0.05  # how often a waiting rank looks at the mesh and NCCL's error state


# A communicator finished cleanly is destroyed by a helper thread (ncclCommDestroy takes
# 0.25-0.3 s on an H200), overlapping the rank's return, the driver's publishing and the next
# run's scheduling and TCP rendezvous. NCCL calls on independent communicators of one device are
# not safe in parallel from several threads (NCCL's "Thread Safety"), so the next communicator
# of this process is created only once every earlier destroy has ended (_await_destroys), and
# the process waits for them as it exits rather than tearing CUDA down under one.
_destroying: list[threading.Thread] = []
_destroying_lock = threading.Lock()
EXIT_WAIT_SECONDS = 10.0


def _destroy_in_background(comm) -> None:
    device = cp.cuda.runtime.getDevice()

    def destroy():
        cp.cuda.runtime.setDevice(device)  # a new thread starts on device 0
        comm.destroy()

    thread = threading.Thread(target=destroy, name="nccl-destroy", daemon=True)
    with _destroying_lock:
        _destroying[:] = [t for t in _destroying if t.is_alive()] + [thread]
    thread.start()


def _await_destroys(deadline: float, watch=None) -> bool:
    """Wait for the communicators this process is destroying; ``watch`` is called between
    looks. False if one is still being destroyed at ``deadline`` (time.monotonic)."""
    with _destroying_lock:
        pending = list(_destroying)
    for thread in pending:
        while thread.is_alive():
            thread.join(max(0.0, min(WATCH_SECONDS, deadline - time.monotonic())))
            if thread.is_alive():
                if time.monotonic() >= deadline:
                    return False
                if watch is not None:
                    watch()
    return True


@atexit.register
def _await_destroys_at_exit() -> None:
    _await_destroys(time.monotonic() + EXIT_WAIT_SECONDS)


class NcclCommunicator:
    def __init__(self, unique_id: tuple, rank: int, size: int, mesh: Mesh):
        self.rank, self.size, self.mesh = rank, size, mesh
        self.timeout = mesh.timeout
        self._comm = None
        if not _await_destroys(time.monotonic() + self.timeout, mesh.check_alive):
            raise CommTimeout(f"rank {rank}: an earlier run's NCCL communicator in this process was not destroyed "
                              f"within {self.timeout:.0f} s; restart the worker")
        made: dict = {}
        device = cp.cuda.runtime.getDevice()

        def create():
            try:
                cp.cuda.runtime.setDevice(device)
                made["comm"] = nccl.NcclCommunicator(size, unique_id, rank)
            except BaseException as exc:  # handed to the waiting thread
                made["error"] = exc

        maker = threading.Thread(target=create, name=f"nccl-init-rank-{rank}", daemon=True)
        maker.start()
        deadline = time.monotonic() + self.timeout
        while maker.is_alive():
            maker.join(WATCH_SECONDS)
            if maker.is_alive():
                mesh.check_alive()  # a lost peer would leave the init blocked forever
                if time.monotonic() > deadline:
                    raise CommTimeout(f"rank {rank}: NCCL communicator not created within {self.timeout:.0f} s")
        if "error" in made:
            raise CommError(f"rank {rank}: NCCL communicator creation failed ({made['error']})")
        self._comm = made["comm"]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(abort=exc_type is not None)

    def close(self, abort: bool = False) -> None:
        """Release the communicator (abort it after a failure: peers may be gone) and the mesh.
        After a clean finish the communicator is destroyed by a helper thread: ncclCommDestroy
        takes 0.25-0.3 s on an H200 (a quarter of a Kron-22 run), and every collective has
        already completed, so the rank's task need not wait for it (the next communicator of
        this process waits for it instead, see _await_destroys)."""
        if self._comm is not None:
            if abort:
                self._comm.abort()
            else:
                _destroy_in_background(self._comm)
            self._comm = None
        self.mesh.close(clean=not abort)

    def _type(self, x):
        try:
            return _TYPES[x.dtype]
        except KeyError:
            raise CommError(f"rank {self.rank}: NCCL cannot carry {x.dtype}") from None

    def _wait(self, what: str) -> None:
        """Wait for the current stream, watching peers and the clock; abort on failure."""
        stream = cp.cuda.get_current_stream()
        polls, pause = 0, 1e-5
        began = watched = time.monotonic()
        deadline = began + self.timeout
        while not stream.done:
            polls += 1
            if polls < SPIN_POLLS:
                continue
            time.sleep(pause)
            now = time.monotonic()
            pause = min(pause * 2, POLL_SHORT if now - began < SHORT_WAIT else POLL_MAX)
            if now - watched >= WATCH_SECONDS:
                watched = now
                try:
                    self.mesh.check_alive()
                    self._comm.check_async_error()
                except PeerLost:
                    self._abort()
                    raise
                except nccl.NcclError as exc:
                    self._abort()
                    raise CommError(f"rank {self.rank}: NCCL failed during {what} ({exc})") from None
                if now > deadline:
                    self._abort()
                    raise CommTimeout(f"rank {self.rank}: {what} waited {self.timeout:.0f} s")

    def _abort(self) -> None:
        if self._comm is not None:
            self._comm.abort()
            self._comm = None

    @property
    def _stream(self) -> int:
        return cp.cuda.get_current_stream().ptr

    def allreduce(self, x, op: str = "sum"):
        x = cp.ascontiguousarray(x)
        out = cp.empty_like(x)
        kind = _OPS[op]
        if x.dtype == np.bool_:
            x, out = x.view(np.uint8), out.view(np.uint8)
        self._comm.allReduce(x.data.ptr, out.data.ptr, x.size, self._type(x), kind, self._stream)
        self._wait(f"allreduce({op})")
        return out

    def _allgather_counts(self, counts: np.ndarray) -> np.ndarray:
        send = cp.asarray(counts, dtype=np.int64)
        out = cp.empty(send.size * self.size, dtype=np.int64)
        self._comm.allGather(send.data.ptr, out.data.ptr, send.size, nccl.NCCL_INT64, self._stream)
        self._wait("allgather of counts")
        return out.get()

    def allgatherv(self, x):
        x = cp.ascontiguousarray(x)
        counts = self._allgather_counts(np.array([x.shape[0]], dtype=np.int64))
        offsets = np.concatenate([[0], np.cumsum(counts)])
        out = cp.empty(int(offsets[-1]), dtype=x.dtype)
        kind = self._type(x)
        nccl.groupStart()
        for root in range(self.size):
            if counts[root]:
                target = out[offsets[root]:offsets[root + 1]]
                source = x if root == self.rank else target
                self._comm.broadcast(source.data.ptr, target.data.ptr, int(counts[root]), kind, root, self._stream)
        nccl.groupEnd()
        self._wait("allgatherv")
        return out, counts

    def alltoallv(self, send, counts, recv_counts=None):
        send = cp.ascontiguousarray(send)
        counts = np.asarray(counts, dtype=np.int64)
        if recv_counts is None:
            recv_counts = self._allgather_counts(counts).reshape(self.size, self.size)[:, self.rank]
        recv_counts = np.asarray(recv_counts, dtype=np.int64)
        send_at = np.concatenate([[0], np.cumsum(counts)])
        recv_at = np.concatenate([[0], np.cumsum(recv_counts)])
        out = cp.empty(int(recv_at[-1]), dtype=send.dtype)
        kind = self._type(send)
        me = self.rank
        if counts[me]:
            out[recv_at[me]:recv_at[me + 1]] = send[send_at[me]:send_at[me + 1]]
        nccl.groupStart()
        for peer in range(self.size):
            if peer == me:
                continue
            if counts[peer]:
                self._comm.send(send[send_at[peer]:].data.ptr, int(counts[peer]), kind, peer, self._stream)
            if recv_counts[peer]:
                self._comm.recv(out[recv_at[peer]:].data.ptr, int(recv_counts[peer]), kind, peer, self._stream)
        nccl.groupEnd()
        self._wait("alltoallv")
        return out, recv_counts

    def broadcast(self, x, root: int):
        x = cp.ascontiguousarray(x)
        length = cp.asarray([x.shape[0]], dtype=np.int64)
        self._comm.broadcast(length.data.ptr, length.data.ptr, 1, nccl.NCCL_INT64, root, self._stream)
        self._wait("broadcast of a length")
        out = cp.empty(int(length.get()[0]), dtype=x.dtype)
        if out.size:
            source = x if self.rank == root else out
            self._comm.broadcast(source.data.ptr, out.data.ptr, out.size, self._type(x), root, self._stream)
            self._wait("broadcast")
        return out
