// Boruvka minimum spanning forest on the GPU (driver: kernels/gpu_msf.py; tie rule: kernels/msf.py).
//
//   src, dst, w : int, int, W [m]   the edge list (W = float or double, the input's dtype)
//   parent      : int [n]   every vertex's component representative (fully compressed between
//                           rounds); a representative is its own parent
//   key(e)      : u64       weight_key(w[e]): the weight's bits mapped so that unsigned order is
//                           numeric order (exact for float64; -0.0 taken as +0.0)
//   (key, e)    : the total order of the tie rule: lighter weight first, then lower input row
//   bounds      : pairs (key, e) held as two u64 arrays; a band is the live edges with
//                 lo <= (key, e) <= hi, lo inclusive, hi inclusive
//   worklist    : wu, wv (int: the ends' representatives), we (E = int or i64: the edge), in
//                 ascending edge order, so a position orders like the edge index it holds
//   best_key    : u64 [n]   lightest key leaving each component this round (U64_MAX: none)
//   best_pos    : u64 [n]   smallest worklist position with that key: with the worklist in edge
//                           order, the (key, e)-minimum edge, found without sorting
//   forest      : i64 [n]   accepted edges, appended; info[2] counts them
//   info        : u64 [4]   [1] worklist length after a compaction, [2] forest edges so far
//
// A live edge joins two different components; every pass over the edge list skips the rest
// (self-loops included), so the worklist shrinks each round as components merge (ECL-MST).

#define MSF_TILE_THREADS 256
#define MSF_TILE_ITEMS 16
#define MSF_TILE (MSF_TILE_THREADS * MSF_TILE_ITEMS)
#define MSF_BINS 256

__device__ __forceinline__ u64 weight_key(double w) {
    if (w == 0.0) w = 0.0;
    u64 b = (u64)__double_as_longlong(w);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

__device__ __forceinline__ u64 weight_key(float w) {
    if (w == 0.0f) w = 0.0f;
    unsigned b = __float_as_uint(w);
    return (u64)((b >> 31) ? ~b : (b | 0x80000000u));
}

__device__ __forceinline__ bool pair_at_least(u64 k, u64 e, u64 bk, u64 be) {
    return k > bk || (k == bk && e >= be);
}

__device__ __forceinline__ bool pair_at_most(u64 k, u64 e, u64 bk, u64 be) {
    return k < bk || (k == bk && e <= be);
}

// Whether edge e is live (its ends in different components) and at least lo; its ends' roots.
template <typename W>
__device__ __forceinline__ bool live_edge(const int* src, const int* dst, const W* w,
                                          const int* parent, i64 e, u64 lo_key, u64 lo_edge,
                                          u64& key, int& ru, int& rv) {
    int s = src[e], d = dst[e];
    if (s == d) return false;
    ru = parent[s];
    rv = parent[d];
    if (ru == rv) return false;
    key = weight_key(w[e]);
    return pair_at_least(key, (u64)e, lo_key, lo_edge);
}

// Jittered strided sample of the live edges' (key, e) (U64_MAX for an edge that is not live):
// increasing e, no aliasing with periodic input orders.
template <typename W>
__global__ void msf_sample(const int* src, const int* dst, const W* w, i64 m, const int* parent,
                           const u64* lo_key, const u64* lo_edge, i64 count, i64 stride,
                           u64* keys, u64* edges) {
    for (i64 j = thread_index(); j < count; j += thread_count()) {
        u64 h = (u64)j * 0x9E3779B97F4A7C15ull;
        i64 e = j * stride + (i64)((h >> 32) % (u64)stride);
        u64 key;
        int ru, rv;
        bool live = live_edge(src, dst, w, parent, e, *lo_key, *lo_edge, key, ru, rv);
        keys[j] = live ? key : U64_MAX;
        edges[j] = (u64)e;
    }
}

// Histogram of the live edges over the bins that the boundaries bound (bin b holds the pairs
// in (bound[b-1], bound[b]]; the last bound is (U64_MAX, U64_MAX)).
template <typename W>
__global__ void msf_histogram(const int* src, const int* dst, const W* w, i64 m, const int* parent,
                              const u64* lo_key, const u64* lo_edge, const u64* bound_key,
                              const u64* bound_edge, u64* hist) {
    __shared__ u64 bk[MSF_BINS], be[MSF_BINS];
    __shared__ unsigned counts[MSF_BINS];
    for (int b = threadIdx.x; b < MSF_BINS; b += blockDim.x) {
        bk[b] = bound_key[b];
        be[b] = bound_edge[b];
        counts[b] = 0;
    }
    __syncthreads();
    u64 lk = *lo_key, le = *lo_edge;
    for (i64 e = thread_index(); e < m; e += thread_count()) {
        u64 key;
        int ru, rv;
        if (!live_edge(src, dst, w, parent, e, lk, le, key, ru, rv)) continue;
        int lo = 0, hi = MSF_BINS - 1;  // first bound >= (key, e)
        while (lo < hi) {
            int mid = (lo + hi) >> 1;
            if (pair_at_most(key, (u64)e, bk[mid], be[mid])) hi = mid; else lo = mid + 1;
        }
        atomicAdd(&counts[lo], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < MSF_BINS; b += blockDim.x)
        if (counts[b]) atomicAdd(&hist[b], (u64)counts[b]);
}

// Live edges of the band lo <= (key, e) <= hi, counted per tile of MSF_TILE edges.
template <typename W>
__global__ void msf_band_count(const int* src, const int* dst, const W* w, i64 m, const int* parent,
                               const u64* lo_key, const u64* lo_edge, const u64* hi_key,
                               const u64* hi_edge, i64* tile_counts) {
    __shared__ i64 scratch[100];
    u64 lk = *lo_key, le = *lo_edge, hk = *hi_key, he = *hi_edge;
    i64 tiles = (m + MSF_TILE - 1) / MSF_TILE;
    for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        i64 count = 0, unused0 = 0, unused1 = 0;
        for (int r = 0; r < MSF_TILE_ITEMS; ++r) {
            i64 e = t * MSF_TILE + r * MSF_TILE_THREADS + threadIdx.x;
            u64 key;
            int ru, rv;
            if (e < m && live_edge(src, dst, w, parent, e, lk, le, key, ru, rv) &&
                pair_at_most(key, (u64)e, hk, he))
                ++count;
        }
        block_reduce(count, unused0, unused1, scratch);
        if (threadIdx.x == 0) tile_counts[t] = count;
    }
}

// The band's edges into the worklist, in edge order: tile t starts at tile_ends[t] - its count.
template <typename W, typename E>
__global__ void msf_band_fill(const int* src, const int* dst, const W* w, i64 m, const int* parent,
                              const u64* lo_key, const u64* lo_edge, const u64* hi_key,
                              const u64* hi_edge, const i64* tile_ends, const i64* tile_counts,
                              int* wu, int* wv, E* we) {
    __shared__ i64 scratch[100];
    u64 lk = *lo_key, le = *lo_edge, hk = *hi_key, he = *hi_edge;
    i64 tiles = (m + MSF_TILE - 1) / MSF_TILE;
    for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        i64 at = tile_ends[t] - tile_counts[t];
        for (int r = 0; r < MSF_TILE_ITEMS; ++r) {
            i64 e = t * MSF_TILE + r * MSF_TILE_THREADS + threadIdx.x;
            u64 key;
            int ru = 0, rv = 0;
            bool keep = e < m && live_edge(src, dst, w, parent, e, lk, le, key, ru, rv) &&
                        pair_at_most(key, (u64)e, hk, he);
            i64 total;
            i64 pos = at + block_exclusive_scan(keep ? 1 : 0, &total, scratch);
            if (keep) {
                wu[pos] = ru;
                wv[pos] = rv;
                we[pos] = (E)e;
            }
            at += total;
        }
    }
}

// Round, step 1: each component's lightest key. The plain read skips most atomics (ECL-MST).
template <typename W, typename E>
__global__ void msf_min_key(const int* wu, const int* wv, const E* we, i64 k, const W* w,
                            u64* best_key) {
    for (i64 p = thread_index(); p < k; p += thread_count()) {
        u64 key = weight_key(w[we[p]]);
        int u = wu[p], v = wv[p];
        if (key < best_key[u]) atomicMin(&best_key[u], key);
        if (key < best_key[v]) atomicMin(&best_key[v], key);
    }
}

// Round, step 2: among the edges of exactly that key, the first in the worklist (= lowest row).
template <typename W, typename E>
__global__ void msf_min_position(const int* wu, const int* wv, const E* we, i64 k, const W* w,
                                 const u64* best_key, u64* best_pos) {
    for (i64 p = thread_index(); p < k; p += thread_count()) {
        u64 key = weight_key(w[we[p]]);
        int u = wu[p], v = wv[p];
        if (key == best_key[u] && (u64)p < best_pos[u]) atomicMin(&best_pos[u], (u64)p);
        if (key == best_key[v] && (u64)p < best_pos[v]) atomicMin(&best_pos[v], (u64)p);
    }
}

// Round, step 3: every component with an edge hooks to the other end of its lightest edge.
// Two components that chose each other chose the same edge (the order is total): the smaller
// stays a root and only the other records the edge, so each accepted edge is recorded once,
// from the final choices (not from which atomic happened to win).
template <typename E>
__global__ void msf_hook(const int* wu, const int* wv, const E* we, int n, const u64* best_pos,
                         int* parent, i64* forest, u64* info) {
    for (i64 c = thread_index(); c < n; c += thread_count()) {
        u64 p = best_pos[c];
        if (p == U64_MAX) continue;
        int other = wu[p] == (int)c ? wv[p] : wu[p];
        if (best_pos[other] == p && c < other) continue;
        parent[c] = other;
        forest[coalesced_append(info + 2)] = (i64)we[p];
    }
}

extern "C" {

// Bounds of the MSF_BINS bins from the sample sorted by key: quantiles of its live pairs, kept
// nondecreasing in (key, e) order (a sort by key alone may leave equal keys out of edge order),
// then (U64_MAX, U64_MAX) so that the last bin holds everything above. One thread.
__global__ void msf_bounds(const u64* keys, const u64* edges, i64 count, u64* bound_key,
                           u64* bound_edge) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    i64 lo = 0, hi = count;  // live samples come first: find the first U64_MAX key
    while (lo < hi) {
        i64 mid = (lo + hi) >> 1;
        if (keys[mid] == U64_MAX) hi = mid; else lo = mid + 1;
    }
    i64 live = lo;
    u64 pk = 0, pe = 0;
    for (int b = 0; b < MSF_BINS; ++b) {
        u64 k = U64_MAX, e = U64_MAX;
        if (b < MSF_BINS - 1 && live > 0) {
            i64 at = ((i64)(b + 1) * live) / MSF_BINS - 1;
            k = at < 0 ? pk : keys[at];
            e = at < 0 ? pe : edges[at];
            if (k < pk || (k == pk && e < pe)) {
                k = pk;
                e = pe;
            }
        }
        bound_key[b] = pk = k;
        bound_edge[b] = pe = e;
    }
}

// Round, step 4: pointer jumping to the roots; clears the choices for the next round.
__global__ void msf_compress(int n, int* parent, u64* best_key, u64* best_pos) {
    for (i64 c = thread_index(); c < n; c += thread_count()) {
        int p = parent[c];
        while (true) {
            int up = parent[p];
            if (up == p) break;
            p = up;
        }
        parent[c] = p;
        best_key[c] = U64_MAX;
        best_pos[c] = U64_MAX;
    }
}

}  // extern "C"

// Round, step 5: relabel the worklist's ends to their new roots (in place) and count, per tile,
// the edges that still cross components.
template <typename E>
__global__ void msf_relabel_count(int* wu, int* wv, i64 k, const int* parent, i64* tile_counts) {
    __shared__ i64 scratch[100];
    i64 tiles = (k + MSF_TILE - 1) / MSF_TILE;
    for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        i64 count = 0, unused0 = 0, unused1 = 0;
        for (int r = 0; r < MSF_TILE_ITEMS; ++r) {
            i64 p = t * MSF_TILE + r * MSF_TILE_THREADS + threadIdx.x;
            if (p < k) {
                int u = parent[wu[p]], v = parent[wv[p]];
                wu[p] = u;
                wv[p] = v;
                count += u != v;
            }
        }
        block_reduce(count, unused0, unused1, scratch);
        if (threadIdx.x == 0) tile_counts[t] = count;
    }
}

// Round, step 6: the crossing edges into the other buffer, order kept; info[1] = new length.
template <typename E>
__global__ void msf_compact(const int* wu, const int* wv, const E* we, i64 k, const i64* tile_ends,
                            const i64* tile_counts, int* ou, int* ov, E* oe, u64* info) {
    __shared__ i64 scratch[100];
    i64 tiles = (k + MSF_TILE - 1) / MSF_TILE;
    for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        i64 at = tile_ends[t] - tile_counts[t];
        if (t == tiles - 1 && threadIdx.x == 0) info[1] = (u64)tile_ends[t];
        for (int r = 0; r < MSF_TILE_ITEMS; ++r) {
            i64 p = t * MSF_TILE + r * MSF_TILE_THREADS + threadIdx.x;
            int u = 0, v = 0;
            if (p < k) {
                u = wu[p];
                v = wv[p];
            }
            bool keep = p < k && u != v;
            i64 total;
            i64 pos = at + block_exclusive_scan(keep ? 1 : 0, &total, scratch);
            if (keep) {
                ou[pos] = u;
                ov[pos] = v;
                oe[pos] = we[p];
            }
            at += total;
        }
    }
}
