"""python -m benchmarks --graph kron:20 --algo csr,bfs,mst --backend numpy --baseline scipy --json FILE

Times each algorithm on a generated or Parquet graph, runs the baseline on the same graph in the
same process, validates every result, and appends one JSON record per case to FILE.
"""
import argparse
import sys

from benchmarks.harness import ALGOS, BASELINES, run


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[1])
    p.add_argument("--graph", action="append", required=True,
                   help="kron:SCALE | grid:SIDE | parquet:PATH (repeatable)")
    p.add_argument("--algo", default="csr,bfs,mst", help=f"comma list of {','.join(ALGOS)}")
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    p.add_argument("--baseline", default="scipy", help=f"comma list of {','.join(BASELINES)}")
    p.add_argument("--roots", type=int, default=16, help="BFS roots (Graph500: 16-64)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per case (median)")
    p.add_argument("--json", required=True, help="results file (JSON list; records are appended)")
    args = p.parse_args(argv)
    run(args, " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
