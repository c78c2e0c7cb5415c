"""Artifacts that tasks publish, sent to the Prefect server by one thread of the process while
the tasks go on.

Each artifact is one API call, 10-40 ms of a task's time with a busy server, and a pipeline run
publishes six from its tasks (progress, the per-level and per-round tables, two validation
reports) on the one chain of tasks that a GPU worker runs. Sent here, they overlap the next
task's work. The run's last task waits for those of its own process, and a flow run on a Dask
cluster of several workers asks every worker for theirs before it ends
(flows/dask_runner.ReusingDaskTaskRunner.wait_for_workers_artifacts), so that they are all on
the server when the run ends. A failed validation's report is sent before the run fails.

Calls run one at a time in the order they were made, each in a copy of its caller's context
(the task run it belongs to, the settings), with this thread's own API client: the caller's
client may be closed once its task run ends. A call that fails is logged, not raised: an
artifact reports on a result, it is not one.

The run's own artifacts are published here too, for both the one-partition and the partitioned
path: its summary table or what failed (by the flow), and the validation reports (by the tasks);
their text comes from tasks/report.py. ``Progress`` is the progress bar of a long search or
forest, published the same way.
"""
from __future__ import annotations

import asyncio
import atexit
import contextvars
import inspect
import logging
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

from prefect import get_run_logger
from prefect.artifacts import (
    create_markdown_artifact, create_progress_artifact, create_table_artifact, update_progress_artifact,
)
from prefect.context import FlowRunContext, SettingsContext, SyncClientContext

from tasks import settings
from tasks.errors import ValidationFailed
from tasks.report import (
    STAGES_KEY, RunSummary, failure_rows, stages_description, summary_rows, validation_markdown,
)

_calls: queue.SimpleQueue = queue.SimpleQueue()
_pending = 0  # calls made and not yet finished
_finished = threading.Condition()
_sender: threading.Thread | None = None
_clients: dict = {}  # the sender's API client per (API URL, key); used by the sender thread only


def publish(create: Callable[..., Any], /, *args, **kwargs) -> Future:
    """Call ``create(*args, **kwargs)`` (one of prefect.artifacts' functions) on the sender
    thread; the future holds what it returns (the artifact's id)."""
    global _pending, _sender
    future: Future = Future()
    with _finished:
        _pending += 1
        if _sender is None:
            _sender = threading.Thread(target=_send_forever, name="artifact-sender", daemon=True)
            _sender.start()
            atexit.register(wait_until_published)
    _calls.put((contextvars.copy_context(), create, args, kwargs, future))
    return future


def wait_until_published(timeout: float = 30.0) -> bool:
    """Wait until every call made in this process so far has finished; False, with a warning,
    if some had not after ``timeout`` seconds (they are still sent, later)."""
    with _finished:
        if _finished.wait_for(lambda: _pending == 0, timeout):
            return True
        left = _pending
    logging.getLogger(__name__).warning("%d artifact(s) not yet on the server after %.0f s; still sending them", left, timeout)
    return False


async def wait_on_dask_worker(timeout: float = 30.0) -> bool:
    """wait_until_published for Dask's ``Client.run``: awaited in the worker's event loop and run
    in a thread, so that the worker goes on answering its scheduler meanwhile."""
    return await asyncio.to_thread(wait_until_published, timeout)


def _send_forever() -> None:
    global _pending
    while True:
        context, create, args, kwargs, future = _calls.get()
        try:
            future.set_result(context.run(_with_own_client, create, args, kwargs))
        except Exception as exc:
            future.set_exception(exc)
            logging.getLogger(__name__).warning("could not publish an artifact (%s): %s", create.__name__, exc)
        finally:
            with _finished:
                _pending -= 1
                _finished.notify_all()


def _with_own_client(create: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Inside the caller's context (a copy of it, so the change stays here): this thread's
    client for the caller's server."""
    settings = SettingsContext.get().settings
    key = (str(settings.api.url), settings.api.key.get_secret_value() if settings.api.key else None)
    if key not in _clients:
        SyncClientContext.__var__.set(None)  # else the next line would return the caller's client
        client = SyncClientContext()
        client.client.__enter__()
        _clients[key] = client
    SyncClientContext.__var__.set(_clients[key])
    result = create(*args, **kwargs)
    if inspect.iscoroutine(result):  # an async task's or flow's context makes prefect.artifacts' calls async
        result = asyncio.run(result)
    return result


def publish_summary(kind: str, summary: RunSummary) -> None:
    """The run's summary as a table artifact. Called by the flow itself, not a task, so that the
    artifact belongs to the flow run and opens its Artifacts tab. Sent while Prefect records the
    run's end; the flows' task runners wait for it as they close (flows/runners.py). A runner
    without that wait (one of Prefect's, given by the caller) would let the flow call return
    before the summary is on the server: the summary is waited for here instead."""
    publish(create_table_artifact, key=f"{kind}-summary", table=summary_rows(summary),
            description=f"{kind} run: what it read, computed, checked and wrote")
    run = FlowRunContext.get()
    if not getattr(run.task_runner if run else None, "waits_for_published_artifacts", False):
        wait_until_published()


def publish_failure(kind: str, input: str, error: BaseException) -> None:
    """A failed run's summary: what failed and why, in place of the figures."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    create_table_artifact(key=f"{kind}-summary", table=failure_rows(input, message, isinstance(error, ValidationFailed)),
                          description=f"{kind} run FAILED: {message}")


def publish_validation(label: str, key: str, report: dict[str, int], extra: dict, seconds: float) -> None:
    """A validation report (check -> violations) as a markdown artifact; then, if any check
    failed, ValidationFailed naming them, once the report that says why is on the server."""
    failed = {k: v for k, v in report.items() if v != 0}
    publish(create_markdown_artifact, key=key,
            markdown=validation_markdown(f"{label} validation: {'FAILED' if failed else 'passed'}", report, extra),
            description=f"Independent verification of the {label} result")
    if failed:
        detail = ", ".join(f"{k} ({v})" for k, v in failed.items())
        wait_until_published()
        raise ValidationFailed(f"{label} result failed validation: {detail}; nothing was written")
    get_run_logger().info("%s validation passed: %d checks in %.3f s", label, len(report), seconds)


class Progress:
    """A progress artifact in the UI, for graphs of at least PROGRESS_MIN_EDGES edges; updated
    at most every UPDATE_SECONDS so that fast GPU levels do not wait on the API. It is created
    by the first update due, so a step done within UPDATE_SECONDS publishes one artifact at 100%
    with one API call instead of two (each call costs a task ~10-40 ms of a loaded server)."""

    UPDATE_SECONDS = 0.5

    def __init__(self, key: str, edges: int, title: str):
        self.key, self.title, self.artifact = key, title, None
        self.wanted = edges >= settings.whole_number("GRAPH_PROGRESS_MIN_EDGES", 1_000_000)
        self.last = time.monotonic()

    def update(self, percent: float, description: str, final: bool = False) -> None:
        if not self.wanted or (not final and time.monotonic() - self.last < self.UPDATE_SECONDS):
            return
        percent, description = min(100.0, percent), f"{self.title}: {description}"
        if self.artifact is None:
            self.artifact = publish(create_progress_artifact, percent, key=self.key, description=description)
        else:
            publish(_update_progress, self.artifact, percent, description)
        self.last = time.monotonic()


class StageProgress:
    """The stages of a partitioned run as a progress artifact (key STAGES_KEY) of its one task:
    one line per stage in the order they started, "STAGE: running", "STAGE: done in X s" or
    "STAGE: failed" (tasks.report.stage_states reads them back; flows/progress.py prints each
    change on the command's terminal). Fed the reports of the run's rank 0
    (tasks.partitioned.driver), one update per batch; ``expected`` stages make its percentage."""

    def __init__(self, expected: int):
        self.expected, self.states, self.artifact = max(1, expected), {}, None
        self.seconds: dict[str, float] = {}  # per stage, over its runs (a search per source set)

    def __call__(self, reports: list[dict]) -> None:
        for report in reports:
            stage = str(report.get("stage"))
            if report.get("event") == "start":
                self.states[stage] = "running"
            elif report.get("event") == "end":
                self.seconds[stage] = self.seconds.get(stage, 0.0) + float(report.get("seconds", 0.0))
                self.states[stage] = f"done in {self.seconds[stage]:.1f} s"
        self._publish()

    def fail(self) -> None:
        """The run failed: no stage is left running."""
        running = [stage for stage, state in self.states.items() if state == "running"]
        for stage in running:
            self.states[stage] = "failed"
        if running:
            self._publish()

    def _publish(self) -> None:
        done = sum(state.startswith("done") for state in self.states.values())
        percent = min(100.0, 100.0 * done / self.expected)
        description = stages_description(self.states)
        if self.artifact is None:
            self.artifact = publish(create_progress_artifact, percent, key=STAGES_KEY, description=description)
        else:
            publish(_update_progress, self.artifact, percent, description)


def _update_progress(created, percent: float, description: str) -> None:
    """A progress artifact's update, published after its creation: the id is there by then."""
    update_progress_artifact(created.result(), percent, description=description)
