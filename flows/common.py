"""What the three flows share: output location, stage timing, and the command line."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from kernels import backend as be


def default_output(input_path: str) -> str:
    """output/<input file or directory stem>/"""
    return str(Path("output") / Path(input_path.rstrip("/")).stem)


def run_info(backend: str | None) -> tuple[str, str]:
    """The resolved backend and the device it computes on."""
    name = be.resolve(backend)
    return name, be.device_name(name)


def add_input_arguments(parser: argparse.ArgumentParser, weights: bool) -> None:
    parser.add_argument("input", help="Parquet file or directory of Parquet files (one edge per row)")
    parser.add_argument("--output", help="output directory (default: output/<input stem>/)")
    parser.add_argument("--src-col", default="src", help="source vertex column (default: src)")
    parser.add_argument("--dst-col", default="dst", help="destination vertex column (default: dst)")
    if weights:
        parser.add_argument("--weight-col", default="weight", help="edge weight column (default: weight)")
    parser.add_argument("--backend", choices=["auto", "numpy", "cupy"], default=None,
                        help="compute backend (default: $GRAPH_BACKEND or auto: cupy when a GPU is usable)")
    parser.add_argument("--verbose", action="store_true", help="show Prefect's log on the terminal")


def add_bfs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", action="append", required=True, metavar="ID",
                        help="BFS source vertex id (repeat for several sources)")
    parser.add_argument("--directed", action="store_true", help="follow edges src -> dst only")
    parser.add_argument("--depth-limit", type=int, default=None, metavar="N",
                        help="stop after N levels")


def run_cli(flow, parser: argparse.ArgumentParser, argv, to_params) -> int:
    """Parse arguments, run ``flow`` and print where it wrote; on failure print one line to
    stderr and return 1. Prefect's own console log is shown with --verbose only (the run's full
    log still reaches the Prefect server)."""
    args = parser.parse_args(argv)
    if getattr(args, "depth_limit", None) is not None and args.depth_limit < 0:
        parser.error(f"--depth-limit must be >= 0 (got {args.depth_limit})")
    from prefect.logging.handlers import PrefectConsoleHandler
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    if not args.verbose:
        for handler in logging.getLogger().handlers:
            if isinstance(handler, PrefectConsoleHandler):
                handler.setLevel(logging.CRITICAL + 1)
    try:
        # a CLI run is watched by its caller: no heartbeat thread (it costs ~1 s per run)
        with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            summary = flow(**to_params(args))
    except KeyboardInterrupt:
        print("interrupted: nothing was written", file=sys.stderr)
        return 130
    except Exception as exc:  # every failure becomes one line; the traceback is in Prefect's log
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"error: {message}", file=sys.stderr)
        return 1
    for path in summary["outputs"]:
        print(f"wrote {path}")
    print(", ".join(f"{k}={v}" for k, v in summary.items() if k != "outputs"))
    return 0
