"""The local disk's ranged reads (LocalFilesystem.read_ranges, the page reader's preads): each
range lands in the buffer as the file holds it, whether ranges follow one another (merged into
few preads), leave gaps, come out of file order, repeat bytes of the file, or run past its end
(the bytes each range got say so); the store's read, one ranged read per range, is the
reference."""
from __future__ import annotations

import numpy as np
import pytest

from tasks.parquet.store import filesystem
from tasks.parquet.store.filesystem import Filesystem, bytes_per_range, local, pread_pieces

SIZE = 5 << 20 | 12345  # not a multiple of a piece


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "bytes.bin"
    path.write_bytes(np.random.default_rng(1).integers(0, 256, SIZE, dtype=np.uint8).tobytes())
    return path


def layouts():
    """(name, ranges as (offset, size), each placed after the last in the buffer)."""
    whole = [(0, SIZE)]
    back_to_back = [(k * 700_001, 700_001) for k in range(SIZE // 700_001)]
    gaps = [(k * 1_000_003 + 17, 400_000) for k in range(5)]
    reversed_order = list(reversed(back_to_back))
    repeated = [(100, 3 << 20), (100, 3 << 20), (2 << 20, 1 << 20)]
    past_end = [(SIZE - 1000, 5000), (SIZE + 10, 100), (0, 10)]
    empty = [(0, 0), (50, 0), (60, 1)]
    return [("whole file", whole), ("back to back", back_to_back), ("gaps", gaps),
            ("out of file order", reversed_order), ("repeated bytes", repeated), ("past the end", past_end),
            ("empty ranges", empty), ("none", [])]


@pytest.mark.parametrize("threads", [1, 3, 16])
@pytest.mark.parametrize("name,spans", layouts(), ids=[n for n, _ in layouts()])
def test_ranges_land_as_the_file_holds_them(data_file, name, spans, threads, monkeypatch):
    monkeypatch.setattr(filesystem, "PREAD_LEAST", 64 << 10)  # several pieces even for small ranges
    placed = np.cumsum([0] + [size for _, size in spans])
    ranges = [(offset, size, int(at)) for (offset, size), at in zip(spans, placed)]
    ours, reference = (np.full(int(placed[-1]) + 7, 0xAB, np.uint8) for _ in range(2))
    size, got = local().read_ranges(data_file, ranges, ours, threads=threads)
    expected_size, expected_got = Filesystem.read_ranges(local(), data_file, ranges, reference)
    assert (size, got) == (expected_size, expected_got) == (SIZE, expected_got)
    assert ours.tobytes() == reference.tobytes()  # bytes past what a range got stay as they were


def test_ranges_that_follow_each_other_take_one_pread_per_thread():
    """A batch of whole row groups (chunks back to back in the file and in the buffer) is read
    by one pread per thread, however many chunks it holds."""
    ranges = [(4 + k * 3_000_000, 3_000_000, k * 3_000_000) for k in range(60)]
    pieces = pread_pieces(ranges, 16).pieces
    assert len(pieces) == 16
    assert sum(size for _, _, size in pieces) == 60 * 3_000_000
    assert pieces[0][:2] == (4, 0) and all(o - 4 == at for o, at, _ in pieces)


def test_no_pread_asks_for_more_than_a_call_moves(monkeypatch):
    """Linux moves at most 0x7ffff000 bytes a pread: a piece stays at PREAD_MOST or under."""
    monkeypatch.setattr(filesystem, "PREAD_MOST", 1000)
    pieces = pread_pieces([(0, 10_500, 0)], 2).pieces
    assert [size for _, _, size in pieces] == [1000] * 10 + [500]


def test_a_short_read_counts_for_the_ranges_it_covers():
    """Three ranges back to back, read as two pieces of 15 bytes; the second piece got 7 (the
    file ended): the ranges got 10, 10 and 2. A gap after a short piece counts for nothing."""
    ranges = [(0, 10, 0), (10, 10, 10), (20, 10, 20), (100, 5, 30)]
    plan = pread_pieces(ranges, 2)
    plan = filesystem.PreadPlan([(0, 0, 15), (15, 15, 15), (100, 30, 5)], [0, 0, 1], plan.range_run,
                                plan.range_inside)
    assert bytes_per_range(ranges, plan, [15, 7, 0]) == [10, 10, 2, 0]


def test_many_ranges_are_counted_in_linear_time():
    """Chunks that do not follow each other (other columns between them) do not merge: 50,000
    of them are planned and counted at once."""
    ranges = [(k * 300, 100, k * 100) for k in range(50_000)]
    plan = pread_pieces(ranges, 16)
    assert bytes_per_range(ranges, plan, [size for _, _, size in plan.pieces]) == [100] * 50_000
