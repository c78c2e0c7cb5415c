"""A partitioned run given up (over its time limit, cancelled, a rank failed) leaves no staging
folder in the output, even while ranks still write their parts into it: the driver removes the
folder, and a rank that writes afterwards must not make it again."""
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from tasks.errors import OutputError
from tasks.parquet.publish.publish import remove_staging, staging_name
from tasks.parquet.write.result_files import write_parts


def result_tables(sets: int, rows: int) -> dict[str, pa.Table]:
    """Several source sets' distances and a forest, as a rank writes them."""
    ids = np.arange(rows, dtype=np.int64)
    tables = {f"source-set-{k}/bfs_distances.parquet": pa.table(
        {"vertex": ids, "distance": (ids % 7).astype(np.int32), "predecessor": ids[::-1].copy()}) for k in range(sets)}
    tables["mst_edges.parquet"] = pa.table({"src": ids, "dst": ids[::-1].copy(), "weight": ids.astype(np.float64)})
    return tables


@pytest.mark.parametrize("layout", ["file", "dataset"])
def test_a_rank_writing_while_the_driver_removes_the_staging_folder_leaves_none(tmp_path, layout):
    """The driver removes the staging folder while the rank's first parts are being encoded;
    the parts the rank starts after that must fail, not make the folder again."""
    out = tmp_path / "out"
    out.mkdir()
    staging = out / staging_name("given-up")
    staging.mkdir()
    tables = result_tables(sets=5, rows=2_000_000)  # more parts than cores: some start late
    failed = []

    def rank():
        try:
            write_parts(tables, staging, 0, layout)
        except OutputError as exc:
            failed.append(str(exc))

    writer = threading.Thread(target=rank)
    writer.start()
    deadline = time.monotonic() + 60
    while not any(name.endswith(".tmp") for _, _, names in os.walk(staging) for name in names):
        assert time.monotonic() < deadline and writer.is_alive(), "the rank wrote no temporary file"
        time.sleep(0.001)
    remove_staging(staging)  # the driver gives the run up
    writer.join()
    assert os.listdir(out) == []
    assert failed and "the run's staging directory is gone" in failed[0]
