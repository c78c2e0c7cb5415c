"""SIGINT and SIGTERM during a command: the handlers that turn both into KeyboardInterrupt, the
watchdog that ends the process if the run does not unwind in time, how to tell that a run
ended because of a signal, and the clean-up of what its processes were writing.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def remove_temporaries(params: dict, ending: int | None = None) -> None:
    """The run's processes are gone (or, ``ending``, this one is about to go): what they were
    writing is a stale temporary file."""
    from flows.common import output_directory
    from tasks.parquet.publish import remove_stale_staging
    from tasks.parquet.write import remove_stale_temporaries

    output = Path(output_directory(params["output"], params["input"]))
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
        import threading

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
            if woken[0] in SIGNALS:
                from tasks import stopping

                stopping.request_stop()  # in-process stages: none starts, nothing is published
                time.sleep(INTERRUPT_GRACE_SECONDS)
                self._end()

    def _end(self) -> None:
        try:
            import psutil

            children = psutil.Process().children(recursive=True)
            for child in children:
                child.terminate()
            psutil.wait_procs(children, timeout=0.2)
        except Exception:  # ending anyway: what is left of the children ends with its parent
            pass
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


def install_handlers() -> dict:
    """SIGINT and SIGTERM raise KeyboardInterrupt from now on; returns the handlers replaced."""
    _signals_received.clear()
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
