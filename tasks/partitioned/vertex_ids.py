"""The input's vertex ids on the ranks of a partitioned run: numbering them, finding a source
among them, and turning dense numbers back into ids for the results.

``renumber_share`` numbers a rank's share (tasks.parquet.read.reader.Share) collectively and returns
the dense ends of its edges, the ``Ownership`` and the owned vertices' ids, as ``IntegerIds``
or ``StringIds``; both offer, every call collective:
- ``owned()``: a pyarrow array (the input's id type) of the ids of dense vertices lo .. hi-1;
- ``locate(comm, own, given)``: the dense number of each source id as the user gave it (host
  int64, -1 where the graph has no such vertex), the same on every rank;
- ``lookup(comm, own, dense)``: a pyarrow array of the id of each dense number in ``dense``
  (an array of the rank's backend, any owners, repeats allowed); ``IntegerIds.fetch`` gives
  those ids as an array of the rank's backend instead (what the page writer takes).

String ids take the integer ids' way (kernels.partitioned.renumber_partitioned) with strings
for keys: each distinct id of a share goes to the rank its bytes hash to
(kernels.partitioned.string_owner), each owner sorts the distinct ids it received by their
UTF-8 bytes (Unicode code point order) and numbers them from its offset, and the numbers
travel back. Strings travel through the communicator as two arrays: their byte lengths
(int64) and their bytes (uint8), both grouped by destination rank. The sort and the lookups
are pyarrow's, on the host; on GPUs the strings cross to the device only to be sent.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kernels.backend import to_host
from kernels.partitioned import (
    Ownership, ask_owners, fetch, group_by_rank, locate, numbers_back, ownership, renumber_partitioned, string_owner,
)


def _buffers(names: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes) of a large_string array, the offsets from 0 (host int64 [len + 1], uint8)."""
    if len(names) == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    buffers = names.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[names.offset:names.offset + len(names) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    return offsets - offsets[0], data[offsets[0]:offsets[-1]]


def _group_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sums of consecutive groups of ``values``, ``counts`` elements each (host int64)."""
    running = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
    cuts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return running[cuts[1:]] - running[cuts[:-1]]


def exchange_strings(comm, xp, names: pa.Array, counts, recv_counts=None) -> tuple[pa.Array, np.ndarray]:
    """The all-to-all of ``comm`` for strings: ``names`` (large_string) holds ``counts[r]``
    strings for rank r, in rank order; returns the strings each rank sent here, in rank order
    (large_string), and how many came from each rank."""
    offsets, data = _buffers(names.cast(pa.large_string()))
    lengths, recv_counts = comm.alltoallv(xp.asarray(np.diff(offsets)), counts, recv_counts)
    lengths = to_host(lengths).astype(np.int64)
    recv_counts = np.asarray(to_host(recv_counts), dtype=np.int64)
    received, _ = comm.alltoallv(xp.asarray(data), _group_sums(np.diff(offsets), counts),
                                 recv_counts=_group_sums(lengths, recv_counts))
    got = np.ascontiguousarray(to_host(received), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    strings = pa.LargeStringArray.from_buffers(len(lengths), pa.py_buffer(offsets), pa.py_buffer(got))
    return strings, recv_counts


class IntegerIds:
    """Integer ids: ``ids`` (the rank's backend, ascending) of the owned vertices."""

    def __init__(self, ids):
        self.ids = ids
        self.type = pa.from_numpy_dtype(np.dtype(ids.dtype))

    def owned(self) -> pa.Array:
        return pa.array(to_host(self.ids), type=self.type)

    def locate(self, comm, own: Ownership, given: list) -> np.ndarray:
        return locate(comm, own, self.ids, [int(v) for v in given])  # the driver checked they are integers

    def fetch(self, comm, own: Ownership, dense):
        """The ids of ``dense`` as an array of the rank's backend."""
        return fetch(comm, own, self.ids, dense)

    def lookup(self, comm, own: Ownership, dense) -> pa.Array:
        return pa.array(to_host(self.fetch(comm, own, dense)), type=self.type)


class StringIds:
    """String ids: ``names`` (host large_string, ascending by bytes) of the owned vertices."""

    def __init__(self, names: pa.Array, xp):
        self.names, self.xp = names, xp

    def owned(self) -> pa.Array:
        return self.names

    def locate(self, comm, own: Ownership, given: list) -> np.ndarray:
        # taken as text, as the one-partition run takes a source of a graph of string ids
        query = pa.array([str(v) for v in given], type=pa.large_string())
        pos = pc.index_in(query, value_set=self.names).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        found = np.where(pos >= 0, pos + own.lo, -1)
        return to_host(comm.allreduce(self.xp.asarray(found), "max"))

    def lookup(self, comm, own: Ownership, dense) -> pa.Array:
        q = ask_owners(comm, own, dense)
        wanted = self.names.take(pa.array(to_host(q.incoming).astype(np.int64) - own.lo))
        answers, _ = exchange_strings(comm, self.xp, wanted, q.incoming_counts, q.counts)
        return answers.take(pa.array(to_host(q.inverse).astype(np.int64)))


def renumber_strings(comm, xp, src, dst, names: pa.Array):
    """Dense int32 ends (arrays of ``xp``) for a share of string ids (int32 codes ``src``,
    ``dst`` into the share's distinct ids ``names``), the Ownership and the StringIds."""
    offsets, data = _buffers(names)
    order, counts = group_by_rank(np, string_owner(offsets, data, comm.size), comm.size)
    received, received_counts = exchange_strings(comm, xp, names.take(pa.array(order)), counts)
    encoded = received.dictionary_encode()
    distinct = encoded.dictionary
    ascending = pc.sort_indices(distinct).to_numpy()  # by bytes
    number = np.empty(ascending.shape[0], dtype=np.int64)
    number[ascending] = np.arange(ascending.shape[0])
    back = number[encoded.indices.to_numpy(zero_copy_only=False)]
    own = ownership(comm, xp, int(ascending.shape[0]))
    dense = numbers_back(comm, own, xp.asarray(back), received_counts, xp.asarray(order), counts)
    return dense[src], dense[dst], own, StringIds(distinct.take(pa.array(ascending)), xp)


def renumber_share(comm, xp, share):
    """``(src, dst, own, ids)``: the share's edges as dense int32 ends, who owns which numbers,
    and the owned vertices' ids (IntegerIds or StringIds)."""
    if share.names is not None:
        return renumber_strings(comm, xp, share.src, share.dst, share.names)
    src, dst, owned_ids, own = renumber_partitioned(comm, share.src, share.dst)
    return src, dst, own, IntegerIds(owned_ids)
