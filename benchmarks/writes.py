"""What writing the results costs: the two result files of a graph with --rows vertices.

    python -m benchmarks.writes --rows 33554432 --json FILE

- results: bfs_distances-like (vertex, distance, predecessor with 5% nulls) and mst_edges-like
  (src, dst, weight) tables of --rows rows each, written as the pipeline writes them
  (`tasks.parquet.write.result_files.write_many`: atomic, fsynced, each file encoded in pieces on its share of the
  cores), against pyarrow's `pq.write_table` of each file on a thread of its own (one core per
  file), the same compression and dictionary choices, fsynced too;
- forest only: the mst_edges file alone (what `python -m flows.mst` writes), the same two ways;
- merge: the mst_edges table written as --parts part files, then made one file by
  `tasks.parquet.write.concat.concatenate_files` (pages copied) against a pyarrow rewrite (each part's
  row groups read and written again, what the partitioned run did before).
Best of --repeat runs each. Appends one record to FILE.
"""
from __future__ import annotations

import argparse
import datetime
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.harness import append_records, machine
from tasks.parquet.write.concat import concatenate_files
from tasks.parquet.write.results import DEFAULT_COMPRESSION
from tasks.parquet.write.result_files import dictionary_columns, write_many


def result_tables(rows: int, seed: int = 0) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    vertex = rng.permutation(rows).astype(np.int64) * 7
    parent = vertex[rng.integers(0, rows, rows)]
    return {
        "bfs_distances.parquet": pa.table({
            "vertex": vertex,
            "distance": rng.integers(0, 8, rows).astype(np.int32),
            "predecessor": pa.array(parent, mask=rng.random(rows) < 0.05)}),
        "mst_edges.parquet": pa.table({
            "src": vertex, "dst": parent, "weight": rng.random(rows)}),
    }


def fsync(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1 << 22)
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--compression", default=DEFAULT_COMPRESSION)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workdir", default=None)
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    tables = result_tables(args.rows)
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        work = Path(work)

        def ours():
            write_many({work / "ours" / name: t for name, t in tables.items()}, args.compression)

        def pyarrow_per_file(tables=tables):
            (work / "plain").mkdir(exist_ok=True)

            def one(item):
                name, table = item
                pq.write_table(table, work / "plain" / name, compression=args.compression,
                               use_dictionary=dictionary_columns(table))
                fsync(work / "plain" / name)

            with ThreadPoolExecutor(len(tables)) as pool:
                list(pool.map(one, tables.items()))

        results_seconds = best(args.repeat, ours)
        baseline_seconds = best(args.repeat, pyarrow_per_file)
        written = sum(f.stat().st_size for f in (work / "ours").iterdir())
        forest_only = {"mst_edges.parquet": tables["mst_edges.parquet"]}
        forest_seconds = best(args.repeat, lambda: write_many({work / "ours" / n: t for n, t in forest_only.items()},
                                                              args.compression))
        forest_baseline_seconds = best(args.repeat, lambda: pyarrow_per_file(forest_only))

        forest = tables["mst_edges.parquet"]
        step = -(-forest.num_rows // args.parts)
        parts = []
        for k in range(args.parts):
            parts.append(work / f"part-{k:05d}.parquet")
            pq.write_table(forest.slice(k * step, step), parts[-1], compression=args.compression,
                           use_dictionary=dictionary_columns(forest))

        def concatenated():
            concatenate_files(parts, work / "one.parquet", threads=len(os.sched_getaffinity(0)))
            fsync(work / "one.parquet")

        def rewritten():
            with pq.ParquetWriter(work / "rewritten.parquet", forest.schema, compression=args.compression,
                                  use_dictionary=dictionary_columns(forest)) as writer:
                for part in parts:
                    reader = pq.ParquetFile(part)
                    for g in range(reader.metadata.num_row_groups):
                        writer.write_table(reader.read_row_group(g))
            fsync(work / "rewritten.parquet")

        concat_seconds = best(args.repeat, concatenated)
        rewrite_seconds = best(args.repeat, rewritten)
        assert pq.read_table(work / "one.parquet").equals(forest)

    record = {
        "algo": "result-writes", "rows": args.rows, "compression": args.compression,
        "cores": len(os.sched_getaffinity(0)), "machine": machine("numpy"),
        "date": datetime.date.today().isoformat(), "load_average": list(os.getloadavg()),
        "command": "python -m benchmarks.writes " + " ".join(argv if argv is not None else os.sys.argv[1:]),
        "results_seconds": round(results_seconds, 4),
        "pyarrow_one_core_per_file_seconds": round(baseline_seconds, 4),
        "results_speedup": round(baseline_seconds / results_seconds, 2),
        "results_bytes": written,
        "results_megabytes_per_second": round(written / results_seconds / 1e6, 1),
        "forest_only_seconds": round(forest_seconds, 4),
        "forest_only_pyarrow_seconds": round(forest_baseline_seconds, 4),
        "forest_only_speedup": round(forest_baseline_seconds / forest_seconds, 2),
        "merge_parts": args.parts,
        "merge_concatenate_seconds": round(concat_seconds, 4),
        "merge_rewrite_seconds": round(rewrite_seconds, 4),
        "merge_speedup": round(rewrite_seconds / concat_seconds, 2),
    }
    append_records(args.json, [record])
    print(record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
