"""BFS sources of a one-partition run: the user's ids (integers or their text, string ids as
text) as the dense vertex numbers the kernels take. A partitioned run's ranks find theirs
together (tasks.partitioned.vertex_ids)."""
from __future__ import annotations

import numpy as np

from tasks.errors import InputError
from tasks.parquet.read.checks import integer_vertex_id


def dense_sources(prepared, sources: list) -> np.ndarray:
    """Dense vertex numbers of the user's source ids (host int64, in the user's order); every
    one must be a vertex of the graph. ``prepared``: the renumbered input
    (tasks.prepare.PreparedEdges: ``ids`` dense vertex -> id, or code into ``names`` for
    string ids; ``path`` names the input in errors, ``selection`` the filter, if any)."""
    ids, names, path = prepared.ids, prepared.names, prepared.path
    if not sources:
        raise InputError(f"{path}: a BFS source set is empty")
    found = []
    for s in sources:
        if names is not None:
            code = names.index(str(s)).as_py()
            dense = int(np.searchsorted(ids, code)) if code >= 0 else -1
            ok = code >= 0 and dense < ids.shape[0] and ids[dense] == code
        else:
            value = integer_vertex_id(path, s)
            dense = int(np.searchsorted(ids, value))
            ok = dense < ids.shape[0] and int(ids[dense]) == value
        if not ok:
            raise missing_source(path, s, (prepared.selection or {}).get("filter"))
        found.append(dense)
    return np.array(found, dtype=np.int64)


def missing_source(path: str, source, filter: str | None) -> InputError:
    """The error of a source id that is not a vertex: of the graph, or with a ``filter`` (the
    --filter text) of the rows it kept, since the id may be a vertex of the rows it dropped."""
    if filter is None:
        return InputError(f"{path}: source {source!r} is not a vertex of the graph")
    quoted = f'"{filter}"' if "'" in filter else f"'{filter}'"
    return InputError(f"{path}: source {source!r} is not a vertex of the rows the filter {quoted} kept")


def check_sources_by_footers(plan, sources: list) -> None:
    """What the footers alone decide of the user's source ids (``plan``: the input's
    tasks.parquet.dataset.plan.InputPlan), before any row is read, with the errors the search
    would give: on integer ids, each source is an integer id (integer_vertex_id's rules), and one
    outside the ids' range by the footers' statistics is not a vertex. String ids, and integer
    ids inside the range, are left to the search."""
    if plan.footers.strings:
        return
    for s in sources:
        value = integer_vertex_id(plan.path, s)
        known = plan.footers.id_range
        if known is not None and not known[0] <= value <= known[1]:
            raise missing_source(plan.path, s, plan.filter)
