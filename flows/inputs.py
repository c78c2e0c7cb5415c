"""The run's paths and its one input plan, without Prefect: the command line makes the plan
before Prefect is imported or a server started (an input it refuses is one error line at once),
and the flow run it starts takes that plan instead of walking the input and reading its footers
again (flows.common.run_plan)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from tasks.errors import InputError
from tasks.parquet.dataset.plan import InputPlan, plan_input
from tasks.parquet.store import locations
from tasks.report import input_stem
from tasks.sources import check_sources_by_footers


def default_output(input_path: str) -> str:
    """output/<input file or directory stem>/"""
    return str(Path("output") / input_stem(input_path))


def output_directory(output: str | None, input_path: str) -> str:
    """The run's output directory: ``output``, else output/<input stem>/. An empty path is
    refused rather than taken for the default: it is what `--output "$DIR"` gives with DIR unset."""
    if output is None:
        return default_output(input_path)
    if output == "":
        raise InputError(f"output: an empty path; give a directory or a .parquet file, or leave it out for "
                         f"{default_output(input_path)}/")
    return output


def run_paths(input: str, output: str | None) -> tuple[str, str]:
    """The run's input and output directory (output_directory) as absolute paths, a relative
    one taken in the folder the run was started from. Its tasks may run on a Dask cluster
    whose workers started in another folder (--dask-address, GRAPH_DASK_ADDRESS): they would
    resolve a relative path there, read another file of the same name and write there. The
    paths are joined, not normalized: `link/..` stays the parent of the link's target. An empty
    input stays empty (input not found), not the current folder. The current folder is looked
    up only for a relative path: absolute paths run from a folder that has been removed. A
    store's URI (s3://...) passes untouched, a file:// URI becomes its path, and an unknown
    scheme is refused (tasks.parquet.store.locations)."""
    output = output_directory(output, input)
    return (absolute("input", input) if input else input), absolute("output", output)


def absolute(what: str, path: str) -> str:
    try:
        locations.check_scheme(path)
    except ValueError as exc:
        raise InputError(f"{what} {exc}") from None
    if locations.is_store(path):
        return path
    path = locations.local_path(path)
    if os.path.isabs(path):
        return path
    try:
        here = os.getcwd()
    except FileNotFoundError:
        raise InputError(f"{what} {path!r} is relative, but the folder the run started in no longer exists; "
                         "give an absolute path") from None
    return os.path.join(here, path)


# Plans the command line made before Prefect started (command_plan), keyed by what they plan
# (input_key): the flow run it starts takes its own (take_handed_over) instead of walking the
# input and reading its footers again.
_HANDED_OVER: dict[tuple, InputPlan] = {}


def input_key(input: str, src_col: str, dst_col: str, weight_col: str | None, filter: str | None) -> tuple:
    """What a plan plans: the input's absolute path (run_paths), the columns read and the filter."""
    return input, src_col, dst_col, weight_col, filter


def command_plan(params: dict) -> InputPlan:
    """The plan the flow makes of the command line's parameters ``params``, made before Prefect
    is imported: an input it refuses (not Parquet, a column missing or of the wrong type, ids
    of two kinds, an empty edge list, a filter that keeps nothing), or a BFS source the footers
    show is not a vertex (tasks.sources.check_sources_by_footers), raises InputError here, the
    command's one error line, within a fraction of a second."""
    input, _ = run_paths(params["input"], params.get("output"))
    plan = plan_input(input, params["src_col"], params["dst_col"], params.get("weight_col"),
                      filter=params.get("filter"))
    sources = [*(params.get("source") or []), *(s for ids in params.get("source_sets") or [] for s in ids)]
    check_sources_by_footers(plan, sources)
    return plan


@contextmanager
def handed_over(plan: InputPlan | None):
    """While the command line's flow run goes, ``plan`` (command_plan's) is the one its flow
    takes; one it did not take is dropped on the way out."""
    if plan is None:
        yield
        return
    key = input_key(plan.path, plan.src_col, plan.dst_col, plan.weight_col, plan.filter)
    _HANDED_OVER[key] = plan
    try:
        yield
    finally:
        _HANDED_OVER.pop(key, None)


def take_handed_over(input: str, src_col: str, dst_col: str, weight_col: str | None,
                     filter: str | None) -> InputPlan | None:
    """The plan handed over for this input and these columns, taken (None: none was)."""
    return _HANDED_OVER.pop(input_key(input, src_col, dst_col, weight_col, filter), None)
