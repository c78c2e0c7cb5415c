"""The command line of the three flows: ``python -m flows.mst|bfs|pipeline INPUT ...``.

Arguments and the input path are checked before Prefect, Dask or pyarrow is imported, so
``--help`` and a mistyped path answer at once; every argument error is one ``error:`` line on
stderr and exit 1, like every other failure. When no Prefect server is configured, the
temporary server the run needs is started first, so that it boots while this process imports
Prefect and the flow; it is stopped when the command ends. Where the tasks run: ``--runner``,
else $GRAPH_TASK_RUNNER, else ``auto`` (threads for small graphs, Dask above
flows.runners.DASK_MIN_EDGES edges); ``--partitions N`` with N > 1 runs on Dask workers, at least
N of them on the CPU.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from tasks import settings  # os only, like this module: nothing heavy before the checks
from tasks.parquet import locations  # (likewise)
from tasks.parquet.results import COMPRESSIONS, DEFAULT_COMPRESSION, DEFAULT_LAYOUT, LAYOUTS  # (likewise)

DESCRIPTIONS = {
    "mst": "Minimum spanning forest of a Parquet edge list, written to OUTPUT/mst_edges.parquet.",
    "bfs": "Breadth-first search distances from one or more sources of a Parquet edge list, written "
           "to OUTPUT/bfs_distances.parquet (OUTPUT/source-set-K/ per --source-set).",
    "pipeline": "BFS distances and the minimum spanning forest of one Parquet edge list, with one ingest; "
                "both files are written once every result is verified.",
}
EPILOG = ("On failure: one line 'error: ...' on stderr and exit 1; interrupted: exit 130. "
          "Without PREFECT_API_URL a temporary Prefect server is started for the run; "
          "'prefect server start --background' keeps one between runs (see the README).")


class UsageError(Exception):
    """A command-line argument or the input path is wrong: reported before anything runs."""


class Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs):
        super().__init__(allow_abbrev=False, **kwargs)  # --out is not taken for --output

    def error(self, message: str):  # argparse would print the usage and exit 2
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse_args(self, args=None, namespace=None):
        # an unknown option is named first: argparse would report a missing required
        # argument instead when the unknown one was a misspelt --source
        args = sys.argv[1:] if args is None else list(args)
        args = self._attach_dashed_values(args)
        options = args[:args.index("--")] if "--" in args else args
        unknown = [a for a in options if a.startswith("-") and not _is_number(a)
                   and a.split("=", 1)[0] not in self._option_string_actions]
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}")
        return super().parse_args(args, namespace)

    def _attach_dashed_values(self, args: list[str]) -> list[str]:
        """``--source-set -1,-2`` as ``--source-set=-1,-2``: a value after an option that takes
        one is that option's value when it starts with a single dash (argparse reads only a lone
        negative number such as ``-1`` as a value; a set of them, or a string id such as ``-a``,
        it took for an unknown option). Every option here is spelt with two dashes, so a value
        that starts with two is left to be reported as an option."""
        joined, i = [], 0
        while i < len(args):
            a = args[i]
            if a == "--":
                return joined + args[i:]
            action = self._option_string_actions.get(a)
            if (action is not None and action.nargs is None and i + 1 < len(args)
                    and args[i + 1].startswith("-") and not args[i + 1].startswith("--")
                    and args[i + 1] not in self._option_string_actions):
                joined.append(f"{a}={args[i + 1]}")
                i += 2
                continue
            joined.append(a)
            i += 1
        return joined


def _is_number(text: str) -> bool:  # a negative vertex id is a value, not an option
    try:
        float(text)
    except ValueError:
        return False
    return True


def _depth(text: str) -> int:
    """ASCII decimal digits only, as for integer vertex ids: `+1`, ` 2` or `1_0` are typos."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number of levels >= 0, got {text!r}")
    return int(text)


def _directory(text: str) -> str:
    """An empty --output is what `--output "$DIR"` gives with DIR unset: not the default folder."""
    if text == "":
        raise argparse.ArgumentTypeError("an empty path; give a directory, or leave --output out for output/<input stem>/")
    return text


def _partitions(text: str) -> int | str:
    """``--partitions`` and $GRAPH_PARTITIONS: a whole number >= 1 in ASCII digits (as
    --depth-limit: `+2`, ` 2` or `1_6` are typos), or auto."""
    if text.strip().lower() == "auto":
        return "auto"
    value = int(text) if text.isascii() and text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1 or auto, got {text!r}")
    return value


def _id_list(text: str) -> list[str]:
    """The ids of a --source-set, as written between the commas: a string id may hold spaces
    (" a" and "a" are different vertices), and integer ids are refused with them."""
    ids = text.split(",")
    if "" in ids:
        raise argparse.ArgumentTypeError(f"source set {text!r} has an empty id")
    return ids


def build_parser(kind: str) -> Parser:
    parser = Parser(prog=f"python -m flows.{kind}", description=DESCRIPTIONS[kind], epilog=EPILOG)
    parser.add_argument("input", help="Parquet file or directory of Parquet files (one edge per row)")
    parser.add_argument("--output", metavar="DIR", type=_directory, help="output directory (default: output/<input stem>/)")
    parser.add_argument("--src-col", default="src", metavar="C", help="source vertex column (default: src)")
    parser.add_argument("--dst-col", default="dst", metavar="C", help="destination vertex column (default: dst)")
    if kind != "bfs":
        parser.add_argument("--weight-col", default="weight", metavar="C", help="edge weight column (default: weight)")
    if kind != "mst":
        sources = parser.add_mutually_exclusive_group(required=True)
        sources.add_argument("--source", action="append", metavar="ID",
                             help="BFS source vertex id (repeat: one search from all of them)")
        sources.add_argument("--source-set", action="append", metavar="ID,ID,...", type=_id_list,
                             help="a separate search from these ids (repeat: one search and one "
                                  "output directory OUTPUT/source-set-K per set, run in parallel); "
                                  "a string id that holds a comma can only be given with --source")
        parser.add_argument("--directed", action="store_true", help="follow edges src -> dst only")
        parser.add_argument("--depth-limit", type=_depth, default=None, metavar="N", help="stop after N levels")
    parser.add_argument("--partitions", type=_partitions, default=None, metavar="N|auto",
                        help="split the graph over N Dask workers (one GPU each on a GPU machine), or auto: "
                             "one partition when the graph fits one GPU, else every GPU worker "
                             "(default: $GRAPH_PARTITIONS, else 1)")
    parser.add_argument("--output-layout", choices=LAYOUTS, default=DEFAULT_LAYOUT,
                        help="a partitioned run writes each result as one file, or as a Parquet dataset "
                             "directory of one part per partition (default: file)")
    parser.add_argument("--compression", choices=COMPRESSIONS, default=DEFAULT_COMPRESSION,
                        help="Parquet compression of the results (default: snappy, fast to write and read; "
                             "zstd makes smaller files)")
    parser.add_argument("--backend", choices=["auto", "numpy", "cupy"], default=None,
                        help="compute backend (default: $GRAPH_BACKEND, else auto: cupy when a GPU is usable)")
    parser.add_argument("--runner", choices=["auto", "dask", "threads"], default=None,
                        help="where tasks run: threads of this process, Dask workers of this machine "
                             "(GPU workers when there is a GPU), or auto: threads below "
                             "$GRAPH_DASK_MIN_EDGES (default 16,000,000) input edges, Dask above "
                             "(default: $GRAPH_TASK_RUNNER, else auto)")
    parser.add_argument("--dask-address", metavar="URL",
                        help="run tasks on a running Dask cluster, e.g. tcp://host:8786 ($GRAPH_DASK_ADDRESS)")
    parser.add_argument("--verbose", action="store_true", help="show Prefect's log on the terminal")
    return parser


def parameters(kind: str, args: argparse.Namespace) -> dict:
    params = dict(input=args.input, output=args.output, src_col=args.src_col, dst_col=args.dst_col,
                  backend=args.backend, compression=args.compression, partitions=args.partitions,
                  output_layout=args.output_layout)
    if kind != "bfs":
        params["weight_col"] = args.weight_col
    if kind != "mst":
        params.update(source=args.source, source_sets=args.source_set, directed=args.directed,
                      depth_limit=args.depth_limit)
    return params


def _check_text(args: argparse.Namespace) -> None:
    """Every argument a run records is UTF-8 text. Prefect sends a run's parameters as JSON:
    a name in another encoding (a file called caf\xe9.parquet in Latin-1), which Python holds
    with surrogate escapes, failed the run with "'utf-8' codec can't encode character"."""
    given = [("input", args.input), ("--output", args.output), ("--src-col", args.src_col),
             ("--dst-col", args.dst_col), ("--weight-col", getattr(args, "weight_col", None))]
    given += [("--source", s) for s in getattr(args, "source", None) or []]
    given += [("--source-set", i) for ids in getattr(args, "source_set", None) or [] for i in ids]
    for what, value in given:
        if value is None:
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(value).decode("utf-8", "backslashreplace")
            hint = "rename it" if what in ("input", "--output") else "give it in UTF-8"
            raise UsageError(f"{what} '{shown}' is not UTF-8 text, which a run needs to record it; {hint}") from None


def check(args: argparse.Namespace) -> str:
    """Checks that need no import; returns the runner kind asked for. Sets ``args.partitions``
    from $GRAPH_PARTITIONS when the option was not given."""
    _check_text(args)
    for location in (args.input, args.output):
        try:
            locations.check_scheme(location)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if locations.is_store(args.input):
        pass  # the run reads it, and names what is wrong with it
    elif not os.path.exists(locations.local_path(args.input)):
        if os.path.islink(args.input):
            raise UsageError(f"{args.input}: dangling symbolic link (to {os.readlink(args.input)})")
        raise UsageError(f"{args.input}: input not found")
    if args.partitions is None:
        setting = os.environ.get("GRAPH_PARTITIONS") or "1"
        try:
            args.partitions = _partitions(setting)
        except argparse.ArgumentTypeError:
            raise UsageError(f"GRAPH_PARTITIONS={setting}: choose a whole number >= 1 or auto") from None
    backend = os.environ.get("GRAPH_BACKEND", "").strip()
    if args.backend is None and backend and backend.lower() not in ("auto", "numpy", "cupy"):
        raise UsageError(f"GRAPH_BACKEND={backend}: choose auto, numpy or cupy")
    try:  # the numeric settings, each named where it is wrong
        settings.check_environment()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.partitions != "auto" and args.partitions > 1:
        return "dask"  # one partition per Dask worker: the ranks run there
    kind = args.runner or os.environ.get("GRAPH_TASK_RUNNER")
    if not kind:  # a cluster's address means that cluster; otherwise the input's size decides
        kind = "dask" if args.dask_address or os.environ.get("GRAPH_DASK_ADDRESS") else "auto"
    if kind not in ("auto", "dask", "threads"):
        raise UsageError(f"GRAPH_TASK_RUNNER={kind}: choose auto, dask or threads")
    return kind


def run_command(kind: str):
    """``python -m flows.<kind>``: main(), then Prefect's exit handlers (they send the run's last
    logs and events), then exit without the interpreter's teardown of every module, which took
    0.3-0.5 s after each run here once Prefect was imported (a fifth of a run against a running
    server). --help and argument errors leave through SystemExit as usual."""
    import atexit

    code = main(kind)
    sys.stdout.flush()
    sys.stderr.flush()
    spec = sys.modules.get("distributed.deploy.spec")
    if spec is not None:  # a cluster still open here was left while it started: its workers end with us
        atexit.unregister(spec.close_clusters)
    atexit._run_exitfuncs()
    os._exit(code)


def main(kind: str, argv=None) -> int:
    """Parse and check the arguments, run the flow, print what it wrote. Exit status: 0 done,
    1 failed (one line on stderr), 130 interrupted."""
    try:
        args = build_parser(kind).parse_args(argv)
        runner_kind = check(args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    handlers = {signum: signal.signal(signum, _interrupt) for signum in (signal.SIGINT, signal.SIGTERM)}
    _signals_received.clear()
    server = watchdog = None
    params = parameters(kind, args)
    try:
        if not _api_url_configured_outside_prefect():
            server = TemporaryServer()  # boots while the imports below run
        watchdog = _Watchdog(params, server)
        return _run(kind, args, params, runner_kind, server)
    except BaseException as exc:
        if _interrupted(exc):
            _remove_temporaries(params)
            print("interrupted: no partial file was left", file=sys.stderr)
            return 130
        if not isinstance(exc, Exception):
            raise
        # every failure becomes one line; the traceback is in Prefect's log
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1
    finally:
        if watchdog is not None:
            watchdog.close()
        if server is not None:
            server.stop()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _run(kind: str, args, params: dict, runner_kind: str, server: TemporaryServer | None) -> int:
    import importlib

    from prefect import tags
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from flows.common import TAGS
    from flows.runners import cluster_started_early, cpu_workers, resolve_auto, task_runner

    configured = PREFECT_API_URL.value()
    if configured and server is not None:  # configured where only Prefect looks (prefect.toml, .env)
        server.stop()
        server = None
    flow = getattr(importlib.import_module(f"flows.{kind}"), f"{kind}_flow")
    environment = {} if args.verbose else console_off()
    if args.backend:  # a Dask cluster of this machine follows it: CPU workers for numpy, also beside GPUs
        environment["GRAPH_BACKEND"] = args.backend
    if args.partitions != "auto" and args.partitions > 1:
        # a CPU cluster of this machine gets a worker per partition (a GPU cluster has one per GPU)
        environment["GRAPH_DASK_WORKERS"] = str(max(cpu_workers(), args.partitions))
    with inherited_environment(environment):  # auto counts the workers of the cluster this backend gets
        runner = task_runner(resolve_auto(runner_kind, args.input), args.dask_address)
    # a command-line run is watched by its caller: no heartbeat thread (it costs ~1 s per run)
    settings = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    if server is not None:
        settings[PREFECT_API_URL] = environment["PREFECT_API_URL"] = server.wait()
    with temporary_settings(updates=settings), inherited_environment(environment), tags(*TAGS, kind, "cli"):
        with cluster_started_early(runner):  # its workers start while Prefect creates the flow run
            state = flow.with_options(task_runner=runner)(**params, return_state=True)
        if server is not None:  # (an interrupted run raised above: Ctrl-C does not wait for this)
            _drain_to_api()
        summary = state.result()  # raises the run's error
    lines = [describe(kind, summary), *(f"wrote {path}" for path in summary["outputs"])]
    if configured:
        from prefect.settings import PREFECT_UI_URL

        lines.append(f"run: {PREFECT_UI_URL.value()}/runs/flow-run/{state.state_details.flow_run_id}")
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:  # `| head -1`: the run succeeded; what the reader did not take is dropped
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _drain_to_api(seconds: float = 10) -> None:
    """Send the artifacts, logs and events still queued in this process before the temporary
    server stops (they would be sent at exit, to a server already gone)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    from tasks import artifacts

    artifacts.wait_until_published(seconds)
    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=seconds)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def describe(kind: str, s: dict) -> str:
    """One line for the terminal: what was computed and that it was checked."""
    parts = [f"{_count(s['vertices'], 'vertex', 'vertices')}, {_count(s['edges'], 'edge')}"]
    if "levels" in s:
        parts.append("BFS " + ", ".join(_count(n, "level") for n in s["levels"]))
    if "forest_edges" in s:
        weight = s["forest_weight"]  # a float, or decimal text where float64 cannot hold the sum
        parts.append(f"forest of {_count(s['forest_edges'], 'edge')}, weight "
                     f"{f'{weight:,.6g}' if isinstance(weight, float) else weight}, "
                     f"{_count(s['components'], 'component')}")
    return f"{kind}: {'; '.join(parts)}; validation {s['validation']} ({s['total_seconds']:.2f} s)"


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    lines = [line.strip(" -") for line in text.splitlines() if line.strip()]
    if type(exc).__name__ == "ParameterTypeError":  # "invalid parameters:" + one line per parameter
        return "invalid parameters: " + "; ".join(lines[1:])
    if type(exc).__name__ == "FlowRunTimeoutError":  # Prefect's text: "Scope timed out after N second(s)."
        from flows.common import FLOW_TIMEOUT_SECONDS

        return (f"the run took longer than its time limit of {FLOW_TIMEOUT_SECONDS:g} s and was stopped "
                "(GRAPH_FLOW_TIMEOUT_SECONDS sets the limit)")
    return lines[0]


def _remove_temporaries(params: dict, ending: int | None = None) -> None:
    """The run's processes are gone (or, ``ending``, this one is about to go): what they were
    writing is a stale temporary file."""
    from flows.common import output_directory
    from tasks.parquet.publish import remove_stale_staging
    from tasks.parquet.write import remove_stale_temporaries

    output = output_directory(params["output"], params["input"])
    if locations.is_store(output):  # nothing of a run is left in a store before it publishes
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


class _Watchdog:
    def __init__(self, params: dict, server: "TemporaryServer | None"):
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
            if woken[0] in (signal.SIGINT, signal.SIGTERM):
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
            _remove_temporaries(self.params, ending=os.getpid())
        finally:
            print("interrupted: no partial file was left", file=sys.stderr, flush=True)
            os._exit(130)

    def close(self) -> None:
        signal.set_wakeup_fd(self.previous)
        os.close(self.write_end)  # the watchdog reads end-of-file and leaves
        os.close(self.read_end)


def _api_url_configured_outside_prefect() -> bool:
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


def console_off() -> dict:
    """Prefect's console log off, as a run of the command line without --verbose has it: this
    process's console handlers now; Dask workers started meanwhile configure Prefect's logging
    from the variable returned (give it to them with inherited_environment)."""
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler):
            handler.setLevel(logging.CRITICAL + 1)
    return {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL"}


@contextmanager
def inherited_environment(values: dict):
    """Variables that processes started meanwhile (Dask workers) inherit; restored after, so a
    caller of main() in the same process (tests) keeps its own environment."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_signals_received: list[int] = []


def _interrupt(signum, frame):
    # SIGTERM unwinds like Ctrl-C. The signal is also noted because the KeyboardInterrupt can
    # surface wrapped in another exception (e.g. raised inside Prefect's pydantic serializer).
    _signals_received.append(signum)
    raise KeyboardInterrupt


def _interrupted(exc: BaseException) -> bool:
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
