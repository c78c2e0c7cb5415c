"""The results' names and the writer's choices: the one place each is spelled.

Result files (under the run's output folder): ``bfs_distances.parquet`` per search (under
``source-set-K/`` per source set when there are several) and ``mst_edges.parquet``. A
partitioned run's result may be a folder of that name holding one ``part-RRRRR.parquet`` per
rank (output layout ``dataset``) instead of one file (layout ``file``). Every result file names
its result in its footer's key-value metadata under ``RESULT_KEY``; the reader refuses a
dataset that mixes such a file with edge files (the result would be read as edges).

Imports nothing but the standard library (and tasks.errors and tasks.parquet.store.locations,
which import nothing else), like tasks.settings: the command line reads its choices from here before
anything heavy is imported.
"""
from __future__ import annotations

import os
import re
from pathlib import PurePath

from tasks.errors import InputError
from tasks.parquet.store.locations import is_uri, join

BFS_RESULT_NAME = "bfs_distances.parquet"
FOREST_RESULT_NAME = "mst_edges.parquet"
BFS_COLUMNS = ("vertex", "distance", "predecessor")
# The forest's columns are the input's own (forest_columns); these are the defaults' names.
FOREST_COLUMNS = ("src", "dst", "weight")
# A forest of an unweighted input holds its unit weights in this column, or in the next name
# where an id column already has it.
UNIT_WEIGHT_COLUMNS = ("weight", "unit_weight", "unit_weight_")
SOURCE_SET_FOLDER = re.compile(r"source-set-\d+")
RESULT_PART = re.compile(r"part-\d{5}\.parquet")  # a partitioned run's part files

# Every result file carries this key in its footer's key-value metadata, naming the result
# (mst_edges.parquet, ...). A result that lands where a later run reads a dataset (a one-file
# run's default output/ under a dataset folder that is the current directory, say) would
# otherwise be read back as edges; the reader refuses such a mix by the key.
RESULT_KEY = b"parquet-graph-pipeline.result"

# Results are written with Snappy by default: on the H200 host, 16 M rows x 2 columns took 1.0 s
# uncompressed, 1.1 s with Snappy and 2.1 s with zstd (one Parquet writer, one core), and
# Snappy files are about half the size of uncompressed ones and readable everywhere. zstd makes
# smaller files for archiving; `--compression` chooses.
# Each choice names the Parquet codec it writes (kernels.parquet.format.CODECS); lz4 is LZ4_RAW, the
# one pyarrow writes (the older LZ4 codec's Hadoop framing is read, never written).
COMPRESSION_CODECS = {"snappy": "SNAPPY", "zstd": "ZSTD", "lz4": "LZ4_RAW", "gzip": "GZIP", "none": "UNCOMPRESSED"}
COMPRESSIONS = tuple(COMPRESSION_CODECS)
DEFAULT_COMPRESSION = "snappy"

# Who encodes the results (tasks.parquet.write.result_files.resolve_writer): the page writer on the compute
# backend (gpu), pyarrow's writer (host), or auto: gpu where the backend is CuPy and nvCOMP is usable.
WRITERS = ("auto", "gpu", "host")

# A partitioned run's result: one file (its ranks' parts joined) or a folder of parts.
LAYOUTS = ("file", "dataset")
DEFAULT_LAYOUT = "file"


def forest_columns(src_col: str, dst_col: str, weight_col: str | None) -> tuple[str, str, str]:
    """The forest's column names: the input's source, destination and weight columns, so that a
    forest reads back as an edge list with the options its input was read with. An unweighted
    input's unit weights go in ``weight`` (``unit_weight`` where an id column is so named)."""
    if weight_col is None:
        weight_col = next(n for n in UNIT_WEIGHT_COLUMNS if n not in (src_col, dst_col))
    return src_col, dst_col, weight_col


# An output path whose name ends so names the result file itself (a file target), not a folder.
FILE_TARGET_SUFFIXES = (".parquet", ".parq", ".pq")


def is_file_target(output: str) -> bool:
    """Whether ``output`` names the run's one result file rather than its output folder: its
    name ends in .parquet, .parq or .pq (case aside). A trailing / keeps it a folder."""
    return not str(output).endswith("/") and str(output).lower().endswith(FILE_TARGET_SUFFIXES)


def result_paths(output: str, names: list[str]) -> tuple[str, list[str]]:
    """The folder a run publishes into and the path of each of its results ``names`` (relative
    to the folder: mst_edges.parquet, source-set-K/bfs_distances.parquet): OUTPUT/<name> each,
    or, where OUTPUT is a file target (is_file_target), that path for the run's one result, in
    the folder that holds it. A file target for several results raises InputError."""
    output = str(output)
    if not is_file_target(output):
        return output, [join(output, name) for name in names]
    if len(names) != 1:
        raise InputError(f"output {output} names one Parquet file, but this run writes {len(names)} results "
                         f"({', '.join(names)}); give a directory")
    folder = output.rsplit("/", 1)[0] if is_uri(output) else os.path.dirname(output) or "."
    return folder, [output]


def source_set_folder(k: int) -> str:
    """The folder of source set ``k``'s search when a run has several."""
    return f"source-set-{k}"


def result_name(target: PurePath) -> str:
    """The result a file holds: its own name, or for a partitioned run's part file the name of
    the folder of parts it belongs to (mst_edges.parquet/part-00001.parquet: mst_edges.parquet)."""
    return target.parent.name if RESULT_PART.fullmatch(target.name) else target.name
