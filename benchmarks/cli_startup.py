"""How long the command line takes on the bundled sample, as a user types it.

    python -m benchmarks.cli_startup --json FILE [--repeat 3]

Times `python -m flows.mst data/graph.parquet` as a subprocess (interpreter start and imports
included) with the default runner (Dask workers) and with `--runner threads`, each cold (no
PREFECT_API_URL: Prefect starts a temporary server) and against a running `prefect server`
(started here on a free port, not timed). Median of --repeat runs; appends one record.
"""
from __future__ import annotations

import argparse
import datetime
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from benchmarks.harness import append_records, machine

COMMAND = [sys.executable, "-m", "flows.mst", "data/graph.parquet"]


def timed_run(env: dict, extra: list[str], output: str) -> float:
    started = time.perf_counter()
    subprocess.run(COMMAND + ["--output", output, *extra], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def start_server(env: dict) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api"
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                               "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            return server, url
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise RuntimeError("prefect server did not start")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cli_startup", description=__doc__.split("\n")[1])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    home = tempfile.mkdtemp(prefix="prefect-home-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPH_"))}
    env.update(PREFECT_HOME=home, PREFECT_SERVER_ANALYTICS_ENABLED="false")
    output = tempfile.mkdtemp(prefix="cli-out-")
    seconds = {}
    runners = {"dask": [], "threads": ["--runner", "threads"]}
    for name, extra in runners.items():
        timed_run(env, extra, output)  # untimed: first-run caches (bytecode, database)
        seconds[f"cold_{name}"] = statistics.median(timed_run(env, extra, output) for _ in range(args.repeat))
    server, url = start_server(env)
    try:
        for name, extra in runners.items():
            seconds[f"running_server_{name}"] = statistics.median(
                timed_run({**env, "PREFECT_API_URL": url}, extra, output) for _ in range(args.repeat))
    finally:
        server.terminate()
        server.wait(timeout=30)
    record = {"algo": "cli-startup", "graph": "data/graph.parquet", "command_timed": " ".join(COMMAND[1:]),
              **{k: round(v, 2) for k, v in seconds.items()}, "repeat": args.repeat,
              "machine": machine("numpy"), "date": datetime.date.today().isoformat(),
              "command": " ".join(["python -m benchmarks.cli_startup", *(argv if argv is not None else sys.argv[1:])])}
    print(record)
    append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    sys.exit(main())
