"""How long the command line takes on the bundled sample, as a user types it.

    python -m benchmarks.cli_startup --json FILE [--repeat 3]

Times, as subprocesses (interpreter start and imports included), median of --repeat runs:
- `python -m flows.mst --help`, and `python -m flows.mst missing.parquet` (an error);
- a schema error: an edge list whose columns are not the ones asked for (its footer read, one
  error line, no server started);
- `python -m flows.mst data/graph.parquet` with the default runner (auto: threads on this
  9-edge sample) and with `--runner dask`, each cold (no PREFECT_API_URL: a temporary server
  is started for the run) and against a running `prefect server start` (started here on a free
  port, left to settle for SETTLE_SECONDS and warmed by one untimed run); on a machine where
  `auto` is CuPy, also with `--backend numpy` against the running server (what the GPU's start
  costs the 9-edge sample).
All runs share one new PREFECT_HOME, whose database an untimed first run creates. Appends one
record to FILE, with the load average (this machine is shared: figures move with it).
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

import pyarrow.parquet as pq

from benchmarks.harness import append_records, machine

COMMAND = [sys.executable, "-m", "flows.mst"]
# A server just started runs its services' first rounds (CPU-bound for tens of seconds on 2
# cores); the case measured is a server a user started earlier and left running.
SETTLE_SECONDS = 30
SAMPLE = "data/graph.parquet"


def timed_run(env: dict, args: list[str], expect: int = 0) -> float:
    started = time.perf_counter()
    done = subprocess.run(COMMAND + args, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != expect:
        raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return seconds


def fresh_environment(home: str, drop: tuple = ()) -> dict:
    """This process's environment without Prefect's and the project's settings (and those named
    by the prefixes ``drop``), with PREFECT_HOME a new folder ``home`` and analytics off: what
    the benchmarks' commands and servers run with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPH_", *drop))}
    env.update(PREFECT_HOME=home, PREFECT_SERVER_ANALYTICS_ENABLED="false")
    return env


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
    env = fresh_environment(home)
    output = tempfile.mkdtemp(prefix="cli-out-")
    run = [SAMPLE, "--output", output]
    cases = {"default": run, "dask": run + ["--runner", "dask"]}
    from kernels.backend import cupy_usable

    # on a GPU machine `auto` is CuPy: the sample on NumPy too says what starting the GPU costs
    warm_cases = {**cases, **({"numpy": run + ["--backend", "numpy"]} if cupy_usable() else {})}

    def median(case_env, case_args, expect=0):
        return statistics.median(timed_run(case_env, case_args, expect) for _ in range(args.repeat))

    renamed = os.path.join(output, "renamed-columns.parquet")
    pq.write_table(pq.read_table(SAMPLE).rename_columns(["source", "target", "w"]), renamed)
    seconds = {"help": median(env, ["--help"]),
               "missing_input": median(env, ["missing.parquet"], expect=1),
               "schema_error": median(env, [renamed], expect=1)}
    for name, case in cases.items():
        timed_run(env, case)  # untimed: first-run caches (bytecode, the database's creation)
        seconds[f"cold_{name}"] = median(env, case)
    server, url = start_server(env)
    time.sleep(SETTLE_SECONDS)
    try:
        for name, case in warm_cases.items():
            timed_run({**env, "PREFECT_API_URL": url}, case)  # untimed: the new server's first requests
            seconds[f"running_server_{name}"] = median({**env, "PREFECT_API_URL": url}, case)
    finally:
        server.terminate()
        server.wait(timeout=30)
    record = {"algo": "cli-startup", "graph": SAMPLE, "command_timed": "python -m flows.mst " + SAMPLE,
              **{k: round(v, 2) for k, v in seconds.items()}, "repeat": args.repeat,
              "load_average": [round(x, 2) for x in os.getloadavg()],
              "machine": machine("numpy"), "date": datetime.date.today().isoformat(),
              "command": " ".join(["python -m benchmarks.cli_startup", *(argv if argv is not None else sys.argv[1:])])}
    print(record)
    append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    sys.exit(main())
