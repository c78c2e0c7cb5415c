// Device helpers shared by graph.cu, bfs.cu, bfs_partitioned.cu and msf.cu. kernels/cuda_source.py
// puts this file first and compiles the five as one module (one NVRTC compile, cached by CuPy).
//
// Conventions: i64 / u64 are long long / unsigned long long; kernels loop grid-stride unless
// they say otherwise; data that other blocks wrote earlier IN THE SAME LAUNCH is read with
// __ldcg (L2 only), because a block's L1 may still hold an older copy of that line.

typedef long long i64;
typedef unsigned long long u64;

#define FULL_MASK 0xffffffffu
#define U64_MAX 0xffffffffffffffffull
#define I64_MAX 0x7fffffffffffffffll
#define I64_MIN (-I64_MAX - 1)

__device__ __forceinline__ i64 thread_index() { return blockIdx.x * (i64)blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 thread_count() { return (i64)gridDim.x * blockDim.x; }
__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }

__device__ __forceinline__ i64 warp_sum(i64 x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(FULL_MASK, x, o);
    return x;
}

__device__ __forceinline__ i64 warp_max(i64 x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = max(x, __shfl_xor_sync(FULL_MASK, x, o));
    return x;
}

// Block-wide sums of a and b and maximum of c; every thread of the block must call it and every
// thread gets the results. `scratch` holds at least 3 * 32 + 3 values.
__device__ __forceinline__ void block_reduce(i64& a, i64& b, i64& c, i64* scratch) {
    int lane = lane_id(), warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    a = warp_sum(a);
    b = warp_sum(b);
    c = warp_max(c);
    if (lane == 0) {
        scratch[warp] = a;
        scratch[32 + warp] = b;
        scratch[64 + warp] = c;
    }
    __syncthreads();
    if (warp == 0) {
        a = warp_sum(lane < warps ? scratch[lane] : 0);
        b = warp_sum(lane < warps ? scratch[32 + lane] : 0);
        c = warp_max(lane < warps ? scratch[64 + lane] : 0);
        if (lane == 0) {
            scratch[96] = a;
            scratch[97] = b;
            scratch[98] = c;
        }
    }
    __syncthreads();
    a = scratch[96];
    b = scratch[97];
    c = scratch[98];
    __syncthreads();  // scratch may be reused at once
}

// Exclusive prefix sum of x over the block's threads (in thread order); *total gets the block's
// sum. Every thread must call it; `scratch` holds at least 34 values.
__device__ __forceinline__ i64 block_exclusive_scan(i64 x, i64* total, i64* scratch) {
    int lane = lane_id(), warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    i64 inclusive = x;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        i64 y = __shfl_up_sync(FULL_MASK, inclusive, o);
        if (lane >= o) inclusive += y;
    }
    if (lane == 31) scratch[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        i64 s = lane < warps ? scratch[lane] : 0;
        i64 t = s;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            i64 y = __shfl_up_sync(FULL_MASK, t, o);
            if (lane >= o) t += y;
        }
        scratch[lane] = t - s;  // this warp's offset
        if (lane == 31) scratch[32] = t;
    }
    __syncthreads();
    i64 result = scratch[warp] + inclusive - x;
    *total = scratch[32];
    __syncthreads();
    return result;
}

// Slot for each lane whose `want` is set in a list grown through `counter`: one atomicAdd per
// warp instead of one per element. All 32 lanes must call it.
__device__ __forceinline__ u64 warp_append(u64* counter, bool want) {
    unsigned mask = __ballot_sync(FULL_MASK, want);
    if (mask == 0) return 0;
    int lane = lane_id(), leader = __ffs(mask) - 1;
    u64 base = 0;
    if (lane == leader) base = atomicAdd(counter, (u64)__popc(mask));
    base = __shfl_sync(FULL_MASK, base, leader);
    return base + __popc(mask & ((1u << lane) - 1));
}

// The same for lanes that reached this point together inside divergent code.
__device__ __forceinline__ u64 coalesced_append(u64* counter) {
    unsigned active = __activemask();
    int lane = lane_id(), leader = __ffs(active) - 1;
    u64 base = 0;
    if (lane == leader) base = atomicAdd(counter, (u64)__popc(active));
    base = __shfl_sync(active, base, leader);
    return base + __popc(active & ((1u << lane) - 1));
}

// Barrier across all blocks of a launch whose blocks are all resident (a cooperative launch
// guarantees it). barrier[0] counts arrivals, barrier[1] is the generation: the last block to
// arrive resets the count and bumps the generation; the others wait for the bump. The fences
// publish each block's writes before it arrives and order its later reads after the release.
__device__ __forceinline__ void grid_barrier(u64* barrier) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile u64* generation = barrier + 1;
        u64 seen = *generation;
        __threadfence();
        if (atomicAdd(barrier, 1ull) == gridDim.x - 1) {
            atomicExch(barrier, 0ull);
            __threadfence();
            atomicAdd(barrier + 1, 1ull);
        } else {
            while (*generation == seen) __nanosleep(32);
        }
        __threadfence();
    }
    __syncthreads();
}
