"""What the three flows share: output locations, source sets, the end of a run, and the
command line."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import distributed
from prefect.futures import PrefectFuture

from flows.runners import RUNNERS, task_runner, uses_dask
from tasks.edges_io import remove_stale_temporaries
from tasks.errors import InputError
from tasks.graph_tasks import publish_summary


def default_output(input_path: str) -> str:
    """output/<input file or directory stem>/"""
    return str(Path("output") / Path(input_path.rstrip("/")).stem)


def source_plan(source: list | None, source_sets: list[list] | None, output: str,
                depth_limit: int | None) -> tuple[list[list], list[str]]:
    """The BFS searches of a run and where each writes: ``source`` is one search from all its
    vertices (into OUTPUT/); ``source_sets`` are separate searches (into OUTPUT/source-set-K/)."""
    if depth_limit is not None and depth_limit < 0:
        raise InputError(f"depth limit must be >= 0 (got {depth_limit})")
    if bool(source) == bool(source_sets):
        raise InputError("give either source (one search) or source_sets (one search per set)")
    if source:
        return [list(source)], [output]
    return [list(s) for s in source_sets], [str(Path(output) / f"source-set-{k}") for k in range(len(source_sets))]


def finish(kind: str, summary: PrefectFuture, started: float, stages: list) -> dict:
    """Fetch the run's summary, the one result the flow process takes from the workers (a small
    dict; every other product stays where it was made: waiting on a Dask future would fetch its
    data). The summary depends on every stage, so it settles last. If it did not complete, raise
    the error of the first stage that failed (stages are in recipe order, so that is the cause,
    not a downstream task that never ran)."""
    try:
        result = summary.result()
    except Exception:  # a signal (KeyboardInterrupt, TerminationSignal) ends the run now, unexamined
        for future in (f for stage in stages for f in (stage if isinstance(stage, list) else [stage])):
            if _failed(future):
                future.result()  # raises that task's own error (only the error travels)
        raise
    result["total_seconds"] = round(time.perf_counter() - started, 3)
    publish_summary(kind, result)
    return result


def _state_failed(state) -> bool:
    return state.is_failed() or state.is_crashed()


def _failed(future: PrefectFuture) -> bool:
    """Whether a settled task failed, asked where its state lives: a Dask future's state holds
    the task's product, so the question is sent to its worker rather than the state fetched."""
    wrapped = getattr(future, "wrapped_future", None)
    if isinstance(wrapped, distributed.Future):
        return wrapped.client.submit(_state_failed, wrapped).result()
    future.wait()
    return _state_failed(future.state)


def add_input_arguments(parser: argparse.ArgumentParser, weights: bool) -> None:
    parser.add_argument("input", help="Parquet file or directory of Parquet files (one edge per row)")
    parser.add_argument("--output", help="output directory (default: output/<input stem>/)")
    parser.add_argument("--src-col", default="src", help="source vertex column (default: src)")
    parser.add_argument("--dst-col", default="dst", help="destination vertex column (default: dst)")
    if weights:
        parser.add_argument("--weight-col", default="weight", help="edge weight column (default: weight)")
    parser.add_argument("--backend", choices=["auto", "numpy", "cupy"], default=None,
                        help="compute backend (default: $GRAPH_BACKEND or auto: cupy when a GPU is usable)")
    parser.add_argument("--runner", choices=RUNNERS, default=None,
                        help="where tasks run: dask workers of this machine (default; GPU workers "
                             "when there is a GPU) or threads of this process ($GRAPH_TASK_RUNNER)")
    parser.add_argument("--dask-address", metavar="URL",
                        help="run tasks on an existing Dask cluster, e.g. tcp://host:8786 ($GRAPH_DASK_ADDRESS)")
    parser.add_argument("--verbose", action="store_true", help="show Prefect's log on the terminal")


def add_bfs_arguments(parser: argparse.ArgumentParser) -> None:
    sources = parser.add_mutually_exclusive_group(required=True)
    sources.add_argument("--source", action="append", metavar="ID",
                         help="BFS source vertex id (repeat: one search from all of them)")
    sources.add_argument("--source-set", action="append", metavar="ID,ID,...", type=_id_list,
                         help="a separate search from these ids (repeat: one search and one "
                              "output directory OUTPUT/source-set-K per set, run in parallel)")
    parser.add_argument("--directed", action="store_true", help="follow edges src -> dst only")
    parser.add_argument("--depth-limit", type=int, default=None, metavar="N",
                        help="stop after N levels")


def _id_list(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise argparse.ArgumentTypeError(f"empty source set {text!r}")
    return ids


@contextmanager
def _environment(values: dict):
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


def _one_api_server() -> str | None:
    """The URL of a temporary Prefect server started here when none is configured. Dask worker
    processes need PREFECT_API_URL: without it each would start its own temporary server
    (seconds each, on one SQLite file)."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL

    if os.environ.get("PREFECT_API_URL") or PREFECT_API_URL.value():
        return None
    server = SubprocessASGIServer()  # the instance Prefect itself uses for a temporary server
    server.start()
    return server.api_url


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
    from prefect.exceptions import TerminationSignal

    if _signals_received:
        return True
    while exc is not None:
        if isinstance(exc, (KeyboardInterrupt, TerminationSignal)):
            return True
        if "KeyboardInterrupt" in str(exc) or "TerminationSignal" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def run_cli(flow, parser: argparse.ArgumentParser, argv, to_params) -> int:
    """Parse arguments, run ``flow`` and print where it wrote; on failure print one line to
    stderr and return 1. Prefect's own console log is shown with --verbose only (the run's full
    log still reaches the Prefect server)."""
    args = parser.parse_args(argv)
    if getattr(args, "depth_limit", None) is not None and args.depth_limit < 0:
        parser.error(f"--depth-limit must be >= 0 (got {args.depth_limit})")
    from prefect.logging.handlers import PrefectConsoleHandler
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    environment = {}
    if not args.verbose:
        # Dask worker processes configure Prefect's logging from this variable when they start
        environment["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "CRITICAL"
        for handler in logging.getLogger().handlers:
            if isinstance(handler, PrefectConsoleHandler):
                handler.setLevel(logging.CRITICAL + 1)
    handlers = {signum: signal.signal(signum, _interrupt) for signum in (signal.SIGINT, signal.SIGTERM)}
    params = to_params(args)
    output = params["output"] or default_output(params["input"])
    try:
        runner = task_runner(args.runner, args.dask_address)
        # a CLI run is watched by its caller: no heartbeat thread (it costs ~1 s per run)
        settings = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
        if uses_dask(runner) and (api_url := _one_api_server()):
            settings[PREFECT_API_URL] = environment["PREFECT_API_URL"] = api_url
        with temporary_settings(updates=settings), _environment(environment):
            summary = flow.with_options(task_runner=runner)(**params)
    except BaseException as exc:
        if _interrupted(exc):
            # the run's processes are gone: what they were writing is a stale temporary file
            for directory in (output, *Path(output).glob("source-set-*")) if Path(output).is_dir() else ():
                remove_stale_temporaries(directory)
            print("interrupted: no partial file was left", file=sys.stderr)
            return 130
        if not isinstance(exc, Exception):
            raise
        # every failure becomes one line; the traceback is in Prefect's log
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"error: {message}", file=sys.stderr)
        return 1
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    for path in summary["outputs"]:
        print(f"wrote {path}")
    print(", ".join(f"{k}={v}" for k, v in summary.items() if k != "outputs"))
    return 0
