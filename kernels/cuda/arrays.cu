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

// out[i + 1] = mask[i] (out[0] zeroed by the caller): after an inclusive scan, the entries
// kept before each place.
extern "C" __global__ void mask_counts(const bool* mask, i64 n, i64* out) {
    for (i64 i = thread_index(); i < n; i += thread_count()) out[i + 1] = mask[i];
}

// The kept values in order: position holds mask_counts' scanned sums.
template <typename T>
__global__ void array_compress(const T* values, const bool* mask, const i64* position, i64 n, T* out) {
    for (i64 i = thread_index(); i < n; i += thread_count())
        if (mask[i]) out[position[i]] = values[i];
}

// Exact sums of float32 or float64 values by binary exponent (tasks/forest_weight.py,
// exact_units): each value is m * 2^(slot - 1126) for a whole m, |m| < 2^53, read from its bits
// (subnormals included, so no flush-to-zero); m's halves m >> 26 and m & (2^26 - 1) are added
// per slot in two's complement (sums[slot], sums[EXACT_SLOTS + slot]), exact below 2^36
// values. Per-block histograms in shared memory, then one atomic per non-empty slot and block.
// NaN and infinities are counted in sums[2 * EXACT_SLOTS] and left out.
#define EXACT_SLOTS 2098
#define EXACT_HALF 26
template <typename W, typename Bits>
__global__ void exact_slot_sums(const W* values, i64 n, u64* sums) {
    __shared__ u64 local[2 * EXACT_SLOTS + 1];
    for (int i = threadIdx.x; i <= 2 * EXACT_SLOTS; i += blockDim.x) local[i] = 0;
    __syncthreads();
    const int fraction_bits = sizeof(W) == 4 ? 23 : 52, exponent_bits = sizeof(W) == 4 ? 8 : 11;
    const int slot_offset = sizeof(W) == 4 ? 976 : 51;  // slot = biased exponent + this (1 for subnormals)
    const int exponent_max = (1 << exponent_bits) - 1;
    const Bits* bits = (const Bits*)values;
    for (i64 i = thread_index(); i < n; i += thread_count()) {
        Bits b = bits[i];
        int exponent = (int)((b >> fraction_bits) & exponent_max);
        if (exponent == exponent_max) {
            atomicAdd(&local[2 * EXACT_SLOTS], 1ull);
            continue;
        }
        i64 m = (i64)(b & (((Bits)1 << fraction_bits) - 1));
        if (exponent) m |= (i64)1 << fraction_bits;
        if (b >> (sizeof(W) * 8 - 1)) m = -m;
        int slot = (exponent ? exponent : 1) + slot_offset;
        atomicAdd(&local[slot], (u64)(m >> EXACT_HALF));
        atomicAdd(&local[EXACT_SLOTS + slot], (u64)(m & (((i64)1 << EXACT_HALF) - 1)));
    }
    __syncthreads();
    for (int i = threadIdx.x; i <= 2 * EXACT_SLOTS; i += blockDim.x)
        if (local[i]) atomicAdd(&sums[i], local[i]);
}
