"""Breadth-first search distances from one or more sources of a Parquet edge list.

    python -m flows.bfs data/graph.parquet --source 0 [--source ID ...] [--directed] [--depth-limit N]
    python -m flows.bfs data/graph.parquet --source-set 0,1 --source-set 7 ...

Writes DIR/bfs_distances.parquet (with --source-set: DIR/source-set-K/bfs_distances.parquet per
set): vertex, distance (null = unreached), predecessor (null for sources and unreached
vertices), one row per vertex of the graph: integer ids ascending, string ids in the order they
first appear (down the src column, then down dst). With --partitions N (N > 1) the graph is
split over N Dask workers, and the rows come in partition order instead (each partition's
vertices ascending); with --output-layout dataset each result is a directory
of one part per partition.
"""
if __name__ == "__main__":  # the command line checks its arguments before Prefect is imported
    from flows.cli import run_command

    run_command("bfs")

import time

from prefect import flow, unmapped

from flows.common import (
    FLOW_TIMEOUT_SECONDS, Backend, Compression, DepthLimit, OutputLayout, Partitions, RunName, Writer,
    VertexId, check_filter, finish, partition_count, run_plan,
)
from flows.inputs import run_paths
from flows.runners import ChosenAtRunStart
from tasks.graph_tasks import (
    breadth_first_search, build_csr, load_edges, results_writer, validate_bfs,
)
from tasks.parameters import source_plan
from tasks.parquet.publish.output_paths import check_output_paths
from tasks.parquet.write.results import BFS_RESULT_NAME, DEFAULT_COMPRESSION, DEFAULT_LAYOUT, result_paths
from tasks.partitioned_tasks import partitioned_runner


@flow(name="bfs", flow_run_name=RunName("bfs"), task_runner=ChosenAtRunStart(), log_prints=True,
      timeout_seconds=FLOW_TIMEOUT_SECONDS, persist_result=True, result_serializer="json")
def bfs_flow(input: str, source: list[VertexId] | None = None, source_sets: list[list[VertexId]] | None = None,
             output: str | None = None, directed: bool = False, depth_limit: DepthLimit | None = None,
             src_col: str = "src", dst_col: str = "dst", backend: Backend | None = None,
             compression: Compression = DEFAULT_COMPRESSION, partitions: Partitions = 1,
             output_layout: OutputLayout = DEFAULT_LAYOUT, filter: str | None = None, reader: str = "auto",
             writer: Writer = "auto") -> dict:
    """BFS distances: load -> renumber -> CSR -> direction-optimizing BFS per source set (mapped
    across workers) -> verify each -> write each bfs_distances.parquet.

    Args:
        input: Parquet file, directory of Parquet files, or glob pattern of them (data/parts/*.parquet), one edge per row.
        source: Vertex ids of one search from all of them (give this or source_sets).
        source_sets: Lists of vertex ids, one separate search per list, each written to OUTPUT/source-set-K/.
        output: Directory for bfs_distances.parquet (default: output/graph/ for input data/graph.parquet), or, for one search (source, or one source set), the result's own file: a path ending in .parquet, .parq or .pq.
        directed: Follow edges src -> dst only (default: both ways).
        depth_limit: Stop after this many levels (default: no limit).
        src_col: Column of source vertex ids (integers or strings).
        dst_col: Column of destination vertex ids (same type as src_col).
        backend: numpy (CPU), cupy (GPU) or auto (cupy when a GPU is usable; default: $GRAPH_BACKEND, else auto).
        compression: Parquet compression of the results (snappy: fast to write and read; zstd: smaller).
        partitions: Dask workers to split the graph over (one GPU each), or auto (one when the graph fits one GPU, else every GPU worker).
        output_layout: With several partitions, each result as one file, or as a dataset directory of one part per partition.
        filter: Keep only the rows this expression passes, e.g. "day >= '2026-11-01' and weight > 0.5": hive partition folders (key=value) and data columns; see docs/inputs.md#filters.
        reader: Parquet reader: gpu (the page reader on the compute backend: a GPU, else NumPy), host (pyarrow), or auto (gpu where CuPy and nvCOMP are usable, else host).
        writer: Parquet writer of the results: gpu (the page writer on the compute backend: a GPU, else NumPy; string ids stay on pyarrow), host (pyarrow), or auto (gpu on a GPU with nvCOMP, else host); every rank of a partitioned run writes its parts the same way.
    """
    started = time.perf_counter()
    input, output = run_paths(input, output)
    check_filter(filter)
    sources = source_plan(source, source_sets)
    folder, results = result_paths(output, sources.results(BFS_RESULT_NAME))
    plan = run_plan("bfs", input, src_col, dst_col, None, filter)
    count = partition_count("bfs", plan, partitions, backend=backend, algorithms=("bfs",), directed=directed)
    check_output_paths(plan, results, directories=count > 1)
    if count > 1:
        run = partitioned_runner(results, input)
        summary = run.submit(plan, output, count, source=source, source_sets=source_sets, forest=False,
                             directed=directed, depth_limit=depth_limit, backend=backend,
                             output_layout=output_layout, compression=compression, reader=reader, writer=writer)
        return finish("bfs", input, summary, started, [summary])
    prepared = load_edges.submit(plan, backend, ("bfs",), directed, reader, sources.sets)
    graph = build_csr.submit(prepared, directed)
    searches = breadth_first_search.map(unmapped(prepared), unmapped(graph), sources.sets, unmapped(depth_limit),
                                        sources.keys)
    checks = validate_bfs.map(unmapped(prepared), searches, unmapped(directed), unmapped(depth_limit), sources.keys)
    write = results_writer(results, input)
    summary = write.submit(prepared, searches, results, output=folder, compression=compression, graph=graph,
                           checks=checks, writer=writer)
    return finish("bfs", input, summary, started, [prepared, graph, searches, checks, summary])


def main(argv=None) -> int:
    """The command line, `python -m flows.bfs INPUT ...` (flows/cli.py)."""
    from flows.cli import main as command_line

    return command_line("bfs", argv)
