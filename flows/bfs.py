"""Breadth-first search distances from one or more sources of a Parquet edge list.

    python -m flows.bfs data/graph.parquet --source 0 [--source ID ...] [--directed] [--depth-limit N]

Writes DIR/bfs_distances.parquet: vertex, distance (null = unreached), predecessor (null for
sources and unreached vertices), one row per vertex of the graph.
"""
from __future__ import annotations

import argparse
import sys
import time

from prefect import flow

from flows.common import add_bfs_arguments, add_input_arguments, default_output, run_cli, run_info
from tasks.graph_tasks import (
    bfs_table, breadth_first_search, build_csr, load_edges, prepare_edges, publish_summary,
    resolve_sources, validate_bfs, write_results,
)


def bfs_summary(table, prepared, graph_seconds, result, bfs_seconds, sources) -> dict:
    e = prepared.edges
    traversed = int((result.distance[e.src] >= 0).sum())  # Graph500: input edges in the search
    return {
        "sources": len(sources), "reached": int((result.distance >= 0).sum()),
        "levels": result.levels, "csr_seconds": round(graph_seconds, 4),
        "bfs_seconds": round(bfs_seconds, 4),
        "gteps": round(traversed / bfs_seconds / 1e9, 4) if bfs_seconds > 0 else None,
    }


@flow(name="bfs", log_prints=True)
def bfs_flow(input: str, source: list[str], output: str | None = None, directed: bool = False,
             depth_limit: int | None = None, src_col: str = "src", dst_col: str = "dst",
             backend: str | None = None) -> dict:
    """Load -> renumber -> CSR -> direction-optimizing BFS -> verify -> write bfs_distances.parquet."""
    started = time.perf_counter()
    backend, device = run_info(backend)
    table = load_edges(input, src_col, dst_col, None)
    prepared = prepare_edges(table, backend)
    sources = resolve_sources(table, prepared, source)
    graph, csr_seconds = build_csr(prepared, directed)
    result, bfs_seconds = breadth_first_search(graph, sources, depth_limit)
    validate_bfs(prepared, sources, result, directed, depth_limit)
    outputs = write_results({"bfs_distances.parquet": bfs_table(table, prepared, result)},
                            output or default_output(input))
    summary = {"input": input, "backend": backend, "device": device, "vertices": prepared.edges.n,
               "edges": table.rows,
               **bfs_summary(table, prepared, csr_seconds, result, bfs_seconds, sources),
               "total_seconds": round(time.perf_counter() - started, 3), "outputs": outputs}
    publish_summary("bfs", summary)
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.bfs", description=__doc__.split("\n")[1])
    add_input_arguments(parser, weights=False)
    add_bfs_arguments(parser)
    return run_cli(bfs_flow, parser, argv, lambda a: dict(
        input=a.input, source=a.source, output=a.output, directed=a.directed,
        depth_limit=a.depth_limit, src_col=a.src_col, dst_col=a.dst_col, backend=a.backend))


if __name__ == "__main__":
    sys.exit(main())
