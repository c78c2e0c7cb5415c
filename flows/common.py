"""What the three flows share: parameter types, run names, the run's one input plan (taken
from the command line, flows/inputs.py, or made here), the partition count, and the end of a run."""
from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from typing import Annotated, Literal, Union

from prefect import get_run_logger
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from pydantic import Field, StrictInt

from flows.inputs import take_handed_over
from flows.run_log import quiet_failures
from tasks import settings, stopping
from tasks.artifacts import publish_failure, publish_summary
from tasks.parameters import BACKENDS
from tasks.parquet.dataset.filters import parse as parse_filter
from tasks.parquet.dataset.plan import InputPlan, plan_input
from tasks.parquet.write.results import COMPRESSIONS, LAYOUTS, WRITERS
from tasks.partitioned_tasks import decide_partitions
from tasks.report import RunSummary, describe, input_stem

# Parameter types: Prefect checks them when a run starts (before any task), so a wrong value
# from the UI's form or from Python fails the run at once with one message naming it.
Backend = Literal[BACKENDS]
Compression = Literal[COMPRESSIONS]
DepthLimit = Annotated[int, Field(ge=0)]
Partitions = Union[Annotated[int, Field(ge=1)], Literal["auto"]]
OutputLayout = Literal[LAYOUTS]
Writer = Literal[WRITERS]
# A source vertex: an int (from Python, or a JSON number in a deployment's parameters) or its
# text (the command line, the UI's form, string ids). Strict, so True is not taken for vertex 1.
VertexId = Union[StrictInt, str]

# A run that takes longer than this fails with a timeout instead of holding its work pool slot
# (a hung network mount, a runaway input): far above the largest graph measured (Kron-24
# pipeline on an H200: 26 s; on 2 CPU cores Kron-20: 17 s).
FLOW_TIMEOUT_SECONDS = settings.seconds("GRAPH_FLOW_TIMEOUT_SECONDS", 6 * 3600)

# Tags every run carries (deployments add their own in prefect.yaml).
TAGS = ("graph",)

quiet_failures()  # a failed run's log: one ERROR line (flows/run_log.py)


def check_filter(filter: str | None) -> None:
    """A filter's text is checked when the run starts, before any task: a typo fails the run at
    once, naming what is wrong (its columns are checked against the input when it is read)."""
    if filter is not None:
        parse_filter(filter)


@dataclass(frozen=True)
class RunName:
    """flow_run_name: '<flow>-<input stem>', e.g. mst-graph. A class rather than a closure, so
    that it pickles by reference: the flow travels in every task run's context to the workers."""

    kind: str

    def __call__(self) -> str:
        from prefect.runtime import flow_run

        return f"{self.kind}-{input_stem(flow_run.parameters.get('input', 'input'))}"


def run_plan(kind: str, input: str, src_col: str, dst_col: str, weight_col: str | None,
             filter: str | None) -> InputPlan:
    """The run's one plan of its input (tasks.parquet.dataset.plan: one walk, one footer read
    per file), handed to every step that asks about the input: the command line's (handed_over),
    else made now. An input it refuses fails the run, published as a failed load is."""
    plan = take_handed_over(input, src_col, dst_col, weight_col, filter)
    if plan is not None:
        return plan
    try:
        return plan_input(input, src_col, dst_col, weight_col, filter=filter)
    except Exception as exc:
        publish_failure(kind, input, exc)
        raise


def partition_count(kind: str, plan: InputPlan, partitions: int | str, **options) -> int:
    """How many partitions the run of ``plan`` uses: 1 (the one-partition recipe) when 1 was
    asked for, else tasks.partitioned_tasks.decide_partitions's answer (``auto`` may give 1);
    an input it refuses fails the run as a failed load would."""
    if partitions == 1:
        return 1
    decision = decide_partitions.submit(plan, partitions, **options)
    try:
        return decision.result()
    except Exception as exc:
        publish_failure(kind, plan.path, exc)
        raise


def _publish_nothing_more() -> None:
    """The flow run is ending while tasks of its are still running: they are told to publish
    nothing, here and on the Dask workers (write_results asks, tasks.graph_tasks.check_flow_run_going)."""
    run = FlowRunContext.get()
    if run is not None:
        stopping.end_run(run.flow_run.id)
        tell_workers = getattr(run.task_runner, "end_run_on_workers", None)
        if tell_workers is not None:
            tell_workers(run.flow_run.id)


def finish(kind: str, input: str, summary: PrefectFuture, started: float, stages: list) -> RunSummary:
    """Fetch the run's summary, the one result the flow process takes from the workers (a small
    dict; every other product stays where it was made: waiting on a Dask future would fetch its
    data), and publish it as the run's first artifact. The summary depends on every stage, so
    it settles last. If it did not complete, publish what failed and raise the error of the
    first stage that failed (stages are in recipe order, so that is the cause, not a downstream
    task that never ran)."""
    try:
        result = summary.result()
    except asyncio.CancelledError:
        # the run's time limit: Prefect cancels the flow where it waits and marks the run failed
        # (TimedOut), but the tasks already running go on (the task runner waits for them)
        _publish_nothing_more()
        raise
    except Exception as exc:
        error = _first_error(stages) or exc
        _wait_for_workers_artifacts()
        publish_failure(kind, input, error)
        if error is exc:
            raise
        raise error from None
    except BaseException:
        # a signal (KeyboardInterrupt, Prefect's TerminationSignal): this process publishes
        # nothing more (flows/interrupts.py), but tasks on Dask workers would go on and publish
        # their results within the command's grace before it ends them
        _publish_nothing_more()
        raise
    _wait_for_workers_artifacts()
    result["total_seconds"] = round(time.perf_counter() - started, 3)
    publish_summary(kind, result)
    get_run_logger().info("%s", describe(kind, result))
    return result


def _wait_for_workers_artifacts() -> None:
    """The artifacts that the run's tasks published on other Dask workers than the last task's
    are on the server before the run ends (flows/dask_runner.py)."""
    run = FlowRunContext.get()
    wait = getattr(run.task_runner if run else None, "wait_for_workers_artifacts", None)
    if wait is not None:
        wait()


def _first_error(stages: list) -> BaseException | None:
    for future in (f for stage in stages for f in (stage if isinstance(stage, list) else [stage])):
        if _failed(future):
            try:
                future.result()  # raises that task's own error (only the error travels)
            except Exception as exc:
                return exc
    return None


def _state_failed(state) -> bool:
    return state.is_failed() or state.is_crashed()


def _failed(future: PrefectFuture) -> bool:
    """Whether a settled task failed, asked where its state lives: a Dask future's state holds
    the task's product, so the question is sent to its worker rather than the state fetched."""
    wrapped = getattr(future, "wrapped_future", None)
    if "distributed" in sys.modules:
        import distributed

        if isinstance(wrapped, distributed.Future):
            return wrapped.client.submit(_state_failed, wrapped).result()
    future.wait()
    return _state_failed(future.state)
