"""Minimum spanning forest of a Parquet edge list.

    python -m flows.mst data/graph.parquet [--output DIR] [--weight-col C] [--runner threads]

Writes DIR/mst_edges.parquet: src, dst, weight, one row per forest edge (the chosen input row).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from prefect import flow

from flows.common import add_input_arguments, default_output, finish, run_cli
from flows.runners import task_runner
from tasks.edges_io import check_output_paths
from tasks.graph_tasks import (
    load_edges, prepare_edges, spanning_forest, summarize, validate_forest, write_forest,
)


@flow(name="mst", task_runner=task_runner(), log_prints=True)
def mst_flow(input: str, output: str | None = None, src_col: str = "src", dst_col: str = "dst",
             weight_col: str = "weight", backend: str | None = None) -> dict:
    """Load -> renumber -> Boruvka forest -> verify -> write mst_edges.parquet."""
    started = time.perf_counter()
    check_output_paths(input, [Path(output or default_output(input)) / "mst_edges.parquet"])
    loaded = load_edges.submit(input, src_col, dst_col, weight_col)
    prepared = prepare_edges.submit(loaded, backend)
    forest = spanning_forest.submit(prepared)
    check = validate_forest.submit(prepared, forest)
    write = write_forest.submit(loaded, prepared, forest, output or default_output(input), wait_for=[check])
    summary = summarize.submit(loaded, prepared, forest=forest, checks=[check], writes=[write])
    return finish("mst", summary, started, [loaded, prepared, forest, check, write])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.mst", description=__doc__.split("\n")[1])
    add_input_arguments(parser, weights=True)
    return run_cli(mst_flow, parser, argv, lambda a: dict(
        input=a.input, output=a.output, src_col=a.src_col, dst_col=a.dst_col,
        weight_col=a.weight_col, backend=a.backend))


if __name__ == "__main__":
    sys.exit(main())
