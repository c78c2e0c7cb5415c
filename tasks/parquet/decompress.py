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

import zlib

import numpy as np
import pyarrow as pa

from tasks.errors import InputError
from tasks.parquet.pages import DATA_PAGE_V2

# pyarrow's codec name per Parquet codec as pyarrow's metadata spells it.
HOST_CODECS = {"SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "LZ4": "lz4_raw",
               "LZ4_RAW": "lz4_raw", "BROTLI": "brotli"}
# nvCOMP algorithm per codec (GUIDE: Snappy, Zstd, LZ4, Gzip), with its input alignment.
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
        value = shift = 0
        for b in data[:5]:
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
    return None


def _host_decompress(codec: str, data: bytes, size: int, where: str) -> np.ndarray:
    """``data`` decompressed into exactly ``size`` bytes, or an InputError naming the page.

    pyarrow's ``Codec.decompress`` fills a buffer of the size asked and does not say how much
    the stream held, so: Zstd refuses both a shorter and a longer stream itself; Snappy states
    its size in a preamble; for LZ4, Gzip and Brotli a second decompression into ``size - 1``
    bytes must fail (else the stream is shorter than declared). That doubles their host cost:
    this is the reference path, not the fast one."""
    name = HOST_CODECS.get(codec)
    if name is None or not pa.Codec.is_available(name):
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
    codec_obj = pa.Codec(name)
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
    indices = range(len(pages)) if select is None else select
    for i in indices:
        c = int(pages.chunk[i])
        chunk = plan[c]
        where = _where(path, chunk, _page_in_chunk(pages, i))
        start = int(pages.offset[i])
        stored = chunk_bytes[c][start:start + int(pages.compressed_size[i])]
        size = int(pages.uncompressed_size[i])
        if pages.page_type[i] == DATA_PAGE_V2:
            levels = int(pages.definition_levels_length[i]) + int(pages.repetition_levels_length[i])
            if levels < 0 or levels > min(size, len(stored)):
                raise InputError(f"{where}: {levels} bytes of levels in a page of {len(stored)}")
            head = np.frombuffer(stored, np.uint8, levels)
            body = stored[levels:]
            if chunk.codec != "UNCOMPRESSED" and pages.is_compressed[i] != 0:
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
    """True where nvCOMP's Python module and CuPy import and a GPU is visible."""
    try:
        import cupy
        from nvidia import nvcomp  # noqa: F401
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, or CUDA present without a usable device
        return False


def decompress_pages_nvcomp(chunk_bytes, plan, pages, path: str = ""):
    """Every page's uncompressed bytes in one CuPy uint8 buffer: page i at
    [starts[i], starts[i] + uncompressed_size[i]), table order.

    One batched nvCOMP decode per codec into slices of that preallocated buffer (the declared
    sizes are imposed through ``out=``: nvCOMP's ``decode`` takes no sizes and raises when an
    output is too small). Inputs are packed into one host buffer at the codec's alignment and
    uploaded once. Hadoop-framed LZ4 pages contribute one input per frame. Snappy streams are
    walked on the GPU first (kernels.parquet_batch.snappy_fault states the rules): nvCOMP's
    decoder traps on a damaged stream, ending the CUDA context, so a stream that fails the walk
    goes to the host's codec, which names the fault. Uncompressed pages, v2 level bytes and
    chunks whose codec nvCOMP lacks are copied from the host path's output. Returns (buffer,
    starts, fallen_back) where fallen_back lists the chunks that went to the host with the
    reason.

    Written against nvidia-nvcomp-cu13 6.0 (``Codec(algorithm=..., bitstream_kind=RAW)``,
    ``as_arrays``, ``decode(..., out=...)``); it runs on the GPU machine only."""
    import cupy
    from nvidia import nvcomp

    from kernels import gpu_parquet

    sizes = pages.uncompressed_size
    out_offsets = np.zeros(len(pages) + 1, np.int64)
    np.cumsum(sizes, out=out_offsets[1:])
    device_out = cupy.empty(max(int(out_offsets[-1]), 1), dtype=cupy.uint8)

    jobs = {}  # nvCOMP algorithm -> [(stored bytes, output start, size, page)]
    host_pages = []
    fallen_back = []
    for i in range(len(pages)):
        c = int(pages.chunk[i])
        chunk = plan[c]
        start = int(pages.offset[i])
        stored = chunk_bytes[c][start:start + int(pages.compressed_size[i])]
        size = int(sizes[i])
        levels = 0
        compressed = chunk.codec != "UNCOMPRESSED"
        if pages.page_type[i] == DATA_PAGE_V2:
            levels = int(pages.definition_levels_length[i]) + int(pages.repetition_levels_length[i])
            compressed = compressed and pages.is_compressed[i] != 0
        if not compressed or size == 0 or not 0 <= levels <= min(size, len(stored)):
            host_pages.append(i)  # (the host path refuses levels longer than the page)
            continue
        if chunk.codec not in NVCOMP_CODECS:
            host_pages.append(i)
            if not fallen_back or fallen_back[-1][0] != c:
                fallen_back.append((c, f"nvCOMP has no {chunk.codec} decoder"))
            continue
        if levels:
            device_out[out_offsets[i]:out_offsets[i] + levels].set(np.frombuffer(stored, np.uint8, levels))
        body = stored[levels:]
        algorithm = NVCOMP_CODECS[chunk.codec][0]
        target = int(out_offsets[i]) + levels
        frames = hadoop_lz4_frames(body, size - levels) if chunk.codec == "LZ4" else None
        if frames is None:
            jobs.setdefault(algorithm, []).append((body, target, size - levels, i))
        else:
            for s, n, m in frames:
                jobs.setdefault(algorithm, []).append((body[s:s + n], target, m, i))
                target += m
    for algorithm, items in jobs.items():
        align = dict(NVCOMP_CODECS.values())[algorithm]
        starts = np.zeros(len(items), np.int64)
        total = 0
        for k, (data, _, _, _) in enumerate(items):
            total = -(-total // align) * align
            starts[k] = total
            total += len(data)
        staging = cupy.cuda.alloc_pinned_memory(max(total, 1))
        host = np.frombuffer(staging, np.uint8, max(total, 1))
        for (data, _, _, _), s in zip(items, starts):
            host[s:s + len(data)] = np.frombuffer(data, np.uint8)
        device_in = cupy.asarray(host)
        if algorithm == "Snappy":
            lengths = np.array([len(d) for d, _, _, _ in items], np.int64)
            declared = np.array([m for _, _, m, _ in items], np.int64)
            fault = gpu_parquet.snappy_check(device_in, starts, lengths, declared) != 0
            host_pages += sorted({items[k][3] for k in np.flatnonzero(fault)})
            items = [item for item, bad in zip(items, fault) if not bad]
            starts = starts[~fault]
            if not items:
                continue
        inputs = [device_in[s:s + len(data)] for (data, _, _, _), s in zip(items, starts)]
        outputs = [device_out[t:t + m] for _, t, m, _ in items]
        codec = nvcomp.Codec(algorithm=algorithm, bitstream_kind=nvcomp.BitstreamKind.RAW)
        try:
            codec.decode(nvcomp.as_arrays(inputs), out=nvcomp.as_arrays(outputs))
        except Exception as exc:  # nvCOMP names no page: find it on the host path
            decompress_pages_host(chunk_bytes, plan, pages, path)
            raise InputError(f"{path}: nvCOMP {algorithm} decode failed ({exc})") from None
    if host_pages:
        host_out = decompress_pages_host(chunk_bytes, plan, pages, path, select=host_pages)
        for i in host_pages:
            if host_out[i].size:
                device_out[out_offsets[i]:out_offsets[i + 1]].set(host_out[i])
    cupy.cuda.get_current_stream().synchronize()
    return device_out, out_offsets[:-1], fallen_back
