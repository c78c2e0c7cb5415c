"""The README's steps to keep a Prefect server between runs, run as written: the shell commands of
the two fenced blocks under its "Keep a Prefect server between runs" heading, in bash, in a
fresh folder, with a temporary PREFECT_HOME and a free loopback port in place of 4200. The first
block starts the server, waits for its health and runs `python -m flows.mst data/graph.parquet`
against it; the run must be on that server, Completed, and the steps' own files (the server's log
and pid) must stay out of the folder they were run in. The second block stops the server and
forgets its address; the server must then be gone and a command must work again without it."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT
from tests.helpers import child_pythonpath

pytestmark = pytest.mark.server

HEADING = "## Keep a Prefect server between runs"
README_PORT = "4200"


def server_blocks() -> tuple[str, str]:
    """The README section's two shell blocks: (start and use the server, stop and undo)."""
    text = (ROOT / "README.md").read_text()
    assert HEADING in text, f"README.md has no heading {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```$", section, flags=re.S | re.M)
    assert len(blocks) == 2, f"expected two ```sh blocks under {HEADING!r}, found {len(blocks)}"
    start, stop = blocks
    assert "prefect server start" in start and "python -m flows.mst data/graph.parquet" in start
    assert "unset PREFECT_API_URL" in stop
    return start, stop


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(url: str, path: str, body=None):
    request = urllib.request.Request(f"{url}{path}", method="POST" if body is not None else "GET",
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for its parent to reap it does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def bash(script: str, cwd: Path, env: dict, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def test_the_readme_server_steps_work_as_written_and_undo_cleanly(tmp_path):
    start, stop = server_blocks()
    port = free_port()
    assert start.count(README_PORT) >= 2, "the start block names its port (--port, PREFECT_API_URL)"
    start = start.replace(README_PORT, str(port))
    url = f"http://127.0.0.1:{port}/api"

    # `python` and `prefect` as the README's activated venv gives them: this interpreter's
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, command in (("python", f'exec "{sys.executable}" "$@"'),
                          ("prefect", f'exec "{sys.executable}" -m prefect "$@"')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{command}\n")
        (bin_dir / name).chmod(0o755)
    # a user's shell: no Prefect or pipeline settings of the test session, this checkout importable
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPH_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=child_pythonpath(),
               PREFECT_HOME=str(tmp_path / "prefect-home"))
    work = tmp_path / "checkout"
    (work / "data").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "graph.parquet", work / "data" / "graph.parquet")

    pid = None
    try:
        started = bash(start, work, env, timeout=400)
        home = tmp_path / "prefect-home"  # the server's log and pid file, out of the user's folder
        log = home / "server.log"
        assert started.returncode == 0, (f"start block failed:\n{started.stdout}\n{started.stderr}\n"
                                         f"server log:\n{log.read_text() if log.exists() else '(none)'}")
        pid = int((home / "server.pid").read_text())
        assert alive(pid) and api(url, "/health") is True

        forest = pq.ParquetFile(work / "output" / "graph" / "mst_edges.parquet").read()
        assert forest.num_rows == 5 and sum(forest.column("weight").to_pylist()) == 13
        runs = api(url, "/flow_runs/filter", {})
        assert len(runs) == 1, [r["name"] for r in runs]
        run = runs[0]
        assert run["name"] == "mst-graph" and run["state"]["type"] == "COMPLETED", run["state"]
        assert f"/runs/flow-run/{run['id']}" in started.stdout, started.stdout

        # the second block in the same shell state: the variable the first block exported is set
        after = "\n".join([stop, "python -m flows.mst data/graph.parquet"])
        stopped = bash(after, work, {**env, "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                                     "PREFECT_API_URL": url}, timeout=400)
        assert stopped.returncode == 0, f"stop block failed:\n{stopped.stdout}\n{stopped.stderr}"
        assert "wrote " in stopped.stdout, stopped.stdout  # a command works again, without that server
        deadline = time.monotonic() + 60
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not alive(pid), "the server process outlived the stop block"
        assert not port_open(port), f"something still listens on port {port}"
        assert not (home / "server.pid").exists()
        assert sorted(p.name for p in work.iterdir()) == ["data", "output"], "the steps left files in the folder"
    finally:
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)

