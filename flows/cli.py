"""The command line of the three flows: ``python -m flows.mst|bfs|pipeline INPUT ...``: the run
of one command, from its checked arguments to the lines it prints.

Arguments and the input path are checked before Prefect, Dask or pyarrow is imported
(flows/arguments.py), so ``--help`` and a mistyped path answer at once; every failure is one
``error:`` line on stderr and exit 1. When no Prefect server is configured, the temporary server
the run needs is started first (flows/server.py), so that it boots while this process imports
Prefect and the flow, and so is a GPU run's device (flows/device_start.py); the server is
stopped when the command ends. SIGINT and SIGTERM end the command with exit 130, its run
Cancelled on the server (flows/interrupts.py). Without --verbose, a run longer than a few
seconds writes a line per stage to stderr (flows/progress.py). Where the tasks run:
``--runner``, else $GRAPH_TASK_RUNNER, else ``auto`` (threads for small graphs, Dask above
flows.runner_choice.DASK_MIN_EDGES edges); ``--partitions N`` with N > 1 runs on Dask workers, at
least N of them on the CPU.
"""
from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager

# os-level only, like this module: nothing heavy before the arguments are checked
from flows import device_start, interrupts
from flows.arguments import UsageError, build_parser, check, parameters
from flows.progress import StageLines
from flows.run_log import one_line
from flows.server import TemporaryServer, api_url_configured_outside_prefect, drain_to_api


def run_command(kind: str):
    """``python -m flows.<kind>``: main(), then Prefect's exit handlers (they send the run's last
    logs and events), then exit without the interpreter's teardown of every module, which took
    0.3-0.5 s after each run here once Prefect was imported (a fifth of a run against a running
    server). --help and argument errors leave through SystemExit as usual."""
    import atexit

    code = main(kind)
    interrupts.ending(code)  # a signal now exits at once, with this status (Prefect's handlers can take seconds)
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
    handlers = interrupts.install_handlers()
    server = watchdog = None
    params = parameters(kind, args)
    code = 1
    try:
        from flows.inputs import command_plan

        # the input's one plan, before Prefect: a refused input (not Parquet, a column missing
        # or mistyped) is this command's error line within a fraction of a second
        plan = command_plan(params)
        device_start.start_early(args.backend, runner_kind, args.partitions, plan, args.reader)  # beside the imports below
        if not api_url_configured_outside_prefect():
            server = TemporaryServer()  # boots while the imports below run
        watchdog = interrupts.Watchdog(params, server)
        code = _run(kind, args, params, runner_kind, server, plan)
    except BaseException as exc:
        if not interrupts.interrupted(exc):
            if not isinstance(exc, Exception):
                raise
            # every failure becomes one line; the traceback is in the run's log, at DEBUG
            print(f"error: {one_line(exc)}", file=sys.stderr)
        else:
            interrupts.ending(130)  # a second signal exits at once
            if interrupts.mark_stopped() == "COMPLETED":  # the run was done before the signal took effect
                print(interrupts.COMPLETED_ANYWAY, file=sys.stderr)
                code = 0
            else:
                interrupts.remove_temporaries(params)
                print("interrupted: no partial file was left", file=sys.stderr)
                code = 130
    finally:
        interrupts.ending(code)  # a signal during the clean-up below ends it with the outcome decided
        if watchdog is not None:
            watchdog.close()
        if server is not None:
            server.stop()
        interrupts.restore_handlers(handlers)
    return code


def _run(kind: str, args, params: dict, runner_kind: str, server: TemporaryServer | None, plan) -> int:
    import importlib
    import json

    from prefect import tags
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from flows.common import TAGS
    from flows.inputs import handed_over
    from flows.runner_choice import resolve_auto
    from flows.runners import cluster_started_early, task_runner
    from tasks.cluster import cpu_workers
    from tasks.report import describe

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
        runner = task_runner(resolve_auto(runner_kind, plan), args.dask_address)
    # a command-line run is watched by its caller: no heartbeat thread (it costs ~1 s per run)
    settings = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    if server is not None:
        settings[PREFECT_API_URL] = environment["PREFECT_API_URL"] = server.wait()
    with temporary_settings(updates=settings), inherited_environment(environment), tags(*TAGS, kind, "cli"):
        progress = None if args.verbose else StageLines(interrupts.noted_run)  # (--verbose: Prefect's log)
        try:
            with handed_over(plan), cluster_started_early(runner):  # workers start while Prefect creates the run
                # (note_run: the run a signal stops is marked Cancelled on the server)
                state = flow.with_options(task_runner=runner, on_running=[interrupts.note_run])(**params,
                                                                                             return_state=True)
        finally:
            if progress is not None:
                progress.stop()
        if server is not None:  # (an interrupted run raised above: Ctrl-C does not wait for this)
            drain_to_api()
        link = None
        if configured:  # a temporary server's page is gone once the command ends
            from prefect.settings import PREFECT_UI_URL

            link = f"{PREFECT_UI_URL.value()}/runs/flow-run/{state.state_details.flow_run_id}"
        try:
            summary = state.result()  # raises the run's error
        except Exception as exc:
            if interrupts.interrupted(exc):
                raise  # main() ends an interrupted run
            # the failed run's page as a completed run gives it (its log holds the traceback), then
            # the one error line, last, where `2>&1 | tail -1` finds it
            print((f"run: {link}\n" if link else "") + f"error: {one_line(exc)}", file=sys.stderr)
            return 1
    if args.json:  # the summary for a downstream step, its run's page beside it
        lines = [json.dumps({**summary, **({"run": link} if link else {})})]
    else:
        lines = [describe(kind, summary), *(f"wrote {path}" for path in summary["outputs"])]
        if link:
            lines.append(f"run: {link}")
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:  # `| head -1`: the run succeeded; what the reader did not take is dropped
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


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
