"""BFS distances and the minimum spanning forest of one Parquet edge list, with one ingest.

    python -m flows.pipeline data/graph.parquet --source 0 [--source ID ...]

Writes DIR/bfs_distances.parquet and DIR/mst_edges.parquet, only once both results are verified.
"""
from __future__ import annotations

import argparse
import sys
import time

from prefect import flow

from flows.bfs import bfs_summary
from flows.common import add_bfs_arguments, add_input_arguments, default_output, run_cli, run_info
from tasks.graph_tasks import (
    bfs_table, breadth_first_search, build_csr, forest_table, load_edges, prepare_edges,
    publish_summary, resolve_sources, spanning_forest, validate_bfs, validate_forest, write_results,
)


@flow(name="pipeline", log_prints=True)
def pipeline_flow(input: str, source: list[str], output: str | None = None, directed: bool = False,
                  depth_limit: int | None = None, src_col: str = "src", dst_col: str = "dst",
                  weight_col: str = "weight", backend: str | None = None) -> dict:
    """Load -> renumber -> CSR -> BFS and Boruvka -> verify both -> write both."""
    started = time.perf_counter()
    backend, device = run_info(backend)
    table = load_edges(input, src_col, dst_col, weight_col)
    prepared = prepare_edges(table, backend)
    sources = resolve_sources(table, prepared, source)
    graph, csr_seconds = build_csr(prepared, directed)
    result, bfs_seconds = breadth_first_search(graph, sources, depth_limit)
    forest, msf_seconds = spanning_forest(prepared)
    validate_bfs(prepared, sources, result, directed, depth_limit)
    validate_forest(prepared, forest)
    outputs = write_results({
        "bfs_distances.parquet": bfs_table(table, prepared, result),
        "mst_edges.parquet": forest_table(table, prepared, forest),
    }, output or default_output(input))
    summary = {"input": input, "backend": backend, "device": device, "vertices": prepared.edges.n,
               "edges": table.rows,
               **bfs_summary(table, prepared, csr_seconds, result, bfs_seconds, sources),
               "forest_edges": int(forest.edges.shape[0]), "components": forest.components,
               "rounds": forest.rounds, "msf_seconds": round(msf_seconds, 4),
               "total_seconds": round(time.perf_counter() - started, 3), "outputs": outputs}
    publish_summary("pipeline", summary)
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.pipeline", description=__doc__.split("\n")[1])
    add_input_arguments(parser, weights=True)
    add_bfs_arguments(parser)
    return run_cli(pipeline_flow, parser, argv, lambda a: dict(
        input=a.input, source=a.source, output=a.output, directed=a.directed,
        depth_limit=a.depth_limit, src_col=a.src_col, dst_col=a.dst_col,
        weight_col=a.weight_col, backend=a.backend))


if __name__ == "__main__":
    sys.exit(main())
