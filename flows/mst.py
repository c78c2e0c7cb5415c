"""Minimum spanning forest of a Parquet edge list.

    python -m flows.mst data/graph.parquet [--output DIR] [--weight-col C] [--runner threads]

Writes DIR/mst_edges.parquet (or the file --output names, where it ends in .parquet): the
input's source, destination and weight columns, one row per forest edge (the chosen input row),
in input row order. With --partitions N (N > 1) the graph is split over N Dask workers; with
--output-layout dataset the result is a directory of one part per partition.
"""
if __name__ == "__main__":  # the command line checks its arguments before Prefect is imported
    from flows.cli import run_command

    run_command("mst")

import time

from prefect import flow

from flows.common import (
    FLOW_TIMEOUT_SECONDS, Backend, Compression, OutputLayout, Partitions, RunName, Writer, finish,
    check_filter, partition_count, run_plan,
)
from flows.inputs import run_paths
from flows.runners import ChosenAtRunStart
from tasks.graph_tasks import (
    load_edges, results_writer, spanning_forest, validate_forest,
)
from tasks.parameters import weight_column
from tasks.parquet.publish.output_paths import check_output_paths
from tasks.parquet.write.results import DEFAULT_COMPRESSION, DEFAULT_LAYOUT, FOREST_RESULT_NAME, result_paths
from tasks.partitioned_tasks import partitioned_runner


@flow(name="mst", flow_run_name=RunName("mst"), task_runner=ChosenAtRunStart(), log_prints=True,
      timeout_seconds=FLOW_TIMEOUT_SECONDS, persist_result=True, result_serializer="json")
def mst_flow(input: str, output: str | None = None, src_col: str = "src", dst_col: str = "dst",
             weight_col: str | None = "weight", backend: Backend | None = None,
             compression: Compression = DEFAULT_COMPRESSION, partitions: Partitions = 1,
             output_layout: OutputLayout = DEFAULT_LAYOUT, filter: str | None = None, reader: str = "auto",
             writer: Writer = "auto") -> dict:
    """Minimum spanning forest: load -> renumber -> Boruvka -> verify -> write mst_edges.parquet.

    Args:
        input: Parquet file, directory of Parquet files, or glob pattern of them (data/parts/*.parquet), one edge per row.
        output: Directory for mst_edges.parquet (default: output/graph/ for input data/graph.parquet), or the forest's own file: a path ending in .parquet, .parq or .pq.
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
    weight_col = weight_column(weight_col)
    plan = run_plan("mst", input, src_col, dst_col, weight_col, filter)
    count = partition_count("mst", plan, partitions, backend=backend, algorithms=("msf",))
    folder, results = result_paths(output, [FOREST_RESULT_NAME])
    check_output_paths(plan, results, directories=count > 1)
    if count > 1:
        run = partitioned_runner(results, input)
        summary = run.submit(plan, output, count, forest=True, backend=backend, output_layout=output_layout,
                             compression=compression, reader=reader, writer=writer)
        return finish("mst", input, summary, started, [summary])
    prepared = load_edges.submit(plan, backend, ("msf",), reader=reader)
    forest = spanning_forest.submit(prepared)
    check = validate_forest.submit(prepared, forest)
    write = results_writer(results, input)
    summary = write.submit(prepared, [], results, forest, folder, compression, checks=[check], writer=writer)
    return finish("mst", input, summary, started, [prepared, forest, check, summary])


def main(argv=None) -> int:
    """The command line, `python -m flows.mst INPUT ...` (flows/cli.py)."""
    from flows.cli import main as command_line

    return command_line("mst", argv)
