"""Collectives between the ranks of a partitioned run over TCP: the CPU communicator, and the
liveness channel the NCCL communicator watches.

The ranks of a run form a full mesh, one TCP connection per pair. Rendezvous goes through Dask:
``open_endpoint`` runs as a small task on each worker before the ranks start, binds a listening
socket there and returns its address; every rank gets the list, connects to the lower ranks and
accepts the higher ones. Each message is framed with its length and dtype, so ranks that
disagree about a collective raise instead of misreading bytes.

A dead peer raises promptly. Every collective waits on all peer sockets at once, also those it
expects nothing from; the socket of a process that died reads end-of-file (its kernel closed
it), which raises PeerLost. A rank that fails closes its sockets on the way out, so its peers
fail the same way in their next wait. A peer that is alive but silent raises CommTimeout after
``timeout`` seconds (GRAPH_COMM_TIMEOUT, default 900: the longest a rank may compute between
two collectives while another waits).
"""
from __future__ import annotations

import selectors
import socket
import struct
import threading
import time

import numpy as np

from tasks import settings

DEFAULT_TIMEOUT = 900.0
CONNECT_TIMEOUT = 60.0
_HELLO = struct.Struct("<16sq")  # run token, rank
_FRAME = struct.Struct("<q8s")  # payload bytes, dtype
_FAREWELL = -1  # a frame length that says the sender finished and closes


class CommError(RuntimeError):
    """A collective could not complete; the run's ranks stop."""


class PeerLost(CommError):
    """A peer rank's connection closed: its process died or it failed and gave up."""


class CommTimeout(CommError):
    """A peer rank stayed silent for longer than the timeout."""


def comm_timeout() -> float:
    return settings.seconds("GRAPH_COMM_TIMEOUT", DEFAULT_TIMEOUT)


_endpoints: dict[tuple[str, int], tuple[socket.socket, float]] = {}
_endpoints_lock = threading.Lock()


def open_endpoint(token: str, rank: int, size: int, host: str) -> tuple[str, int]:
    """Bind a listening socket on ``host`` for rank ``rank`` of run ``token``, which will run in
    this process; returns its (host, port). Endpoints of runs that never claimed them are closed
    after an hour."""
    with _endpoints_lock:
        for stale in [t for t, (_, made) in _endpoints.items() if time.monotonic() - made > 3600]:
            _endpoints.pop(stale)[0].close()
        family = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0][0]
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.bind((host, 0))
        listener.listen(max(size, 1))
        _endpoints[token, rank] = (listener, time.monotonic())
        return host, listener.getsockname()[1]


def _take_endpoint(token: str, rank: int) -> socket.socket:
    with _endpoints_lock:
        found = _endpoints.pop((token, rank), None)
    if found is None:
        raise CommError(f"rank {rank}: no endpoint was opened for it in this process (its worker restarted?)")
    return found[0]


def _recv_exactly(sock: socket.socket, size: int, peer: str) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise PeerLost(f"{peer} closed its connection while the ranks were connecting")
        data += chunk
    return data


class Mesh:
    """TCP connections from this rank to every other rank of one run."""

    def __init__(self, rank: int, size: int, peers: dict[int, socket.socket], timeout: float):
        self.rank, self.size, self.peers, self.timeout = rank, size, peers, timeout
        self.closed = False
        self.selector = selectors.DefaultSelector()  # every peer, watched for reading between calls
        for peer, sock in peers.items():
            self.selector.register(sock, selectors.EVENT_READ, peer)

    @classmethod
    def connect(cls, token: str, rank: int, endpoints: list[tuple[str, int]], timeout: float | None = None) -> Mesh:
        """Join the mesh of run ``token`` (this process's endpoint must have been opened)."""
        timeout = comm_timeout() if timeout is None else timeout
        size = len(endpoints)
        listener = _take_endpoint(token, rank)
        key = token.encode()[:16].ljust(16, b"\0")
        peers: dict[int, socket.socket] = {}
        try:
            for peer in range(rank):
                sock = socket.create_connection(endpoints[peer], timeout=CONNECT_TIMEOUT)
                sock.sendall(_HELLO.pack(key, rank))
                peers[peer] = sock
            deadline = time.monotonic() + min(timeout, CONNECT_TIMEOUT)
            while len(peers) < size - 1:
                listener.settimeout(max(0.001, deadline - time.monotonic()))
                try:
                    sock, _ = listener.accept()
                except socket.timeout:
                    missing = sorted(set(range(rank + 1, size)) - set(peers))
                    raise CommTimeout(f"rank {rank}: ranks {missing} did not connect within "
                                      f"{min(timeout, CONNECT_TIMEOUT):.0f} s") from None
                sock.settimeout(CONNECT_TIMEOUT)
                theirs, peer = _HELLO.unpack(_recv_exactly(sock, _HELLO.size, "a connecting rank"))
                if theirs != key or not rank < peer < size or peer in peers:
                    sock.close()
                    continue
                peers[peer] = sock
        except OSError as exc:
            for sock in peers.values():
                sock.close()
            raise PeerLost(f"rank {rank}: cannot connect to the other ranks ({exc})") from None
        finally:
            listener.close()
        for sock in peers.values():
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
        return cls(rank, size, peers, timeout)

    def close(self, clean: bool = True) -> None:
        """Close every connection. A clean close (the rank finished) first sends each peer a
        farewell frame, so a peer still finishing its last collective sees data, not the
        end-of-file that means this rank died or failed."""
        if self.closed:
            return
        self.closed = True
        self.selector.close()
        for sock in self.peers.values():
            if clean:
                try:
                    sock.settimeout(5.0)
                    sock.sendall(_FRAME.pack(_FAREWELL, b""))
                except OSError:
                    pass
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def check_alive(self) -> None:
        """Raise PeerLost if any peer's connection has closed (does not consume data)."""
        for key, _ in self.selector.select(timeout=0):
            self._peek(key.fileobj, key.data)

    def _peek(self, sock: socket.socket, peer: int) -> bool:
        """True if data is waiting; raises PeerLost on end-of-file."""
        try:
            if sock.recv(1, socket.MSG_PEEK):
                return True
        except BlockingIOError:
            return False
        except OSError as exc:
            raise PeerLost(f"rank {self.rank}: connection to rank {peer} failed ({exc})") from None
        raise PeerLost(f"rank {self.rank}: rank {peer} closed its connection (its process died or it failed)")

    def exchange(self, outgoing: dict[int, np.ndarray], incoming: list[int], dtype, what: str) -> dict[int, np.ndarray]:
        """Send ``outgoing[peer]`` to each peer and receive one array from each peer in
        ``incoming``, all at once, waiting at most ``timeout`` seconds; every other peer is
        watched for end-of-file meanwhile."""
        if self.closed:
            raise CommError(f"rank {self.rank}: the communicator is closed")
        dtype = np.dtype(dtype)
        tag = dtype.str.encode().ljust(8, b"\0")
        sending = {}
        for peer, array in outgoing.items():
            payload = memoryview(np.ascontiguousarray(array, dtype=dtype)).cast("B")
            sending[peer] = [memoryview(_FRAME.pack(payload.nbytes, tag)), payload]
        headers = {peer: bytearray() for peer in incoming}
        bodies: dict[int, memoryview] = {}
        filled: dict[int, int] = {}
        received: dict[int, np.ndarray] = {}
        events = {peer: selectors.EVENT_READ for peer in self.peers}  # as registered between calls
        deadline = time.monotonic() + self.timeout
        try:
            for peer in list(sending):  # small messages usually fit the socket buffer at once
                self._send_some(self.peers[peer], peer, sending, what)
            for peer in sending:
                events[peer] = selectors.EVENT_READ | selectors.EVENT_WRITE
                self.selector.modify(self.peers[peer], events[peer], peer)
            while sending or len(received) < len(incoming):
                ready = self.selector.select(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
                if not ready and time.monotonic() >= deadline:
                    waiting = sorted(set(incoming) - set(received) | set(sending))
                    raise CommTimeout(f"rank {self.rank}: {what} waited {self.timeout:.0f} s on ranks {waiting}")
                for key, ready_events in ready:
                    sock, peer = key.fileobj, key.data
                    wanted = events[peer]
                    if ready_events & selectors.EVENT_WRITE and peer in sending:
                        self._send_some(sock, peer, sending, what)
                        if peer not in sending:
                            wanted &= ~selectors.EVENT_WRITE
                    if ready_events & selectors.EVENT_READ:
                        if peer in headers and peer not in received:
                            self._recv_some(sock, peer, headers, bodies, filled, received, dtype, what)
                        elif self._peek(sock, peer):
                            # its next message, for a later collective, is waiting: leave the data
                            # alone (its end-of-file shows once that message is read)
                            wanted &= ~selectors.EVENT_READ
                    if wanted != events[peer]:
                        events[peer] = wanted
                        self._watch(sock, peer, wanted)
        finally:
            for peer, registered in events.items():
                if registered != selectors.EVENT_READ and not self.closed:
                    self._watch(self.peers[peer], peer, selectors.EVENT_READ)
        return received

    def _watch(self, sock, peer, events) -> None:
        try:
            self.selector.modify(sock, events, peer)
        except KeyError:  # unregistered while it had no events
            self.selector.register(sock, events, peer)
        except ValueError:  # no events: stop watching for now
            self.selector.unregister(sock)

    def _send_some(self, sock, peer, sending, what) -> None:
        views = sending[peer]
        while views:
            try:
                sent = sock.send(views[0])
            except BlockingIOError:
                return
            except OSError as exc:  # reset, broken pipe
                raise PeerLost(f"rank {self.rank}: connection to rank {peer} failed during {what} ({exc})") from None
            if sent < views[0].nbytes:
                views[0] = views[0][sent:]
                return
            views.pop(0)
        del sending[peer]

    def _recv_some(self, sock, peer, headers, bodies, filled, received, dtype, what) -> None:
        while True:
            if peer not in bodies:
                try:
                    chunk = sock.recv(_FRAME.size - len(headers[peer]))
                except BlockingIOError:
                    return
                except OSError as exc:
                    raise PeerLost(f"rank {self.rank}: connection to rank {peer} failed during {what} ({exc})") from None
                if not chunk:
                    raise PeerLost(f"rank {self.rank}: rank {peer} closed its connection during {what} "
                                   "(its process died or it failed)")
                headers[peer] += chunk
                if len(headers[peer]) < _FRAME.size:
                    continue
                nbytes, tag = _FRAME.unpack(bytes(headers[peer]))
                if nbytes == _FAREWELL:
                    raise CommError(f"rank {self.rank}: rank {peer} finished while {what} expected data from it")
                theirs = tag.rstrip(b"\0").decode()
                if np.dtype(theirs) != dtype:
                    raise CommError(f"rank {self.rank}: rank {peer} sent {theirs} during {what}, expected {dtype.str}")
                buffer = np.empty(nbytes, dtype=np.uint8)
                bodies[peer], filled[peer] = memoryview(buffer), 0
                if nbytes == 0:
                    received[peer] = buffer.view(dtype)
                    return
            view = bodies[peer]
            try:
                got = sock.recv_into(view[filled[peer]:])
            except BlockingIOError:
                return
            except OSError as exc:
                raise PeerLost(f"rank {self.rank}: connection to rank {peer} failed during {what} ({exc})") from None
            if not got:
                raise PeerLost(f"rank {self.rank}: rank {peer} closed its connection during {what} "
                               "(its process died or it failed)")
            filled[peer] += got
            if filled[peer] == view.nbytes:
                received[peer] = np.frombuffer(view, dtype=np.uint8).view(dtype)
                return


_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class TcpCommunicator:
    """The collectives of kernels.partitioned's protocol on NumPy arrays, over a Mesh. Every
    rank reduces the gathered arrays in rank order, so all ranks get bit-identical results."""

    def __init__(self, mesh: Mesh):
        self.mesh = mesh
        self.rank, self.size = mesh.rank, mesh.size
        self.others = [r for r in range(self.size) if r != self.rank]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(clean=exc_type is None)

    def close(self, clean: bool = True) -> None:
        """A failed rank closes without farewell: its peers then stop with PeerLost."""
        self.mesh.close(clean)

    def _gather(self, x, what):
        x = np.ascontiguousarray(x)
        got = self.mesh.exchange({r: x for r in self.others}, self.others, x.dtype, what)
        got[self.rank] = x
        return [got[r] for r in range(self.size)]

    def allgatherv(self, x):
        parts = self._gather(x, "allgatherv")
        return np.concatenate(parts), np.array([p.shape[0] for p in parts], dtype=np.int64)

    def allreduce(self, x, op: str = "sum"):
        parts = self._gather(x, f"allreduce({op})")
        if any(p.shape != parts[0].shape for p in parts):
            raise CommError(f"rank {self.rank}: allreduce over arrays of different shapes")
        out = parts[0].copy()
        for p in parts[1:]:
            _REDUCE[op](out, p, out=out)
        return out

    def alltoallv(self, send, counts, recv_counts=None):
        send = np.ascontiguousarray(send)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        if offsets[-1] != send.shape[0]:
            raise CommError(f"rank {self.rank}: alltoallv counts sum to {offsets[-1]}, not {send.shape[0]}")
        outgoing = {r: send[offsets[r]:offsets[r + 1]] for r in self.others}
        got = self.mesh.exchange(outgoing, self.others, send.dtype, "alltoallv")
        got[self.rank] = send[offsets[self.rank]:offsets[self.rank + 1]]
        parts = [got[r] for r in range(self.size)]
        return np.concatenate(parts), np.array([p.shape[0] for p in parts], dtype=np.int64)

    def broadcast(self, x, root: int):
        x = np.ascontiguousarray(x)
        if self.rank == root:
            self.mesh.exchange({r: x for r in self.others}, [], x.dtype, "broadcast")
            return x.copy()
        return self.mesh.exchange({}, [root], x.dtype, "broadcast")[root].copy()
