"""Reference answers from independent code: scipy, networkx and a plain serial BFS."""
from collections import deque

import numpy as np
import pyarrow.parquet as pq
import scipy.sparse as sp
from scipy.sparse import csgraph


def serial_bfs(n, src, dst, sources, directed=False, depth_limit=None):
    """Textbook queue BFS (seed 22.1) on Python lists: distances, -1 when unreached."""
    adj = [[] for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist()):
        adj[a].append(b)
        if not directed:
            adj[b].append(a)
    dist = [-1] * n
    queue = deque()
    for s in sources:
        if dist[s] < 0:
            dist[s] = 0
            queue.append(s)
    while queue:
        v = queue.popleft()
        if depth_limit is not None and dist[v] >= depth_limit:
            continue
        for w in adj[v]:
            if dist[w] < 0:
                dist[w] = dist[v] + 1
                queue.append(w)
    return np.array(dist)


def scipy_bfs_distances(n, src, dst, sources, directed=False):
    a = sp.csr_matrix((np.ones(src.shape[0]), (src, dst)), shape=(n, n))
    d = csgraph.shortest_path(a, directed=directed, unweighted=True, indices=list(sources))
    d = np.atleast_2d(d).min(axis=0)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


def scipy_msf_weight(n, src, dst, weight):
    """Total weight of scipy's minimum spanning forest, minding its traps: a sparse matrix sums
    parallel edges and drops zero entries, so keep the lightest edge per pair and shift all
    weights to be positive (a uniform shift does not change which forest is minimum)."""
    keep = src != dst
    a, b, w = np.minimum(src, dst)[keep], np.maximum(src, dst)[keep], weight[keep]
    order = np.lexsort((w, b, a))
    a, b, w = a[order], b[order], w[order]
    first = np.ones(a.shape[0], dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    a, b, w = a[first], b[first], w[first]
    shift = 1.0 - w.min() if w.size else 0.0
    t = csgraph.minimum_spanning_tree(sp.csr_matrix((w + shift, (a, b)), shape=(n, n)))
    return float(t.sum()) - shift * t.nnz, t.nnz


def result_tables(directory):
    """Every Parquet result under ``directory``, by relative path, in the form two correct runs
    must agree on: forests whole; BFS distances whole on the CPU, but on the GPU without the
    predecessor column (any valid parent is correct there, and the validation task checks it)."""
    from pathlib import Path

    from kernels.backend import resolve

    found = {}
    for path in sorted(Path(directory).rglob("*.parquet")):
        table = pq.read_table(path)
        if "predecessor" in table.column_names and resolve(None) != "numpy":
            table = table.drop_columns(["predecessor"])
        found[str(path.relative_to(directory))] = table
    return found


def kruskal_rows(src, dst, weight) -> list[int]:
    """Rows of Kruskal's forest over plain Python lists, walking edges by (weight, row): the
    project's tie rule (-0.0 == 0.0, so the row decides)."""
    parent = {}

    def root(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    chosen = []
    for i in sorted(range(len(src)), key=lambda i: (weight[i], i)):
        a, b = root(src[i]), root(dst[i])
        if a != b:
            parent[a] = b
            chosen.append(i)
    return sorted(chosen)


def queue_bfs(src, dst, sources, directed=False, limit=None):
    """Distances (None: unreached) by vertex id from a queue over plain lists, and the adjacency
    sets; ``limit`` levels at most."""
    adjacent = {v: set() for v in list(src) + list(dst)}
    for u, v in zip(src, dst):
        if u != v:
            adjacent[u].add(v)
            if not directed:
                adjacent[v].add(u)
    distance, queue = {s: 0 for s in sources}, deque(dict.fromkeys(sources))
    while queue:
        u = queue.popleft()
        if limit is not None and distance[u] >= limit:
            continue
        for v in adjacent[u]:
            if v not in distance:
                distance[v] = distance[u] + 1
                queue.append(v)
    return {v: distance.get(v) for v in adjacent}, adjacent


def assert_forest(path, src, dst, weight):
    """The forest file at ``path`` holds Kruskal's rows (kruskal_rows), in row order: its source,
    destination and weight columns, named as the input's, read by their place."""
    forest = pq.read_table(path)
    rows = kruskal_rows(src, dst, weight)
    assert list(zip(*(forest.column(i).to_pylist() for i in range(3)))) == [(src[i], dst[i], weight[i]) for i in rows]


def assert_distances(path, src, dst, sources, directed=False, limit=None):
    """The distances file at ``path`` holds every vertex once, queue_bfs's distances, and for each
    reached non-source vertex a predecessor one level closer that is its neighbour."""
    expected, adjacent = queue_bfs(src, dst, sources, directed, limit)
    got = pq.read_table(path)
    vertex = got["vertex"].to_pylist()
    assert len(vertex) == len(expected)  # every vertex once
    distance = dict(zip(vertex, got["distance"].to_pylist()))
    assert distance == expected
    for v, p in zip(vertex, got["predecessor"].to_pylist()):
        if expected[v] in (None, 0):
            assert p is None
        else:
            assert distance[p] == expected[v] - 1 and v in adjacent[p]


def kruskal_forest_rows(src, dst, weight) -> np.ndarray:
    """kruskal_rows for NumPy arrays of any size: the edges walked in (weight, row) order (one
    stable lexsort; -0.0 and 0.0 compare equal, so the row decides), a union-find with path
    halving over plain lists. Returns the chosen rows ascending (int64)."""
    order = np.lexsort((np.arange(src.shape[0]), weight))
    parent = list(range(int(max(src.max(), dst.max())) + 1 if src.shape[0] else 0))
    s, d = src.tolist(), dst.tolist()
    chosen = []
    for i in order.tolist():
        a, b = s[i], d[i]
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        if a != b:
            parent[a] = b
            chosen.append(i)
    return np.array(sorted(chosen), dtype=np.int64)


def scipy_bfs_levels(n, src, dst, sources, directed=False):
    """Hop distances from the nearest of ``sources`` (-1: unreached) by one scipy unweighted
    shortest-path search from an extra vertex n that has an arc to every source: a path from it
    is one hop longer than from the nearest source, and none can come back through it."""
    sources = np.unique(np.asarray(sources, dtype=np.int64))
    rows, cols = [src, np.full(sources.shape[0], n)], [dst, sources]
    if not directed:
        rows.append(dst)
        cols.append(src)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    a = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n + 1, n + 1))
    d = csgraph.shortest_path(a, directed=True, unweighted=True, indices=n)[:n]
    return np.where(np.isinf(d), -1, d - 1).astype(np.int64)
