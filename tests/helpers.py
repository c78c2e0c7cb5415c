"""What several test files need: running a command in-process, writing edge files, reading a
folder's state and a flow run's artifacts back, waiting on a server. No assertions here beyond a
wait's deadline; each test states its own."""
import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import pytest

from tests.conftest import ROOT, SEED_EDGES

# A 4-cycle with a chord, weighted: a forest of 3 edges
EDGES = pa.table({"src": pa.array([0, 1, 2, 3, 0], pa.int64()), "dst": pa.array([1, 2, 3, 0, 2], pa.int64()),
                  "weight": pa.array([1.0, 1.0, 2.0, 1.0, 0.5])})


def child_pythonpath() -> str:
    """PYTHONPATH for a command run as a subprocess: the checkout first, then the caller's own
    path (where a machine keeps packages outside site-packages, e.g. a GPU node's /tmp/site)."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


def assert_same_results(got: pa.Table, expected: pa.Table, check_metadata: bool = False) -> None:
    """Two runs' result tables of one input. A forest is the same file whatever the backend (its
    tie rule is the input row); a BFS result has the same vertices and distances, and the same
    parents where the search is deterministic (NumPy): which of several valid parents a GPU
    search keeps is a race, and each run validated its own parents."""
    from kernels import backend as be

    if "predecessor" in expected.column_names and be.resolve(None) == "cupy":
        got, expected = got.drop_columns(["predecessor"]), expected.drop_columns(["predecessor"])
    assert got.equals(expected, check_metadata=check_metadata), (got, expected)


def run(main, argv, capsys):
    """A command's main() in this process: (exit code, stdout, stderr); argv items may be paths."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def error_line(err: str) -> str:
    """A failed command's one error line, from its stderr: the last line. A run that failed
    once it had started, with a server configured, gives its page before it ("run: URL");
    nothing else may be there."""
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("error: ") and len(lines) <= 2, err
    assert len(lines) == 1 or lines[0].startswith("run: http"), err
    return lines[-1]


def write_edges(path: Path, src, dst, weight=None, **options) -> Path:
    """One edge file: Python lists take Arrow's inferred type (int64 ids, float64 weights), Arrow
    arrays keep theirs; no weight column when ``weight`` is None. ``options`` go to
    pyarrow.parquet.write_table. Missing folders are made."""
    columns = {"src": src, "dst": dst, **({"weight": weight} if weight is not None else {})}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path, **options)
    return path


def forest_less_one_edge(edges, on_round=None):
    """A stand-in for minimum_spanning_forest whose forest lacks its second edge, so it no longer
    spans; its arrays are the backend's own (NumPy or CuPy), as validation receives them."""
    from dataclasses import replace

    from kernels.backend import array_module
    from kernels.msf import minimum_spanning_forest

    forest = minimum_spanning_forest(edges, on_round=on_round)
    kept = array_module(forest.edges).concatenate([forest.edges[:1], forest.edges[2:]])
    return replace(forest, edges=kept, components=forest.components + 1)


def write_seed(path: Path) -> Path:
    """The seed graph (tests/conftest.py SEED_EDGES): int64 ids, float64 weights."""
    src, dst, weight = zip(*SEED_EDGES)
    return write_edges(path, pa.array(src, pa.int64()), pa.array(dst, pa.int64()), pa.array(weight, pa.float64()))


def ring(path: Path, n: int) -> Path:
    """A cycle of n vertices: n distance rows, a forest of n - 1 edges."""
    return write_edges(path, list(range(n)), [(i + 1) % n for i in range(n)], [1.0] * n)


def random_edges(seed=3, n=30, m=120):
    """(src, dst, weight) lists: m random edges over n vertices, integer-valued weights 0..3 (ties)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, n, m).tolist(), rng.integers(0, n, m).tolist(), rng.integers(0, 4, m).astype(float).tolist())


# Ids a string column can hold that a renumbering could get wrong: the empty string, a space,
# a comma, composed and decomposed é (different bytes, different vertices), scripts of several
# byte widths, a 4-byte emoji, an integer-looking id and one with a leading zero.
STRING_IDS = ["", " ", "a,b", "\u00e9", "e\u0301", "日本語", "Ω", "\U0001F600", "7", "007", "A", "a"]


def string_graph(path: Path, kind: str, seed: int = 3, n: int = 40, m: int = 160):
    """random_edges (ties, parallel edges, self-loops, several components) over n string ids
    (STRING_IDS, then "vertex-K"), the id columns of Arrow type ``kind`` ("string",
    "large_string" or "dictionary"), in row groups of 25 rows. Returns (path, src, dst, weight),
    the columns as Python lists."""
    names = STRING_IDS + [f"vertex-{i}" for i in range(n - len(STRING_IDS))]
    s, d, w = random_edges(seed, n=n, m=m)
    src, dst = [names[i] for i in s], [names[i] for i in d]
    if kind == "dictionary":
        columns = [pa.array(c, pa.string()).dictionary_encode() for c in (src, dst)]
    else:
        columns = [pa.array(c, getattr(pa, kind)()) for c in (src, dst)]
    write_edges(path, *columns, pa.array(w, pa.float64()), row_group_size=25)
    return path, src, dst, w


def listing(path: Path) -> list[str]:
    """Every path below ``path``, relative to it, sorted."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def contents(path: Path) -> dict:
    """Every path below ``path`` with its bytes (None for folders and links): to compare a
    folder before and after a run."""
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() and not p.is_symlink() else None
            for p in path.rglob("*")}


def artifacts_of(flow_run_id) -> list[dict]:
    """A flow run's artifacts as the server's API returns them, in the order created."""
    request = urllib.request.Request(
        f"{os.environ['PREFECT_API_URL']}/artifacts/filter", method="POST",
        data=json.dumps({"artifacts": {"flow_run_id": {"any_": [str(flow_run_id)]}}}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return sorted(json.loads(response.read()), key=lambda a: a["created"])


def table_rows(artifact: dict) -> list[tuple[str, str]]:
    """(quantity, value) of each row of a summary table artifact."""
    data = json.loads(artifact["data"]) if isinstance(artifact["data"], str) else artifact["data"]
    return [(row["quantity"], row["value"]) for row in data]


STORE_ENV = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")


def use_endpoint(endpoint: str, key: str = "testing", secret: str = "testing") -> dict:
    """Point pyarrow's S3 at ``endpoint``; returns the environment it replaced."""
    before = {k: os.environ.get(k) for k in STORE_ENV}
    os.environ.update(AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret,
                      AWS_REGION="us-east-1")
    return before


def restore(before: dict) -> None:
    for k, v in before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def edge_dataset(folder, seed=0, n=60, m=240) -> None:
    """Two parts of a weighted edge list (integer ids, distinct weights) and a README."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    weight = rng.permutation(m).astype(np.float64) + 0.5
    os.makedirs(folder, exist_ok=True)
    half = m // 2
    for k, rows in enumerate((slice(0, half), slice(half, m))):
        pq.write_table(pa.table({"src": src[rows], "dst": dst[rows], "weight": weight[rows]}),
                       os.path.join(folder, f"part-{k}.parquet"), row_group_size=50)
    with open(os.path.join(folder, "README.md"), "w") as fh:
        fh.write("edges\n")


def upload(fs, folder, prefix) -> None:
    """A local folder copied to ``prefix`` of the store ``fs`` (a pyarrow FileSystem)."""
    import pyarrow.fs as pafs

    pafs.copy_files(str(folder), prefix, destination_filesystem=fs)


def store_listing(fs, prefix: str, folders: bool = False) -> list[str]:
    """Every object below ``prefix`` of the store ``fs``, relative to it, sorted; with
    ``folders``, the folders too (a prefix, or an empty marker object), ending in ``/``."""
    import pyarrow.fs as pafs

    found = fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
    return sorted(i.path[len(prefix) + 1:] + ("/" if i.type == pafs.FileType.Directory else "")
                  for i in found if folders or i.type == pafs.FileType.File)


def wait_for(predicate, what: str, seconds: float = 180, process=None, log=None):
    """PREDICATE's first true value, read every half second; the test fails after SECONDS or once
    PROCESS has ended, with LOG's text."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            value = predicate()
        except urllib.error.HTTPError as exc:  # a server still starting its services answers 503
            if exc.code < 500:
                raise
            value = None
        if value:
            return value
        if process is not None and process.poll() is not None:
            pytest.fail(f"{what}: the process ended with {process.returncode}:\n{log.read_text() if log else ''}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds} s\n{log.read_text() if log else ''}")
        time.sleep(0.5)
