"""The Prefect tasks of a partitioned run: thin wrappers around tasks/partitioned/ (the driver,
the rank program and the communicators, which know nothing of Prefect). ``decide_partitions``
asks how many partitions a run will use; ``partitioned_run`` runs it whole and publishes its
levels and validation reports as the one-partition run's tasks do; its ranks' stages are shown as they run (tasks.artifacts.StageProgress)."""
from __future__ import annotations

from prefect import Task, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from tasks import artifacts
from tasks.graph_tasks import check_flow_run_going
from tasks.lineage import materializing
from tasks.parquet.dataset.plan import InputPlan
from tasks.partitioned.driver import count_partitions, run_partitioned
from tasks.pickling import pickle_by_reference
from tasks.report import (
    RunSummary, TaskRunName, artifact_key, bfs_levels_markdown, direction_summary, filter_text, reader_text,
    search_label,
)


RUN_OPTIONS = dict(cache_policy=NO_CACHE, persist_result=False, task_run_name=TaskRunName("partitioned"))


@task(**RUN_OPTIONS)
def partitioned_run(plan: InputPlan, output: str, partitions=2, **options) -> RunSummary:
    """A whole partitioned run of the planned input (see run_partitioned); publishes the validation reports as the
    one-partition run's tasks do (bfs-validation[-source-set-K], msf-validation) and returns the
    summary without them. On a Dask worker this task leaves its worker thread while the ranks
    run, so a rank can run on its worker too; elsewhere (threads runner) the run starts its own
    cluster."""
    import distributed

    searching = bool(options.get("source_sets") or options.get("source"))
    # load, prepare, (csr, bfs,) (msf,) validate, write
    stages = artifacts.StageProgress(4 + (2 if searching else 0) + (1 if options.get("forest", True) else 0))
    try:
        distributed.get_worker()
        on_worker = True
    except ValueError:
        on_worker = False
    try:
        if not on_worker:
            summary = run_partitioned(plan, output, partitions, check=check_flow_run_going, progress=stages,
                                      **options)
        else:
            with distributed.worker_client() as client:
                summary = run_partitioned(plan, output, partitions, client=client, check=check_flow_run_going,
                                          progress=stages, **options)
    except BaseException:
        stages.fail()  # a failed rank leaves no stage running on the terminal or in the UI
        artifacts.wait_until_published(timeout=5.0)
        raise
    validate_seconds = summary.get("validate_seconds", 0.0)
    keyed = options.get("source_sets") is not None
    # each search's levels, as a one-partition run's search task publishes them (bfs-levels)
    for k, frontiers in enumerate(summary.pop("frontiers", [])):
        source_set = k if keyed else None
        steps, times = summary["steps"][k], summary["level_times"][k]
        rows = [(level + 1, frontiers[level], times[level]) for level in range(len(steps))]
        label = search_label(source_set)
        artifacts.publish(create_markdown_artifact, key=artifact_key("bfs-levels", source_set),
                          markdown=bfs_levels_markdown(f"{label}: levels", steps, rows, summary["vertices"]),
                          description=f"{label}: direction, frontier size and seconds per level")
        get_run_logger().info("%s: %s, reached %s of %s vertices in %.3f s (%d partitions)", label,
                              direction_summary(steps), f"{summary['reached'][k]:,}", f"{summary['vertices']:,}",
                              sum(times), summary["partitions"])
    for k, report in enumerate(summary.pop("bfs_validation", [])):
        source_set = k if keyed else None
        extra = {"sources": len(options["source_sets"][k]) if keyed else len(options["source"]),
                 "reached vertices": summary["reached"][k], "partitions": summary["partitions"],
                 "seconds (every check of the run)": validate_seconds}
        artifacts.publish_validation(search_label(source_set), artifact_key("bfs-validation", source_set), report,
                                     extra, validate_seconds)
    if "msf_validation" in summary:
        extra = {"forest edges": summary["forest_edges"], "total weight": summary["forest_weight"],
                 "partitions": summary["partitions"], "seconds (every check of the run)": validate_seconds}
        artifacts.publish_validation("MSF", "msf-validation", summary.pop("msf_validation"), extra, validate_seconds)
    if "filter" in summary:
        get_run_logger().info("%s", filter_text(summary))
    artifacts.wait_until_published()  # the run's one task: its reports are on the server when it ends
    get_run_logger().info("partitioned run on %d ranks, layout %s: wrote %s; reader %s", summary["partitions"],
                          summary["layout"], ", ".join(summary["outputs"]), reader_text(summary["reader"]))
    return summary


def partitioned_runner(results: list, input: str) -> Task:
    """partitioned_run, materializing the run's RESULTS (paths or URIs) from INPUT as Prefect
    assets (tasks/lineage.py)."""
    return materializing(partitioned_run, RUN_OPTIONS, results, input)


@task(cache_policy=NO_CACHE, persist_result=False, task_run_name=TaskRunName("partitions"))
def decide_partitions(plan: InputPlan, partitions="auto", backend: str | None = None,
                      algorithms: tuple = ("bfs", "msf"), directed: bool = False) -> int:
    """How many partitions the run of the planned input will use (count_partitions, asked of
    the task runner's cluster when this task runs on a Dask worker): 1 means the one-partition
    recipe."""
    import distributed

    options = dict(backend=backend, algorithms=algorithms, directed=directed)
    try:
        distributed.get_worker()
    except ValueError:
        return count_partitions(plan, partitions, **options)
    with distributed.worker_client() as client:
        return count_partitions(plan, partitions, client=client, **options)


pickle_by_reference(globals())  # tasks/pickling.py: Dask sends the functions by name
