"""The command line's arguments: the parser of each command, the checks that need no import
(the input exists, the GRAPH_* settings are usable, every argument is UTF-8), and the flow
parameters they give. Imports only os-level modules, so that ``--help`` and a mistyped path
answer before Prefect, Dask or pyarrow is imported; every error is a UsageError, which the
command prints as one ``error:`` line (exit 1).
"""
from __future__ import annotations

import argparse
import glob
import os
import sys

from flows import __version__
from tasks import settings
from tasks.parameters import BACKENDS, READERS, RUNNERS, parse_partitions, weight_column
from tasks.parquet.store import locations
from tasks.parquet.dataset.filters import FilterError, parse as parse_filter
from tasks.parquet.write.results import (
    BFS_RESULT_NAME, COMPRESSIONS, DEFAULT_COMPRESSION, DEFAULT_LAYOUT, FOREST_RESULT_NAME, LAYOUTS, WRITERS,
    result_paths, source_set_folder,
)

DESCRIPTIONS = {
    "mst": "Minimum spanning forest of a Parquet edge list, written to OUTPUT/mst_edges.parquet.",
    "bfs": "Breadth-first search distances from one or more sources of a Parquet edge list, written "
           "to OUTPUT/bfs_distances.parquet (OUTPUT/source-set-K/ per --source-set).",
    "pipeline": "BFS distances and the minimum spanning forest of one Parquet edge list, with one ingest; "
                "both files are written once every result is verified.",
}
EPILOG = ("On failure: one line 'error: ...' on stderr and exit 1; interrupted: exit 130. "
          "Without PREFECT_API_URL a temporary Prefect server is started for the run; "
          "a server started once keeps runs fast (see the README).")


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
    """``--partitions``: tasks.parameters.parse_partitions, its error as argparse reports one."""
    try:
        return parse_partitions(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _id_list(text: str) -> list[str]:
    """The ids of a --source-set, as written between the commas: a string id may hold spaces
    (" a" and "a" are different vertices), and integer ids are refused with them."""
    ids = text.split(",")
    if "" in ids:
        raise argparse.ArgumentTypeError(f"source set {text!r} has an empty id")
    return ids


def build_parser(kind: str) -> Parser:
    parser = Parser(prog=f"python -m flows.{kind}", description=DESCRIPTIONS[kind], epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"parquet-graph-pipeline {__version__}")
    parser.add_argument("input", help="Parquet file, directory of Parquet files, or quoted glob pattern of them (one edge per row)")
    parser.add_argument("--output", metavar="DIR", type=_directory,
                        help="output directory (default: output/<input stem>/), or, for a run of one result, "
                             "that result's file: a path ending in .parquet, .parq or .pq")
    parser.add_argument("--src-col", default="src", metavar="C", help="source vertex column (default: src)")
    parser.add_argument("--dst-col", default="dst", metavar="C", help="destination vertex column (default: dst)")
    if kind != "bfs":
        parser.add_argument("--weight-col", default="weight", metavar="C|none",
                            help="edge weight column, or none for an unweighted edge list: the spanning "
                                 "forest of unit weights (default: weight)")
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
    parser.add_argument("--filter", metavar="EXPR",
                        help="read only the rows EXPR keeps, e.g. \"day >= '2026-11-01' and weight > 0.5\": "
                             "comparisons (= != < <= > >=), in (...), is [not] null, and/or/not, on hive "
                             "partition folders (key=value) and data columns; folders the partition values "
                             "exclude are never opened (docs/inputs.md#filters)")
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
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="compute backend (default: $GRAPH_BACKEND, else auto: cupy when a GPU is usable)")
    parser.add_argument("--reader", choices=READERS, default="auto",
                        help="Parquet reader: gpu decodes the id and weight pages on the compute backend (on NumPy "
                             "where CuPy is not usable), columns it does not take (string ids, decimal weights) on "
                             "the host; host is pyarrow's reader; auto: gpu where CuPy and nvCOMP are usable, else "
                             "host (default: auto)")
    parser.add_argument("--writer", choices=WRITERS, default="auto",
                        help="Parquet writer of the results: gpu encodes the pages on the compute backend (on NumPy "
                             "where CuPy is not usable; files with string ids stay on pyarrow's writer); host is "
                             "pyarrow's writer; auto: gpu on a GPU with nvCOMP, else host (default: auto)")
    parser.add_argument("--runner", choices=RUNNERS, default=None,
                        help="where tasks run: threads of this process, Dask workers of this machine "
                             "(GPU workers when there is a GPU), or auto: threads below "
                             "$GRAPH_DASK_MIN_EDGES (default 16,000,000) input edges, Dask above where it gets several "
                             "GPUs or at least 4 CPU workers (default: $GRAPH_TASK_RUNNER, else auto)")
    parser.add_argument("--dask-address", metavar="URL",
                        help="run tasks on a running Dask cluster, e.g. tcp://host:8786 ($GRAPH_DASK_ADDRESS)")
    parser.add_argument("--json", action="store_true",
                        help="print the run's summary as one JSON object on stdout (the files written under "
                             "\"outputs\"; with a configured server, its page under \"run\") instead of the "
                             "summary line")
    parser.add_argument("--verbose", action="store_true", help="show Prefect's log on the terminal")
    return parser


def parameters(kind: str, args: argparse.Namespace) -> dict:
    params = dict(input=args.input, output=args.output, src_col=args.src_col, dst_col=args.dst_col,
                  backend=args.backend, compression=args.compression, partitions=args.partitions,
                  output_layout=args.output_layout, filter=args.filter,
                  reader=args.reader, writer=args.writer)
    if kind != "bfs":
        params["weight_col"] = weight_column(args.weight_col)
    if kind != "mst":
        params.update(source=args.source, source_sets=args.source_set, directed=args.directed,
                      depth_limit=args.depth_limit)
    return params


def _check_text(args: argparse.Namespace) -> None:
    """Every argument a run records is UTF-8 text. Prefect sends a run's parameters as JSON:
    a name in another encoding (a file called caf\xe9.parquet in Latin-1), which Python holds
    with surrogate escapes, failed the run with "'utf-8' codec can't encode character"."""
    given = [("input", args.input), ("--output", args.output), ("--src-col", args.src_col),
             ("--dst-col", args.dst_col), ("--weight-col", getattr(args, "weight_col", None)),
             ("--filter", args.filter)]
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


def _choices(names: tuple[str, ...]) -> str:
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _check_file_target(args: argparse.Namespace) -> None:
    """An --output ending in .parquet names the run's one result file: refused for several."""
    searches = [BFS_RESULT_NAME] if getattr(args, "source", None) else []
    searches += [f"{source_set_folder(k)}/{BFS_RESULT_NAME}" for k in range(len(getattr(args, "source_set", None) or []))]
    forest = [FOREST_RESULT_NAME] if hasattr(args, "weight_col") else []
    try:
        result_paths(args.output, searches + forest)
    except ValueError as exc:
        raise UsageError(f"--{exc}") from None


def check(args: argparse.Namespace) -> str:
    """Checks that need no import; returns the runner kind asked for. Sets ``args.partitions``
    from $GRAPH_PARTITIONS when the option was not given."""
    _check_text(args)
    if args.filter is not None:
        try:
            parse_filter(args.filter)
        except FilterError as exc:
            raise UsageError(str(exc)) from None
    for location in (args.input, args.output):
        try:
            locations.check_scheme(location)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.output is not None:
        _check_file_target(args)
    if locations.is_store(args.input):
        pass  # the run reads it, and names what is wrong with it
    elif locations.is_pattern(args.input) and not os.path.exists(locations.local_path(args.input)):
        # a glob pattern: its matches are the dataset (the run's one walk takes them by the dataset rule)
        if next(glob.iglob(locations.local_path(args.input), recursive=True), None) is None:
            raise UsageError(f"no file matches {args.input}")
    elif not os.path.exists(locations.local_path(args.input)):
        if os.path.islink(args.input):
            raise UsageError(f"{args.input}: dangling symbolic link (to {os.readlink(args.input)})")
        raise UsageError(f"{args.input}: input not found")
    if args.partitions is None:
        setting = os.environ.get("GRAPH_PARTITIONS") or "1"
        try:
            args.partitions = parse_partitions(setting)
        except ValueError:
            raise UsageError(f"GRAPH_PARTITIONS={setting}: choose a whole number >= 1 or auto") from None
    backend = os.environ.get("GRAPH_BACKEND", "").strip()
    if args.backend is None and backend and backend.lower() not in BACKENDS:
        raise UsageError(f"GRAPH_BACKEND={backend}: choose {_choices(BACKENDS)}")
    try:  # the numeric settings, each named where it is wrong
        settings.check_environment()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.partitions != "auto" and args.partitions > 1:
        return "dask"  # one partition per Dask worker: the ranks run there
    kind = args.runner or os.environ.get("GRAPH_TASK_RUNNER")
    if not kind:  # a cluster's address means that cluster; otherwise the input's size decides
        kind = "dask" if args.dask_address or os.environ.get("GRAPH_DASK_ADDRESS") else "auto"
    if kind not in RUNNERS:
        raise UsageError(f"GRAPH_TASK_RUNNER={kind}: choose {_choices(RUNNERS)}")
    return kind
