"""The Prefect server of a command run without one: whether one is configured (read without
importing Prefect), the temporary server started for the command, and the drain of what this
process still has to send before that server stops.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def api_url_configured_outside_prefect() -> bool:
    """Whether PREFECT_API_URL is set in the environment or in the active profile, read without
    importing Prefect (2-3 s). Prefect's own answer, which also reads prefect.toml and .env, is
    checked once it is imported; this one only decides whether to start a server early."""
    if os.environ.get("PREFECT_API_URL"):
        return True
    try:
        import tomllib
    except ImportError:  # Python 3.10: let Prefect decide, after its import
        return True
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    try:
        with open(home / "profiles.toml", "rb") as f:
            profiles = tomllib.load(f)
    except (OSError, ValueError):
        return False
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active", "ephemeral")
    return bool(profiles.get("profiles", {}).get(active, {}).get("PREFECT_API_URL"))


class TemporaryServer:
    """A Prefect API server for this command only (no UI, no background services), on a free
    port of 127.0.0.1, with the same database as Prefect's own temporary server. Started as a
    process at once; ``wait`` returns its API URL once it answers. This process and the Dask
    workers it starts use it, so no process starts a second one."""

    STARTUP_SECONDS = 120

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/api"
        self.log = tempfile.TemporaryFile()
        # the command Prefect runs for its own temporary server (prefect.server.api.server)
        env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
               "PREFECT__SERVER_FINAL": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
             "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "error", "--lifespan", "on"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log,
            start_new_session=True,  # Ctrl-C reaches the command, which stops the server itself
        )

    def wait(self) -> str:
        deadline = time.monotonic() + self.STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                lines = self.log.read().decode(errors="replace").strip().splitlines()
                raise RuntimeError(f"the temporary Prefect server exited with code {self.process.returncode}"
                                   + (f": {lines[-1]}" if lines else ""))
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200:
                        return self.url
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the temporary Prefect server did not answer within {self.STARTUP_SECONDS} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def drain_to_api(seconds: float = 10) -> None:
    """Send the artifacts, logs and events still queued in this process before the temporary
    server stops (they would be sent at exit, to a server already gone)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    from tasks import artifacts

    artifacts.wait_until_published(seconds)
    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=seconds)
