"""The local disk's ranged reads (LocalFilesystem.read_ranges, the page reader's preads): each
range lands in the buffer as the file holds it, whether ranges follow one another, leave gaps,
come out of file order, repeat bytes of the file, or run past its end (the bytes each range got
say so); the store's read, one ranged read per range, is the reference."""
from __future__ import annotations

import numpy as np
import pytest

from tasks.parquet.store import filesystem
from tasks.parquet.store.filesystem import Filesystem, local

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
    monkeypatch.setattr(filesystem, "PREAD_PIECE", 64 << 10)  # several pieces even for small ranges
    placed = np.cumsum([0] + [size for _, size in spans])
    ranges = [(offset, size, int(at)) for (offset, size), at in zip(spans, placed)]
    ours, reference = (np.full(int(placed[-1]) + 7, 0xAB, np.uint8) for _ in range(2))
    size, got = local().read_ranges(data_file, ranges, ours, threads=threads)
    expected_size, expected_got = Filesystem.read_ranges(local(), data_file, ranges, reference)
    assert (size, got) == (expected_size, expected_got) == (SIZE, expected_got)
    assert ours.tobytes() == reference.tobytes()  # bytes past what a range got stay as they were
