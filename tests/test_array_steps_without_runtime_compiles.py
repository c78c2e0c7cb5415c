"""The whole-array steps the pipeline's path takes from the ahead-of-time module instead of
CuPy's run-time compiled kernels (kernels/gpu_arrays.py, the counters of kernels/backend.py):
each equals NumPy's answer, on the edge cases of its type. The counters run on every backend;
the fills, conversions, gathers and scans are GPU-only."""
import numpy as np
import pytest

from kernels import backend as be

SIZES = [0, 1, 31, 32, 257, 100_003]


def floats_with_every_kind(dtype, n, rng):
    """Random values with NaN (quiet and with payloads), both infinities, subnormals, -0.0 and
    the largest finite values mixed in."""
    info = np.finfo(dtype)
    values = rng.normal(size=n).astype(dtype)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, info.smallest_subnormal, -info.smallest_subnormal,
                        -0.0, info.max, -info.max], dtype=dtype)
    payload = np.array([0x7FC00001 if dtype == np.float32 else 0x7FF0000000000001],
                       dtype=np.uint32 if dtype == np.float32 else np.uint64).view(dtype)
    if n:
        where = rng.choice(n, min(n, 40))
        values[where] = rng.choice(np.concatenate([special, payload]), where.size)
    return values


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nonfinite_and_nan_counts_include_every_encoding(backend, n, dtype):
    values = floats_with_every_kind(dtype, n, np.random.default_rng(n))
    on = be.to_backend(values, backend)
    assert be.count_nonfinite(on) == np.count_nonzero(~np.isfinite(values))
    assert be.count_nonfinite(on, nan_only=True) == np.count_nonzero(np.isnan(values))


@pytest.mark.parametrize("n", SIZES)
def test_true_equal_and_at_least_counts(backend, n):
    rng = np.random.default_rng(n + 7)
    mask = rng.random(n) < 0.3
    a = rng.integers(-3, 3, n)
    b = rng.integers(-3, 3, n)
    assert be.count_true(be.to_backend(mask, backend)) == np.count_nonzero(mask)
    for left, right in ((a, b), (a.astype(np.int32), b.astype(np.int32)), (a.astype(np.int32), b)):
        assert be.count_equal(*(be.to_backend(x, backend) for x in (left, right))) == np.count_nonzero(a == b)
    for dtype in (np.int32, np.int64):
        for low in (-4, 0, 2, 3):
            assert be.count_at_least(be.to_backend(a.astype(dtype), backend), low) == np.count_nonzero(a >= low)


@pytest.mark.parametrize("n", SIZES)
def test_traversed_ends_and_label_sizes(backend, n):
    rng = np.random.default_rng(n + 11)
    vertices = max(n // 3, 1)
    distance = rng.integers(-1, 4, vertices).astype(np.int32)
    for dtype in (np.int32, np.int64):
        ends = rng.integers(0, vertices, n).astype(dtype)
        got = be.count_ends_reached(be.to_backend(distance, backend), be.to_backend(ends, backend))
        assert got == np.count_nonzero(distance[ends] >= 0)
        sizes = be.to_host(be.bincount(be.to_backend(ends, backend), vertices + 2))
        assert sizes.dtype == np.int64 and sizes.tolist() == np.bincount(ends, minlength=vertices + 2).tolist()


@pytest.mark.parametrize("n", SIZES)
def test_masked_compaction_and_gathers(backend, n):
    rng = np.random.default_rng(n + 13)
    mask = rng.random(n) < 0.4
    counts = be.mask_counts(be.to_backend(mask, backend))
    assert be.to_host(counts).tolist() == [0, *np.cumsum(mask).tolist()]
    for dtype in (np.int32, np.int64, np.uint64, np.float32, np.float64):
        values = rng.integers(-5, 5, n).astype(dtype)
        kept = be.compress(be.to_backend(values, backend), be.to_backend(mask, backend), counts)
        assert be.to_host(kept).tobytes() == values[mask].tobytes()
        index = rng.integers(0, max(n, 1), 2 * n).astype(np.int64) if n else np.zeros(0, np.int64)
        assert be.to_host(be.take(be.to_backend(values, backend), be.to_backend(index, backend))).tobytes() == \
            values[index].tobytes()


def test_fill_keeps_the_exact_value(backend):
    xp = be.module(backend)
    for dtype, value in ((np.uint64, 2**64 - 1), (np.uint32, 0xFFFFFFFF), (np.int64, -(2**63)), (np.float32, 1.0),
                         (np.float64, -2.5)):
        got = be.to_host(be.full(xp, 1001, value, dtype))
        assert got.dtype == dtype and (got == np.array(value, dtype=dtype)).all()


@pytest.fixture
def gpu_arrays():
    if not be.cupy_usable():
        pytest.skip("the ahead-of-time array kernels need a usable CUDA device")
    from kernels import gpu_arrays

    return gpu_arrays


@pytest.mark.parametrize("n", SIZES)
def test_arange_cast_and_take_equal_numpy(gpu_arrays, n):
    import cupy as cp

    rng = np.random.default_rng(n)
    for dtype in (np.int32, np.int64, np.uint32, np.uint64):
        got = gpu_arrays.arange(n, dtype)
        assert got.dtype == dtype and (got.get() == np.arange(n, dtype=dtype)).all()
    wide = rng.integers(-(2**31), 2**31, n)
    narrow = gpu_arrays.astype(cp.asarray(wide), np.int32)
    assert narrow.dtype == np.int32 and (narrow.get() == wide.astype(np.int32)).all()
    back = gpu_arrays.astype(narrow, np.int64)
    assert back.dtype == np.int64 and (back.get() == wide).all()
    index = rng.integers(0, max(n, 1), 3 * n)
    for values in (rng.normal(size=n), rng.normal(size=n).astype(np.float32), wide, wide.astype(np.int32)):
        if n:
            assert (gpu_arrays.take(cp.asarray(values), cp.asarray(index)).get() == values[index]).all()


@pytest.mark.parametrize("n", SIZES)
def test_prefix_sums_equal_numpy(gpu_arrays, n):
    import cupy as cp

    values = np.random.default_rng(n).integers(0, 2**40, n)
    assert (gpu_arrays.cumsum(cp.asarray(values)).get() == np.cumsum(values)).all()
    for given in (values, values.astype(np.int32) if n else values):
        exclusive = gpu_arrays.exclusive_sums(cp.asarray(given)).get()
        assert exclusive.dtype == np.int64 and exclusive.tolist() == [0] + np.cumsum(given.astype(np.int64)).tolist()
