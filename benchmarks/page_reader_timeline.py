"""Where a page reader read's seconds go, batch by batch (GPU with nvCOMP only):
`python -m benchmarks.page_reader_timeline PATH --json OUT [--batch-mib 256] [--in-flight 1,3]
[--switch-interval-ms default,0.5]`.

For each number of batches in flight (page_reader.BATCHES_IN_FLIGHT) and each switch interval
of the interpreter during the read (sys.setswitchinterval: how long a thread that gave up the
GIL may wait to take it back while another runs Python), the page reader reads
PATH three times: a warm-up read, then two with its steps wrapped, each call of a step kept as
a span (its thread, its batch, when it began and ended by the host's clock). The first traced
read adds nothing but the clock reads, so the spans show how the batches overlap; the second
also waits for the calling thread's CUDA stream at the end of every step, so each step's span
holds its GPU work too. Device-to-host reads (``ndarray.get``) and stream waits are counted and
timed. The record: per step, calls, total, mean and longest seconds; per batch, its read, its fetch and
its decoding; and each read's whole time."""
from __future__ import annotations

import argparse
import collections
import datetime
import functools
import os
import sys
import threading
import time

from benchmarks.harness import GpuPoolPeak, append_records, machine
from benchmarks.orchestration import code_version

# (module, owner attribute or None, function name): the steps a batch goes through, in order
STEPS = [
    ("tasks.parquet.read.page_reader", "PageRead", "read_batch"),
    ("tasks.parquet.read.page_reader", "PageRead", "read_bytes"),
    ("tasks.parquet.read.page_reader", "PageRead", "fetch"),
    ("kernels.parquet.gpu_headers", None, "page_headers"),
    ("tasks.parquet.read.page_reader", None, "walk_snappy_streams"),
    ("tasks.parquet.read.page_reader", "PageRead", "process"),
    ("tasks.parquet.read.page_reader", "PageRead", "prepare_on_gpu"),
    ("kernels.parquet.gpu_headers", None, "crc32_pages"),
    ("tasks.parquet.read.page_reader", None, "decompress_pages_nvcomp"),
    ("tasks.parquet.codec.decompress", "HostStreams", "upload"),
    ("tasks.parquet.read.page_reader", None, "decode_pages"),
    ("tasks.parquet.read.page_reader", "PageRead", "store_units"),
    ("tasks.parquet.read.page_reader", "PageRead", "check_and_store"),
    ("tasks.parquet.read.assembly", "Assembly", "check_and_store"),
]


class Trace:
    """Spans of the wrapped steps: (step, thread, batch, start, end, the thread's CPU seconds in
    it); ``sync``: each span ends
    after the calling thread's current CUDA stream is idle."""

    def __init__(self):
        self.spans, self.sync, self.on = [], False, False
        self.batch = threading.local()
        self.t0 = time.perf_counter()
        self.wait = None  # the current stream's synchronize, unwrapped

    def wrap(self, name, fn):
        trace = self

        @functools.wraps(fn)
        def traced(*args, **kwargs):
            if not trace.on:
                return fn(*args, **kwargs)
            if name in ("PageRead.read_batch", "PageRead.fetch"):  # the batch this thread works on, by its
                units = args[1] if name == "PageRead.read_batch" else args[1].units  # first row group
                trace.batch.k = f"{os.path.basename(str(units[0].file))}:{units[0].group}"
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                if trace.sync:
                    trace.wait()
                trace.spans.append((name, threading.current_thread().name, trace.batch.__dict__.get("k", -1),
                                    start - trace.t0, time.perf_counter() - trace.t0, time.thread_time() - cpu))
        return traced


def install(trace: Trace) -> None:
    import importlib

    import cupy

    synchronize = cupy.cuda.Stream.synchronize
    trace.wait = lambda: synchronize(cupy.cuda.get_current_stream())
    for module, owner, fn in STEPS:
        target = importlib.import_module(module)
        if owner:
            target = getattr(target, owner)
        setattr(target, fn, trace.wrap(f"{owner + '.' if owner else ''}{fn}", getattr(target, fn)))
    for owner, fn in ((cupy.ndarray, "get"), (cupy.cuda.Stream, "synchronize")):
        try:
            setattr(owner, fn, trace.wrap(f"{owner.__name__}.{fn}", getattr(owner, fn)))
        except TypeError:  # a type of CuPy's that takes no new attributes: not traced
            print(f"{owner.__name__}.{fn} is not traced", file=sys.stderr)


def summary(spans) -> dict:
    by, cpu = collections.defaultdict(list), collections.defaultdict(float)
    for name, thread, _, start, end, thread_cpu in spans:
        by[name].append(end - start)
        cpu[name] += thread_cpu
    return {k: {"calls": len(v), "seconds": round(sum(v), 4), "mean": round(sum(v) / len(v), 5),
                "longest": round(max(v), 5), "cpu_seconds": round(cpu[k], 4)}
            for k, v in sorted(by.items(), key=lambda kv: -sum(kv[1]))}


def batches(spans) -> list:
    """Per batch: its read (the preads' thread; from its wait for a free buffer, the
    ``read_bytes`` steps being the preads alone), its fetch (upload, page headers, Snappy walk)
    and its decoding (process), start and end."""
    out = collections.defaultdict(dict)
    for name, _, k, start, end, _ in spans:
        if name in ("PageRead.read_batch", "PageRead.fetch", "PageRead.process"):
            out[k][name.split(".")[1]] = [round(start, 4), round(end, 4)]
    return [{"batch": k, **v} for k, v in sorted(out.items(), key=lambda kv: kv[1].get("read_batch", [0])[0])]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path")
    p.add_argument("--batch-mib", type=int, default=256)
    p.add_argument("--in-flight", default="1,2,3,4", help="comma-separated numbers of batches in flight")
    p.add_argument("--switch-interval-ms", default="default",
                   help="comma-separated switch intervals during the read, in ms ('default': the interpreter's)")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    import cupy

    from tasks.parquet.dataset.plan import plan_input
    from tasks.parquet.read import page_reader
    from tasks.parquet.read.reader import read_edges

    page_reader.BATCH_BYTES = args.batch_mib << 20
    pool = cupy.get_default_memory_pool()
    peak = GpuPoolPeak()
    trace = Trace()
    install(trace)
    record = {"algo": "page-reader-timeline", "file": args.path, "batch_mib": args.batch_mib, "reads": {}}
    intervals = [None if v == "default" else float(v) / 1e3 for v in args.switch_interval_ms.split(",")]
    runs = [(f"{n} in flight{'' if ms is None else f', switch interval {ms * 1e3:g} ms'}, {label}", n, ms, sync)
            for n in map(int, args.in_flight.split(",")) for ms in intervals
            for label, sync in (("warm-up", None), ("traced", False), ("traced, each step waited for", True))]
    default_interval = sys.getswitchinterval()
    for label, in_flight, interval, sync in runs:
        page_reader.BATCHES_IN_FLIGHT = in_flight
        trace.spans, trace.on, trace.sync = [], sync is not None, bool(sync)
        trace.batch = threading.local()
        plan = plan_input(args.path)
        cupy.cuda.Device().synchronize()
        peak.start()
        trace.t0 = started = time.perf_counter()
        cpu = time.process_time()
        sys.setswitchinterval(default_interval if interval is None else interval)
        try:
            edges = read_edges(plan, xp=cupy, reader="gpu")
            cupy.cuda.Device().synchronize()
        finally:
            sys.setswitchinterval(default_interval)
        seconds = time.perf_counter() - started
        record["reads"][label] = {"seconds": round(seconds, 4), "cpu_seconds": round(time.process_time() - cpu, 3),
                                  "gpu_pool_peak_bytes_per_edge":
                                  round(peak.bytes / edges.rows, 1), "steps": summary(trace.spans),
                                  "batches": batches(trace.spans)}
        print(f"{label}: {seconds:.3f} s (CPU {record['reads'][label]['cpu_seconds']:.2f} s), "
              f"{len(record['reads'][label]['batches'])} batches, pool peak "
              f"{record['reads'][label]['gpu_pool_peak_bytes_per_edge']} B/edge")
        for k, v in list(record["reads"][label]["steps"].items())[:24 if sync is not None else 0]:
            print(f"  {k:58s} {v['calls']:6d} {v['seconds']:8.4f} s  mean {v['mean'] * 1e3:7.3f} ms  "
                  f"longest {v['longest'] * 1e3:7.2f} ms  CPU {v['cpu_seconds']:7.4f} s")
        del edges
        pool.free_all_blocks()
    record.update({"machine": machine("cupy"), "date": datetime.date.today().isoformat(),
                   "command": " ".join(["python -m benchmarks.page_reader_timeline",
                                        *(sys.argv[1:] if argv is None else argv)]),
                   "code": code_version()})
    append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
