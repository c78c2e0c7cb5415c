// CUDA kernels of the GPU backend, compiled at run time by CuPy (NVRTC) as one module and by
// nvcc for sm_90 in the test suite (so a kernel that does not compile fails CI without a GPU).
//
// Encodings (see kernels/graph.py, bfs.py, msf.py):
//   indptr  : long long [n+1]  exclusive prefix sum of degrees;  indices : int [nnz]
//   dist    : int [n]  hop count, -1 = unreached;  pred : int [n]  parent, a source is its own
//   visited : unsigned [ceil(n/32)]  bit v%32 of word v/32 set once v is discovered
//   frontier: int queue (top-down) or unsigned bitmap like `visited` (bottom-up)
//   best    : int [n]  Boruvka: smallest band position (= rank by (weight, index)) of an edge
//             leaving each component; INT_MAX when none

#define FULL_MASK 0xffffffffu
#define NO_EDGE 0x7fffffff

extern "C" {

// ---- CSR build: scatter every arc to its row's next free slot (per-vertex atomic cursors) ----
__global__ void csr_scatter(const int* rows, const int* cols, long long m,
                            unsigned long long* cursor, int* indices) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned long long slot = atomicAdd(&cursor[rows[i]], 1ull);
        indices[slot] = cols[i];
    }
}

// ---- BFS helpers ------------------------------------------------------------------------------
// Claim v for the next level. The plain read of the bitmap filters most already-visited
// vertices before any atomic; atomicOr then decides which of several discoverers wins.
__device__ __forceinline__ bool claim(unsigned* visited, int v) {
    unsigned bit = 1u << (v & 31);
    if (visited[v >> 5] & bit) return false;
    return !(atomicOr(&visited[v >> 5], bit) & bit);
}

// Append v to the next frontier with one atomicAdd per group of converged lanes (warp-aggregated
// compaction) instead of one per discovered vertex.
__device__ __forceinline__ void push(int* queue, int* count, int v) {
    unsigned active = __activemask();
    int lane = threadIdx.x & 31;
    int leader = __ffs(active) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(active));
    base = __shfl_sync(active, base, leader);
    queue[base + __popc(active & ((1u << lane) - 1))] = v;
}

__device__ __forceinline__ void discover(int u, int v, int level, unsigned* visited, int* dist,
                                         int* pred, int* next, int* next_count) {
    if (claim(visited, v)) {
        dist[v] = level + 1;
        pred[v] = u;
        push(next, next_count, v);
    }
}

// Top-down, vertex-parallel (seed 22.1/22.2): one thread per frontier vertex.
__global__ void bfs_top_down_vertex(const int* frontier, int size, const long long* indptr,
                                    const int* indices, unsigned* visited, int* dist, int* pred,
                                    int* next, int* next_count, int level) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += gridDim.x * blockDim.x) {
        int u = frontier[i];
        for (long long a = indptr[u]; a < indptr[u + 1]; ++a)
            discover(u, indices[a], level, visited, dist, pred, next, next_count);
    }
}

// Top-down, edge-parallel (seed 22.3): one thread per frontier arc; `offsets` is the exclusive
// prefix sum of the frontier's degrees (size+1 entries), searched to find each arc's owner.
__global__ void bfs_top_down_edge(const int* frontier, int size, const long long* offsets,
                                  const long long* indptr, const int* indices, unsigned* visited,
                                  int* dist, int* pred, int* next, int* next_count, int level) {
    long long total = offsets[size];
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        int lo = 0, hi = size - 1;  // last i with offsets[i] <= t
        while (lo < hi) {
            int mid = (lo + hi + 1) >> 1;
            if (offsets[mid] <= t) lo = mid; else hi = mid - 1;
        }
        int u = frontier[lo];
        discover(u, indices[indptr[u] + (t - offsets[lo])], level, visited, dist, pred, next,
                 next_count);
    }
}

// Several small top-down levels in ONE launch of one block (high-diameter graphs: road networks
// spend thousands of levels on frontiers of a few hundred vertices, where a launch and a host
// round trip per level would dominate). Each thread walks one vertex's list, so the host enters
// only with low-degree frontiers and the block stops as soon as it discovers a vertex of degree
// above `max_degree` (a hub would serialize on one thread), holds more than `max_size`
// vertices, or `max_levels` levels are done; then writes the next frontier's size, the queue it
// is in (0 = a, 1 = b) and the levels done to state[0..2].
__global__ void bfs_top_down_fused(int* a, int* b, int size, const long long* indptr,
                                   const int* indices, unsigned* visited, int* dist, int* pred,
                                   int level, int max_levels, int max_size, int max_degree,
                                   int* state) {
    __shared__ int count;
    __shared__ int top_degree;
    int* cur = a;
    int* nxt = b;
    int done = 0;
    int next_top = 0;
    while (size > 0 && size <= max_size && next_top <= max_degree && done < max_levels) {
        if (threadIdx.x == 0) { count = 0; top_degree = 0; }
        __syncthreads();
        for (int i = threadIdx.x; i < size; i += blockDim.x) {
            int u = cur[i];
            for (long long e = indptr[u]; e < indptr[u + 1]; ++e) {
                int v = indices[e];
                if (claim(visited, v)) {
                    dist[v] = level + 1;
                    pred[v] = u;
                    nxt[atomicAdd(&count, 1)] = v;  // shared-memory atomics: cheap
                    atomicMax(&top_degree, (int)(indptr[v + 1] - indptr[v]));
                }
            }
        }
        __syncthreads();
        size = count;
        next_top = top_degree;
        int* t = cur; cur = nxt; nxt = t;
        ++level;
        ++done;
        __syncthreads();  // everyone has read the shared values before they are reset
    }
    if (threadIdx.x == 0) {
        state[0] = size;
        state[1] = (cur == a) ? 0 : 1;
        state[2] = done;
    }
}

// Bottom-up: one warp per 32 consecutive vertices (one bitmap word). Each unvisited vertex scans
// its in-neighbours and stops at the first one in the frontier bitmap. The warp's ballot is the
// next frontier's word and its new visited bits: no atomics on the bitmaps.
__global__ void bfs_bottom_up(const unsigned* frontier, const long long* indptr,
                              const int* indices, unsigned* visited, unsigned* next, int* dist,
                              int* pred, int* next_count, int n, int level) {
    long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long limit = ((long long)n + 31) & ~31ll;
    for (long long v0 = tid; v0 < limit; v0 += stride) {
        int v = (int)v0;
        bool found = false;
        if (v < n && dist[v] < 0) {
            for (long long e = indptr[v]; e < indptr[v + 1]; ++e) {
                int u = indices[e];
                if (frontier[u >> 5] & (1u << (u & 31))) {
                    dist[v] = level + 1;
                    pred[v] = u;
                    found = true;
                    break;
                }
            }
        }
        unsigned word = __ballot_sync(FULL_MASK, found);
        if ((threadIdx.x & 31) == 0) {
            next[v >> 5] = word;
            if (word) {
                visited[v >> 5] |= word;
                atomicAdd(next_count, __popc(word));
            }
        }
    }
}

__global__ void queue_to_bitmap(const int* queue, int size, unsigned* bitmap) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += gridDim.x * blockDim.x)
        atomicOr(&bitmap[queue[i] >> 5], 1u << (queue[i] & 31));
}

// ---- Boruvka ----------------------------------------------------------------------------------
// Each component's cheapest edge: the smallest position among the band's edges touching it.
// Guarded: the plain read skips the atomic when a lighter edge is already known (ECL-MST).
__global__ void boruvka_min_edge(const int* u, const int* v, int k, int* best) {
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < k; e += gridDim.x * blockDim.x) {
        int a = u[e], b = v[e];
        if (best[a] > e) atomicMin(&best[a], e);
        if (best[b] > e) atomicMin(&best[b], e);
    }
}

// Hook every component with an edge to the other end of its cheapest edge. Targets come from the
// edge (start-of-round snapshot), never from parent[] being rewritten by other threads.
__global__ void boruvka_hook(const int* u, const int* v, const int* best, int* parent, int n) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n; c += gridDim.x * blockDim.x) {
        int e = best[c];
        if (e != NO_EDGE) parent[c] = (u[e] == c) ? v[e] : u[e];
    }
}

// Two components that chose each other chose the same edge: the smaller stays a root. Every other
// hooked component records its edge, so each accepted edge is recorded exactly once, from the
// final hooks (not from which atomicMin happened to succeed).
__global__ void boruvka_accept(const int* u, const int* v, const long long* eid, const int* best,
                               int* parent, unsigned char* accepted, int* hooks, int n) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n; c += gridDim.x * blockDim.x) {
        int e = best[c];
        if (e == NO_EDGE) continue;
        int other = (u[e] == c) ? v[e] : u[e];
        int back = best[other];
        bool mutual = back != NO_EDGE && ((u[back] == other) ? v[back] : u[back]) == c;
        if (mutual && c < other) {
            parent[c] = c;
        } else {
            accepted[eid[e]] = 1;
            atomicAdd(hooks, 1);
        }
    }
}

// Pointer jumping: every vertex to the root of its hook tree (roots are their own parent).
__global__ void boruvka_compress(int* parent, int n) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n; c += gridDim.x * blockDim.x) {
        int p = parent[c];
        while (parent[p] != p) p = parent[p];
        parent[c] = p;
    }
}

// Relabel a worklist's ends to their current representatives.
__global__ void relabel(int* u, int* v, long long k, const int* parent) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < k;
         e += (long long)gridDim.x * blockDim.x) {
        u[e] = parent[u[e]];
        v[e] = parent[v[e]];
    }
}

}  // extern "C"
