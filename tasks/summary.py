"""The one-partition run's summary (tasks.report.RunSummary) from its tasks' products: the
figures counted on the result arrays (reached vertices, GTEPS, the forest's size and weight)
and the seconds of every stage. A partitioned run's ranks count theirs together
(tasks.partitioned.rank)."""
from __future__ import annotations

from kernels.backend import count_at_least, count_ends_reached, take
from tasks.forest_weight import reported_total
from tasks.report import RunSummary, run_summary


def summarize(p, graph, searches: list, forest, checks: list, outputs: list[str],
              write_seconds: float) -> RunSummary:
    """The run's figures, small enough to return to the flow: sizes, per source set the vertices
    reached and the farthest one's distance (both counted on the distances written), GTEPS (Graph500: input edges inside the searched component, per second), the forest's
    size and weight, Boruvka rounds and edges/s, and the seconds of every stage. ``p``: the
    input (tasks.prepare.PreparedEdges); ``graph``, ``searches``, ``forest``, ``checks``:
    the tasks' products (tasks.graph_tasks.Timed: a CSR, Searches, an MSFResult, reports)."""
    figures: dict = {}
    seconds = {"load": p.read_seconds, "prepare": p.renumber_seconds}
    if searches:
        results = [s.value.result for s in searches]
        traversed = sum(count_ends_reached(r.distance, p.edges.src) for r in results)
        bfs_seconds = sum(s.seconds for s in searches)
        figures.update(source_sets=len(searches), sources=sum(len(s.value.sources) for s in searches),
                       reached=[count_at_least(r.distance, 0) for r in results],
                       depth=[int(r.distance.max()) for r in results],  # (a search has a source: >= 0)
                       gteps=round(traversed / bfs_seconds / 1e9, 4) if bfs_seconds > 0 else None)
        seconds.update(csr=graph.seconds, bfs=bfs_seconds)
    if forest is not None:
        f = forest.value
        figures.update(forest_edges=int(f.edges.shape[0]), forest_weight=reported_total(take(p.edges.weight, f.edges)),
                       components=f.components, rounds=f.rounds, **({"unit_weights": True} if p.unit_weights else {}),
                       edges_per_second=round(p.rows / forest.seconds) if forest.seconds > 0 else None)
        seconds["msf"] = forest.seconds
    seconds.update(validate=sum(c.seconds for c in checks), write=write_seconds)
    figures.update(p.selection or {})
    return run_summary(input=p.path, backend=p.backend, device=p.device, vertices=p.edges.n, edges=p.rows,
                       self_loops=p.self_loops, seconds=seconds, outputs=outputs, reader=p.reader, **figures)
