"""Benchmark cases. Kernels, baselines and verifiers are separate callables (as in GAPBS);
roots come from a fixed seed; timings exclude validation, which is timed on its own
(verify_seconds: per root for BFS, once for MST); GPU timers stop after a sync.

BFS TEPS follow Graph500: input edges (self-loops included) whose endpoints were reached, over
the search time, harmonic mean over the roots. seconds = mean time per root, so speedup is the
ratio of harmonic-mean TEPS. MST and CSR report input edges (arcs for CSR) per second. The CPU
baseline of a BFS (scipy) searches from each root right after ours, so a burst of load from
other jobs on a shared machine lands on both searches of a root and not on one side of the
ratio; the GPU baselines run after all roots. Each record keeps the machine's 1-minute load
average before and after its case (``load_average``).

On the GPU each record also carries ``gpu_peak_bytes``: the most CuPy's memory pool held while
the ids were renumbered or while that algorithm ran (before its validation and baselines), with
the edge list and whatever earlier algorithms left (the CSR) alive. The pool keeps freed blocks
for reuse, so what it holds is the peak of live arrays plus rounding."""
from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import threading
import time
from pathlib import Path

import numpy as np

from kernels import backend as be
from kernels.bfs import bfs
from kernels.graph import build_graph, edge_list, renumber
from kernels.msf import minimum_spanning_forest
from kernels.verify import verify_bfs, verify_forest

ALGOS = ("csr", "bfs", "mst")
BASELINES = ("scipy", "spmv", "seed")


def load_graph(spec: str, xp):
    kind, _, arg = spec.partition(":")
    if kind == "kron":
        from data.generators import kronecker

        return kronecker(xp, int(arg))
    if kind == "grid":
        from data.generators import grid

        return grid(xp, int(arg))
    if kind == "parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(arg)
        w = t["weight"].to_numpy() if "weight" in t.column_names else np.ones(t.num_rows)
        return tuple(xp.asarray(a) for a in (t["src"].to_numpy(), t["dst"].to_numpy(), w))
    raise SystemExit(f"unknown graph {spec!r}: use kron:SCALE, grid:SIDE or parquet:PATH")


def timed(xp, fn, *args):
    be.synchronize(xp)
    start = time.perf_counter()
    out = fn(*args)
    be.synchronize(xp)
    return out, time.perf_counter() - start


def median_time(xp, repeat, fn, *args):
    out, _ = timed(xp, fn, *args)  # warm-up: kernel compilation and allocator pools
    times = []
    for _ in range(repeat):
        del out  # one result alive at a time, as in a pipeline
        out, t = timed(xp, fn, *args)
        times.append(t)
    return out, statistics.median(times)


def pick_roots(src_h, dst_h, n, count, seed=2):
    degree = np.bincount(src_h, minlength=n) + np.bincount(dst_h, minlength=n)
    candidates = np.flatnonzero(degree > 0)
    rng = np.random.default_rng(seed)
    return rng.choice(candidates, size=min(count, candidates.size), replace=False)


def scipy_csr(edges_h, symmetric=True):
    import scipy.sparse as sp

    rows, cols = edges_h
    if symmetric:
        rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
    return sp.coo_matrix((np.ones(rows.shape[0], np.float32), (rows, cols)),
                         shape=(int(max(rows.max(), cols.max())) + 1,) * 2).tocsr()


def bench_csr(ctx, repeat):
    xp, edges = ctx["xp"], ctx["edges"]
    ctx["memory"].restart(count=False)
    graph, seconds = median_time(xp, repeat, build_graph, edges, False)
    ctx["memory"].read()
    ctx["graph"] = graph
    rec = {"seconds": seconds, "edges": graph.out.nnz, "edges_per_second": graph.out.nnz / seconds}
    indptr = be.to_host(graph.out.indptr)
    rec["validated"] = bool(indptr[-1] == 2 * (edges.m - edges.self_loops()) and (np.diff(indptr) >= 0).all())
    baselines = {}
    if "scipy" in ctx["baselines"]:
        host = (be.to_host(edges.src), be.to_host(edges.dst))
        _, baselines["scipy"] = median_time(np, repeat, scipy_csr, host)
    return rec, baselines


def bench_bfs(ctx, repeat, roots_count):
    xp, edges = ctx["xp"], ctx["edges"]
    graph = ctx.get("graph") or build_graph(edges, False)
    src_h, dst_h = be.to_host(edges.src), be.to_host(edges.dst)
    roots = pick_roots(src_h, dst_h, edges.n, roots_count)
    ctx["memory"].restart(count=False)
    warm = bfs(graph, [int(roots[0])])  # warm-up of the search and of its verifier
    ctx["memory"].read()
    verify_bfs(edges.src, edges.dst, edges.n, [int(roots[0])], warm.distance, warm.predecessor)
    cpu_baselines = {name: CPU_BFS_BASELINES[name](graph) for name in ctx["baselines"] if name in CPU_BFS_BASELINES}
    baseline_times = {name: [] for name in cpu_baselines}
    times, teps, validated, levels, steps, checks = [], [], True, [], None, []
    for r in roots:
        result, t = timed(xp, bfs, graph, [int(r)])
        for name, search in cpu_baselines.items():
            start = time.perf_counter()
            search(int(r))
            baseline_times[name].append(time.perf_counter() - start)
        traversed = int((result.distance[edges.src] >= 0).sum())
        times.append(t)
        teps.append(traversed / t)
        levels.append(result.levels)
        steps = steps or result.steps
        report, check_seconds = timed(xp, verify_bfs, edges.src, edges.dst, edges.n, [int(r)], result.distance,
                                      result.predecessor)
        checks.append(check_seconds)
        validated &= all(v == 0 for v in report.values())
    rec = {"seconds": statistics.mean(times), "edges": edges.m, "roots": len(roots),
           "gteps": len(teps) / sum(1 / x for x in teps) / 1e9, "validated": validated,
           "verify_seconds": statistics.mean(checks),
           "levels_mean": statistics.mean(levels), "us_per_level": 1e6 * sum(times) / sum(levels),
           "root_seconds": [round(t, 6) for t in times], "steps_first_root": steps}
    baselines = {name: statistics.mean(t) for name, t in baseline_times.items()}
    if xp is not np:
        for name in ctx["baselines"]:
            if name in GPU_BFS_BASELINES:
                baselines[name] = GPU_BFS_BASELINES[name](ctx, graph, roots)
    return rec, baselines


def scipy_bfs(graph):
    """scipy's breadth_first_order over the same CSR, as ``search(root)``."""
    import scipy.sparse as sp
    from scipy.sparse import csgraph

    n = graph.n
    a = sp.csr_matrix((np.ones(graph.out.nnz, np.int8), be.to_host(graph.out.indices), be.to_host(graph.out.indptr)),
                      shape=(n, n))
    return lambda root: csgraph.breadth_first_order(a, root, directed=True, return_predecessors=True)


def spmv_baseline(ctx, graph, roots):
    from benchmarks.gpu_baselines import spmv_bfs

    return spmv_bfs(graph, roots)


def seed_baseline(ctx, graph, roots):
    from benchmarks.gpu_baselines import seed_kernel_bfs

    return seed_kernel_bfs(graph, roots)


CPU_BFS_BASELINES = {"scipy": scipy_bfs}
GPU_BFS_BASELINES = {"spmv": spmv_baseline, "seed": seed_baseline}


def bench_mst(ctx, repeat):
    xp, edges = ctx["xp"], ctx["edges"]
    ctx["memory"].restart(count=False)
    forest, seconds = median_time(xp, repeat, minimum_spanning_forest, edges)
    ctx["memory"].read()
    report, verify_seconds = median_time(xp, 1, verify_forest, edges.src, edges.dst, edges.weight, edges.n,
                                         forest.edges)
    rec = {"seconds": seconds, "edges": edges.m, "edges_per_second": edges.m / seconds,
           "verify_seconds": verify_seconds,
           "rounds": forest.rounds, "bands": forest.bands, "forest_edges": int(forest.edges.shape[0]),
           "validated": all(v == 0 for v in report.values())}
    baselines = {}
    if "scipy" in ctx["baselines"] and edges.m <= ctx.get("scipy_mst_limit", 1 << 27):
        import scipy.sparse as sp
        from scipy.sparse import csgraph

        u, v, w = (be.to_host(a) for a in (edges.src, edges.dst, edges.weight))
        a = sp.csr_matrix((w + 1.0, (u, v)), shape=(edges.n, edges.n))  # weights in [1, 2): none dropped
        _, baselines["scipy"] = median_time(np, max(1, repeat // 2), csgraph.minimum_spanning_tree, a)
    return rec, baselines


def machine(xp_name):
    return be.device_name(xp_name) + f" / host {platform.node() or 'unknown'}"


class PoolPeak:
    """Bytes held by CuPy's memory pool at chosen moments (nothing on the host)."""

    def __init__(self, xp):
        self.pool = None if xp is np else xp.get_default_memory_pool()
        self.renumber = self.last = 0

    def restart(self, count: bool = True) -> None:
        """Drop cached free blocks: from here the pool holds only live arrays. `count` says
        whether what it held until now is the renumbering's peak."""
        if self.pool is not None:
            if count:
                self.renumber = self.pool.total_bytes()
            self.pool.free_all_blocks()

    def read(self) -> None:
        if self.pool is not None:
            self.last = self.pool.total_bytes()


def run(args, command):
    xp = be.module(be.resolve(args.backend))
    algos = [a for a in args.algo.split(",") if a]
    records = []
    for spec in args.graph:
        src, dst, weight = load_graph(spec, xp)
        memory = PoolPeak(xp)
        memory.restart(count=False)  # the generator's temporaries are not the pipeline's
        s, d, ids = renumber(src, dst)
        edges = edge_list(s, d, xp.asarray(weight, dtype=np.float64), int(ids.shape[0]))
        del src, dst, weight, s, d, ids
        memory.restart()
        ctx = {"xp": xp, "edges": edges, "baselines": [b for b in args.baseline.split(",") if b],
               "memory": memory}
        for algo in algos:
            load_before = os.getloadavg()[0]
            if algo == "csr":
                rec, baselines = bench_csr(ctx, args.repeat)
            elif algo == "bfs":
                rec, baselines = bench_bfs(ctx, args.repeat, args.roots)
            elif algo == "mst":
                rec, baselines = bench_mst(ctx, args.repeat)
            else:
                raise SystemExit(f"unknown algo {algo!r}")
            base = {"algo": algo, "graph": spec, "backend": args.backend, "vertices": edges.n, **rec,
                    "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
            if xp is not np:
                base.update(gpu_peak_bytes=memory.last, gpu_peak_bytes_per_edge=round(memory.last / max(edges.m, 1), 2),
                            renumber_peak_bytes_per_edge=round(memory.renumber / max(edges.m, 1), 2))
            if not baselines:
                baselines = {None: None}
            for name, bsec in baselines.items():
                out = {**base, "baseline": name, "baseline_seconds": bsec,
                       "speedup": (bsec / rec["seconds"]) if bsec else None,
                       "machine": machine(args.backend), "date": datetime.date.today().isoformat(),
                       "command": command}
                records.append(out)
                print(json.dumps({k: out.get(k) for k in ("algo", "graph", "backend", "seconds", "baseline",
                                                          "baseline_seconds", "speedup", "validated",
                                                          "verify_seconds")}), flush=True)
        del ctx
    append_records(args.json, records)


class GpuPoolPeak:
    """The most bytes CuPy's default pool held at once from ``start()`` on: each allocation
    through the pool is followed by a look at its total. (The pool's total at the end is not its
    peak: the page reader hands its batch streams' blocks back to the device when it ends.)"""

    def __init__(self):
        import cupy

        self.pool = cupy.get_default_memory_pool()
        self.bytes = self.pool.total_bytes()
        self.lock = threading.Lock()
        cupy.cuda.set_allocator(self._malloc)

    def _malloc(self, size: int):
        memory = self.pool.malloc(size)
        with self.lock:  # (the page reader allocates on several threads)
            self.bytes = max(self.bytes, self.pool.total_bytes())
        return memory

    def start(self) -> None:
        self.bytes = self.pool.total_bytes()


def append_records(json_path: str, records: list) -> None:
    """Append records to a JSON list file, replacing it atomically."""
    path = Path(json_path)
    existing = json.loads(path.read_text()) if path.exists() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(existing + records, indent=1, default=str))
    os.replace(tmp, path)
