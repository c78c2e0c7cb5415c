"""Page-header parsing cost per page: `python -m benchmarks.page_headers [ROWS]`.

Writes a file of one int64 column in pages of 100 rows (about ROWS / 100 pages, with and
without page statistics) to a temporary folder and times ``parse_page_headers`` over all
its chunks (best of 5), printing microseconds per page."""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.parquet.read.pages import parse_page_headers, plan_column_chunks, read_chunk_bytes
from tasks.parquet.store.filesystem import local


def main(rows: int = 4_100_000) -> None:
    table = pa.table({"x": np.random.default_rng(0).integers(0, 1 << 40, rows)})
    with tempfile.TemporaryDirectory() as folder:
        for statistics in (True, False):
            path = str(Path(folder) / f"pages-{statistics}.parquet")
            pq.write_table(table, path, data_page_size=256, write_batch_size=100,
                           write_statistics=statistics, write_page_checksum=True,
                           compression="snappy", use_dictionary=False)
            plan = plan_column_chunks(pq.ParquetFile(path).metadata, ["x"], path)
            chunk_bytes = read_chunk_bytes(local(), path, plan)
            best = float("inf")
            for _ in range(5):
                start = time.perf_counter()
                pages = parse_page_headers(chunk_bytes, plan, path)
                best = min(best, time.perf_counter() - start)
            print(f"statistics={statistics}: {len(pages)} pages in {best:.3f} s = "
                  f"{best / len(pages) * 1e6:.2f} us per page")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
