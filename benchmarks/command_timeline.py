"""Where a command line run's seconds go, end to end: a sampled profile of every thread.

    python -m benchmarks.command_timeline --json FILE [--folded F] [--server URL] -- GRAPH [ARGS ...]

Runs `python -m flows.FLOW GRAPH ARGS --json` (--flow, default pipeline) as a user types it, in a fresh interpreter
whose first act is to start a sampling thread: every INTERVAL seconds it records the Python
stack of each thread, weighted by the time since its last sample (so a call that holds the GIL
is counted in full once it lets go). Against a running server (--server URL), or one started
here and left to settle. The parent's clock brackets the child, so the record splits the run
into:
- `interpreter_seconds`: from spawn to the first line of the child (interpreter start, site);
- `main_seconds`: the command itself (imports, plan, flow, output), by the summary's stages and
  by the main thread's samples outside them;
- `atexit_seconds`: Python's exit handlers (Prefect's, CuPy's, the project's), which the command
  runs itself before it leaves by os._exit, and `finalize_seconds`: what is left after the last
  of them until the parent sees the exit (the process's memory, CUDA context and pinned buffers
  released by the driver and the kernel).
Appends one record to FILE with the main thread's seconds before, in and after the flow (its
first and last sample inside Prefect's flow engine), each thread's busy seconds (samples not in
a wait) and the functions holding the most of its wall time (inclusive), and, with --importtime,
the slowest top-level imports; writes every sampled stack folded (`thread;frame;frame weight_ms`,
the input of flame-graph tools) to --folded. A sample cannot tell a thread running from one
waiting for the GIL: on a machine of few cores the inclusive figures blur between threads.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.cli_startup import SETTLE_SECONDS, fresh_environment, start_server
from benchmarks.harness import append_records, machine
from benchmarks.orchestration import code_version

# The child: the sampler starts before anything else is imported; its first exit handler
# (atexit runs them last-registered first) stamps the end of Python's own handlers.
CHILD = r"""
import sys, time
boot = time.time()
import atexit, collections, json, runpy, threading
interval, report = float(sys.argv[1]), sys.argv[2]
weights = collections.Counter()  # (thread name, stack as 'file:function' frames, outermost first) -> seconds
seen = {}  # the same key -> [first, last] time.time() it was sampled
stamps = {"boot": boot}
running = True

def frames(frame):
    stack = []
    while frame is not None:
        code = frame.f_code
        stack.append(code.co_filename.rsplit("site-packages/", 1)[-1] + ":" + code.co_name)
        frame = frame.f_back
    return tuple(reversed(stack))

def sample():
    me = threading.get_ident()
    last = time.perf_counter()
    while running:
        time.sleep(interval)
        now = time.perf_counter()
        names = {t.ident: t.name for t in threading.enumerate()}
        wall = time.time()
        for ident, frame in sys._current_frames().items():
            if ident != me:
                key = (names.get(ident, str(ident)), frames(frame))
                weights[key] += now - last
                seen.setdefault(key, [wall, wall])[1] = wall
        last = now

def finish():
    global running
    stamps["atexit_done"] = time.time()
    running = False
    with open(report, "w") as f:
        json.dump({"stamps": stamps, "samples": [[t, list(s), w, *seen[t, s]] for (t, s), w in weights.items()]}, f)

atexit.register(finish)
threading.Thread(target=sample, name="sampler", daemon=True).start()
import flows.cli  # the command's own main(): run_command calls it, then the exit handlers, then os._exit
command_main = flows.cli.main

def timed_main(*args, **kwargs):
    try:
        return command_main(*args, **kwargs)
    finally:
        stamps["main_done"] = time.time()

flows.cli.main = timed_main
sys.argv = [sys.argv[3], *sys.argv[4:]]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""

# a thread's innermost frames that mean it is waiting, not working
WAITS = ("threading.py:wait", "selectors.py:select", "queue.py:get", "time.sleep", "_base.py:result",
         "threading.py:_wait_for_tstate_lock", "interrupts.py:_wait")

# frames that say which part of a run a sample belongs to, most specific first
PARTS = (("import", "<frozen importlib._bootstrap>:_find_and_load"), ("flow engine", "prefect/flow_engine.py"),
         ("task engine", "prefect/task_engine.py"), ("client", "prefect/client/"), ("events", "prefect/events/"))


def inclusive(samples: list, thread: str, top: int) -> list[list]:
    """The functions of one thread by the wall time of the samples they are on (each counted once
    per sample), most first."""
    total: dict[str, float] = {}
    for name, stack, weight, *_ in samples:
        if name == thread:
            for frame in set(stack):
                total[frame] = total.get(frame, 0.0) + weight
    return [[frame, round(seconds, 3)] for frame, seconds in sorted(total.items(), key=lambda kv: -kv[1])[:top]]


def slowest_imports(env: dict, module: str, command: list[str], top: int = 30) -> list[list]:
    """The command's top-level imports (those no other import of the run made) by cumulative
    seconds, from a run under -X importtime (whose own cost shows in the figures)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", module, *command], env=env, capture_output=True,
                          text=True)
    found = []
    for line in done.stderr.splitlines():  # "import time: self [us] | cumulative | imported package"
        if line.startswith("import time:") and not line.endswith("imported package"):
            _, cumulative, name = line[len("import time:"):].split("|")
            if not name[1:].startswith(" "):  # indentation says who imported it
                found.append([name.strip(), round(int(cumulative) / 1e6, 3)])
    return sorted(found, key=lambda item: -item[1])[:top]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.command_timeline", description=__doc__.split("\n")[0])
    p.add_argument("--json", required=True)
    p.add_argument("--folded", help="write every sampled stack here, folded")
    p.add_argument("--server", help="a running Prefect server's API URL (default: one started here)")
    p.add_argument("--flow", default="pipeline", choices=("pipeline", "mst", "bfs"), help="python -m flows.FLOW")
    p.add_argument("--importtime", action="store_true",
                   help="run the command once more under -X importtime and keep its slowest top-level imports")
    p.add_argument("--interval", type=float, default=0.01, help="seconds between samples")
    p.add_argument("--top", type=int, default=40, help="functions kept per thread")
    p.add_argument("command", nargs="+", help="GRAPH and the pipeline's arguments, after --")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="command-timeline-"))
    env = fresh_environment(str(work / "prefect-home"))
    server = None
    if args.server:
        env["PREFECT_API_URL"] = args.server
    else:
        server, env["PREFECT_API_URL"] = start_server(env)
        time.sleep(SETTLE_SECONDS)
    report, module = work / "samples.json", f"flows.{args.flow}"
    command = [*args.command, "--json"] if "--json" not in args.command else list(args.command)
    if "--output" not in command:
        command += ["--output", str(work / "out")]
    try:
        if server is not None:  # the server's first run creates its tables; the one timed finds them
            subprocess.run([sys.executable, "-m", module, *command], env=env, capture_output=True, check=True)
        spawned = time.time()
        done = subprocess.run([sys.executable, "-c", CHILD, str(args.interval), str(report), module, *command], env=env,
                              capture_output=True, text=True)
        exited = time.time()
        imports = slowest_imports(env, module, command) if args.importtime else None
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}\n{done.stderr[-4000:]}")
    trace = json.loads(report.read_text())
    stamps, samples = trace["stamps"], trace["samples"]
    summary = json.loads(done.stdout.splitlines()[-1])
    stages = {k: v for k, v in summary.items() if k.endswith("_seconds")}
    busy: dict[str, float] = {}
    for name, stack, weight, *_ in samples:
        if not stack[-1].endswith(WAITS):
            busy[name] = busy.get(name, 0.0) + weight
    threads = sorted(busy, key=lambda t: -busy[t])
    in_flow = [(first, last) for name, stack, _, first, last in samples
               if name == "MainThread" and any("prefect/flow_engine.py" in f for f in stack)]
    flow_start, flow_end = min(f for f, _ in in_flow), max(last for _, last in in_flow)
    main_parts: dict[str, float] = {}
    for name, stack, weight, *_ in samples:
        if name == "MainThread":
            joined = ";".join(stack)
            part = next((label for label, marker in PARTS if marker in joined), "other")
            main_parts[part] = main_parts.get(part, 0.0) + weight
    record = {"algo": "command-timeline", "command_run": f"python -m {module} " + " ".join(command),
              "seconds": round(exited - spawned, 3),
              "interpreter_seconds": round(stamps["boot"] - spawned, 3),
              "main_seconds": round(stamps["main_done"] - stamps["boot"], 3),
              "atexit_seconds": round(stamps["atexit_done"] - stamps["main_done"], 3),
              "finalize_seconds": round(exited - stamps["atexit_done"], 3),
              "stages": stages,
              "before_flow_seconds": round(flow_start - stamps["boot"], 3),
              "flow_seconds": round(flow_end - flow_start, 3),
              "after_flow_seconds": round(stamps["main_done"] - flow_end, 3),
              "main_thread_by_part": {k: round(v, 3) for k, v in sorted(main_parts.items(), key=lambda kv: -kv[1])},
              "threads": {t: {"busy_seconds": round(busy[t], 3), "inclusive": inclusive(samples, t, args.top)}
                          for t in threads},
              "machine": machine("cupy" if "cupy" in command else "numpy"), "code": code_version(),
              "date": datetime.date.today().isoformat(),
              "command": " ".join(["python -m benchmarks.command_timeline", *(argv if argv is not None else sys.argv[1:])])}
    if imports is not None:
        record["slowest_imports_seconds"] = imports
    if args.folded:
        with open(args.folded, "w") as f:
            for name, stack, weight, *_ in sorted(samples, key=lambda s: -s[2]):
                f.write(f"{name};{';'.join(stack)} {max(1, round(weight * 1000))}\n")
    print(json.dumps({k: record[k] for k in ("seconds", "interpreter_seconds", "main_seconds", "atexit_seconds",
                                             "finalize_seconds", "before_flow_seconds", "flow_seconds",
                                             "after_flow_seconds", "stages", "main_thread_by_part")}), flush=True)
    for t in threads[:6]:
        print(t, "busy", record["threads"][t]["busy_seconds"], flush=True)
        for frame, seconds in record["threads"][t]["inclusive"][:25]:
            print(f"   {seconds:7.3f}  {frame}", flush=True)
    append_records(args.json, [record])
    return 0


if __name__ == "__main__":
    sys.exit(main())
