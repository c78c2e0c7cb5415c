"""A GPU read's one-time costs paid ahead (page_reader.prepare_first_read, which the command
line's device start calls while it imports Prefect): the pinned buffers the read's stored bytes
go into are sized from the plan alone, as the read sizes them, so the read takes the very
blocks prepared; where nvCOMP is not usable it does nothing."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.parquet.codec.decompress import nvcomp_usable
from tasks.parquet.dataset.plan import plan_input
from tasks.parquet.read import page_reader
from tasks.parquet.read.reader import read_edges
from tests.helpers import write_edges


def edge_files(folder, string_ids=False):
    """Two files of unequal row groups (500 and 700 rows), Snappy."""
    rng = np.random.default_rng(3)
    for k, rows in enumerate([3000, 2800]):
        ids = [rng.integers(0, 2**40, rows), rng.integers(0, 99, rows)]
        if string_ids:
            ids = [pa.array(v.astype(str)) for v in ids]
        write_edges(folder / f"part-{k}.parquet", *ids, rng.random(rows), row_group_size=500 + 200 * k)
    return folder


def stored_bytes(folder, columns, per_row_group):
    """The footers' stored bytes of ``columns``: per row group, else per file."""
    sizes = []
    for path in sorted(folder.glob("*.parquet")):
        md = pq.ParquetFile(path).metadata
        groups = [sum(md.row_group(g).column(j).total_compressed_size for j in range(md.num_columns)
                      if md.schema.column(j).name in columns) for g in range(md.num_row_groups)]
        sizes += groups if per_row_group else [sum(groups)]
    return sizes


@pytest.mark.parametrize("batches", ["a row group each", "a file each"])
@pytest.mark.parametrize("string_ids", [False, True], ids=["integer ids", "string ids"])
def test_the_ring_holds_the_largest_batchs_stored_bytes_that_the_page_reader_takes(tmp_path, monkeypatch, batches,
                                                                                   string_ids):
    """String ids are left to the host reader, so only the weights' bytes are read into the ring."""
    monkeypatch.setattr(page_reader, "BATCH_BYTES", 1 if batches == "a row group each" else 1 << 30)
    plan = plan_input(edge_files(tmp_path, string_ids))
    units = page_reader.units_between(plan, 0, plan.footers.rows)
    columns = plan.footers.columns
    size, count = page_reader.read_ring(plan, page_reader.file_layouts(units, columns),
                                        page_reader.batch_units(units, columns))
    taken = ["weight"] if string_ids else ["src", "dst", "weight"]
    assert size == max(stored_bytes(tmp_path, taken, batches == "a row group each"))
    assert count == page_reader.BATCHES_IN_FLIGHT + page_reader.READS_AHEAD


def test_the_batches_in_flight_take_the_ring_that_read_ring_gives(tmp_path, monkeypatch):
    """In flight (a GPU's way, here on NumPy too), the read's ring has read_ring's count."""
    monkeypatch.setattr(page_reader, "BATCH_BYTES", 1)
    monkeypatch.setattr(page_reader, "run_in_order", lambda work, batches, threads: work.__self__.in_flight(batches))
    rings = []
    made = page_reader.ReadBuffers.__init__
    monkeypatch.setattr(page_reader.ReadBuffers, "__init__",
                        lambda self, size, count: rings.append(count) or made(self, size, count))
    plan = plan_input(edge_files(tmp_path))
    got = read_edges(plan, xp=np, reader="gpu")
    expected = read_edges(plan_input(tmp_path), xp=np, reader="host")
    for name in ("src", "dst", "weight"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    assert rings == [page_reader.BATCHES_IN_FLIGHT + page_reader.READS_AHEAD]


def test_without_nvcomp_nothing_is_prepared(tmp_path, monkeypatch):
    monkeypatch.setattr(page_reader, "nvcomp_usable", lambda: False)
    page_reader.prepare_first_read(plan_input(edge_files(tmp_path)))  # no CuPy import, no error


@pytest.mark.skipif(not nvcomp_usable(), reason="pinned buffers are prepared on a GPU with nvCOMP")
def test_the_first_read_takes_the_prepared_pinned_blocks(tmp_path, monkeypatch):
    """Every block of the ring's size that the read asks for is one that prepare_first_read
    allocated and freed into CuPy's pinned pool: none is pinned anew."""
    import cupy

    monkeypatch.setattr(page_reader, "BATCH_BYTES", 1)
    plan = plan_input(edge_files(tmp_path))
    units = page_reader.units_between(plan, 0, plan.footers.rows)
    columns = plan.footers.columns
    size, count = page_reader.read_ring(plan, page_reader.file_layouts(units, columns),
                                        page_reader.batch_units(units, columns))
    given = []
    alloc = cupy.cuda.alloc_pinned_memory
    monkeypatch.setattr(cupy.cuda, "alloc_pinned_memory", lambda n: given.append((n, (m := alloc(n)).ptr)) or m)
    page_reader.prepare_first_read(plan)
    prepared = {ptr for n, ptr in given if n == size}
    assert len(prepared) == count
    given.clear()
    got = read_edges(plan_input(tmp_path), xp=cupy, reader="gpu")
    ring = [ptr for n, ptr in given if n == size]
    assert len(ring) == count and set(ring) <= prepared
    expected = read_edges(plan_input(tmp_path), xp=np, reader="host")
    np.testing.assert_array_equal(cupy.asnumpy(got.weight), expected.weight)
