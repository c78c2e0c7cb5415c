"""python -m benchmarks.profile_kernels --graph kron:22 [--algo csr,bfs,mst]

One run of each algorithm on the GPU and nothing else, for a profiler to watch, e.g.
  ncu --clock-control none -k regex:'bfs_|msf_|csr_' --metrics ... python -m benchmarks.profile_kernels
(Nsight Compute replays each kernel; clock control is left to the card as it is found.) The
profiler's kernel filter picks which launches it measures.
"""
import argparse
import sys

from benchmarks.harness import load_graph, pick_roots
from kernels import backend as be
from kernels.bfs import bfs
from kernels.graph import build_graph, edge_list, renumber
from kernels.msf import minimum_spanning_forest


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_kernels", description=__doc__.split("\n")[2])
    p.add_argument("--graph", default="kron:22", help="kron:SCALE | grid:SIDE | parquet:PATH")
    p.add_argument("--algo", default="bfs,mst", help="bfs and/or mst (the CSR is always built)")
    args = p.parse_args(argv)
    import cupy as cp

    src, dst, weight = load_graph(args.graph, cp)
    s, d, ids = renumber(src, dst)
    edges = edge_list(s, d, weight, int(ids.shape[0]))
    del src, dst, s, d, ids
    algos = args.algo.split(",")
    root = int(pick_roots(be.to_host(edges.src), be.to_host(edges.dst), edges.n, 1)[0])
    graph = build_graph(edges)
    if "bfs" in algos:
        result = bfs(graph, [root])
        print(f"bfs from {root}: {result.levels} levels, steps {result.steps}")
    if "mst" in algos:
        forest = minimum_spanning_forest(edges)
        print(f"msf: {forest.rounds} rounds in {forest.bands} bands")
    be.synchronize(cp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
