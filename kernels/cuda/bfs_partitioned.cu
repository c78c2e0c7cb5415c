// The partitioned search's per-rank steps (driver: kernels/gpu_partitioned.py; encodings:
// kernels/partitioned.py). Compiled after bfs.cu (kernels/cuda_source.py), whose BFS_THREADS,
// BU_PROBES, Found and settle() it shares.
//
// This rank owns global vertices [lo, lo + owned).
//   in_ptr / in_idx, out_ptr / out_idx : i64 [owned+1], int [arcs]  CSR rows of the owned
//              vertices' in- and out-arcs (row v - lo; the neighbours are global ids)
//   dist / pred: int [owned]  hop count (-1 = unreached) and parent (a global id), by local id
//   frontier  : int [count]   the frontier's owned vertices (local ids), or (bottom-up) the
//              whole graph's frontier as a bitmap: bit v % 32 of word v / 32, unsigned [ceil(n/32)]
//   queue     : int [owned]   the owned vertices a step finds (local ids), appended
//   counts    : u64 [RANK_OWNERS + ranks]  below
//
// Each step appends the owned vertices it finds to `queue` and counts them in
// counts[RANK_QUEUED], and adds their out-degrees to counts[RANK_ARCS]: the next frontier and its
// arcs come back to the host in the one small copy the step needs anyway. Threads sum the
// degrees they add over their whole grid-stride loop and each warp adds once at the end.
#define RANK_QUEUED 0
#define RANK_ARCS 1
#define RANK_OWNERS 2  // top-down: proposals per owner rank from here on

__device__ __forceinline__ void add_arcs(u64* counts, i64 arcs) {
    __syncwarp();
    arcs = warp_sum(arcs);
    if (lane_id() == 0 && arcs) atomicAdd(&counts[RANK_ARCS], (u64)arcs);
}

// Appends for lanes that reached this point together, each to the counter of its own key:
// lanes with the same key share one atomic.
__device__ __forceinline__ u64 keyed_append(u64* counters, int key) {
    unsigned active = __activemask();
    unsigned peers = __match_any_sync(active, key);
    int lane = lane_id(), leader = __ffs(peers) - 1;
    u64 base = 0;
    if (lane == leader) base = atomicAdd(&counters[key], (u64)__popc(peers));
    base = __shfl_sync(active, base, leader);
    return base + __popc(peers & ((1u << lane) - 1));
}

// settle() for a top-down step's owned head `local`, which several threads may want (the
// expansion's arcs and the other ranks' proposals): a plain read skips the heads already
// reached, and atomicCAS on the distance picks the one thread that settles it. That thread
// sets the parent, queues the head and counts its out-arcs.
__device__ __forceinline__ void settle_owned(int* dist, int* pred, int local, int distance, int parent,
                                             const i64* out_ptr, int* queue, u64* counts, Found& found) {
    if (dist[local] < 0 && atomicCAS(&dist[local], -1, distance) == -1) {
        pred[local] = parent;
        queue[coalesced_append(&counts[RANK_QUEUED])] = local;
        found.add(out_ptr[local + 1] - out_ptr[local]);
    }
}

extern "C" {

// The frontier (local ids) as bits of the whole graph's bitmap (bit v % 32 of word v / 32,
// zeroed by the caller); the ranks then sum their bitmaps.
__global__ void bfs_rank_bitmap(const int* frontier, i64 count, int lo, unsigned* bits) {
    for (i64 i = thread_index(); i < count; i += thread_count()) {
        int v = lo + frontier[i];
        atomicOr(&bits[v >> 5], 1u << (v & 31));
    }
}

// The out-degrees of the frontier's vertices (local ids), for the top-down step's offsets.
__global__ void bfs_rank_degrees(const i64* out_ptr, const int* frontier, int count, i64* degrees) {
    for (i64 i = thread_index(); i < count; i += thread_count()) {
        int u = frontier[i];
        degrees[i] = out_ptr[u + 1] - out_ptr[u];
    }
}

// Bottom-up step. `frontier` is the whole graph's frontier as a bitmap. A warp takes 32
// consecutive owned vertices; each unreached one looks for its first in-neighbour (CSR order)
// in the frontier, a lane probing its first BU_PROBES alone and the warp scanning the rest of a
// longer list 32 at a time.
__global__ void __launch_bounds__(BFS_THREADS)
bfs_rank_bottom_up(const i64* in_ptr, const int* in_idx, const i64* out_ptr, int owned, const unsigned* frontier,
                   int* dist, int* pred, int level, int* queue, u64* counts) {
    const int lane = lane_id();
    const i64 groups = ((i64)owned + 31) >> 5;
    Found found;
    for (i64 g = thread_index() >> 5; g < groups; g += thread_count() >> 5) {
        const i64 v64 = g * 32 + lane;  // 64 bits, as in the one-GPU bottom-up step
        int v = (int)v64;
        bool todo = v64 < owned && dist[v] < 0;
        // (the frontier bitmap was written by an earlier launch: plain loads)
        int parent = first_parent_in<false>(frontier, in_ptr, in_idx, v, todo);
        bool hit = parent >= 0;
        if (hit) settle(dist, pred, v, level + 1, parent, out_ptr[v + 1] - out_ptr[v], found);
        u64 slot = warp_append(&counts[RANK_QUEUED], hit);
        if (hit) queue[slot] = v;
    }
    add_arcs(counts, found.arcs);
}

// Top-down step, expansion. One thread per arc of the frontier: `offsets` (count + 1 entries)
// is the exclusive prefix sum of the frontier vertices' out-degrees, and a thread finds its
// arc's vertex by binary search, so a hub's million arcs spread over the whole GPU instead of
// one warp. A head this rank owns is claimed at once (atomicCAS on its distance) and queued. A
// head rank q owns is proposed to q once per level, by the thread that sets its bit in
// `proposed` (a bitmap over all n, zeroed per level): head << 32 | parent, appended to q's
// region of `remote`, which starts at region[q] and holds at most q's vertex count (each head
// once); counts[RANK_OWNERS + q] counts them. `bounds` (size + 1) are the ranks' first ids.
__global__ void __launch_bounds__(BFS_THREADS)
bfs_rank_top_down(const i64* out_ptr, const int* out_idx, const int* frontier, int count, const i64* offsets,
                  int lo, int owned, int* dist, int* pred, int level, unsigned* proposed, int* queue,
                  const i64* bounds, int size, const i64* region, i64* remote, u64* counts) {
    const i64 total = offsets[count];
    Found found;
    for (i64 i = thread_index(); i < total; i += thread_count()) {
        int first = 0, past = count;  // offsets[first] <= i < offsets[past]
        while (past - first > 1) {
            int mid = (first + past) >> 1;
            if (offsets[mid] <= i) first = mid;
            else past = mid;
        }
        int u = frontier[first];
        int v = out_idx[out_ptr[u] + (i - offsets[first])];
        int parent = lo + u;
        int local = v - lo;
        if (local >= 0 && local < owned) {
            settle_owned(dist, pred, local, level + 1, parent, out_ptr, queue, counts, found);
        } else {
            unsigned bit = 1u << (v & 31);
            if (!(proposed[v >> 5] & bit) && !(atomicOr(&proposed[v >> 5], bit) & bit)) {
                int q = 0, past_q = size;  // bounds[q] <= v < bounds[past_q]
                while (past_q - q > 1) {
                    int mid = (q + past_q) >> 1;
                    if (bounds[mid] <= v) q = mid;
                    else past_q = mid;
                }
                remote[region[q] + keyed_append(counts + RANK_OWNERS, q)] = ((i64)v << 32) | (unsigned)parent;
            }
        }
    }
    add_arcs(counts, found.arcs);
}

// The proposals other ranks sent this rank (head << 32 | parent, heads owned here): the first to
// claim an unreached head sets its parent and queues it, after the expansion's own finds.
__global__ void __launch_bounds__(BFS_THREADS)
bfs_rank_accept(const i64* proposals, i64 count, const i64* out_ptr, int lo, int* dist, int* pred, int level,
                int* queue, u64* counts) {
    Found found;
    for (i64 i = thread_index(); i < count; i += thread_count()) {
        i64 p = proposals[i];
        settle_owned(dist, pred, (int)(p >> 32) - lo, level + 1, (int)(p & 0xffffffff), out_ptr, queue, counts, found);
    }
    add_arcs(counts, found.arcs);
}

}  // extern "C"
