"""A stop asked of this process: the command line's signal watchdog asks for one the moment
SIGINT or SIGTERM arrives, before it ends the process. From then on no stage starts and no
result is published (renamed into place), so a run stopped by a signal leaves no output even
where the rest of the run would have taken less time than the watchdog's grace."""
from __future__ import annotations

import threading

_requested = threading.Event()
_ended_runs: set[str] = set()  # flow runs that ended while tasks of theirs ran in this process


class Stopped(RuntimeError):
    """The process was asked to stop (a signal): the stage did not run."""


def request_stop() -> None:
    _requested.set()


def requested() -> bool:
    return _requested.is_set()


def check(stage: str) -> None:
    """Raise Stopped naming ``stage`` if a stop was asked for, or if the flow run of the task
    calling it has ended (``end_run``: on a Dask worker, how a stop asked of the command
    arrives)."""
    if requested():
        raise Stopped(f"stopped by a signal before {stage}")
    if _ended_runs:
        from prefect.runtime import flow_run

        if run_ended(flow_run.get_id()):
            raise Stopped(f"the flow run ended before {stage}")


def end_run(run_id) -> None:
    """Flow run ``run_id`` has ended (over its time limit): its tasks still running in this
    process publish nothing (``run_ended``)."""
    _ended_runs.add(str(run_id))


def run_ended(run_id) -> bool:
    return str(run_id) in _ended_runs
