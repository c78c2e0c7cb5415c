"""What a run can be asked, and the rules that every entry point shares: the command line (which
checks its arguments with this module before it imports Prefect, so it imports nothing heavy),
the flows' parameter types, and the partitioned driver.

- the choice lists: BACKENDS, RUNNERS, READERS (the writer's, COMPRESSIONS and LAYOUTS, are
  tasks.parquet.write.results');
- ``parse_partitions``: a partition count as a flag, a setting or a parameter gives it;
- ``weight_column``: the weight column, or None for an unweighted edge list;
- ``source_plan``: the searches of a run, where each writes and how its artifacts are keyed.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from pathlib import PurePosixPath

from tasks.errors import InputError

BACKENDS = ("auto", "numpy", "cupy")  # auto: cupy when a GPU is usable (kernels.backend.resolve)
RUNNERS = ("auto", "dask", "threads")  # where tasks run (flows/runners.py)
READERS = ("auto", "gpu", "host")  # the Parquet reader (tasks.parquet.read.reader.resolve_reader)
NO_WEIGHTS = "none"  # the spelling of "no weight column" wherever a column name is text


def weight_column(name: str | None) -> str | None:
    """The weight column asked for, or None for an unweighted edge list: one spelling everywhere,
    None (Python, JSON null) or "none" in any case (the command line, a deployment's parameters,
    the UI's form, which can only send text)."""
    if name is None or name.strip().lower() == NO_WEIGHTS:
        return None
    return name


def parse_partitions(value) -> int | str:
    """A partition count: a whole number >= 1, as an integer or in ASCII decimal digits (`+2`,
    ` 2` and `1_6`, which Python's int() reads as numbers, are typos here), or ``"auto"`` in any
    case. ValueError otherwise; each caller says where the value came from."""
    if isinstance(value, str):
        if value.strip().lower() == "auto":
            return "auto"
        count = int(value) if value.isascii() and value.isdigit() else 0
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        count = int(value)
    else:
        count = 0
    if count < 1:
        raise ValueError(f"expected a whole number >= 1 or auto, got {value!r}")
    return count


@dataclass(frozen=True)
class SourcePlan:
    """The BFS searches of a run, in order: ``sets[k]`` is the ids of search k (as the user gave
    them), ``folders[k]`` where it writes relative to the output ("" for the one search of
    ``source``, ``source-set-K`` for the K-th of ``source_sets``), ``keys[k]`` its source set for
    artifact keys and labels (None for the one search of ``source``)."""

    sets: list[list]
    folders: list[str]
    keys: list[int | None]

    def results(self, name: str) -> list[str]:
        """Each search's result ``name`` relative to the output: name, or source-set-K/name."""
        return [str(PurePosixPath(folder) / name) for folder in self.folders]


def source_plan(source: list | None, source_sets: list[list] | None, required: bool = True) -> SourcePlan:
    """``source`` is one search from all its vertices (into OUTPUT/); ``source_sets`` are separate
    searches (into OUTPUT/source-set-K/). Giving both is refused; giving neither is refused when
    a search is ``required`` (a BFS), and means no search otherwise (a forest only)."""
    if (source and source_sets) or (required and not source and not source_sets):
        raise InputError("give either source (one search) or source_sets (one search per set)")
    if source:
        return SourcePlan([list(source)], [""], [None])
    sets = [list(s) for s in source_sets or []]
    return SourcePlan(sets, [f"source-set-{k}" for k in range(len(sets))], list(range(len(sets))))
