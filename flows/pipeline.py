"""BFS distances and the minimum spanning forest of one Parquet edge list, with one ingest.

    python -m flows.pipeline data/graph.parquet --source 0 [--source ID ...] [--source-set ID,ID ...]

Writes DIR/bfs_distances.parquet (or DIR/source-set-K/ per set) and DIR/mst_edges.parquet, only
once every result is verified. With --partitions N (N > 1) the graph is split over N Dask
workers (see flows/bfs.py and flows/mst.py for the rows' order and --output-layout).
"""
if __name__ == "__main__":  # the command line checks its arguments before Prefect is imported
    from flows.cli import run_command

    run_command("pipeline")

import time

from prefect import flow, unmapped

from flows.common import (
    FLOW_TIMEOUT_SECONDS, Backend, Compression, DepthLimit, OutputLayout, Partitions, RunName, Writer,
    VertexId, check_filter, finish, partition_count, run_plan,
)
from flows.inputs import run_paths
from flows.runners import ChosenAtRunStart
from tasks.graph_tasks import (
    breadth_first_search, build_csr, load_edges, spanning_forest, results_writer, validate_bfs, validate_forest,
)
from tasks.parameters import source_plan, weight_column
from tasks.parquet.publish.output_paths import check_output_paths
from tasks.parquet.write.results import (
    BFS_RESULT_NAME, DEFAULT_COMPRESSION, DEFAULT_LAYOUT, FOREST_RESULT_NAME, result_paths,
)
from tasks.partitioned_tasks import partitioned_runner


@flow(name="pipeline", flow_run_name=RunName("pipeline"), task_runner=ChosenAtRunStart(), log_prints=True,
      timeout_seconds=FLOW_TIMEOUT_SECONDS, persist_result=True, result_serializer="json")
def pipeline_flow(input: str, source: list[VertexId] | None = None, source_sets: list[list[VertexId]] | None = None,
                  output: str | None = None, directed: bool = False, depth_limit: DepthLimit | None = None,
                  src_col: str = "src", dst_col: str = "dst", weight_col: str | None = "weight",
                  backend: Backend | None = None, compression: Compression = DEFAULT_COMPRESSION,
                  partitions: Partitions = 1, output_layout: OutputLayout = DEFAULT_LAYOUT,
                  filter: str | None = None, reader: str = "auto",
                  writer: Writer = "auto") -> dict:
    """BFS and minimum spanning forest with one ingest: load -> renumber -> CSR -> BFS per
    source set and Boruvka, in parallel -> verify all -> write all (and summarize).

    Args:
        input: Parquet file, directory of Parquet files, or glob pattern of them (data/parts/*.parquet), one edge per row.
        source: Vertex ids of one search from all of them (give this or source_sets).
        source_sets: Lists of vertex ids, one separate search per list, each written to OUTPUT/source-set-K/.
        output: Directory for bfs_distances.parquet and mst_edges.parquet (default: output/graph/ for input data/graph.parquet).
        directed: BFS follows edges src -> dst only (the forest is always undirected).
        depth_limit: Stop each search after this many levels (default: no limit).
        src_col: Column of source vertex ids (integers or strings).
        dst_col: Column of destination vertex ids (same type as src_col).
        weight_col: Column of edge weights (numeric, finite), or None (or "none") for an unweighted edge list: the forest of unit weights.
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
    folder, results = result_paths(output, [*sources.results(BFS_RESULT_NAME), FOREST_RESULT_NAME])
    weight_col = weight_column(weight_col)
    plan = run_plan("pipeline", input, src_col, dst_col, weight_col, filter)
    count = partition_count("pipeline", plan, partitions, backend=backend, algorithms=("bfs", "msf"),
                            directed=directed)
    check_output_paths(plan, results, directories=count > 1)
    if count > 1:
        run = partitioned_runner(results, input)
        summary = run.submit(plan, output, count, source=source, source_sets=source_sets, forest=True,
                             directed=directed, depth_limit=depth_limit, backend=backend,
                             output_layout=output_layout, compression=compression, reader=reader, writer=writer)
        return finish("pipeline", input, summary, started, [summary])
    prepared = load_edges.submit(plan, backend, ("bfs", "msf"), directed, reader, sources.sets)
    graph = build_csr.submit(prepared, directed)
    searches = breadth_first_search.map(unmapped(prepared), unmapped(graph), sources.sets, unmapped(depth_limit),
                                        sources.keys)
    forest = spanning_forest.submit(prepared)
    checks = [*validate_bfs.map(unmapped(prepared), searches, unmapped(directed), unmapped(depth_limit), sources.keys),
              validate_forest.submit(prepared, forest)]
    write = results_writer(results, input)
    summary = write.submit(prepared, searches, results, forest, folder, compression, graph=graph,
                           checks=checks, writer=writer)
    return finish("pipeline", input, summary, started, [prepared, graph, searches, forest, checks, summary])


def main(argv=None) -> int:
    """The command line, `python -m flows.pipeline INPUT ...` (flows/cli.py)."""
    from flows.cli import main as command_line

    return command_line("pipeline", argv)
