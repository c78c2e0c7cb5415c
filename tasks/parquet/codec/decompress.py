"""Pages decompressed into buffers of their declared sizes, and their CRC32s checked.

Input: a plan (``ColumnChunk`` per chunk), each chunk's stored bytes, and their ``PageTable``.
Output: one ``uint8`` array per page holding its uncompressed bytes, exactly
``uncompressed_size`` long. A DATA_PAGE_V2 page keeps its repetition and definition levels
uncompressed in front of its values, so only the bytes after them go through the codec (and
only when ``is_compressed``); every other page is compressed whole.

Two paths share that contract:
- ``decompress_pages_host``: pyarrow's codecs on the host (the reference, and the fallback).
- ``decompress_pages_nvcomp``: nvCOMP's batched decoder on the GPU (``nvidia-nvcomp-cu13``);
  chunks whose codec nvCOMP lacks (Brotli, LZO) go through the host path, page by page.

Codec facts (parquet-format): LZ4 (codec 5, deprecated) is Hadoop-framed, a sequence of
[big-endian u32 decompressed size][big-endian u32 compressed size][LZ4 block]; LZ4_RAW is one
bare block; GZIP is RFC 1952. pyarrow's metadata names LZ4 and LZ4_RAW both 'LZ4', so an 'LZ4'
page is read as Hadoop frames when its bytes tile exactly into frames whose sizes add up to the
page's, and as one bare block otherwise (older parquet-cpp also wrote bare blocks as LZ4).
"""
from __future__ import annotations

import functools
import threading
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kernels.parquet import snappy
from kernels.parquet.format import DATA_PAGE_V2
from tasks.errors import InputError

# pyarrow's codec per Parquet codec (kernels.parquet.format.CODECS' names, as pyarrow's metadata
# spells them): LZ4's Hadoop frames are split off first (hadoop_lz4_frames), its blocks are bare.
HOST_CODECS = {"SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "LZ4": "lz4_raw",
               "LZ4_RAW": "lz4_raw", "BROTLI": "brotli"}
# nvCOMP algorithm per Parquet codec (GUIDE: Snappy, Zstd, LZ4, Gzip), with its input alignment;
# the page writer encodes with those of them nvCOMP has an encoder for (nvcomp_c.ENCODERS).
NVCOMP_CODECS = {"SNAPPY": ("Snappy", 1), "ZSTD": ("Zstd", 8), "LZ4": ("LZ4", 4),
                 "LZ4_RAW": ("LZ4", 4), "GZIP": ("Gzip", 8)}


def _where(path, chunk, page):
    return f"{path}: column {chunk.name!r}, row group {chunk.row_group}, page {page}"


def check_page_crcs(chunk_bytes, plan, pages, path: str = "") -> int:
    """Refuse the first page whose stored CRC32 differs from its bytes' (header excluded).

    Returns how many pages carried a CRC."""
    checked = 0
    for i in np.flatnonzero(pages.crc >= 0):
        c = int(pages.chunk[i])
        start = int(pages.offset[i])
        stored = chunk_bytes[c][start:start + int(pages.compressed_size[i])]
        actual = zlib.crc32(stored)
        if actual != int(pages.crc[i]):
            raise InputError(f"{_where(path, plan[c], _page_in_chunk(pages, i))}: CRC32 "
                             f"{actual:#010x} of the stored page, header says {int(pages.crc[i]):#010x}")
        checked += 1
    return checked


def _page_in_chunk(pages, i) -> int:
    """The page's position within its chunk (0 = first page, dictionary page included)."""
    return int(i - np.searchsorted(pages.chunk, pages.chunk[i]))


class _PagePlace:
    """``_where`` of page ``i``, made only when an error message formats it: finding the page's
    position costs a search of the table, paid per page it would dominate the host path."""

    __slots__ = ("path", "chunk", "pages", "i")

    def __init__(self, path, chunk, pages, i):
        self.path, self.chunk, self.pages, self.i = path, chunk, pages, i

    def __str__(self) -> str:
        return _where(self.path, self.chunk, _page_in_chunk(self.pages, self.i))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


@functools.cache
def _codec_available(name: str) -> bool:
    return pa.Codec.is_available(name)


_codecs = threading.local()  # each thread's pyarrow codecs by name: Arrow's Gzip codec keeps its stream


def _codec(name: str):
    made = _codecs.__dict__.setdefault("by_name", {})
    if name not in made:
        made[name] = pa.Codec(name)
    return made[name]


def hadoop_lz4_frames(data: bytes, decompressed_size: int):
    """[(block start, block size, block's decompressed size)] when ``data`` is Hadoop-framed
    LZ4 adding up to ``decompressed_size``; None otherwise (then it is one bare block)."""
    frames = []
    pos = 0
    total = 0
    end = len(data)
    while pos < end:
        if pos + 8 > end:
            return None
        out_size = int.from_bytes(data[pos:pos + 4], "big")
        in_size = int.from_bytes(data[pos + 4:pos + 8], "big")
        pos += 8
        if in_size == 0 or pos + in_size > end:
            return None
        frames.append((pos, in_size, out_size))
        pos += in_size
        total += out_size
    return frames if total == decompressed_size and frames else None


def _stated_size(codec: str, data: bytes) -> int | None:
    """The decompressed size a stream states in its own bytes, where it states one."""
    if codec == "SNAPPY":  # a varint preamble
        found = snappy.preamble(data)
        return None if found is None else found[0]
    return None


def _host_decompress(codec: str, data: bytes, size: int, where: str) -> np.ndarray:
    """``data`` decompressed into exactly ``size`` bytes, or an InputError naming the page.

    pyarrow's ``Codec.decompress`` fills a buffer of the size asked and does not say how much
    the stream held, so: Zstd refuses both a shorter and a longer stream itself; Snappy states
    its size in a preamble; for LZ4, Gzip and Brotli a second decompression into ``size - 1``
    bytes must fail (else the stream is shorter than declared). That doubles their host cost:
    this is the reference path, not the fast one."""
    name = HOST_CODECS.get(codec)
    if name is None or not _codec_available(name):
        raise InputError(f"{where}: codec {codec} is not supported")
    if size == 0:
        return np.zeros(0, np.uint8)
    if codec == "LZ4":
        frames = hadoop_lz4_frames(data, size)
        if frames is not None:
            parts = [_host_decompress("LZ4_RAW", data[s:s + n], m, f"{where} (Hadoop LZ4 frame)")
                     for s, n, m in frames]
            return np.concatenate(parts)
    stated = _stated_size(codec, data)
    if stated is not None and stated != size:
        raise InputError(f"{where}: {codec} stream holds {stated} bytes, the header declares {size}")
    codec_obj = _codec(name)
    try:
        out = codec_obj.decompress(data, decompressed_size=size)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{where}: {codec} page does not decompress to the declared "
                         f"{size} bytes ({exc})") from None
    if codec in ("LZ4", "LZ4_RAW", "GZIP", "BROTLI"):
        try:
            codec_obj.decompress(data, decompressed_size=size - 1)
        except (pa.ArrowException, OSError):
            pass
        else:
            raise InputError(f"{where}: {codec} stream holds fewer bytes than the declared {size}")
    return np.frombuffer(out, dtype=np.uint8)


def decompress_pages_host(chunk_bytes, plan, pages, path: str = "", select=None) -> list:
    """Each page's uncompressed bytes (uint8 arrays of its declared size), in table order.

    ``select``: optional page indices to decompress (the others are left None)."""
    out = [None] * len(pages)
    indices = np.arange(len(pages)) if select is None else np.asarray(select, dtype=np.int64)
    # the table's columns as Python ints, taken once: per-page indexing of NumPy arrays would
    # cost more than a small page's decompression
    columns = zip(indices.tolist(), *(getattr(pages, name)[indices].tolist() for name in (
        "chunk", "offset", "compressed_size", "uncompressed_size", "page_type", "definition_levels_length",
        "repetition_levels_length", "is_compressed")))
    for i, c, start, stored_size, size, page_type, def_length, rep_length, is_compressed in columns:
        chunk = plan[c]
        where = _PagePlace(path, chunk, pages, i)
        stored = chunk_bytes[c][start:start + stored_size]
        if page_type == DATA_PAGE_V2:
            levels = def_length + rep_length
            if levels < 0 or levels > min(size, len(stored)):
                raise InputError(f"{where}: {levels} bytes of levels in a page of {len(stored)}")
            head = np.frombuffer(stored, np.uint8, levels)
            body = stored[levels:]
            if chunk.codec != "UNCOMPRESSED" and is_compressed != 0:
                body = _host_decompress(chunk.codec, body, size - levels, where)
            else:
                body = np.frombuffer(body, np.uint8)
                if body.size != size - levels:
                    raise InputError(f"{where}: {body.size + levels} bytes stored uncompressed, "
                                     f"the header declares {size}")
            out[i] = np.concatenate([head, body])
        elif chunk.codec == "UNCOMPRESSED":
            if len(stored) != size:
                raise InputError(f"{where}: {len(stored)} bytes stored uncompressed, the header "
                                 f"declares {size}")
            out[i] = np.frombuffer(stored, np.uint8)
        else:
            out[i] = _host_decompress(chunk.codec, stored, size, where)
    return out


def nvcomp_usable() -> bool:
    """True where nvCOMP's C library loads (both page paths call it, tasks.parquet.codec.nvcomp_c),
    CuPy imports and a GPU is visible."""
    try:
        import cupy

        from tasks.parquet.codec import nvcomp_c
        nvcomp_c.library()
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, or CUDA present without a usable device
        return False


@dataclass(frozen=True)
class PageStreams:
    """Per page of a table (host arrays): its codec, where it lies in the device buffer, the
    bytes of v2 levels in front of its stream, whether its bytes go through the codec, and
    whether the host path must take it (malformed v2 levels, a stored size other than declared
    for a page stored as is). Its stream is ``stored - levels`` bytes from ``page_in + levels``,
    decompressing to ``size - levels``."""

    codec: np.ndarray
    page_in: np.ndarray
    levels: np.ndarray
    compressed: np.ndarray
    on_host: np.ndarray
    stored: np.ndarray
    size: np.ndarray

    @classmethod
    def of(cls, plan, pages, stored_start) -> "PageStreams":
        chunk = pages.chunk
        codec = np.array([c.codec for c in plan] or [""], dtype=object)[chunk]
        page_in = np.asarray(stored_start, np.int64)[chunk] + pages.offset
        stored, size = pages.compressed_size, pages.uncompressed_size
        v2 = pages.page_type == DATA_PAGE_V2
        levels = np.where(v2, pages.definition_levels_length + pages.repetition_levels_length, 0)
        compressed = (codec != "UNCOMPRESSED") & (~v2 | (pages.is_compressed != 0))
        on_host = v2 & ((levels < 0) | (levels > np.minimum(size, stored)))  # the host path names them
        on_host |= ~compressed & (stored != size)
        return cls(codec, page_in, levels, compressed, on_host, stored, size)


# A batch's GPU walk and nvCOMP's decoder each give a Snappy stream one warp and go through it
# element by element, so the batch waits for its longest stream. pyarrow's dictionary pages hold
# 1 MiB beside data pages of 20,000 rows (160 KB of int64s): at Kron-24 they set each step's time
# (about 20 ms of the walk and 10 ms of nvCOMP per 256 MiB batch) with most of the GPU idle. So a
# batch's streams at least LONG_STREAM_FACTOR times its median stream and LONG_STREAM_BYTES long,
# longest first while they hold at most LONG_STREAM_SHARE of its Snappy bytes, are decompressed
# by the host's codec on the host's cores while the GPU takes the others; the share bounds the
# host's part where many streams are long.
LONG_STREAM_FACTOR = 4
LONG_STREAM_BYTES = 128 << 10
LONG_STREAM_SHARE = 0.5


def long_streams(length: np.ndarray) -> np.ndarray:
    """Which of a batch's Snappy streams (their stored lengths) the host's codec takes: a mask."""
    length = np.asarray(length, np.int64)
    taken = np.zeros(length.size, bool)
    if length.size < 2:
        return taken
    cut = max(LONG_STREAM_FACTOR * float(np.median(length)), LONG_STREAM_BYTES)
    order = np.argsort(-length, kind="stable")
    within = np.cumsum(length[order]) <= LONG_STREAM_SHARE * int(length.sum())
    taken[order[(length[order] >= cut) & within]] = True
    return taken


@dataclass(frozen=True)
class HostStreams:
    """A batch's long Snappy streams (``long_streams``), each decompressed by the host's codec on
    a pool's thread from the batch's stored bytes on the host while the GPU takes the others:
    stream k (from start[k] in the device buffer, length[k] bytes, declaring declared[k]) lands in
    ``into`` (host memory; pinned on a GPU) at at[k]. ``futures[k]`` ends when it is there, or
    raises the InputError naming its page."""

    start: np.ndarray
    length: np.ndarray
    declared: np.ndarray
    at: np.ndarray
    into: np.ndarray
    futures: list

    @classmethod
    def begin(cls, chunk_bytes, plan, pages, page: np.ndarray, streams: "PageStreams", pool, buffer,
              path: str = "") -> "HostStreams":
        """The streams of pages ``page`` (table indices; pages without v2 levels, so a stream is
        its whole page) submitted to ``pool``; ``buffer(n)`` gives the n bytes they land in."""
        declared = streams.size[page]
        at = np.cumsum(declared) - declared
        into = buffer(max(int(declared.sum()), 1))

        def fill(i: int, a: int, n: int) -> None:
            into[a:a + n] = decompress_pages_host(chunk_bytes, plan, pages, path, select=[i])[i]

        futures = [pool.submit(fill, i, a, n) for i, a, n in zip(page.tolist(), at.tolist(), declared.tolist())]
        return cls(streams.page_in[page], streams.stored[page], declared, at, into, futures)

    def find(self, start, length, declared) -> np.ndarray:
        """For each of these streams its index here, or -1."""
        start = np.asarray(start, np.int64)
        if not self.start.size or not start.size:
            return np.full(start.size, -1, np.int64)
        order = np.argsort(self.start, kind="stable")
        at = order[np.minimum(np.searchsorted(self.start[order], start), order.size - 1)]
        same = (self.start[at] == start) & (self.length[at] == length) & (self.declared[at] == declared)
        return np.where(same, at, -1)

    def upload(self, k: np.ndarray, body, dst: np.ndarray) -> None:
        """Streams ``k`` copied into ``body`` (a CuPy buffer) at ``dst``, each once decompressed
        (on the current stream: asynchronous from pinned memory); a damaged one raises the
        InputError its host codec gave."""
        for j, d in zip(k.tolist(), dst.tolist()):
            self.futures[j].result()
            n = int(self.declared[j])
            body[d:d + n].set(self.into[int(self.at[j]):int(self.at[j]) + n])


@dataclass(frozen=True)
class SnappyWalk:
    """The Snappy walk's verdicts on streams of one device buffer, ordered by where they start:
    (start, length, declared size, fault) per stream, as kernels.parquet.snappy gives them; and
    the streams the host's codec takes instead (``HostStreams``; None when it takes none)."""

    start: np.ndarray
    length: np.ndarray
    declared: np.ndarray
    fault: np.ndarray
    host: HostStreams | None = None

    def faults(self, start, length, declared) -> np.ndarray | None:
        """The verdict on each of these streams; None unless every one was walked."""
        start = np.asarray(start, np.int64)
        if not start.size:
            return np.zeros(0, np.int64)
        at = np.minimum(np.searchsorted(self.start, start), max(self.start.size - 1, 0))
        if not self.start.size or not ((self.start[at] == start) & (self.length[at] == length)
                                       & (self.declared[at] == declared)).all():
            return None
        return self.fault[at]


def walk_snappy_streams(device_stored, plan, pages, stored_start, host=None) -> SnappyWalk:
    """Every Snappy stream nvCOMP would be given for these pages (``decompress_pages_nvcomp``),
    walked on the GPU by one launch on the current stream: done by a batch's fetch, right after
    its upload. ``host``: (each chunk's stored bytes on the host, a thread pool, ``buffer(n)``
    giving n bytes of host memory, the file's path); the batch's long streams (``long_streams``,
    among pages without v2 levels) are then decompressed by the host's codec on the pool
    (``HostStreams``) instead of walked."""
    streams = PageStreams.of(plan, pages, stored_start)
    mine = np.flatnonzero((streams.codec == "SNAPPY") & streams.compressed & ~streams.on_host
                          & (streams.size - streams.levels > 0))
    taken = None
    if host is not None and mine.size:
        chunk_bytes, pool, buffer, path = host
        long = long_streams(streams.stored[mine]) & (streams.levels[mine] == 0)
        if long.any():
            taken = HostStreams.begin(chunk_bytes, plan, pages, mine[long], streams, pool, buffer, path)
            mine = mine[~long]
    start = streams.page_in[mine] + streams.levels[mine]
    order = np.argsort(start, kind="stable")
    start = start[order]
    length = (streams.stored - streams.levels)[mine][order]
    declared = (streams.size - streams.levels)[mine][order]
    fault = snappy.stream_faults_on_gpu(device_stored, start, length, declared) if start.size else np.zeros(0, np.int64)
    return SnappyWalk(start, length, declared, fault, taken)


def decompress_pages_nvcomp(chunk_bytes, plan, pages, device_stored, stored_start, path: str = "",
                            walked: SnappyWalk | None = None):
    """Every page's uncompressed bytes on the GPU: (body, starts, fallen_back), page i at
    body[starts[i]:starts[i] + uncompressed_size[i]], table order.

    ``chunk_bytes``: each chunk's stored bytes on the host; ``device_stored``: the same bytes on
    the GPU (CuPy uint8), chunk c from ``stored_start[c]``. When no page is compressed the pages
    are decoded where they lie (body is ``device_stored``). Otherwise one buffer of the declared
    sizes is filled: pages stored uncompressed and v2 pages' level bytes copied on the device;
    compressed pages by one batched nvCOMP decode per codec, whose inputs are slices of
    ``device_stored`` (copied to an aligned buffer for codecs that need it) and whose outputs are
    slices of the buffer of the declared sizes; a stream nvCOMP refuses, or that decompresses
    to other than its declared size, goes to the host path too. Hadoop-framed LZ4 pages give one input per frame.
    Snappy streams are walked on the GPU first (kernels.parquet.snappy states the
    rules): nvCOMP's decoder traps on a damaged stream, ending the CUDA context, so a stream that
    fails the walk goes to the host's codec, which names the fault. ``walked``: the walk's verdicts
    made ahead (``walk_snappy_streams``), used where they cover every Snappy stream here; the
    streams its host's codec took (``walked.host``) are copied in once decompressed. Pages the host decompresses
    (those, a codec nvCOMP lacks, malformed v2 levels, a stored size other than declared) are
    copied in; fallen_back lists the chunks of a codec nvCOMP lacks, with the reason.

    nvCOMP is called through its C API (tasks.parquet.codec.nvcomp_c); it runs on the GPU machine
    only."""
    import cupy

    from kernels.parquet import gpu_pages
    from tasks.parquet.codec import nvcomp_c

    chunk = pages.chunk
    streams = PageStreams.of(plan, pages, stored_start)
    codec, page_in, levels, compressed = streams.codec, streams.page_in, streams.levels, streams.compressed
    on_host, stored, size = streams.on_host.copy(), streams.stored, streams.size
    v2 = pages.page_type == DATA_PAGE_V2
    if not compressed.any() and not on_host.any():
        return device_stored, page_in, []
    out_start = np.cumsum(size) - size
    body = cupy.empty(max(int(size.sum()), 1), dtype=cupy.uint8)
    as_is = ~compressed & ~on_host
    with_levels = v2 & compressed & ~on_host & (levels > 0)
    gpu_pages.copy_segments(device_stored, np.r_[page_in[as_is], page_in[with_levels]], body,
                              np.r_[out_start[as_is], out_start[with_levels]],
                              np.r_[size[as_is], levels[with_levels]])
    fallen_back = []
    lacking = compressed & ~on_host & ~np.isin(codec, list(NVCOMP_CODECS))
    for c in np.unique(chunk[lacking]):
        fallen_back.append((int(c), f"nvCOMP has no {plan[c].codec} decoder"))
    on_host |= lacking
    on_host |= compressed & (size - levels == 0)  # an empty stream: nothing for nvCOMP, the host checks it
    decoded = compressed & ~on_host
    from_host = []  # (indices in walked.host, their places in body): long Snappy streams
    jobs = {}  # nvCOMP algorithm -> (input offsets in device_stored, input sizes, output offsets, sizes, pages)
    for name in np.unique(codec[decoded]):
        mine = np.flatnonzero(decoded & (codec == name))
        job = (page_in[mine] + levels[mine], stored[mine] - levels[mine], out_start[mine] + levels[mine],
               size[mine] - levels[mine], mine)
        if name == "LZ4":
            job = _hadoop_frames(chunk_bytes, pages, job)
        algorithm = NVCOMP_CODECS[name][0]
        jobs[algorithm] = tuple(np.r_[a, b] for a, b in zip(jobs[algorithm], job)) if algorithm in jobs else job
    for algorithm, (src, length, dst, out_size, page) in jobs.items():
        source = device_stored
        align = dict(NVCOMP_CODECS.values())[algorithm]
        if align > 1 and (src % align).any():  # packed at the codec's alignment
            padded = -(-length // align) * align
            packed = np.cumsum(padded) - padded
            source = cupy.empty(max(int(packed[-1] + length[-1]), 1), dtype=cupy.uint8)
            gpu_pages.copy_segments(device_stored, src, source, packed, length)
            src = packed
        if algorithm == "Snappy":
            if walked is not None and walked.host is not None and source is device_stored:
                k = walked.host.find(src, length, out_size)
                mine = k >= 0
                from_host.append((k[mine], dst[mine]))
                src, length, dst, out_size, page = (a[~mine] for a in (src, length, dst, out_size, page))
            fault = None if walked is None or source is not device_stored else walked.faults(src, length, out_size)
            if fault is None:
                fault = snappy.stream_faults_on_gpu(source, src, length, out_size)
            fault = fault != 0
            on_host[page[fault]] = True
            src, length, dst, out_size, page = (a[~fault] for a in (src, length, dst, out_size, page))
            if not src.size:
                continue
        statuses, actual = nvcomp_c.decompress(algorithm, source, src, length, body, dst, out_size)
        # a stream nvCOMP refused or that held other than the declared bytes: the host names it
        on_host[page[(statuses != 0) | (actual != out_size)]] = True
    for k, dst in from_host:  # the batch's long streams, decompressed on the host meanwhile
        walked.host.upload(k, body, dst)
    host_pages = np.flatnonzero(on_host)
    if host_pages.size:
        host_out = decompress_pages_host(chunk_bytes, plan, pages, path, select=host_pages.tolist())
        for i in host_pages:
            if host_out[i].size:
                body[out_start[i]:out_start[i] + host_out[i].size].set(host_out[i])
    cupy.cuda.get_current_stream().synchronize()
    return body, out_start, fallen_back


def _hadoop_frames(chunk_bytes, pages, job):
    """An LZ4 job with each Hadoop-framed page split into its frames (one nvCOMP input each);
    a page that does not tile into frames stays one bare block."""
    src, length, dst, out_size, page = job
    parts = ([], [], [], [], [])
    for a, n, d, m, i in zip(src.tolist(), length.tolist(), dst.tolist(), out_size.tolist(), page.tolist()):
        end = int(pages.offset[i]) + int(pages.compressed_size[i])  # the stream is the page's last n bytes
        frames = hadoop_lz4_frames(chunk_bytes[int(pages.chunk[i])][end - n:end], m)
        for s, fn, fm in frames or [(0, n, m)]:
            for part, value in zip(parts, (a + s, fn, d, fm, i)):
                part.append(value)
            d += fm
    return tuple(np.array(p, np.int64) for p in parts)
