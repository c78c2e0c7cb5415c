"""What one command-line run asks of the Prefect server, request by request.

    python -m benchmarks.api_round_trips --json FILE [--kind mst] [--input data/graph.parquet] [--repeat 3]

Runs ``python -m flows.<kind> INPUT --output DIR`` in a fresh process (as a user types it, the
exit handlers included) against one running ``prefect server`` started here and left to
settle, with every HTTP request of the process's Prefect clients timed where httpx sends it
(each attempt, with the thread that sent it) and every event counted where Prefect's events
client emits it (events go over one websocket, not as requests). A request sent from the
main thread or from a task's thread is on the run's critical path: the command waits for its
answer; the project's artifact thread sends beside the tasks (the last task waits for it), and
Prefect's own service threads (the log and event workers) off the run's path, except at the
end, where the command waits for them to drain. The first run is untimed (the new
server's first requests); the record keeps the last run's requests and the median of the
counts and seconds. Appends one record to FILE.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.cli_startup import SETTLE_SECONDS, fresh_environment, start_server
from benchmarks.harness import append_records, machine
from benchmarks.orchestration import code_version

# run in the fresh process: argv[1] the flow, argv[2] where the requests go, the rest its arguments
CHILD = r"""
import atexit, json, os, sys, threading, time
started = time.perf_counter()
import httpx
requests, events = [], []

def note(request, began, response):
    requests.append({"at": round(began - started, 4), "seconds": round(time.perf_counter() - began, 4),
                     "method": request.method, "path": request.url.path,
                     "status": getattr(response, "status_code", None), "thread": threading.current_thread().name})

sync_send, async_send = httpx.Client.send, httpx.AsyncClient.send

def send(self, request, *args, **kwargs):
    began, response = time.perf_counter(), None
    try:
        response = sync_send(self, request, *args, **kwargs)
        return response
    finally:
        note(request, began, response)

async def asend(self, request, *args, **kwargs):
    began, response = time.perf_counter(), None
    try:
        response = await async_send(self, request, *args, **kwargs)
        return response
    finally:
        note(request, began, response)

httpx.Client.send, httpx.AsyncClient.send = send, asend
from prefect.events import clients
emit = clients.EventsClient.emit

async def counted(self, event):
    events.append({"at": round(time.perf_counter() - started, 4), "event": event.event})
    return await emit(self, event)

clients.EventsClient.emit = counted
from flows import cli
code = cli.main(sys.argv[1], sys.argv[3:])
ended = time.perf_counter() - started
atexit._run_exitfuncs()  # Prefect's drains of logs and events, as run_command ends a command
with open(sys.argv[2], "w") as f:
    json.dump({"code": code, "main_returned": round(ended, 4), "exited": round(time.perf_counter() - started, 4),
               "requests": requests, "events": events}, f)
os._exit(code)
"""

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Prefect's service threads: what they send is off the run's path until the command drains them
SERVICE_THREADS = ("APILogWorker", "EventsWorker", "GlobalEventLoopThread", "RunSyncEventLoopThread")


def endpoint(request: dict) -> str:
    return f"{request['method']} {UUID.sub('{id}', request['path'])}"


def sender(request: dict) -> str:
    """"run": the main thread or a task's (the command waits for the answer); "artifacts": the
    project's artifact thread (beside the tasks; the last task waits for it, tasks/artifacts.py);
    "service": Prefect's log and event workers."""
    thread = request["thread"]
    if thread.startswith(SERVICE_THREADS):
        return "service"
    return "artifacts" if thread == "artifact-sender" else "run"


def one_run(env: dict, kind: str, argv: list[str], work: str) -> dict:
    log = os.path.join(work, "requests.json")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, kind, log, *argv], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"flows.{kind} {' '.join(argv)}: exit {done.returncode}\n{done.stderr}")
    with open(log) as f:
        found = json.load(f)
    found["wall_seconds"] = round(wall, 3)
    return found


def summary(run: dict) -> dict:
    by_sender = collections.defaultdict(list)
    for r in run["requests"]:
        by_sender[sender(r)].append(r["seconds"])
    return {"requests": len(run["requests"]),
            **{f"{who}_requests": len(by_sender[who]) for who in ("run", "artifacts", "service")},
            **{f"{who}_seconds": round(sum(by_sender[who]), 4) for who in ("run", "artifacts", "service")},
            "events": len(run["events"]), "wall_seconds": run["wall_seconds"],
            "first_request_seconds": min((r["at"] for r in run["requests"]), default=None),
            "main_returned_seconds": run["main_returned"], "exited_seconds": run["exited"],
            "by_endpoint": dict(collections.Counter(endpoint(r) for r in run["requests"]).most_common())}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.api_round_trips", description=__doc__.split("\n")[0])
    p.add_argument("--kind", default="mst", choices=["mst", "bfs", "pipeline"])
    p.add_argument("--input", default="data/graph.parquet")
    p.add_argument("--args", default="", help="more arguments of the command, as one string (e.g. '--source 0')")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="round-trips-")
    env = fresh_environment(os.path.join(work, "prefect-home"))
    server, url = start_server(env)
    env["PREFECT_API_URL"] = url
    command = [args.input, "--output", os.path.join(work, "out"), *args.args.split()]
    try:
        time.sleep(SETTLE_SECONDS)
        one_run(env, args.kind, command, work)  # untimed: the new server's first requests
        runs = [one_run(env, args.kind, command, work) for _ in range(args.repeat)]
    finally:
        server.terminate()
        server.wait(timeout=30)
    each = [summary(run) for run in runs]
    last = runs[-1]
    medians = {k: statistics.median(s[k] for s in each) for k in each[0] if k != "by_endpoint"}
    shown = [args.input, "--output", "DIR", *args.args.split()]
    record = {"algo": "api-round-trips", "command_timed": f"python -m flows.{args.kind} {' '.join(shown)}",
              **medians, "by_endpoint": each[-1]["by_endpoint"],
              "last_run": [{**r, "endpoint": endpoint(r), "sender": sender(r)} for r in last["requests"]],
              "last_run_events": collections.Counter(e["event"] for e in last["events"]),
              "repeat": args.repeat, "load_average": [round(x, 2) for x in os.getloadavg()],
              "machine": machine("numpy"), "code": code_version(), "date": datetime.date.today().isoformat(),
              "command": " ".join(["python -m benchmarks.api_round_trips", *(argv if argv is not None else sys.argv[1:])])}
    print(json.dumps({k: v for k, v in record.items() if k not in ("last_run", "last_run_events")}, indent=1))
    for r in record["last_run"]:
        print(f"{r['at']:8.3f} s {r['seconds'] * 1000:7.1f} ms  {r['sender']:<9} {r['endpoint']:<52} "
              f"{r['status']}  {r['thread']}")
    append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    sys.exit(main())
