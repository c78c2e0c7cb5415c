// Boruvka minimum spanning forest on the GPU (driver: kernels/gpu_msf.py; tie rule: kernels/msf.py).
//
//   src, dst, w : int, int, W [m]   the edge list (W = float or double, the input's dtype)
//   parent      : int [n]   every vertex's component representative (fully compressed after
//                           each round); a representative is its own parent
//   key(e)      : u64       weight_key(w[e]): the weight's bits mapped so that unsigned order is
//                           numeric order (exact for float64; -0.0 taken as +0.0)
//   (key, e)    : the total order of the tie rule: lighter weight first, then lower input row
//   bounds      : pairs (key, e) held as two u64 arrays; a band is the live edges with
//                 lo <= (key, e) <= hi, both inclusive
//   worklist    : wu, wv (int: the ends' representatives), we (E = int or i64: the edge), wk
//                 (u64: its key), in no particular order (appended with warp-aggregated atomics)
//   best_key    : u64 [n]   lightest key leaving each component this round (U64_MAX: none)
//   best_edge   : u64 [n]   lowest edge index among that component's edges of exactly that key:
//                           with best_key, the (key, e)-minimum edge, found without sorting
//   forest      : i64 [n]   accepted edges, appended; info[2] counts them
//   info        : u64 [4]   [1] worklist length after a round, [2] forest edges so far,
//                           [3] band length while a band is filled
//
// A live edge joins two different components; every pass over the edge list skips the rest
// (self-loops included), so the worklist shrinks each round as components merge (ECL-MST).

#define MSF_BINS 256

__device__ __forceinline__ u64 weight_key(double w) {
    if (w == 0.0) w = 0.0;
    u64 b = (u64)__double_as_longlong(w);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

__device__ __forceinline__ u64 weight_key(float w) {
    // by the bits alone: CuPy compiles with -ftz=true, under which a float comparison reads a
    // subnormal weight as 0 (and `w == 0.0f` made 1e-45 and 2e-45 one key)
    unsigned b = __float_as_uint(w);
    if ((b & 0x7fffffffu) == 0) b = 0;  // -0.0 as +0.0
    return (u64)((b >> 31) ? ~b : (b | 0x80000000u));
}

__device__ __forceinline__ bool pair_at_least(u64 k, u64 e, u64 bk, u64 be) {
    return k > bk || (k == bk && e >= be);
}

__device__ __forceinline__ bool pair_at_most(u64 k, u64 e, u64 bk, u64 be) {
    return k < bk || (k == bk && e <= be);
}

// Whether edge e is live (its ends in different components) with lo <= (key, e) <= hi; its
// ends' roots and its key. The weight is read first: most edges fall outside the band and then
// cost no random reads of parent[].
template <typename W>
__device__ __forceinline__ bool live_edge(const int* src, const int* dst, const W* w,
                                          const int* parent, i64 e, u64 lo_key, u64 lo_edge,
                                          u64 hi_key, u64 hi_edge, u64& key, int& ru, int& rv) {
    int s = src[e], d = dst[e];
    if (s == d) return false;
    key = weight_key(w[e]);
    if (!pair_at_least(key, (u64)e, lo_key, lo_edge) || !pair_at_most(key, (u64)e, hi_key, hi_edge))
        return false;
    ru = parent[s];
    rv = parent[d];
    return ru != rv;
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
        bool live = live_edge(src, dst, w, parent, e, *lo_key, *lo_edge, U64_MAX, U64_MAX, key, ru, rv);
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
        if (!live_edge(src, dst, w, parent, e, lk, le, U64_MAX, U64_MAX, key, ru, rv)) continue;
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

// Rounding a grid-stride loop's end up to a multiple of 32 keeps whole warps iterating together,
// as warp_append needs.
__device__ __forceinline__ i64 warp_round(i64 count) { return (count + 31) & ~31ll; }

// The band's live edges (lo <= (key, e) <= hi) into the worklist; info[3] counts them.
template <typename W, typename E>
__global__ void msf_band_fill(const int* src, const int* dst, const W* w, i64 m, const int* parent,
                              const u64* lo_key, const u64* lo_edge, const u64* hi_key,
                              const u64* hi_edge, int* wu, int* wv, E* we, u64* wk, u64* info) {
    u64 lk = *lo_key, le = *lo_edge, hk = *hi_key, he = *hi_edge;
    for (i64 e = thread_index(); e < warp_round(m); e += thread_count()) {
        u64 key = 0;
        int ru = 0, rv = 0;
        bool keep = e < m && live_edge(src, dst, w, parent, e, lk, le, hk, he, key, ru, rv);
        u64 at = warp_append(info + 3, keep);
        if (keep) {
            wu[at] = ru;
            wv[at] = rv;
            we[at] = (E)e;
            wk[at] = key;
        }
    }
}

// Round, step 1: each component's lightest key. The plain read skips most atomics (ECL-MST).
// Thread 0 also clears the round's worklist counter.
extern "C" __global__ void msf_min_key(const int* wu, const int* wv, const u64* wk, i64 k, u64* best_key,
                            u64* info) {
    if (thread_index() == 0) info[1] = 0;
    for (i64 p = thread_index(); p < k; p += thread_count()) {
        u64 key = wk[p];
        int u = wu[p], v = wv[p];
        if (key < best_key[u]) atomicMin(&best_key[u], key);
        if (key < best_key[v]) atomicMin(&best_key[v], key);
    }
}

// Round, step 2: among each component's edges of exactly that key, the lowest edge index (the
// lower input row wins ties, as on the host).
template <typename E>
__global__ void msf_min_edge(const int* wu, const int* wv, const E* we, const u64* wk, i64 k,
                             const u64* best_key, u64* best_edge) {
    for (i64 p = thread_index(); p < k; p += thread_count()) {
        u64 key = wk[p], e = (u64)we[p];
        int u = wu[p], v = wv[p];
        if (key == best_key[u] && e < best_edge[u]) atomicMin(&best_edge[u], e);
        if (key == best_key[v] && e < best_edge[v]) atomicMin(&best_edge[v], e);
    }
}

// Round, step 3: every component hooks to the other end of its lightest edge; the item of that
// edge does it, so the ends come from the worklist, never from parent[] being rewritten. When
// both ends chose the edge (the order is total, so a 2-cycle is one edge), the larger hooks to
// the smaller. Either way the edge is recorded once.
template <typename E>
__global__ void msf_hook(const int* wu, const int* wv, const E* we, i64 k, const u64* best_edge,
                         int* parent, i64* forest, u64* info) {
    for (i64 p = thread_index(); p < k; p += thread_count()) {
        u64 e = (u64)we[p];
        int u = wu[p], v = wv[p];
        bool by_u = best_edge[u] == e, by_v = best_edge[v] == e;
        if (!by_u && !by_v) continue;
        if (by_u && by_v) {
            parent[max(u, v)] = min(u, v);
        } else if (by_u) {
            parent[u] = v;
        } else {
            parent[v] = u;
        }
        forest[coalesced_append(info + 2)] = (i64)e;
    }
}

// Round, step 5: relabel each item's ends to their new roots (parent[] is fully compressed by
// step 4) and append the items that still cross components to the other buffer; info[1]
// counts them.
template <typename E>
__global__ void msf_relabel(const int* wu, const int* wv, const E* we, const u64* wk, i64 k,
                            const int* parent, int* ou, int* ov, E* oe, u64* ok, u64* info) {
    for (i64 p = thread_index(); p < warp_round(k); p += thread_count()) {
        int ru = 0, rv = 0;
        if (p < k) {
            ru = parent[wu[p]];
            rv = parent[wv[p]];
        }
        bool keep = p < k && ru != rv;
        u64 at = warp_append(info + 1, keep);
        if (keep) {
            ou[at] = ru;
            ov[at] = rv;
            oe[at] = we[p];
            ok[at] = wk[p];
        }
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

// Round, step 4: pointer jumping, every vertex straight to its root (each thread writes only its
// own entry, and only a root, so the array ends fully compressed), and the choices cleared for
// the next round.
__global__ void msf_compress(int n, int* parent, u64* best_key, u64* best_edge) {
    for (i64 c = thread_index(); c < n; c += thread_count()) {
        int p = parent[c];
        while (true) {
            int up = parent[p];
            if (up == p) break;
            p = up;
        }
        parent[c] = p;
        best_key[c] = U64_MAX;
        best_edge[c] = U64_MAX;
    }
}

}  // extern "C"
