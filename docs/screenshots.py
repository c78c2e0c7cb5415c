"""Screenshots of the Prefect UI for the README, taken with headless Chromium.

    python -m docs.screenshots [--out docs/screenshots] [--browser chromium]

Starts a `prefect server` (UI included) on a free port of 127.0.0.1 in a temporary
PREFECT_HOME, creates the `graph-pool` process work pool, deploys prefect.yaml, writes a
Kronecker graph (scale 14, ~262,000 edges) to a temporary Parquet file, runs the
`pipeline-nightly` deployment on it with two source sets through a worker, and saves:
- run.png: the flow run's page (its log);
- artifacts.png: the run's Artifacts tab (the summary table first);
- summary.png: the summary artifact's own page;
- levels.png: the BFS per-level table of source set 0;
- deployment-form.png: the deployment's custom-run form (parameters and their descriptions).
Everything it starts it stops. Needs the chromium browser (Debian: `apt-get install chromium`).
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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


def prefect(env: dict, *args: str, timeout: int = 300) -> str:
    done = subprocess.run([sys.executable, "-m", "prefect", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"prefect {' '.join(args)}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


class Browser:
    """Headless Chromium driven over the DevTools protocol: the UI's tabs are chosen by a click
    (a tab in the URL is reset while the run loads), and a page is shot once it shows a text."""

    def __init__(self, binary: str):
        from websockets.sync.client import connect  # a dependency of Prefect

        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self.process = subprocess.Popen([binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                         f"--user-data-dir={self.profile}", "--remote-debugging-port=0", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.process.stderr:
            if "DevTools listening on" in line:
                port = line.split("127.0.0.1:")[1].split("/")[0]
                break
        else:
            raise RuntimeError(f"{binary} did not start")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            page = next(t for t in json.loads(response.read()) if t["type"] == "page")
        self.socket = connect(page["webSocketDebuggerUrl"], max_size=None)
        self.calls = 0

    def call(self, method: str, **params):
        self.calls += 1
        self.socket.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.calls:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def wait_for(self, text: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while not self.evaluate(f"document.body && document.body.innerText.includes({json.dumps(text)})"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the page never showed {text!r}")
            time.sleep(0.25)
        time.sleep(1.5)  # let the last requests render

    def open(self, url: str, text: str, height: int = 1000) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=1440, height=height, deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", url=url)
        self.wait_for(text)

    def click(self, text: str, then: str) -> None:
        """Click the innermost element whose whole text is ``text``; wait for ``then``."""
        clicked = self.evaluate(
            "(() => { const all = [...document.querySelectorAll('button, a, [role=tab], li, span, div')];"
            f" const hit = all.reverse().find(e => e.innerText && e.innerText.trim() === {json.dumps(text)});"
            " if (hit) { hit.click(); return true; } return false; })()")
        if not clicked:
            raise RuntimeError(f"nothing to click labelled {text!r}")
        self.wait_for(then)

    def shot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        print(f"wrote {path}")

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m docs.screenshots", description=__doc__.split("\n")[1])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    p.add_argument("--browser", default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    args = p.parse_args(argv)
    if not shutil.which(args.browser):
        print(f"error: {args.browser}: browser not found (Debian: apt-get install chromium)", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="screenshots-"))
    port = free_port()
    ui, url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPH_"))}
    env.update(PREFECT_HOME=str(work / "prefect-home"), PREFECT_API_URL=url, PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_CLI_PROMPT="false", PYTHONPATH=str(ROOT))
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                               "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        for _ in range(240):
            try:
                if api(url, "/health") is True:
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("prefect server did not start")
        prefect(env, "work-pool", "create", "graph-pool", "--type", "process")
        prefect(env, "--no-prompt", "deploy", "--all")

        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        from data.generators import kronecker

        src, dst, weight = kronecker(np, 14)
        graph = work / "kron14.parquet"
        pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), graph)
        params = {"input": str(graph), "source": None, "source_sets": [[str(src[0])], [str(src[1]), str(src[2])]],
                  "output": str(work / "out")}
        run = prefect(env, "deployment", "run", "pipeline/pipeline-nightly", "--params", json.dumps(params))
        flow_run_id = next(line.split()[-1] for line in run.splitlines() if "UUID" in line)
        prefect(env, "worker", "start", "--pool", "graph-pool", "--run-once", timeout=600)
        state = api(url, f"/flow_runs/{flow_run_id}")["state"]["type"]
        if state != "COMPLETED":
            raise RuntimeError(f"the run ended {state}")
        artifacts = api(url, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})
        by_key = {a["key"]: a["id"] for a in artifacts if a["key"]}
        deployment = next(d for d in api(url, "/deployments/filter", {}) if d["name"] == "pipeline-nightly")

        browser = Browser(args.browser)
        try:
            browser.open(f"{ui}/runs/flow-run/{flow_run_id}", "pipeline done in", height=1500)
            browser.shot(args.out / "run.png")
            browser.open(f"{ui}/runs/flow-run/{flow_run_id}", "pipeline-kron14", height=1300)
            browser.click("Artifacts", then="pipeline-summary")
            browser.shot(args.out / "artifacts.png")
            browser.open(f"{ui}/artifacts/artifact/{by_key['pipeline-summary']}", "validation", height=1300)
            browser.shot(args.out / "summary.png")
            browser.open(f"{ui}/artifacts/artifact/{by_key['bfs-levels-source-set-0']}", "frontier", height=1300)
            browser.shot(args.out / "levels.png")
            browser.open(f"{ui}/deployments/deployment/{deployment['id']}/run", "source_sets", height=1400)
            browser.shot(args.out / "deployment-form.png")
        finally:
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
