// Whole-array steps of the pipeline's path, compiled ahead of time with the rest of the module.
// CuPy builds its own elementwise, indexing and reduction kernels with NVRTC on first use in
// every process whose cache lacks them (a fresh container: seconds each for the reductions over
// bool arrays, which pull in CUB's headers); these do the same work with no compilation.
// Drivers: kernels/gpu_arrays.py.
//
//   count : u64 [1]   a counter the caller zeroed; every warp adds its lanes' count once.

template <typename T>
__global__ void array_iota(T* out, i64 n) {
    for (i64 i = thread_index(); i < n; i += thread_count()) out[i] = (T)i;
}

template <typename T>
__global__ void array_fill(T* out, i64 n, T value) {
    for (i64 i = thread_index(); i < n; i += thread_count()) out[i] = value;
}

template <typename From, typename To>
__global__ void array_cast(const From* in, To* out, i64 n) {
    for (i64 i = thread_index(); i < n; i += thread_count()) out[i] = (To)in[i];
}

// out[i] = values[index[i]]; every index in range (the driver's caller knows it).
template <typename T>
__global__ void array_take(const T* values, const i64* index, i64 n, T* out) {
    for (i64 i = thread_index(); i < n; i += thread_count()) out[i] = values[index[i]];
}

// Every lane of every warp reaches this (grid-stride loops end for all lanes alike).
__device__ __forceinline__ void add_warp_count(i64 mine, u64* count) {
    mine = warp_sum(mine);
    if (lane_id() == 0 && mine) atomicAdd(count, (u64)mine);
}

extern "C" __global__ void count_true(const bool* mask, i64 n, u64* count) {
    i64 mine = 0;
    for (i64 i = thread_index(); i < n; i += thread_count()) mine += mask[i];
    add_warp_count(mine, count);
}

template <typename T>
__global__ void count_equal(const T* a, const T* b, i64 n, u64* count) {
    i64 mine = 0;
    for (i64 i = thread_index(); i < n; i += thread_count()) mine += a[i] == b[i];
    add_warp_count(mine, count);
}

template <typename T>
__global__ void count_at_least(const T* a, i64 n, T low, u64* count) {
    i64 mine = 0;
    for (i64 i = thread_index(); i < n; i += thread_count()) mine += a[i] >= low;
    add_warp_count(mine, count);
}

// Vertices whose distance is >= 0 at the ends in `ends` (repeats counted): the arcs a search traversed.
template <typename E>
__global__ void count_ends_reached(const int* distance, const E* ends, i64 m, u64* count) {
    i64 mine = 0;
    for (i64 i = thread_index(); i < m; i += thread_count()) mine += distance[ends[i]] >= 0;
    add_warp_count(mine, count);
}

// counts[v] += 1 for every value v (all in [0, length)).
template <typename T>
__global__ void array_bincount(const T* values, i64 n, u64* counts) {
    for (i64 i = thread_index(); i < n; i += thread_count()) atomicAdd(&counts[values[i]], 1ull);
}

// NaN and infinities by their bits (an exponent of all ones): no float arithmetic, so the same
// under any flush-to-zero option. Bits is the float's width as an unsigned integer; nan_only
// counts NaN alone (a non-zero fraction).
template <typename W, typename Bits>
__global__ void count_nonfinite(const W* x, i64 n, int nan_only, u64* count) {
    const int fraction_bits = sizeof(W) == 4 ? 23 : 52;
    const Bits fraction = ((Bits)1 << fraction_bits) - 1;
    const Bits exponent = (~(Bits)0 >> 1) & ~fraction;  // all but the sign and the fraction
    const Bits* bits = (const Bits*)x;
    i64 mine = 0;
    for (i64 i = thread_index(); i < n; i += thread_count()) {
        Bits b = bits[i];
        mine += (b & exponent) == exponent && (!nan_only || (b & fraction) != 0);
    }
    add_warp_count(mine, count);
}
