"""What a run's log says when it fails, and an error as one line.

Prefect logs a failed run's error several times at ERROR: the failing task's "Task run failed
with exception" (traceback included), its "Finished in state Failed(...)", one "Finished in
state NotReady(... did not reach a 'COMPLETED' state)" for every task downstream of it, and the
flow's "Encountered exception during execution" with the traceback again. ``quiet_failures``
leaves one ERROR line, the flow's, holding the error's message (``one_line``), and moves the
rest, the traceback included, to DEBUG: shown where PREFECT_LOGGING_LEVEL=DEBUG, as Prefect's
own DEBUG lines are. The two INFO lines Prefect writes around each hook of a run are DEBUG too
for the command line's own hook (flows.interrupts.note_run), which tells a user nothing. Installed in every process that runs a flow or its tasks (flows/common.py
when a flow is imported, flows/worker_start.py on Dask workers).
"""
from __future__ import annotations

import logging
import re

# records of these loggers are looked at; their text is Prefect's (prefect/task_engine.py,
# prefect/flow_engine.py, 3.9)
LOGGERS = ("prefect.task_runs", "prefect.flow_runs", "prefect.engine")
TO_DEBUG = ("Finished in state NotReady(", "Finished in state Failed(", "Task run failed with exception")
FLOW_FAILED = "Encountered exception during execution"
QUIET_HOOKS = ("Running hook 'note_run'", "Hook 'note_run' finished")


def one_line(exc: BaseException) -> str:
    """An error as the one line a command prints and a failed run's log holds."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    lines = [line.strip(" -") for line in text.splitlines() if line.strip()]
    if type(exc).__name__ == "ParameterTypeError":  # "invalid parameters:" + one line per parameter
        return "invalid parameters: " + "; ".join(lines[1:])
    if type(exc).__name__ == "FlowRunTimeoutError":  # Prefect's text: "Scope timed out after N second(s)."
        limit = re.search(r"after ([0-9.e+]+) second", text)
        return (f"the run took longer than its time limit{f' of {float(limit[1]):g} s' if limit else ''} and was "
                "stopped (GRAPH_FLOW_TIMEOUT_SECONDS sets the limit)")
    return lines[0]


class _QuietFailures(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        logger = logging.getLogger(record.name)
        message = str(record.msg)
        if message.startswith(QUIET_HOOKS):
            return self._debug(record, logger)
        if record.levelno < logging.ERROR:
            return True
        if message.startswith(FLOW_FAILED) and record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            traceback = logging.makeLogRecord({**record.__dict__, "levelno": logging.DEBUG, "levelname": "DEBUG",
                                               "msg": "the traceback of the run's error:", "args": ()})
            record.msg, record.args, record.exc_info, record.exc_text = one_line(error), (), None, None
            logger.handle(record)  # (passes this filter now: its text changed)
            if logger.isEnabledFor(logging.DEBUG):
                logger.handle(traceback)
            return False
        if message.startswith(TO_DEBUG):
            return self._debug(record, logger)
        return True

    @staticmethod
    def _debug(record: logging.LogRecord, logger: logging.Logger) -> bool:
        """The record at DEBUG, kept only where its logger takes DEBUG."""
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logger.isEnabledFor(logging.DEBUG)


_filter = _QuietFailures()


def quiet_failures() -> None:
    """Install the filter on Prefect's run loggers of this process (once)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _filter not in logger.filters:
            logger.addFilter(_filter)
