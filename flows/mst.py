"""Minimum spanning forest of a Parquet edge list.

    python -m flows.mst data/graph.parquet [--output DIR] [--weight-col C]

Writes DIR/mst_edges.parquet: src, dst, weight, one row per forest edge (the chosen input row).
"""
from __future__ import annotations

import argparse
import sys
import time

from prefect import flow

from flows.common import add_input_arguments, default_output, run_cli, run_info
from tasks.graph_tasks import (
    forest_table, load_edges, prepare_edges, publish_summary, spanning_forest, validate_forest,
    write_results,
)


@flow(name="mst", log_prints=True)
def mst_flow(input: str, output: str | None = None, src_col: str = "src", dst_col: str = "dst",
             weight_col: str = "weight", backend: str | None = None) -> dict:
    """Load -> renumber -> Boruvka forest -> verify -> write mst_edges.parquet."""
    started = time.perf_counter()
    backend, device = run_info(backend)
    table = load_edges(input, src_col, dst_col, weight_col)
    prepared = prepare_edges(table, backend)
    forest, msf_seconds = spanning_forest(prepared)
    validate_forest(prepared, forest)
    outputs = write_results({"mst_edges.parquet": forest_table(table, prepared, forest)},
                            output or default_output(input))
    summary = {
        "input": input, "backend": backend, "device": device,
        "vertices": prepared.edges.n, "edges": table.rows, "self_loops_dropped": prepared.self_loops,
        "forest_edges": int(forest.edges.shape[0]), "components": forest.components,
        "rounds": forest.rounds, "msf_seconds": round(msf_seconds, 4),
        "edges_per_second": round(table.rows / msf_seconds) if msf_seconds > 0 else None,
        "total_seconds": round(time.perf_counter() - started, 3), "outputs": outputs,
    }
    publish_summary("mst", summary)
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.mst", description=__doc__.split("\n")[1])
    add_input_arguments(parser, weights=True)
    return run_cli(mst_flow, parser, argv, lambda a: dict(
        input=a.input, output=a.output, src_col=a.src_col, dst_col=a.dst_col,
        weight_col=a.weight_col, backend=a.backend))


if __name__ == "__main__":
    sys.exit(main())
