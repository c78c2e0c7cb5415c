"""Reading Parquet edge lists and writing results, with pyarrow.

``EdgeTable`` encoding (host arrays):
- ``src``, ``dst``: integer ndarrays (any integer dtype, promoted to one common dtype) or, for
  string ids, int32 codes into ``names`` (a pyarrow string array built over src and dst).
- ``weight``: float64 ndarray or None; ``rows``: number of input rows; ``path``: input name.
Outputs are written to a temporary file beside the target and renamed over it, so a reader
sees the old file or the new one, never a partial one.
"""
from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.errors import InputError, OutputError

# Dask starts its workers with OMP_NUM_THREADS=1, which Arrow takes as its thread count: Parquet
# reads on a worker ran 2.3x slower than in a plain process (Kron-24, H200 host). Arrow gets the
# cores this process may run on (dask-cuda pins each GPU worker to its GPU's cores) unless
# ARROW_NUM_THREADS says otherwise.
if "ARROW_NUM_THREADS" not in os.environ:
    pa.set_cpu_count(len(os.sched_getaffinity(0)))


@dataclass
class EdgeTable:
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    names: pa.Array | None  # string ids: vertex code -> name
    path: str

    @property
    def rows(self) -> int:
        return int(self.src.shape[0])


def _parquet_files(path: Path) -> list[Path]:
    if not path.exists():
        raise InputError(f"{path}: input not found")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".parquet", ".pq") and not p.name.startswith((".", "_")))
        if not files:
            raise InputError(f"{path}: directory holds no Parquet files (*.parquet)")
        return files
    return [path]


def _read_file(file: Path, columns: list[str]) -> pa.Table:
    try:
        schema = pq.read_schema(file)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: not a readable Parquet file ({exc})") from None
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise InputError(
            f"{file}: column {missing[0]!r} not found (columns: {', '.join(schema.names)})"
        )
    try:
        return pq.read_table(file, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: corrupt or truncated Parquet data ({exc})") from None


def _column_kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return str(t)


def _first_null(col: pa.ChunkedArray) -> int:
    return int(pc.index(pc.is_null(col), True).as_py())


def read_edges(path: str, src_col="src", dst_col="dst", weight_col: str | None = "weight") -> EdgeTable:
    """Read and check an edge list: a Parquet file or a directory of them (one dataset)."""
    files = _parquet_files(Path(path))
    columns = [src_col, dst_col] + ([weight_col] if weight_col else [])
    tables, kinds = [], None
    for file in files:
        table = _read_file(file, columns)
        these = {c: _column_kind(table.schema.field(c).type) for c in columns}
        if kinds is None:
            kinds = these
        for c in columns:
            if these[c] != kinds[c]:
                raise InputError(
                    f"{file}: column {c!r} is {these[c]} but {files[0]} has {kinds[c]} (mixed schemas)"
                )
        tables.append(table)
    for c in (src_col, dst_col):
        if kinds[c] not in ("integer", "string"):
            raise InputError(f"{path}: column {c!r} has type {kinds[c]}; vertex ids must be integers or strings")
    if kinds[src_col] != kinds[dst_col]:
        raise InputError(
            f"{path}: column {src_col!r} is {kinds[src_col]} but {dst_col!r} is {kinds[dst_col]}; ids must share one type"
        )
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    if table.num_rows == 0:
        raise InputError(f"{path}: the edge list is empty (0 rows)")
    for c in (src_col, dst_col):
        if table[c].null_count:
            raise InputError(f"{path}: column {c!r} is null at row {_first_null(table[c])}")
    weight = None
    if weight_col:
        weight = _weights(path, table[weight_col], weight_col)
    if kinds[src_col] == "string":
        both = pa.chunked_array(
            [chunk.cast(pa.large_string()) for col in (table[src_col], table[dst_col]) for chunk in col.chunks]
        ).combine_chunks().dictionary_encode()
        codes = both.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        n = table.num_rows
        return EdgeTable(codes[:n], codes[n:], weight, both.dictionary, str(path))
    src, dst = (_integer_ids(table[c]) for c in (src_col, dst_col))
    if src.dtype != dst.dtype:
        common = np.promote_types(src.dtype, dst.dtype)
        if common.kind == "f":  # int64 with uint64: only safe when no uint64 id exceeds int64
            if max(int(a.max()) for a in (src, dst) if a.dtype.kind == "u") > np.iinfo(np.int64).max:
                raise InputError(f"{path}: {src_col!r} and {dst_col!r} mix signed ids and unsigned ids above 2**63-1")
            common = np.dtype(np.int64)
        src, dst = src.astype(common), dst.astype(common)
    return EdgeTable(src, dst, weight, None, str(path))


def _integer_ids(col: pa.ChunkedArray) -> np.ndarray:
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.to_numpy()


def _weights(path, col: pa.ChunkedArray, name: str) -> np.ndarray:
    t = col.type
    if pa.types.is_dictionary(t):
        col, t = col.cast(t.value_type), t.value_type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
        raise InputError(f"{path}: weight column {name!r} has type {t}; weights must be numeric")
    if col.null_count:
        raise InputError(f"{path}: weight column {name!r} is null at row {_first_null(col)}")
    weight = col.cast(pa.float64()).to_numpy()
    bad = ~np.isfinite(weight)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"{path}: weight column {name!r} is {weight[row]} at row {row}; weights must be finite")
    return weight


def vertex_names(table: EdgeTable, ids: np.ndarray) -> pa.Array:
    """Original ids of dense vertices, as a pyarrow array of the input's id type."""
    if table.names is not None:
        return table.names.take(pa.array(ids))
    return pa.array(ids)


def prepare_output_dir(output: str | os.PathLike) -> Path:
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: output path exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{out}: cannot create output directory ({exc.strerror})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise OutputError(f"{out}: output directory is not writable")
    return out


def _temporary_prefix(target: Path) -> str:
    # .<file>~<host>~<pid>~: a temporary file names the process that writes it, so one whose
    # writer is gone (killed, interrupted) can be told from one a live run is still writing
    return f".{target.name}~{socket.gethostname()}~{os.getpid()}~"


def remove_stale_temporaries(output: str | os.PathLike) -> list[Path]:
    """Delete temporary result files in ``output`` left by dead processes of this host."""
    removed = []
    for path in Path(output).glob(".*~*~*~*.tmp"):
        parts = path.name.split("~")
        if len(parts) != 4 or parts[1] != socket.gethostname() or not parts[2].isdigit():
            continue
        if not _process_alive(int(parts[2])):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umask() -> int:
    """The process's umask, read from /proc where Linux shows it: reading it with os.umask means
    setting it, which races with other threads creating files."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o077)  # the restrictive side while it is briefly set
    os.umask(mask)
    return mask


def write_atomic(table: pa.Table, target: Path) -> Path:
    """Write ``table`` to ``target`` through a temporary file in the same directory + rename."""
    fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(target), suffix=".tmp", dir=target.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp creates 0600; a result is as readable as the umask says
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def write_many(tables: dict[str, pa.Table], output: str | os.PathLike) -> list[Path]:
    """Write several result files; each lands whole or not at all."""
    out = prepare_output_dir(output)
    remove_stale_temporaries(out)
    try:
        return [write_atomic(t, out / name) for name, t in tables.items()]
    except OSError as exc:
        raise OutputError(f"{out}: cannot write results ({exc.strerror or exc})") from None
