"""A line on the terminal per stage of a command's run, for runs that take more than a few
seconds: without --verbose the command shows nothing of Prefect's log, and a laptop run of a
large graph was silent for 20-30 s.

Once the run has been running for GRAPH_PROGRESS_AFTER_SECONDS (default 3), a thread of the
command reads the run's task runs from the server every POLL_SECONDS and writes one line to
stderr when a stage starts and one when it ends (the task runs are named after their stage,
tasks.report.TaskRunName), e.g.::

    progress  3.0 s: load-kron21 running
    progress  6.4 s: load-kron21 done in 6.3 s
    progress  6.4 s: csr running, msf running

(seconds since the run started running).

A partitioned run is one task (partitioned-<stem>) that runs every rank's whole program; its
ranks' stages are the lines of a progress artifact of that task (tasks.artifacts.StageProgress,
key partitioned-stages), read at the same looks and written the same way when a stage's line
changes (``load running``, ``load done in 0.4 s``, ``bfs failed``).

A shorter run writes nothing. Asked of the server, so it sees the stages that Dask workers run
as well as those of this process; stdout keeps only the command's results.
"""
from __future__ import annotations

import sys
import threading
import time

from tasks import settings
from tasks.report import STAGES_KEY, stage_states

POLL_SECONDS = 1.0
AFTER_SECONDS = 3.0
# Task-run states reach the server as events, a moment after the task itself ends: when the run
# has returned, the last stages may still read RUNNING there. The last look waits this long at
# most for them to end, so that every stage that started gets its line.
SETTLE_SECONDS = 3.0


class StageLines:
    """Started when the command starts its run, stopped when the run has returned; ``run``
    gives (flow run id, API URL) once the run is running, else None (flows.interrupts.noted_run)."""

    def __init__(self, run, stream=None):
        self.run, self.stream = run, stream or sys.stderr
        self.after = settings.seconds("GRAPH_PROGRESS_AFTER_SECONDS", AFTER_SECONDS)
        self.started = None  # when the run started running
        self.seen: dict[str, str] = {}  # task run id -> the state type last written
        self.stages: dict[tuple[str, str], str] = {}  # (artifact id, stage) -> its state last written
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="stage-progress", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=SETTLE_SECONDS + 5)

    def _watch(self) -> None:
        while self.run() is None:  # (not yet running: the flow run is being created)
            if self.done.wait(0.1):
                return
        self.started = time.monotonic()  # the run's own time counts, not the command's start
        if self.done.wait(self.after):
            return  # a short run: nothing to say
        run_id, api = self.run()
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import (
            ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey, FlowRunFilter, FlowRunFilterId,
        )
        from prefect.settings import PREFECT_API_URL, temporary_settings

        try:
            with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
                stages = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]),
                                        key=ArtifactFilterKey(any_=[STAGES_KEY]))

                def look():
                    runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id])))
                    self._write(runs, client.read_artifacts(artifact_filter=stages) if any(
                        _has_stages(run) for run in runs) else [])

                while not self.done.wait(POLL_SECONDS):
                    look()
                settled = time.monotonic() + SETTLE_SECONDS  # the run has returned: a last look
                look()
                while "RUNNING" in self.seen.values() and time.monotonic() < settled:
                    time.sleep(0.2)
                    look()
        except Exception:  # the progress lines are a courtesy: the run itself goes on without them
            return

    def _write(self, runs, stage_artifacts=()) -> None:
        started, ended, owners_ended = [], [], []
        for run in sorted(runs, key=lambda r: (r.start_time or r.expected_start_time or 0, r.name)):
            state = run.state_type.value if run.state_type else None
            if state == self.seen.get(str(run.id)) or state not in ("RUNNING", "COMPLETED", "FAILED", "CRASHED"):
                continue
            if state == "RUNNING":
                started.append(f"{run.name} running")
            elif state == "COMPLETED":
                (owners_ended if _has_stages(run) else ended).append(
                    f"{run.name} done in {run.total_run_time.total_seconds():.1f} s")
            else:
                (owners_ended if _has_stages(run) else ended).append(f"{run.name} {state.lower()}")
            self.seen[str(run.id)] = state
        stages_started, stages_ended = [], []  # a partitioned run's stages (one artifact per such task)
        for artifact in sorted(stage_artifacts, key=lambda a: a.created or 0):
            for stage, state in stage_states(artifact.description):
                if self.stages.get((str(artifact.id), stage)) != state:
                    (stages_started if state == "running" else stages_ended).append(f"{stage} {state}")
                    self.stages[str(artifact.id), stage] = state
        elapsed = time.monotonic() - self.started
        # what ended, then what started since the last look; a partitioned task's stages start
        # after it and end before it
        for part in (ended, started, stages_ended, stages_started, owners_ended):
            if part:
                print(f"progress {elapsed:4.1f} s: {', '.join(part)}", file=self.stream, flush=True)


def _has_stages(run) -> bool:
    """A partitioned run's one task (tasks.partitioned_tasks.partitioned_run, partitioned-<stem>),
    whose ranks' stages are its StageProgress artifact."""
    return run.name.startswith("partitioned")
