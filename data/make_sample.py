"""Write data/graph.parquet: the seeds' 6-vertex, 9-edge weighted graph (MST weight 13)."""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SEED_EDGES = [(2, 3, 8), (0, 1, 4), (3, 4, 2), (1, 2, 2), (0, 2, 1), (4, 5, 3), (2, 4, 10), (3, 5, 6), (1, 3, 5)]

if __name__ == "__main__":
    src, dst, weight = zip(*SEED_EDGES)
    table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()),
                      "weight": pa.array(weight, pa.float64())})
    pq.write_table(table, Path(__file__).with_name("graph.parquet"))
