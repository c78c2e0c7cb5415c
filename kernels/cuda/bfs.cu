// Breadth-first search on the GPU (driver: kernels/gpu_bfs.py; encodings: kernels/bfs.py). The
// partitioned search's per-rank steps are in bfs_partitioned.cu, which uses settle() below.
//
//   dist     : int [n]   hop count, -1 = unreached;   pred : int [n]  parent, a source its own
//   visited  : unsigned [ceil(n/32)]  bit v%32 of word v/32 set once v is discovered
//   queue0/1 : int [n]   frontier as a list (top-down); holds only vertices with out-arcs
//   bitmap0/1: unsigned [ceil(n/32)]  frontier as a bitmap (bottom-up); vertices with out-arcs
//   offsets  : i64 [n+1] exclusive prefix sum of the queue's out-degrees (edge-parallel steps)
//   steps    : signed char [levels]  how each level ran (STEP_*)
//   ctl      : i64 [CTL_SIZE]  the search's state between launches, below
//
// ctl: level (the frontier holds the vertices at this distance), mode, status at exit, arcs
// still incident to unvisited vertices, which queue / bitmap holds the frontier, the grid
// barrier, and three slots of frontier statistics (vertices, queued vertices, out-arcs, largest
// out-degree). The statistics of level L's frontier live in slot L % 3; they are accumulated by
// the kernels of level L-1 (block reductions, one atomic per block), read by every block after
// the level's barrier, and slot (L+2) % 3 is cleared during level L for level L+1 to fill. So no
// host round trip happens inside a level: the direction and the form of each step are decided
// on the device, identically by every block, from the same slot.

#define CTL_LEVEL 0
#define CTL_MODE 1
#define CTL_STATUS 2
#define CTL_UNVISITED 3
#define CTL_QUEUE 4
#define CTL_BITMAP 5
#define CTL_BARRIER 6  // two words
#define CTL_STATS 8    // three slots of ST_COUNT
#define ST_SIZE 0
#define ST_QUEUED 1
#define ST_ARCS 2
#define ST_MAXDEG 3
#define ST_COUNT 4

#define MODE_TOP_DOWN 0
#define MODE_BOTTOM_UP 1
#define STATUS_DONE 1    // frontier empty or depth limit reached
#define STATUS_NARROW 2  // several small low-degree frontiers in a row: one block does better
#define STATUS_WIDE 3    // the one-block kernel met a frontier too large for it

#define STEP_VERTEX 0
#define STEP_EDGE 1
#define STEP_BOTTOM_UP 2
#define STEP_FUSED 3

#define BFS_THREADS 512
#define BU_PROBES 4  // in-neighbours a lane checks alone before its warp helps
#define FUSED_THREADS 1024

// Claim v for the next level. The plain read of the bitmap filters most already-visited
// vertices before any atomic; atomicOr then decides which of several discoverers wins.
__device__ __forceinline__ bool claim(unsigned* visited, int v) {
    unsigned bit = 1u << (v & 31);
    if (__ldcg(visited + (v >> 5)) & bit) return false;
    return !(atomicOr(&visited[v >> 5], bit) & bit);
}

// Claim the unvisited heads of the arcs [a, min(a + ARC_BATCH, end)): head[k] = the k-th
// arc's head and degree[k] its out-degree; returns a mask of the k whose head this thread won.
// The batch's loads of heads, of their bitmap words, its atomics and its degree loads do not
// depend on one another, so each kind is in flight at once: on road networks (2-4 arcs per
// vertex) a chain of dependent loads per arc was the whole cost of a narrow level. Arrays are
// indexed by unrolled constants only, so they stay in registers. L2_ONLY: read the bitmap from
// L2 (another block may have set bits; a stale L1 word only costs an atomic more).
#define ARC_BATCH 4
template <bool L2_ONLY>
__device__ __forceinline__ unsigned claim_batch(const i64* out_ptr, const int* out_idx, unsigned* visited,
                                                i64 a, i64 end, int* head, i64* degree) {
    unsigned word[ARC_BATCH];
#pragma unroll
    for (int k = 0; k < ARC_BATCH; ++k) head[k] = a + k < end ? out_idx[a + k] : -1;
#pragma unroll
    for (int k = 0; k < ARC_BATCH; ++k) {
        int v = head[k];
        word[k] = v < 0 ? ~0u : (L2_ONLY ? __ldcg(visited + (v >> 5)) : visited[v >> 5]);
    }
    unsigned won = 0;
#pragma unroll
    for (int k = 0; k < ARC_BATCH; ++k) {
        unsigned bit = 1u << (head[k] & 31);
        if (!(word[k] & bit) && !(atomicOr(&visited[head[k] >> 5], bit) & bit)) won |= 1u << k;
    }
#pragma unroll
    for (int k = 0; k < ARC_BATCH; ++k)
        degree[k] = (won >> k) & 1 ? out_ptr[head[k] + 1] - out_ptr[head[k]] : 0;
    return won;
}

__device__ __forceinline__ i64* stats_slot(i64* ctl, i64 level) {
    return ctl + CTL_STATS + ST_COUNT * (level % 3);
}

// What one thread found in a step, toward the next frontier's statistics: vertices, their
// out-arcs, the largest out-degree among them. The caller reduces them per warp or block.
struct Found {
    i64 count = 0, arcs = 0, largest = 0;
    __device__ __forceinline__ void add(i64 degree) {
        ++count;
        arcs += degree;
        largest = max(largest, degree);
    }
};

// Settling a vertex: v is at `distance` with parent `parent` (`degree`: v's out-degree). One
// thread settles a given v (the winner of v's claim, or the lane a bottom-up step gives v), so
// plain stores suffice. Putting v in the next frontier is the caller's: each step appends its
// own way (per lane, per warp, or as bitmap words).
__device__ __forceinline__ void settle(int* dist, int* pred, int v, int distance, int parent, i64 degree,
                                       Found& found) {
    dist[v] = distance;
    pred[v] = parent;
    found.add(degree);
}

// Top-down from u on one thread: claims u's unvisited out-neighbours ARC_BATCH at a time and
// settles them at `distance`; those with out-arcs are appended to `queue` through `queued` (the
// lanes here diverge, so coalesced_append).
template <bool L2_ONLY>
__device__ __forceinline__ void expand_vertex(int u, int distance, const i64* out_ptr, const int* out_idx,
                                              unsigned* visited, int* dist, int* pred, int* queue, u64* queued,
                                              Found& found) {
    for (i64 a = out_ptr[u], end = out_ptr[u + 1]; a < end; a += ARC_BATCH) {
        int head[ARC_BATCH];
        i64 degree[ARC_BATCH];
        unsigned won = claim_batch<L2_ONLY>(out_ptr, out_idx, visited, a, end, head, degree);
#pragma unroll
        for (int k = 0; k < ARC_BATCH; ++k) {
            if (!((won >> k) & 1)) continue;
            settle(dist, pred, head[k], distance, u, degree[k], found);
            if (degree[k] > 0) queue[coalesced_append(queued)] = head[k];
        }
    }
}

// Bottom-up, the warp together (every lane calls it; `todo`: the lane's v is unreached): v's
// first in-neighbour, in CSR order, whose bit is set in the bitmap `frontier`, or -1. A lane
// probes its own first BU_PROBES in-neighbours; the rest of any longer list is scanned by the
// whole warp, 32 neighbours per step, so one long list does not hold 31 idle lanes. L2_ONLY:
// read the bitmap from L2 (__ldcg), as a kernel must where other blocks wrote it since launch.
template <bool L2_ONLY>
__device__ __forceinline__ int first_parent_in(const unsigned* frontier, const i64* in_ptr, const int* in_idx, int v,
                                               bool todo) {
    const int lane = lane_id();
    int parent = -1;
    i64 a = 0, e = 0;
    if (todo) {
        a = in_ptr[v];
        e = in_ptr[v + 1];
        for (int k = 0; k < BU_PROBES && a < e; ++k, ++a) {
            int u = in_idx[a];
            unsigned word = L2_ONLY ? __ldcg(frontier + (u >> 5)) : frontier[u >> 5];
            if ((word >> (u & 31)) & 1u) {
                parent = u;
                break;
            }
        }
    }
    unsigned pending = __ballot_sync(FULL_MASK, todo && parent < 0 && a < e);
    while (pending) {
        int leader = __ffs(pending) - 1;
        pending &= pending - 1;
        i64 from = __shfl_sync(FULL_MASK, a, leader), to = __shfl_sync(FULL_MASK, e, leader);
        for (i64 b = from; b < to; b += 32) {
            int u = b + lane < to ? in_idx[b + lane] : 0;
            unsigned word = b + lane < to ? (L2_ONLY ? __ldcg(frontier + (u >> 5)) : frontier[u >> 5]) : 0u;
            unsigned ins = __ballot_sync(FULL_MASK, (word >> (u & 31)) & 1u);
            if (ins) {
                int first = __shfl_sync(FULL_MASK, u, __ffs(ins) - 1);
                if (lane == leader) parent = first;
                break;
            }
        }
    }
    return parent;
}

// Last i in [0, count) with a[i] <= t, for nondecreasing a with a[0] <= t: a 32-ary search by the
// whole warp (each step probes 32 positions at once and keeps the pair that brackets t).
__device__ __forceinline__ i64 warp_last_at_most(const i64* a, i64 count, i64 t) {
    int lane = lane_id();
    i64 lo = 0, hi = count;
    while (hi - lo > 1) {
        i64 probe = lo + ((hi - lo) * (lane + 1)) / 33;
        bool at_most = probe == lo || __ldcg(a + probe) <= t;
        int k = __popc(__ballot_sync(FULL_MASK, at_most));
        i64 new_lo = k > 0 ? __shfl_sync(FULL_MASK, probe, k - 1) : lo;
        i64 new_hi = k < 32 ? __shfl_sync(FULL_MASK, probe, k) : hi;
        lo = new_lo;
        hi = new_hi;
    }
    return lo;
}

extern "C" {

__global__ void bfs_reset(int n, int words, int* dist, int* pred, unsigned* visited) {
    for (i64 i = thread_index(); i < n; i += thread_count()) {
        dist[i] = -1;
        pred[i] = -1;
        if (i < words) visited[i] = 0;
    }
}

// One block: the sources become level 0 (frontier statistics in slot 0, the rest of ctl reset).
__global__ void bfs_init(const int* sources, int count, const i64* out_ptr, i64 total_arcs,
                         int* dist, int* pred, unsigned* visited, int* queue, i64* ctl) {
    __shared__ i64 scratch[100];
    __shared__ u64 queued;
    if (threadIdx.x == 0) queued = 0;
    __syncthreads();
    Found found;
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        int s = sources[i];
        i64 degree = out_ptr[s + 1] - out_ptr[s];
        settle(dist, pred, s, 0, s, degree, found);
        atomicOr(&visited[s >> 5], 1u << (s & 31));
        if (degree > 0) queue[atomicAdd(&queued, 1ull)] = s;
    }
    block_reduce(found.count, found.arcs, found.largest, scratch);
    if (threadIdx.x == 0) {
        for (int k = 0; k < CTL_STATS + 3 * ST_COUNT; ++k) ctl[k] = 0;
        ctl[CTL_UNVISITED] = total_arcs - found.arcs;
        i64* st = stats_slot(ctl, 0);
        st[ST_SIZE] = found.count;
        st[ST_QUEUED] = (i64)queued;
        st[ST_ARCS] = found.arcs;
        st[ST_MAXDEG] = found.largest;
    }
}

// Top-down levels on ONE block, several per launch (road networks spend thousands of levels on
// frontiers of a few hundred vertices, where a grid-wide barrier per level would dominate). Each
// thread walks whole adjacency lists, so it runs only while the frontier holds at most max_size
// queued vertices, none of degree above max_degree; then it hands the state back in ctl.
// Statistics are summed per warp, then go to shared counters in three rotating sets (level L
// fills set L % 3 and clears set (L+1) % 3, which was last read before the previous level's
// barrier): one barrier per level.
// The visited pre-check may read L1: a stale word only has fewer bits, and the atomic decides.
__global__ void __launch_bounds__(FUSED_THREADS)
bfs_fused(const i64* out_ptr, const int* out_idx, int* dist, int* pred, unsigned* visited,
          int* queue0, int* queue1, signed char* steps, i64* ctl, int max_level, int max_size,
          int max_degree) {
    __shared__ u64 counters[3][ST_COUNT];
    i64 level = ctl[CTL_LEVEL], unvisited = ctl[CTL_UNVISITED];
    int which = (int)ctl[CTL_QUEUE];
    const i64* st = stats_slot(ctl, level);
    i64 size = st[ST_SIZE], q = st[ST_QUEUED], arcs_in = st[ST_ARCS], top_in = st[ST_MAXDEG];
    if (threadIdx.x < 3 * ST_COUNT) counters[threadIdx.x / ST_COUNT][threadIdx.x % ST_COUNT] = 0;
    __syncthreads();
    while (size > 0 && level < max_level && q <= max_size && top_in <= max_degree) {
        int* cur = which ? queue1 : queue0;
        int* nxt = which ? queue0 : queue1;
        u64* c = counters[level % 3];
        if (threadIdx.x < ST_COUNT) counters[(level + 1) % 3][threadIdx.x] = 0;
        Found found;
        for (int i = threadIdx.x; i < q; i += blockDim.x)
            expand_vertex<false>(cur[i], (int)level + 1, out_ptr, out_idx, visited, dist, pred, nxt, &c[ST_QUEUED],
                                 found);
        // one shared atomic per warp and statistic: a thousand threads on one shared word
        // would serialize
        found.count = warp_sum(found.count);
        found.arcs = warp_sum(found.arcs);
        found.largest = warp_max(found.largest);
        if (lane_id() == 0 && found.count) {
            atomicAdd(&c[ST_SIZE], (u64)found.count);
            atomicAdd(&c[ST_ARCS], (u64)found.arcs);
            atomicMax(&c[ST_MAXDEG], (u64)found.largest);
        }
        __syncthreads();
        size = (i64)c[ST_SIZE];
        q = (i64)c[ST_QUEUED];
        arcs_in = (i64)c[ST_ARCS];
        top_in = (i64)c[ST_MAXDEG];
        if (threadIdx.x == 0) steps[level] = STEP_FUSED;
        unvisited -= arcs_in;
        which ^= 1;
        ++level;
    }
    if (threadIdx.x == 0) {
        ctl[CTL_LEVEL] = level;
        ctl[CTL_MODE] = MODE_TOP_DOWN;
        ctl[CTL_QUEUE] = which;
        ctl[CTL_UNVISITED] = unvisited;
        ctl[CTL_STATUS] = (size == 0 || level >= max_level) ? STATUS_DONE : STATUS_WIDE;
        for (int s = 0; s < 3; ++s) {
            i64* slot = ctl + CTL_STATS + ST_COUNT * s;
            bool current = s == level % 3;
            slot[ST_SIZE] = current ? size : 0;
            slot[ST_QUEUED] = current ? q : 0;
            slot[ST_ARCS] = current ? arcs_in : 0;
            slot[ST_MAXDEG] = current ? top_in : 0;
        }
    }
}

// All levels of a search on the whole GPU in ONE cooperative launch, a grid barrier between
// levels. Per level, from the frontier's statistics: top-down <-> bottom-up by the ALPHA / BETA
// rule (converting the frontier between queue and bitmap when the direction changes); top-down
// vertex-parallel while no frontier vertex has more than vertex_degree arcs (a thread walks a
// whole list), else edge-parallel over the prefix sum of the frontier's degrees (three
// barriers: scan, offsets, expansion), which one hub cannot serialize.
// Returns when the frontier is empty, the depth limit is reached, or `narrow_levels` top-down
// frontiers in a row held <= narrow_size vertices of degree <= narrow_degree (bfs_fused then
// runs them on one block, with block barriers only).
__global__ void __launch_bounds__(BFS_THREADS)
bfs_levels(const i64* out_ptr, const int* out_idx, const i64* in_ptr, const int* in_idx, int n,
           int* dist, int* pred, unsigned* visited, unsigned* bitmap0, unsigned* bitmap1,
           int* queue0, int* queue1, i64* offsets, i64* block_sums, signed char* steps, i64* ctl,
           int max_level, int alpha, int beta, int vertex_degree, int narrow_size, int narrow_degree,
           int narrow_levels) {
    __shared__ i64 scratch[100];
    const i64 words = ((i64)n + 31) >> 5;
    const i64 tid = thread_index(), threads = thread_count();
    const int lane = lane_id();
    const bool undirected = in_ptr == out_ptr;
    u64* barrier = (u64*)(ctl + CTL_BARRIER);
    i64 level = ctl[CTL_LEVEL], unvisited = ctl[CTL_UNVISITED];
    int mode = (int)ctl[CTL_MODE], qsel = (int)ctl[CTL_QUEUE], bsel = (int)ctl[CTL_BITMAP];
    int status = STATUS_DONE, streak = 0;
    bool first = true;
    while (true) {
        i64* st = stats_slot(ctl, level);
        i64 size = __ldcg(st + ST_SIZE), q = __ldcg(st + ST_QUEUED);
        i64 frontier_arcs = __ldcg(st + ST_ARCS), top = __ldcg(st + ST_MAXDEG);
        if (!first) unvisited -= frontier_arcs;
        first = false;
        if (size == 0 || level >= max_level) break;
        int* qcur = qsel ? queue1 : queue0;
        int* qnxt = qsel ? queue0 : queue1;
        unsigned* bcur = bsel ? bitmap1 : bitmap0;
        unsigned* bnxt = bsel ? bitmap0 : bitmap1;
        i64* next = stats_slot(ctl, level + 1);
        if (blockIdx.x == 0 && threadIdx.x < ST_COUNT) stats_slot(ctl, level + 2)[threadIdx.x] = 0;

        if (mode == MODE_TOP_DOWN && frontier_arcs * alpha > unvisited) {
            for (i64 w = tid; w < words; w += threads) bcur[w] = 0;
            grid_barrier(barrier);
            for (i64 i = tid; i < q; i += threads) {
                int u = __ldcg(qcur + i);
                atomicOr(&bcur[u >> 5], 1u << (u & 31));
            }
            grid_barrier(barrier);
            mode = MODE_BOTTOM_UP;
        } else if (mode == MODE_BOTTOM_UP && size * beta < n) {
            // bitmap -> queue: each block compacts its own run of words, one atomic per block
            i64 wlo = words * blockIdx.x / gridDim.x, whi = words * (blockIdx.x + 1) / gridDim.x;
            i64 mine = 0, unused0 = 0, unused1 = 0;
            for (i64 w = wlo + threadIdx.x; w < whi; w += blockDim.x) mine += __popc(__ldcg(bcur + w));
            block_reduce(mine, unused0, unused1, scratch);
            __shared__ i64 base;
            if (threadIdx.x == 0) base = (i64)atomicAdd((u64*)(st + ST_QUEUED), (u64)mine);
            __syncthreads();
            i64 at = base;
            for (i64 w0 = wlo; w0 < whi; w0 += blockDim.x) {
                i64 w = w0 + threadIdx.x;
                unsigned word = w < whi ? __ldcg(bcur + w) : 0u;
                i64 total;
                i64 pos = at + block_exclusive_scan(__popc(word), &total, scratch);
                while (word) {
                    int k = __ffs(word) - 1;
                    word &= word - 1;
                    qcur[pos++] = (int)(w * 32 + k);
                }
                at += total;
            }
            grid_barrier(barrier);
            q = __ldcg(st + ST_QUEUED);
            mode = MODE_TOP_DOWN;
        }

        Found found;
        if (mode == MODE_TOP_DOWN) {
            bool narrow = q <= narrow_size && top <= narrow_degree;
            streak = narrow ? streak + 1 : 0;
            if (narrow_levels > 0 && streak >= narrow_levels) {
                status = STATUS_NARROW;
                break;
            }
            bool even = top <= vertex_degree;
            if (blockIdx.x == 0 && threadIdx.x == 0) steps[level] = even ? STEP_VERTEX : STEP_EDGE;
            if (even) {
                // one thread per frontier vertex
                for (i64 i = tid; i < q; i += threads)
                    expand_vertex<true>(__ldcg(qcur + i), (int)level + 1, out_ptr, out_idx, visited, dist, pred,
                                        qnxt, (u64*)(next + ST_QUEUED), found);
            } else {
                // (1) each block scans the degrees of its own run of the queue
                i64 lo = q * blockIdx.x / gridDim.x, hi = q * (blockIdx.x + 1) / gridDim.x;
                i64 running = 0;
                for (i64 i0 = lo; i0 < hi; i0 += blockDim.x) {
                    i64 i = i0 + threadIdx.x, degree = 0;
                    if (i < hi) {
                        int u = __ldcg(qcur + i);
                        degree = out_ptr[u + 1] - out_ptr[u];
                    }
                    i64 total;
                    i64 before = block_exclusive_scan(degree, &total, scratch);
                    if (i < hi) offsets[i] = running + before;
                    running += total;
                }
                if (threadIdx.x == 0) block_sums[blockIdx.x] = running;
                grid_barrier(barrier);
                // (2) add the sums of the blocks before: global offsets
                i64 before = 0, all = 0, unused = 0;
                for (i64 b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
                    i64 s = __ldcg(block_sums + b);
                    all += s;
                    if (b < blockIdx.x) before += s;
                }
                block_reduce(before, all, unused, scratch);
                for (i64 i = lo + threadIdx.x; i < hi; i += blockDim.x) offsets[i] += before;
                if (blockIdx.x == 0 && threadIdx.x == 0) offsets[q] = all;
                grid_barrier(barrier);
                // (3) each warp takes an equal run of the frontier's arcs; per 32 arcs, a lane
                // finds its arc's owner among the next 32 queue entries (every entry has >= 1
                // arc, so 32 consecutive arcs span at most 32 entries)
                i64 warps = threads >> 5, warp = tid >> 5;
                i64 per = (all + warps - 1) / warps;
                i64 a0 = warp * per, a1 = min(all, a0 + per);
                if (a0 < a1) {
                    i64 cur = warp_last_at_most(offsets, q, a0);
                    i64 cur_start = __ldcg(offsets + cur);
                    for (i64 base = a0; base < a1; base += 32) {
                        i64 t = base + lane;
                        bool valid = t < a1;
                        i64 j = cur + 1 + lane;
                        i64 end = j <= q ? __ldcg(offsets + j) : I64_MAX;
                        int k = 0;
#pragma unroll
                        for (int s = 16; s > 0; s >>= 1) {
                            i64 e = __shfl_sync(FULL_MASK, end, k + s - 1);
                            if (e <= t) k += s;
                        }
                        i64 start = __shfl_sync(FULL_MASK, end, k > 0 ? k - 1 : 0);
                        if (k == 0) start = cur_start;
                        i64 owner = cur + k;
                        bool hit = false;
                        int v = 0;
                        i64 degree = 0;
                        if (valid) {
                            int u = __ldcg(qcur + owner);
                            v = out_idx[out_ptr[u] + (t - start)];
                            if (claim(visited, v)) {
                                hit = true;
                                degree = out_ptr[v + 1] - out_ptr[v];
                                settle(dist, pred, v, (int)level + 1, u, degree, found);
                            }
                        }
                        bool push = hit && degree > 0;
                        u64 slot = warp_append((u64*)(next + ST_QUEUED), push);
                        if (push) qnxt[slot] = v;
                        cur = __shfl_sync(FULL_MASK, owner, 31);
                        cur_start = __shfl_sync(FULL_MASK, start, 31);
                    }
                }
            }
            qsel ^= 1;
        } else {
            // bottom-up: a warp per bitmap word; each unvisited vertex looks for an in-neighbour
            // in the frontier bitmap (2 MB at Kron-24: it stays in L2) and stops at the first.
            // A lane probes its own first BU_PROBES in-neighbours; the rest of any longer list
            // is scanned by the whole warp, 32 neighbours per step, so one long list does not
            // hold 31 idle lanes. The warp's ballots are the next frontier's word and its new
            // visited bits: no atomics on the bitmaps.
            if (blockIdx.x == 0 && threadIdx.x == 0) steps[level] = STEP_BOTTOM_UP;
            for (i64 w = tid >> 5; w < words; w += threads >> 5) {
                // compared in 64 bits: the last word's lanes past n would wrap an int near 2^31
                const i64 v64 = w * 32 + lane;
                int v = (int)v64;
                unsigned seen = __ldcg(visited + w);
                bool todo = v64 < n && !((seen >> lane) & 1u);
                int parent = first_parent_in<true>(bcur, in_ptr, in_idx, v, todo);
                bool hit = parent >= 0;
                i64 degree = 0;
                if (hit) {
                    degree = undirected ? in_ptr[v + 1] - in_ptr[v] : out_ptr[v + 1] - out_ptr[v];
                    settle(dist, pred, v, (int)level + 1, parent, degree, found);
                }
                unsigned reached = __ballot_sync(FULL_MASK, hit);
                unsigned frontier = __ballot_sync(FULL_MASK, hit && degree > 0);
                if (lane == 0) {
                    bnxt[w] = frontier;
                    if (reached) visited[w] = seen | reached;
                }
            }
            bsel ^= 1;
        }
        block_reduce(found.count, found.arcs, found.largest, scratch);
        if (threadIdx.x == 0) {
            if (found.count) atomicAdd((u64*)(next + ST_SIZE), (u64)found.count);
            if (found.arcs) atomicAdd((u64*)(next + ST_ARCS), (u64)found.arcs);
            if (found.largest) atomicMax(next + ST_MAXDEG, found.largest);
        }
        grid_barrier(barrier);
        ++level;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        ctl[CTL_LEVEL] = level;
        ctl[CTL_MODE] = mode;
        ctl[CTL_QUEUE] = qsel;
        ctl[CTL_BITMAP] = bsel;
        ctl[CTL_UNVISITED] = unvisited;
        ctl[CTL_STATUS] = status;
    }
}

}  // extern "C"

// A search's result columns (tasks/parquet/write/tables.py, dense_bfs_columns): reached where
// the distance is >= 0, has_predecessor where it is > 0 (a source has none), and there the
// predecessor's input id (ids[0] elsewhere: a null's placeholder). I: the ids' integer type, P:
// the predecessors'. Driver: kernels/gpu_bfs.py, result_columns.
template <typename I, typename P>
__global__ void bfs_result_columns(const I* ids, const int* distance, const P* predecessor, i64 n, bool* reached,
                                   bool* has_predecessor, I* predecessor_ids) {
    for (i64 v = thread_index(); v < n; v += thread_count()) {
        int d = distance[v];
        reached[v] = d >= 0;
        has_predecessor[v] = d > 0;
        predecessor_ids[v] = ids[d > 0 ? (i64)predecessor[v] : 0];
    }
}
