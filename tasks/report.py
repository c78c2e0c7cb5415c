"""What a run reports, as text and data: the run's summary (``RunSummary``, one schema for the
one-partition and the partitioned run), its terminal line (``describe``) and its table rows
(``summary_rows``), the names of task runs, and the markdown of the per-level BFS, per-round Boruvka and validation
artifacts. Nothing here talks to Prefect (tasks/artifacts.py publishes) or computes on arrays:
the partitioned driver builds its summary with this module too.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

from tasks.parquet.store import locations
from tasks.parquet.store.locations import absolute


class RunSummary(TypedDict):
    """A run's figures: the flows' persisted result (JSON: plain numbers, strings and lists), the
    table in the UI and the terminal line. Seconds are wall-clock seconds of a stage (in a
    partitioned run, of its slowest rank)."""

    input: str  # absolute path of the input
    backend: str  # numpy or cupy
    device: str  # what computed ("NVIDIA H200", "CPU ...", with ", N partitions" when partitioned)
    vertices: int  # distinct vertex ids
    edges: int  # input rows, self-loops included
    self_loops: int
    validation: str  # "passed" (a run whose validation fails has no summary: it failed)
    outputs: list[str]  # absolute paths of the results written
    # the Parquet reader: {"reader": "gpu" | "host", "columns": {column: {reader: column chunks}},
    # "fallbacks": {reason: chunks left to the host reader}, ...} (tasks.parquet.read.host_reader)
    reader: NotRequired[dict]
    # what encoded each output, in the order of outputs (tasks.parquet.write.result_files.written_by):
    # "gpu page writer on cupy, nvCOMP snappy", "host (pyarrow)", or "host (pyarrow; the page
    # writer takes no string vertex ids)"
    writers: NotRequired[list[str]]
    total_seconds: NotRequired[float]  # from the flow's start to its summary (set by the flow)
    # BFS (flows bfs and pipeline); lists are per search, in the order of the source sets
    source_sets: NotRequired[int]  # searches run
    sources: NotRequired[int]  # source ids over every search
    reached: NotRequired[list[int]]  # vertices at a finite distance, the sources included
    depth: NotRequired[list[int]]  # the largest finite distance: the farthest vertex reached, in hops
    gteps: NotRequired[float | None]  # Graph500: input edges in the searched components per ns
    # the minimum spanning forest (flows mst and pipeline)
    forest_edges: NotRequired[int]
    # tasks.forest_weight.reported_total: the exact sum rounded once to float64; beyond float64's
    # range, text ("≈" and 17 significant digits)
    forest_weight: NotRequired[float | str]
    components: NotRequired[int]  # trees of the forest, isolated vertices included
    rounds: NotRequired[int]  # Boruvka rounds
    edges_per_second: NotRequired[int | None]  # input edges per second of the forest's stage
    unit_weights: NotRequired[bool]  # the input had no weight column: every edge weighed 1
    # a filtered input (tasks.parquet.dataset.selection): the filter's text, the files with a row it
    # kept, the files opened (the rest were in excluded partition folders), the row groups their
    # statistics ruled out, and the rows of the files opened (``edges`` are the rows kept)
    filter: NotRequired[str]
    filter_files: NotRequired[int]
    filter_files_read: NotRequired[int]
    filter_folders_excluded: NotRequired[int]
    filter_row_groups_skipped: NotRequired[int]
    filter_rows_read: NotRequired[int]
    # stage seconds, in the order the stages run (STAGES)
    connect_seconds: NotRequired[float]
    load_seconds: NotRequired[float]
    prepare_seconds: NotRequired[float]
    csr_seconds: NotRequired[float]
    bfs_seconds: NotRequired[float]
    msf_seconds: NotRequired[float]
    validate_seconds: NotRequired[float]
    write_seconds: NotRequired[float]
    # partitioned runs only
    partitions: NotRequired[int]
    layout: NotRequired[str]  # "file" or "dataset"
    merges: NotRequired[int]  # components merged across partitions by the forest
    msf_stage_times: NotRequired[dict]  # seconds of the forest's local and global stages
    steps: NotRequired[list[list[str]]]  # per search: each level's direction
    level_times: NotRequired[list[list[float]]]  # per search: each level's seconds
    frontiers: NotRequired[list[list[int]]]  # per search: the frontier after each level
    bfs_validation: NotRequired[list[dict]]  # per search: check -> violations
    msf_validation: NotRequired[dict]


# Stage names (the ``<stage>_seconds`` keys) in the order they run, and as the summary shows them.
STAGES = {"connect": "ranks connecting", "load": "load", "prepare": "renumber", "csr": "CSR build", "bfs": "BFS",
          "msf": "MSF", "validate": "validation", "write": "write"}


def run_summary(*, input: str, backend: str, device: str, vertices: int, edges: int, self_loops: int,
                seconds: dict[str, float], outputs: list[str], **figures) -> RunSummary:
    """A passed run's summary. ``figures``: the BFS, forest and partitioned keys of RunSummary
    that the run has; ``seconds``: per stage name of STAGES."""
    unknown = set(figures) - set(RunSummary.__annotations__)
    unknown |= {stage for stage in seconds if stage not in STAGES}
    if unknown:
        raise KeyError(f"not in RunSummary's schema: {', '.join(sorted(unknown))}")
    summary = RunSummary(input=absolute(input), backend=backend, device=device, vertices=vertices,
                         edges=edges, self_loops=self_loops, validation="passed", outputs=list(outputs))
    summary.update(figures)
    summary.update({f"{stage}_seconds": round(seconds[stage], 4) for stage in STAGES if stage in seconds})
    return summary


def merge_reader_reports(reports: list[dict]) -> dict:
    """The reader's report of a run whose ranks each read a share: chunk counts added."""
    merged = {k: v for k, v in reports[0].items() if not isinstance(v, dict)}
    for key in {k for r in reports for k, v in r.items() if isinstance(v, dict)}:
        merged[key] = {}
        for r in reports:
            for name, value in r.get(key, {}).items():
                if isinstance(value, dict):
                    into = merged[key].setdefault(name, {})
                    for by, n in value.items():
                        into[by] = into.get(by, 0) + n
                else:
                    merged[key][name] = merged[key].get(name, 0) + value
    return merged


def reader_text(report: dict) -> str:
    """Which reader decoded each column, and why any chunk fell back, on one line:
    'host (pyarrow): src, dst, weight' or 'gpu page reader on cupy, nvCOMP decompression:
    src 12/12 column chunks, dst 12/12, weight 4/12; host reader for 8 (decimal weights: 8)'."""
    columns = report["columns"]
    if report["reader"] == "host":
        return f"host (pyarrow): {', '.join(columns)}"
    parts = [f"{c} {n.get('gpu', 0):,}/{sum(n.values()):,}" for c, n in columns.items()]
    if parts:
        parts[0] += " column chunks"
    text = f"gpu page reader on {report['xp']}, {report['decompress']} decompression: {', '.join(parts)}"
    fallbacks = report.get("fallbacks") or {}
    if fallbacks:
        text += (f"; host reader for {sum(fallbacks.values()):,} "
                 f"({', '.join(f'{reason}: {n:,}' for reason, n in fallbacks.items())})")
    for key, what in (("host_decompressed", "decompressed on the host"), ("page_decoded", "decoded page by page"),
                      ("host_streams", "decompressed on the host beside the GPU")):
        if report.get(key):
            text += f"; {what}: " + ", ".join(f"{reason}: {n:,}" for reason, n in report[key].items())
    return text


def writer_text(outputs: list[str], writers: list[str]) -> str:
    """What encoded the outputs, on one line: the writer when one wrote every file, else each
    file's ('/out/bfs_distances.parquet: gpu page writer ...; /out/mst_edges.parquet: host ...')."""
    if len(set(writers)) == 1:
        return writers[0]
    return "; ".join(f"{path}: {writer}" for path, writer in zip(outputs, writers))


def count(n: int, one: str, many: str | None = None) -> str:
    """'1 vertex', '2 vertices', '1,035 levels'."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def number(x) -> str:
    """Thousands separators; floats without trailing zeros, scientific when very large or small;
    text (a sum beyond float64's range) as it is."""
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return f"{x:,}"
    if x != 0 and (abs(x) >= 1e15 or abs(x) < 1e-4):
        return f"{x:.6g}"
    return f"{x:,.6f}".rstrip("0").rstrip(".")


def weight_text(weight: float | str) -> str:
    """A total weight (tasks.forest_weight.reported_total) with every digit it has: the shortest
    decimal that reads back as the same float64 (Python's repr), with thousands separators beside
    the counts (2,419,529.4; a whole number without a point: 2,419,529); scientific where repr
    is (from 1e16, below 1e-4); text (a sum beyond float64's range, '≈...') as it is."""
    if isinstance(weight, str):
        return weight
    text = repr(float(weight))
    if "e" in text or "n" in text:  # 1e+16, 2.5e-05; inf and nan cannot be sums of finite weights
        return text
    whole, _, fraction = text.partition(".")
    sign, whole = ("-", whole[1:]) if whole.startswith("-") else ("", whole)
    fraction = fraction.rstrip("0")
    return f"{sign}{int(whole):,}" + (f".{fraction}" if fraction else "")


def search_text(s: RunSummary, k: int) -> str:
    """What search ``k`` reached: '5,123 vertices reached, farthest 3 hops' (the farthest
    vertex's distance, as the distances file holds it)."""
    return f"{count(s['reached'][k], 'vertex', 'vertices')} reached, farthest {count(s['depth'][k], 'hop')}"


def describe(kind: str, s: RunSummary) -> str:
    """One line for the terminal: what was computed and that it was checked."""
    parts = [f"{count(s['vertices'], 'vertex', 'vertices')}, {count(s['edges'], 'edge')}"]
    if "depth" in s:
        several = s["source_sets"] > 1
        parts += [f"{search_label(k if several else None)}: {search_text(s, k)}" for k in range(len(s["depth"]))]
    if "forest_edges" in s:
        parts.append(f"forest of {count(s['forest_edges'], 'edge')}, weight {weight_text(s['forest_weight'])}, "
                     f"{count(s['components'], 'component')}"
                     + (" (unweighted: every edge weighs 1)" if s.get("unit_weights") else ""))
    if "filter" in s:
        parts.append(filter_text(s))
    return f"{kind}: {'; '.join(parts)}; validation {s['validation']} ({s['total_seconds']:.2f} s)"


def filter_text(s: dict) -> str:
    """What a filter kept, in words: 'filter day >= '2026-11-02' kept 4 of 6 files read (3
    partition folders excluded), 120 of 180 rows'."""
    excluded = s["filter_folders_excluded"]
    skipped = s["filter_row_groups_skipped"]
    return (f"filter {s['filter']} kept {number(s['filter_files'])} of {count(s['filter_files_read'], 'file')} read"
            + (f" ({count(excluded, 'partition folder')} excluded)" if excluded else "")
            + f", {number(s['edges'])} of {count(s['filter_rows_read'], 'row')}"
            + (f" ({count(skipped, 'row group')} skipped by statistics)" if skipped else ""))


def summary_rows(summary: RunSummary) -> list[dict]:
    """The summary as (quantity, value) rows with units, in the order a reader asks."""
    s, rows = summary, []

    def row(quantity, value):
        rows.append({"quantity": quantity, "value": value})

    row("validation", s["validation"])
    row("input", s["input"])
    row("vertices", number(s["vertices"]))
    row("edges", f"{number(s['edges'])} input rows ({number(s['self_loops'])} self-loops, ignored)")
    if "filter" in s:
        row("filter", filter_text(s))
    if "forest_edges" in s:
        row("components", number(s["components"]))
        row("forest", f"{count(s['forest_edges'], 'edge')}, total weight {weight_text(s['forest_weight'])}"
                      + (" (unweighted input: every edge weighs 1)" if s.get("unit_weights") else ""))
        row("Boruvka", f"{count(s['rounds'], 'round')}, {number(s['edges_per_second'] or 0)} edges/s")
    if "depth" in s:
        several = s["source_sets"] > 1
        for k, (depth, reached) in enumerate(zip(s["depth"], s["reached"])):
            where = f" (source set {k})" if several else ""
            row(f"BFS{where}", f"reached {number(reached)} of {count(s['vertices'], 'vertex', 'vertices')}, "
                               f"farthest {count(depth, 'hop')}")
        row("BFS rate", f"{s['gteps'] or 0:.4g} GTEPS ({count(s['sources'], 'source')} in "
                        f"{count(s['source_sets'], 'search', 'searches')})")
    for key in [k for k in s if k.endswith("_seconds")]:
        stage = key.removesuffix("_seconds")
        row(f"{STAGES.get(stage, stage)} time", f"{s[key]:,.3f} s")
    row("backend", f"{s['backend']} on {s['device']}")
    if "reader" in s:
        row("Parquet reader", reader_text(s["reader"]))
    if "writers" in s:
        row("Parquet writer", writer_text(s["outputs"], s["writers"]))
    for path in s["outputs"]:
        row("output", path)
    return rows


def failure_rows(input: str, message: str, validation_failed: bool) -> list[dict]:
    """A failed run's summary table: what failed and why, in place of the figures."""
    return [{"quantity": "validation", "value": "FAILED" if validation_failed else "not reached"},
            {"quantity": "input", "value": absolute(input)},
            {"quantity": "error", "value": message}]


def input_stem(input_path: str) -> str:
    """The input's file or directory name without its suffix: graph for data/graph.parquet
    (parts for a glob pattern data/parts/*.parquet: the folder its matches are below)."""
    if locations.is_pattern(input_path):
        input_path = locations.pattern_base(input_path)
    return Path(str(input_path).rstrip("/")).stem


@dataclass(frozen=True)
class TaskRunName:
    """A task's ``task_run_name``: what it does, then the input's stem where the task takes the
    input's path or its plan (load-kron14) or the source set where it takes one
    (bfs-source-set-1; bfs for the one search of --source). A class rather than a closure, so that it pickles by reference
    when Dask sends the task."""

    what: str

    def __call__(self, parameters: dict) -> str:  # Prefect passes the task run's parameters
        for name in ("path", "input"):
            if isinstance(parameters.get(name), str):
                return f"{self.what}-{input_stem(parameters[name])}"
        planned = getattr(parameters.get("plan"), "path", None)  # an input's plan (tasks.parquet.dataset.plan)
        if isinstance(planned, str):
            return f"{self.what}-{input_stem(planned)}"
        return artifact_key(self.what, parameters.get("source_set"))


# the key of a partitioned run's stages artifact (tasks.artifacts.StageProgress), read by flows/progress.py
STAGES_KEY = "partitioned-stages"


def stages_description(states: dict[str, str]) -> str:
    """A StageProgress artifact's description: "STAGE: STATE" per line."""
    return "\n".join(f"{stage}: {state}" for stage, state in states.items())


def stage_states(description: str | None) -> list[tuple[str, str]]:
    """(stage, state) per line of a StageProgress artifact's description."""
    pairs = [line.partition(": ") for line in (description or "").splitlines()]
    return [(stage, state) for stage, sep, state in pairs if sep]


def artifact_key(name: str, source_set: int | None) -> str:
    """bfs-levels, or bfs-levels-source-set-2 for the third of several source sets."""
    return name if source_set is None else f"{name}-source-set-{source_set}"


def search_label(source_set: int | None) -> str:
    """How logs and artifacts name a search: 'BFS', or 'BFS source set 2' of several."""
    return "BFS" if source_set is None else f"BFS source set {source_set}"


def direction_summary(steps: list[str]) -> str:
    """'1,035 levels: 520 top-down, 515 bottom-up': the count of each kind of step, in order of
    first use (the GPU's kinds carry their form: top-down/edge, top-down/fused, ...)."""
    counts: dict[str, int] = {}
    for step in steps:
        counts[step] = counts.get(step, 0) + 1
    kinds = ", ".join(f"{n:,} {kind}" for kind, n in counts.items())
    return count(len(steps), "level") + (f": {kinds}" if kinds else "")


# Markdown tables longer than this are grouped into ranges of consecutive levels (road networks
# take ~1,000 levels; a grid 6,000): the table shows the search's shape, not every step.
TABLE_ROWS = 100


def bfs_levels_markdown(title: str, steps: list[str], rows: list[tuple], n: int) -> str:
    """Level, direction, frontier size after the step and seconds, per reported step; ``rows``
    are (last level of the step, frontier size, seconds), as tasks.graph_tasks.StepLog records
    them."""
    spans, previous = [], 0
    for level, frontier, seconds in rows:  # a GPU batch of fused levels reports once
        kinds = sorted(set(steps[previous:level])) or ["-"]
        spans.append((previous + 1, level, "/".join(kinds), frontier, seconds))
        previous = level
    group = max(1, -(-len(spans) // TABLE_ROWS))
    lines = [f"# {title}", "", f"{direction_summary(steps)} over {n:,} vertices; "
             f"{sum(r[2] for r in rows):.4f} s in all."]
    if group > 1:
        lines.append(f"Each row covers {group} consecutive steps; frontier is the largest among them.")
    lines += ["", "| levels | direction | frontier (vertices) | seconds |", "|---:|---|---:|---:|"]
    for k in range(0, len(spans), group):
        part = spans[k:k + group]
        first, last = part[0][0], part[-1][1]
        directions = {}
        for _, _, kind, _, _ in part:
            directions[kind] = directions.get(kind, 0) + 1
        direction = ", ".join(kind if len(directions) == 1 else f"{c} {kind}" for kind, c in directions.items())
        levels = f"{first:,}" if first == last else f"{first:,}-{last:,}"
        lines.append(f"| {levels} | {direction} | {max(p[3] for p in part):,} | {sum(p[4] for p in part):.6f} |")
    return "\n".join(lines)


def msf_rounds_markdown(rounds: int, bands: int, rows: list[tuple], m: int, seconds: float) -> str:
    """Round, edges still crossing components after it, seconds; ``rows`` as StepLog records
    them ((rounds done, edges left, seconds))."""
    lines = ["# Boruvka rounds", "",
             f"{count(rounds, 'round')} in {count(bands, 'weight band')} over {count(m, 'edge')}; "
             f"{seconds:.4f} s in all (the sort of each band is counted in its first round).", "",
             "| round | edges still crossing components | seconds |", "|---:|---:|---:|"]
    lines += [f"| {r:,} | {left:,} | {sec:.6f} |" for r, left, sec in rows]
    return "\n".join(lines)


def validation_markdown(title: str, report: dict[str, int], extra: dict) -> str:
    """A validation report (check -> violations) as a pass/FAIL table, then ``extra``'s figures."""
    lines = [f"# {title}", "", "| check | result | violations |", "|---|---|---:|"]
    for name, violations in report.items():
        lines.append(f"| {name} | {'pass' if violations == 0 else 'FAIL'} | {violations:,} |")
    lines += ["", *[f"- {k}: {v:,}" if isinstance(v, int) else f"- {k}: {v}" for k, v in extra.items()]]
    return "\n".join(lines)
