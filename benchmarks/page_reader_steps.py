"""Each step of the GPU page reader timed alone on one file (GPU with nvCOMP only):
`python -m benchmarks.page_reader_steps PATH --json OUT`.

The whole file's id and weight chunks are read into pinned memory and uploaded once, then each
step runs over all of them with CUDA events around it (best of 3): page headers, CRC32s of
every page, the Snappy walk, nvCOMP's decompression, and the batched decoding steps. The record
gives seconds per step, beside the page reader's whole read of the same file at each batch size
(``--batch-mib``, with the device pool's peak during it and its total after it, per edge, and
the pages decompressed on the host beside the GPU), pyarrow's, and libcudf's
(benchmarks.libcudf, where it is installed: ``--libcudf-site``) with the page reader's time
over it, so the step that holds the reader back is named. ``--profile FILE`` writes cProfile's
view of the decoding thread during one more whole read at the first batch size (its waits on
the prefetch thread show as ``Future.result``)."""
from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import pstats
import sys
import time

import numpy as np
import pyarrow.parquet as pq

from benchmarks.harness import GpuPoolPeak, append_records, machine
from benchmarks.orchestration import code_version


def timed(run, repeats: int = 3) -> float:
    """Best of ``repeats`` device times of ``run()`` (CUDA events on the current stream)."""
    import cupy

    best = float("inf")
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return best


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path")
    p.add_argument("--columns", default="src,dst,weight")
    p.add_argument("--batch-mib", default="256",
                   help="comma-separated batch sizes (MiB of uncompressed chunks) to time the page reader's whole read with")
    p.add_argument("--libcudf-site", default=None,
                   help="a folder holding pylibcudf (default: LIBCUDF_SITE; none: the yardstick is recorded as absent)")
    p.add_argument("--json", required=True)
    p.add_argument("--profile", default=None, help="a text file for cProfile's view of one more page reader read")
    args = p.parse_args(argv)
    import cupy

    from kernels.parquet import gpu_headers
    from kernels.parquet import snappy
    from kernels.parquet.batch import decode_pages
    from tasks.parquet.codec import nvcomp_c
    from tasks.parquet.read import page_reader
    from tasks.parquet.dataset.plan import plan_input
    from tasks.parquet.read.pages import batch_pages, plan_column_chunks, read_chunks_into
    from tasks.parquet.store.filesystem import local
    from tasks.parquet.read.reader import read_edges

    columns = args.columns.split(",")
    plan = plan_column_chunks(pq.ParquetFile(args.path).metadata, columns, args.path)
    sizes = np.array([c.size for c in plan], np.int64)
    starts = np.cumsum(sizes) - sizes
    pinned = np.frombuffer(cupy.cuda.alloc_pinned_memory(int(sizes.sum())), np.uint8, int(sizes.sum()))
    steps = {}
    started = time.perf_counter()
    read_chunks_into(local(), args.path, plan, pinned, starts)
    steps["read (preads into pinned memory)"] = time.perf_counter() - started
    stored = cupy.empty(pinned.size, dtype=cupy.uint8)
    steps["upload"] = timed(lambda: stored.set(pinned))
    num_values = [c.num_values for c in plan]
    steps["page headers"] = timed(lambda: gpu_headers.page_headers(stored, starts, sizes, num_values))
    headers = gpu_headers.page_headers(stored, starts, sizes, num_values)
    pages = headers.pages
    page_in = starts[pages.chunk] + pages.offset
    steps["CRC32 of every page"] = timed(lambda: gpu_headers.crc32_pages(stored, page_in, pages.compressed_size))
    codecs = {c.codec for c in plan}
    record_codec = ",".join(sorted(codecs))
    body = cupy.empty(int(pages.uncompressed_size.sum()), dtype=cupy.uint8)
    out_at = np.cumsum(pages.uncompressed_size) - pages.uncompressed_size
    if codecs == {"SNAPPY"}:
        steps["Snappy walk"] = timed(lambda: snappy.stream_faults_on_gpu(stored, page_in, pages.compressed_size,
                                                                      pages.uncompressed_size))
        steps["nvCOMP Snappy decompression"] = timed(lambda: nvcomp_c.decompress(
            "Snappy", stored, page_in, pages.compressed_size, body, out_at, pages.uncompressed_size))
    # an uncompressed file's pages are decoded where they lie
    batch = batch_pages(stored, page_in, pages, plan) if codecs == {"UNCOMPRESSED"} else \
        batch_pages(body, out_at, pages, plan)
    if codecs <= {"SNAPPY", "UNCOMPRESSED"}:
        steps["batched decoding"] = timed(lambda: decode_pages(cupy, batch))
    stored = body = batch = None  # the whole file's buffers freed before the whole reads
    pool = cupy.get_default_memory_pool()
    peak = GpuPoolPeak()
    peaks, held, host_streams = {}, {}, {}
    for reader, mib in [("gpu", int(m)) for m in args.batch_mib.split(",")] + [("host", None)]:
        name = f"whole read, {reader} reader" + (f", batches of {mib} MiB" if mib else "")
        if mib:
            page_reader.BATCH_BYTES = mib << 20
        read_edges(plan_input(args.path), xp=cupy, reader=reader)
        pool.free_all_blocks()
        cupy.cuda.Device().synchronize()
        peak.start()
        started = time.perf_counter()
        edges = read_edges(plan_input(args.path), xp=cupy, reader=reader)  # (the footers read, as a run does)
        cupy.cuda.Device().synchronize()
        steps[name] = time.perf_counter() - started
        peaks[name] = round(peak.bytes / edges.rows, 1)
        held[name] = round(pool.total_bytes() / edges.rows, 1)  # the edge list's 24 and what the read left cached
        if edges.report.get("host_streams"):
            host_streams[name] = edges.report["host_streams"]
        del edges
        pool.free_all_blocks()
    if args.profile:
        page_reader.BATCH_BYTES = int(args.batch_mib.split(",")[0]) << 20
        profile = cProfile.Profile()
        profile.enable()
        edges = read_edges(plan_input(args.path), xp=cupy, reader="gpu")
        cupy.cuda.Device().synchronize()
        profile.disable()
        del edges
        pool.free_all_blocks()
        text = io.StringIO()
        for order in ("tottime", "cumulative"):
            pstats.Stats(profile, stream=text).sort_stats(order).print_stats(45)
        with open(args.profile, "w") as f:
            f.write(text.getvalue())
    from benchmarks import libcudf
    yardstick = libcudf.measure("read", [args.path], args.libcudf_site)
    record = {"algo": "page-reader-steps", "file": args.path, "codec": record_codec, "pages": len(pages),
              "stored_bytes": int(sizes.sum()), "uncompressed_bytes": int(pages.uncompressed_size.sum()),
              "seconds": {k: round(v, 4) for k, v in steps.items()}, "gpu_pool_bytes_per_edge": peaks,
              "gpu_pool_bytes_per_edge_after_the_read": held, "host_streams": host_streams,
              "libcudf_read": yardstick,
              "page_reader_over_libcudf": {k: round(v / yardstick["seconds"], 3) for k, v in steps.items()
                                           if k.startswith("whole read, gpu") and yardstick["seconds"]},
              "machine": machine("cupy"), "date": datetime.date.today().isoformat(),
              "command": "python -m benchmarks.page_reader_steps " + " ".join(sys.argv[1:] if argv is None else argv), "code": code_version()}
    for k, v in record["seconds"].items():
        print(f"{k:56s} {v:8.4f} s" + (f"  pool {peaks[k]} B/edge, {held[k]} after" if k in peaks else ""))
    print(f"{'libcudf read_parquet':56s} {yardstick['seconds']} s  {yardstick.get('why', '')}")
    append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
