"""Breadth-first search distances from one or more sources of a Parquet edge list.

    python -m flows.bfs data/graph.parquet --source 0 [--source ID ...] [--directed] [--depth-limit N]
    python -m flows.bfs data/graph.parquet --source-set 0,1 --source-set 7 ...

Writes DIR/bfs_distances.parquet (with --source-set: DIR/source-set-K/bfs_distances.parquet per
set): vertex, distance (null = unreached), predecessor (null for sources and unreached
vertices), one row per vertex of the graph.
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
    breadth_first_search, build_csr, load_edges, prepare_edges, resolve_sources, summarize,
    validate_bfs, write_distances,
)


@flow(name="bfs", task_runner=task_runner(), log_prints=True)
def bfs_flow(input: str, source: list[str] | None = None, source_sets: list[list[str]] | None = None,
             output: str | None = None, directed: bool = False, depth_limit: int | None = None,
             src_col: str = "src", dst_col: str = "dst", backend: str | None = None) -> dict:
    """Load -> renumber -> CSR -> direction-optimizing BFS per source set (mapped across workers)
    -> verify each -> write each bfs_distances.parquet."""
    started = time.perf_counter()
    sets, outputs = source_plan(source, source_sets, output or default_output(input), depth_limit)
    check_output_paths(input, [Path(o) / "bfs_distances.parquet" for o in outputs])
    loaded = load_edges.submit(input, src_col, dst_col, None)
    prepared = prepare_edges.submit(loaded, backend)
    graph = build_csr.submit(prepared, directed)
    sources = resolve_sources.map(unmapped(loaded), unmapped(prepared), sets)
    searches = breadth_first_search.map(unmapped(graph), sources, unmapped(depth_limit))
    checks = validate_bfs.map(unmapped(prepared), sources, searches, unmapped(directed), unmapped(depth_limit))
    writes = write_distances.map(unmapped(loaded), unmapped(prepared), searches, outputs, wait_for=checks)
    summary = summarize.submit(loaded, prepared, graph=graph, searches=searches, source_sets=sources,
                               checks=checks, writes=writes)
    return finish("bfs", summary, started, [loaded, prepared, graph, sources, searches, checks, writes])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.bfs", description=__doc__.split("\n")[1])
    add_input_arguments(parser, weights=False)
    add_bfs_arguments(parser)
    return run_cli(bfs_flow, parser, argv, lambda a: dict(
        input=a.input, source=a.source, source_sets=a.source_set, output=a.output,
        directed=a.directed, depth_limit=a.depth_limit, src_col=a.src_col, dst_col=a.dst_col,
        backend=a.backend))


if __name__ == "__main__":
    sys.exit(main())
