"""SIGINT and SIGTERM during a command: the handlers that turn both into KeyboardInterrupt, the
watchdog that ends the process if the run does not unwind in time, how to tell that a run
ended because of a signal, the state the run is left in on the server, and the clean-up of what
its processes were writing.

A run the command stopped is Cancelled on the server before the command exits 130: Prefect
itself would record a crash only once the run has unwound (the task in hand finished), which
the watchdog does not wait for, and with no heartbeat (the command turns it off) nothing would
ever mark it. A run that had completed before the signal took effect is left Completed, and the
command then exits 0. Once the command's outcome is decided (``ending``), a signal ends the
process at once with that exit status: no traceback from a signal during the clean-up, and no
silent 143 from the default handler while Prefect's exit handlers send the last logs.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path


def remove_temporaries(params: dict, ending: int | None = None) -> None:
    """The run's processes are gone (or, ``ending``, this one is about to go): what they were
    writing is a stale temporary file."""
    from flows.inputs import output_directory
    from tasks.parquet.store import locations
    from tasks.parquet.store.filesystem import resolve
    from tasks.parquet.publish.publish import remove_stale_staging, remove_stale_store_staging
    from tasks.parquet.write.result_files import remove_stale_temporaries

    output = output_directory(params["output"], params["input"])
    if locations.is_store(output):  # a one-partition run leaves nothing there; a partitioned one its staging
        try:
            remove_stale_store_staging(*resolve(output), ending)
        except (ValueError, OSError):  # InputError, OutputError: the store unreachable; a later run removes it
            pass
        return
    output = Path(locations.local_path(output))
    if output.is_dir():
        remove_stale_staging(output, ending)
        for directory in (output, *output.glob("source-set-*")):
            remove_stale_temporaries(directory, ending)


# After SIGINT or SIGTERM the run unwinds (Prefect records how it ended, the task runner waits
# for the task in hand: the forest of a large graph takes seconds). A command asked to stop
# answers within a second whatever it was doing: a watchdog, woken by the signal through
# Python's wakeup fd (which sees every signal, whichever handler Prefect has installed), ends
# the process INTERRUPT_GRACE_SECONDS later if it is still there: it stops the processes this
# command started, removes the temporary files and exits 130.
INTERRUPT_GRACE_SECONDS = 0.5


class Watchdog:
    """Started once the handlers are installed; ``close`` when the command ends. ``server``: the
    command's temporary Prefect server (flows.server.TemporaryServer), killed on the way out."""

    def __init__(self, params: dict, server):
        self.params, self.server = params, server
        self.read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        self.write_end = write_end
        self.previous = signal.set_wakeup_fd(write_end)
        threading.Thread(target=self._wait, name="interrupt-watchdog", daemon=True).start()

    def _wait(self) -> None:
        while True:  # each byte is the number of a signal that arrived; a library's own (SIGCHLD) passes
            try:
                woken = os.read(self.read_end, 1)
            except OSError:
                return
            if not woken:
                return
            if woken[0] in SIGNALS and not _ending:
                from tasks import stopping

                stopping.request_stop()  # in-process stages: none starts, nothing is published
                time.sleep(INTERRUPT_GRACE_SECONDS)
                if not _ending:  # (the run may have unwound meanwhile, and the command be ending)
                    self._end(woken[0])

    def _end(self, signum: int) -> None:
        if mark_stopped(signum) == "COMPLETED":  # done before the signal took effect: as a run that ended
            print(COMPLETED_ANYWAY, file=sys.stderr, flush=True)
            os._exit(0)
        try:
            import psutil

            children = psutil.Process().children(recursive=True)
            for child in children:
                child.terminate()
            psutil.wait_procs(children, timeout=0.2)
        except Exception:  # ending anyway: what is left of the children ends with its parent
            pass
        # once more, last: the flow run's engine, still unwinding in this process, may have
        # recorded a crash or a failure over the first mark meanwhile (the children it waited on
        # have just gone)
        mark_stopped(signum)
        if self.server is not None and self.server.process.poll() is None:
            self.server.process.kill()
        try:
            remove_temporaries(self.params, ending=os.getpid())
        finally:
            print("interrupted: no partial file was left", file=sys.stderr, flush=True)
            os._exit(130)

    def close(self) -> None:
        signal.set_wakeup_fd(self.previous)
        os.close(self.write_end)  # the watchdog reads end-of-file and leaves
        os.close(self.read_end)


_signals_received: list[int] = []
SIGNALS = (signal.SIGINT, signal.SIGTERM)
COMPLETED_ANYWAY = "interrupted after the run had completed: its results were written"
_run: dict = {}  # the flow run this command started: its id and API (note_run)
_marking = threading.Lock()
_ending = False


def note_run(flow, flow_run, state) -> None:
    """An on_running hook that the command adds to its flow: the run to mark if a signal ends
    the command, and the API it is on (the command's settings are not the watchdog thread's)."""
    from prefect.settings import PREFECT_API_URL

    _run.update(id=flow_run.id, api=PREFECT_API_URL.value())


def noted_run() -> tuple | None:
    """(id, API URL) of the command's flow run once it runs (note_run), else None."""
    return (_run["id"], _run["api"]) if "id" in _run else None


def mark_stopped(signum: int | None = None, timeout: float = 5.0) -> str | None:
    """Set the command's flow run Cancelled on the server, naming the signal, unless it had
    completed (or is already cancelled); returns the type of the state the run is left in
    (None: no run started, or the server did not answer within ``timeout`` seconds)."""
    if "id" not in _run:
        return None
    signum = signum or (_signals_received[0] if _signals_received else signal.SIGINT)
    answer: list = []

    def mark():
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings
        from prefect.states import Cancelled

        with _marking, temporary_settings(updates={PREFECT_API_URL: _run["api"]}), \
                get_client(sync_client=True) as client:
            state = client.read_flow_run(_run["id"]).state
            if state is None or state.type.value not in ("COMPLETED", "CANCELLED"):
                message = f"stopped by {signal.Signals(signum).name}: the command that ran it was interrupted"
                state = client.set_flow_run_state(_run["id"], Cancelled(message=message), force=True).state
            answer.append(state.type.value if state is not None else None)

    worker = threading.Thread(target=mark, name="mark-interrupted-run", daemon=True)
    worker.start()
    worker.join(timeout)
    return answer[0] if answer else None


def ending(code: int) -> None:
    """The command's outcome is decided: from now on SIGINT and SIGTERM end the process at once
    with exit status ``code`` (what it had to say is said)."""
    global _ending
    _ending = True
    for signum in SIGNALS:
        signal.signal(signum, lambda *_: os._exit(code))


def install_handlers() -> dict:
    """SIGINT and SIGTERM raise KeyboardInterrupt from now on; returns the handlers replaced."""
    global _ending
    _ending = False
    _signals_received.clear()
    _run.clear()
    return {signum: signal.signal(signum, _interrupt) for signum in SIGNALS}


def restore_handlers(handlers: dict) -> None:
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


def _interrupt(signum, frame):
    # SIGTERM unwinds like Ctrl-C. The signal is also noted because the KeyboardInterrupt can
    # surface wrapped in another exception (e.g. raised inside Prefect's pydantic serializer).
    _signals_received.append(signum)
    raise KeyboardInterrupt


def interrupted(exc: BaseException) -> bool:
    """Did the run end because of SIGINT or SIGTERM? During a flow run Prefect replaces the
    SIGTERM handler with its own (TerminationSignal), and either exception can arrive wrapped,
    as text only (seen: inside pydantic's serializer), hence the names are looked for too."""
    from tasks import stopping

    if _signals_received or stopping.requested():
        return True
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt) or type(exc).__name__ == "TerminationSignal":
            return True
        if "KeyboardInterrupt" in str(exc) or "TerminationSignal" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
