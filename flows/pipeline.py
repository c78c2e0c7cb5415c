"""BFS distances and the minimum spanning forest of one Parquet edge list, with one ingest.

    python -m flows.pipeline data/graph.parquet --source 0 [--source ID ...] [--source-set ID,ID ...]

Writes DIR/bfs_distances.parquet (or DIR/source-set-K/ per set) and DIR/mst_edges.parquet, only
once every result is verified.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from prefect import flow, unmapped

from flows.common import add_bfs_arguments, add_input_arguments, default_output, finish, run_cli, source_plan
from flows.runners import task_runner
from tasks.edges_io import check_output_paths
from tasks.graph_tasks import (
    breadth_first_search, build_csr, load_edges, prepare_edges, resolve_sources, spanning_forest,
    summarize, validate_bfs, validate_forest, write_distances, write_forest,
)


@flow(name="pipeline", task_runner=task_runner(), log_prints=True)
def pipeline_flow(input: str, source: list[str] | None = None, source_sets: list[list[str]] | None = None,
                  output: str | None = None, directed: bool = False, depth_limit: int | None = None,
                  src_col: str = "src", dst_col: str = "dst", weight_col: str = "weight",
                  backend: str | None = None) -> dict:
    """Load -> renumber -> CSR -> BFS per source set and Boruvka, in parallel -> verify all ->
    write all."""
    started = time.perf_counter()
    output = output or default_output(input)
    sets, outputs = source_plan(source, source_sets, output, depth_limit)
    check_output_paths(input, [*(Path(o) / "bfs_distances.parquet" for o in outputs), Path(output) / "mst_edges.parquet"])
    loaded = load_edges.submit(input, src_col, dst_col, weight_col)
    prepared = prepare_edges.submit(loaded, backend)
    graph = build_csr.submit(prepared, directed)
    sources = resolve_sources.map(unmapped(loaded), unmapped(prepared), sets)
    searches = breadth_first_search.map(unmapped(graph), sources, unmapped(depth_limit))
    forest = spanning_forest.submit(prepared)
    checks = [*validate_bfs.map(unmapped(prepared), sources, searches, unmapped(directed), unmapped(depth_limit)),
              validate_forest.submit(prepared, forest)]
    writes = [*write_distances.map(unmapped(loaded), unmapped(prepared), searches, outputs, wait_for=checks),
              write_forest.submit(loaded, prepared, forest, output, wait_for=checks)]
    summary = summarize.submit(loaded, prepared, graph=graph, searches=searches, source_sets=sources,
                               forest=forest, checks=checks, writes=writes)
    return finish("pipeline", summary, started, [loaded, prepared, graph, sources, searches, forest, checks, writes])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.pipeline", description=__doc__.split("\n")[1])
    add_input_arguments(parser, weights=True)
    add_bfs_arguments(parser)
    return run_cli(pipeline_flow, parser, argv, lambda a: dict(
        input=a.input, source=a.source, source_sets=a.source_set, output=a.output,
        directed=a.directed, depth_limit=a.depth_limit, src_col=a.src_col, dst_col=a.dst_col,
        weight_col=a.weight_col, backend=a.backend))


if __name__ == "__main__":
    sys.exit(main())
