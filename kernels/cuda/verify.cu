// Graph500's rules for a BFS result checked in three passes, counted on the device: the
// sources, the arcs, the vertices (the rules: kernels/verify.py, verify_bfs, whose counts these
// reproduce exactly). Drivers: kernels/gpu_verify.py.
//
//   src, dst    : E [m]      dense edge ends (E int or long long)
//   distance    : D [n]      level of each vertex, -1 when unreached (D int or long long)
//   predecessor : D [n]      parent of each vertex; a source is its own, unreached vertices -1
//   sources     : i64 [s]    the search's sources, in range (the driver checks)
//   is_source   : bool [n]   set by bfs_check_sources
//   joined      : bool [n]   set for v when an input arc pred[v] -> v exists (bfs_check_arcs)
//   counts      : u64 [5]    violations by rule (BFS_* below), zeroed by the caller
//   depth_limit : the last level searched, or -1 for none

enum { BFS_ROOTED, BFS_TREE_LEVELS, BFS_ARC_LEVELS, BFS_DEPTH_LIMIT, BFS_TREE_EDGES, BFS_RULES };

template <typename D>
__global__ void bfs_check_sources(const i64* sources, i64 count, const D* distance, const D* predecessor,
                                  bool* is_source, u64* counts) {
    i64 bad = 0;
    for (i64 i = thread_index(); i < count; i += thread_count()) {
        i64 s = sources[i];
        is_source[s] = true;
        bad += distance[s] != 0 || (i64)predecessor[s] != s;
    }
    add_warp_count(bad, counts + BFS_ROOTED);
}

// One arc x -> y: live when x is reached below the depth limit; then y must be reached at most
// one level further. And y's parent is x: the tree edge into y is an input arc.
template <typename E, typename D>
__device__ __forceinline__ i64 bfs_arc(E x, E y, i64 dx, i64 dy, const D* predecessor, i64 depth_limit,
                                       bool* joined) {
    if ((i64)predecessor[y] == (i64)x) joined[y] = true;
    bool live = dx >= 0 && (depth_limit < 0 || dx < depth_limit);
    return live && (dy < 0 || dy > dx + 1);
}

template <typename E, typename D>
__global__ void bfs_check_arcs(const E* src, const E* dst, i64 m, const D* distance, const D* predecessor,
                               int directed, i64 depth_limit, bool* joined, u64* counts) {
    i64 bad = 0;
    for (i64 e = thread_index(); e < m; e += thread_count()) {
        E a = src[e], b = dst[e];
        i64 da = distance[a], db = distance[b];
        bad += bfs_arc(a, b, da, db, predecessor, depth_limit, joined);
        if (!directed) bad += bfs_arc(b, a, db, da, predecessor, depth_limit, joined);
    }
    add_warp_count(bad, counts + BFS_ARC_LEVELS);
}

template <typename D>
__global__ void bfs_check_vertices(i64 n, const D* distance, const D* predecessor, const bool* is_source,
                                   const bool* joined, i64 depth_limit, u64* counts) {
    i64 rooted = 0, levels = 0, tree_edges = 0, deeper = 0;
    for (i64 v = thread_index(); v < n; v += thread_count()) {
        i64 d = distance[v], p = predecessor[v];
        bool source = is_source[v];
        rooted += (!source && d == 0) || (d < 0 && p != -1);
        if (d >= 0 && !source) {
            bool in_range = p >= 0 && p < n;
            rooted += !in_range;
            levels += (i64)distance[in_range ? p : 0] != d - 1;  // as verify_bfs reads a bad parent: as 0
            tree_edges += !joined[v];
        }
        deeper += depth_limit >= 0 && d > depth_limit;
    }
    add_warp_count(rooted, counts + BFS_ROOTED);
    add_warp_count(levels, counts + BFS_TREE_LEVELS);
    add_warp_count(tree_edges, counts + BFS_TREE_EDGES);
    add_warp_count(deeper, counts + BFS_DEPTH_LIMIT);
}

// ---- A minimum spanning forest's checks (kernels/verify.py, verify_forest, whose report these
// reproduce exactly; the method is its docstring's: trees by union-find, ranks by weight, the
// trees rooted through their Euler tours, heavier ancestors by binary lifting, the KRT leaf
// order by A's Euler tour, then one pass over the edges with range maxima). Drivers:
// kernels/gpu_verify.py.
//
//   chosen     : i64 [k]     the forest's edge indices, sorted; after forest_chosen_check only
//                            the in-range slice is passed on
//   label      : int [n]     union-find parents, then each vertex's tree: its smallest vertex
//   key        : i64         a weight as an order key (order_key)
//   key_of_rank: i64 [k + 1] the key of the forest edge of each rank; rank k (a root's) holds
//                            I64_MIN, lighter than every key
//   arc_key    : i64 [2k]    tail << shift | arc; arc i goes src -> dst of forest edge i, arc
//                            k + i back; sorted, each vertex's arcs lie together
//   packed     : i64 [a + 1] list ranking: weight << 32 | successor of each of a arcs; a is the
//                            end, a stop (its own successor, weight 0)
//   rank       : int [n]     rank of each vertex's parent edge, k at roots
//   table      : i64 [L * n] binary lifting: level j packs the max rank over x and its next
//                            2^j - 1 ancestors (high half) with its 2^j-th ancestor (low half)
//   h          : int [n]     rank at each KRT leaf position; range maxima over blocks of
//                            RANGE_BLOCK positions: prefix / suffix maxima inside each block and
//                            a sparse table of block maxima, level j at j * blocks

enum { FOREST_BELOW, FOREST_ABOVE, FOREST_REPEATS, FOREST_TREES, FOREST_CROSSING, FOREST_HEAVIER, FOREST_COUNTS };

#define POINTER_BITS 0xffffffffll
#define RANGE_BLOCK_BITS 6
#define RANGE_BLOCK (1 << RANGE_BLOCK_BITS)

// Keys ordered as the weights are, -0.0 equal to +0.0, from the bits (no float arithmetic, so
// subnormal float32 weights keep their order under -ftz=true; kernels/backend.py,
// float32_order_keys). NaN is refused before.
__device__ __forceinline__ i64 order_key(float w) {
    unsigned b = __float_as_uint(w);
    i64 magnitude = b & 0x7fffffffu;
    return b >> 31 ? -magnitude : magnitude;
}
__device__ __forceinline__ i64 order_key(double w) {
    u64 b = (u64)__double_as_longlong(w);
    i64 magnitude = (i64)(b & 0x7fffffffffffffffull);
    return b >> 63 ? -magnitude : magnitude;
}
__device__ __forceinline__ i64 order_key(int w) { return w; }
__device__ __forceinline__ i64 order_key(long long w) { return w; }

// Out-of-range entries (below 0 at the front of the sorted list, at or above m at its back) and
// in-range repeats.
extern "C" __global__ void forest_chosen_check(const i64* chosen, i64 k, i64 m, u64* counts) {
    i64 below = 0, above = 0, repeats = 0;
    for (i64 i = thread_index(); i < k; i += thread_count()) {
        i64 c = chosen[i];
        below += c < 0;
        above += c >= m;
        repeats += c >= 0 && c < m && i > 0 && chosen[i - 1] == c;
    }
    add_warp_count(below, counts + FOREST_BELOW);
    add_warp_count(above, counts + FOREST_ABOVE);
    add_warp_count(repeats, counts + FOREST_REPEATS);
}

// The root of x's set, halving the path on the way. Every parent is smaller than its child (a
// root hooks under a smaller root), so a root is the smallest vertex on any path to it; the
// halving stores are atomicMin, so a store never undoes another thread's shorter one, nor a
// label that forest_labels has already set to the root.
__device__ __forceinline__ int union_find_root(int* parent, int x) {
    int next = __ldcg(parent + x);
    while (next != x) {
        int grand = __ldcg(parent + next);
        if (grand != next) atomicMin(parent + x, grand);
        x = next;
        next = grand;
    }
    return x;
}

// Union-find over the forest's edges: the larger root hooks under the smaller by atomicCAS,
// retried from the new roots when another thread hooked it first. Every root is its set's
// smallest vertex, so the label is the one kernels/verify.py's connected_components gives.
template <typename E>
__global__ void forest_hook(const E* src, const E* dst, const i64* chosen, i64 k, int* parent) {
    for (i64 i = thread_index(); i < k; i += thread_count()) {
        i64 e = chosen[i];
        int u = (int)src[e], v = (int)dst[e];
        while (true) {
            int ru = union_find_root(parent, u), rv = union_find_root(parent, v);
            if (ru == rv) break;
            int lo = min(ru, rv), hi = max(ru, rv);
            if (atomicCAS(parent + hi, hi, lo) == hi) break;
        }
    }
}

// Every vertex's parent made its root; the roots (trees) counted.
extern "C" __global__ void forest_labels(int* label, i64 n, u64* counts) {
    i64 trees = 0;
    for (i64 v = thread_index(); v < n; v += thread_count()) {
        int root = union_find_root(label, (int)v);
        atomicMin(label + v, root);
        trees += root == v;
    }
    add_warp_count(trees, counts + FOREST_TREES);
}

// Input edges whose ends lie in two trees.
template <typename E>
__global__ void forest_crossing(const E* src, const E* dst, i64 m, const int* label, u64* counts) {
    i64 crossing = 0;
    for (i64 e = thread_index(); e < m; e += thread_count()) crossing += label[src[e]] != label[dst[e]];
    add_warp_count(crossing, counts + FOREST_CROSSING);
}

template <typename W>
__global__ void forest_weight_keys(const W* weight, const i64* chosen, i64 k, i64* keys) {
    for (i64 i = thread_index(); i < k; i += thread_count()) keys[i] = order_key(weight[chosen[i]]);
}

// Distinct ranks in weight order: the place of the first equal key in the sorted keys, plus a
// ticket among the edges of that key (ties in any order).
template <typename W>
__global__ void forest_ranks(const W* weight, const i64* chosen, i64 k, const i64* sorted, int* ties, int* edge_rank,
                             i64* key_of_rank) {
    for (i64 i = thread_index(); i < k; i += thread_count()) {
        i64 key = order_key(weight[chosen[i]]);
        i64 lo = 0, hi = k;
        while (lo < hi) {
            i64 mid = (lo + hi) >> 1;
            if (sorted[mid] < key) lo = mid + 1; else hi = mid;
        }
        int rank = (int)lo + atomicAdd(ties + lo, 1);
        edge_rank[i] = rank;
        key_of_rank[rank] = key;
    }
}

template <typename E>
__global__ void forest_arc_keys(const E* src, const E* dst, const i64* chosen, i64 k, int shift, i64* arc_key) {
    for (i64 a = thread_index(); a < 2 * k; a += thread_count()) {
        i64 tail = a < k ? (i64)src[chosen[a]] : (i64)dst[chosen[a - k]];
        arc_key[a] = tail << shift | a;
    }
}

// run_start[v]: the place in the sorted arcs where v's arcs begin.
extern "C" __global__ void tour_run_starts(const i64* arc_key, i64 arcs, int shift, i64* run_start) {
    for (i64 p = thread_index(); p < arcs; p += thread_count()) {
        i64 tail = arc_key[p] >> shift;
        if (p == 0 || arc_key[p - 1] >> shift != tail) run_start[tail] = p;
    }
}

// The forest's Euler tours as lists: with each vertex's arcs a circular list, the arc t -> x
// is followed there by f, so x -> t is followed by f in the tour; into a root from its last
// neighbour is the end. Every arc weighs 1: its rank is the arcs from it to the end.
extern "C" __global__ void tour_links(const i64* arc_key, i64 k, int shift, const i64* run_start, const int* label,
                                      i64* packed) {
    const i64 arcs = 2 * k, mask = ((i64)1 << shift) - 1;
    for (i64 p = thread_index(); p < arcs; p += thread_count()) {
        i64 tail = arc_key[p] >> shift, arc = arc_key[p] & mask;
        bool last = p == arcs - 1 || arc_key[p + 1] >> shift != tail;
        i64 following = (last ? arc_key[run_start[tail]] : arc_key[p + 1]) & mask;
        i64 back = arc < k ? arc + k : arc - k;
        packed[back] = (i64)1 << 32 | (last && label[tail] == tail ? arcs : following);
        if (p == 0) packed[arcs] = arcs;
    }
}

// One round of pointer jumping over count entries: each adds the weight of the entry it points
// to and takes over its pointer (kernels/verify.py, _pointer_jump).
extern "C" __global__ void list_jump(const i64* in, i64* out, i64 count) {
    for (i64 i = thread_index(); i < count; i += thread_count()) {
        i64 mine = in[i];
        out[i] = in[mine & POINTER_BITS] + (mine & ~POINTER_BITS);
    }
}

// Tree v's tour length, 2 (size - 1) arcs (0 off labels); summed in place by the caller.
extern "C" __global__ void tour_lengths(const i64* size, i64 n, i64* length) {
    for (i64 v = thread_index(); v < n; v += thread_count()) length[v] = size[v] > 1 ? 2 * (size[v] - 1) : 0;
}

// Of an edge's two arcs the one earlier in the tour (more arcs left) goes down: its tail is the
// parent. A step of +1 (down) or -1 (up) at each arc's place in the tours laid end to end (tree
// v's ends at tour_end[v]), whose prefix sums are depths.
template <typename E>
__global__ void forest_orient(const E* src, const E* dst, const i64* chosen, i64 k, const i64* ranked,
                              const int* label, const i64* tour_end, const int* edge_rank, int* parent, int* rank,
                              int* child_of_edge, i64* step) {
    for (i64 i = thread_index(); i < k; i += thread_count()) {
        i64 e = chosen[i];
        int u = (int)src[e], v = (int)dst[e];
        i64 left_u = ranked[i] >> 32, left_v = ranked[i + k] >> 32;  // arcs u -> v and v -> u
        bool down = left_u > left_v;
        int child = down ? v : u;
        parent[child] = down ? u : v;
        rank[child] = edge_rank[i];
        child_of_edge[i] = child;
        i64 end = tour_end[label[u]];
        step[end - left_u] = down ? 1 : -1;
        step[end - left_v] = down ? -1 : 1;
    }
}

extern "C" __global__ void array_max(const i64* x, i64 n, i64* out) {
    i64 mine = I64_MIN;
    for (i64 i = thread_index(); i < n; i += thread_count()) mine = max(mine, x[i]);
    mine = warp_max(mine);
    if (lane_id() == 0) atomicMax(out, mine);
}

extern "C" __global__ void lift_first(const int* parent, const int* rank, i64 n, i64* table) {
    for (i64 v = thread_index(); v < n; v += thread_count()) table[v] = (i64)rank[v] << 32 | parent[v];
}

extern "C" __global__ void lift_level(const i64* below, i64* table, i64 n) {
    for (i64 v = thread_index(); v < n; v += thread_count()) {
        i64 mine = below[v], above = below[mine & POINTER_BITS];
        table[v] = max(mine & ~POINTER_BITS, above & ~POINTER_BITS) | (above & POINTER_BITS);
    }
}

// A-parent of every vertex: its nearest proper ancestor of higher rank (roots stop every search).
extern "C" __global__ void lift_descend(const i64* table, int levels, i64 n, const int* parent, const int* rank,
                                        int* aparent) {
    for (i64 v = thread_index(); v < n; v += thread_count()) {
        i64 at = parent[v];
        const i64 mine = rank[v];
        for (int j = levels - 1; j >= 0; j--) {
            i64 entry = table[j * n + at];
            if (entry >> 32 < mine) at = entry & POINTER_BITS;
        }
        aparent[v] = (int)at;
    }
}

// Children sorted by (A-parent, rank) as one integer; a rank names its child.
extern "C" __global__ void krt_keys(const int* child_of_edge, const int* edge_rank, i64 k, const int* aparent,
                                    i64* keys, int* vertex_of_rank) {
    for (i64 i = thread_index(); i < k; i += thread_count()) {
        int child = child_of_edge[i], rank = edge_rank[i];
        keys[i] = (i64)aparent[child] * k + rank;
        vertex_of_rank[rank] = child;
    }
}

// slot[c]: c's place j in the sorted children; first_child[a]: the place of a's lightest A-child.
extern "C" __global__ void krt_slots(const i64* keys, i64 k, const int* vertex_of_rank, int* child_sorted,
                                     i64* slot, i64* first_child) {
    for (i64 j = thread_index(); j < k; j += thread_count()) {
        i64 group = keys[j] / k;
        int child = vertex_of_rank[keys[j] % k];
        child_sorted[j] = child;
        slot[child] = j;
        if (j == 0 || keys[j - 1] / k != group) first_child[group] = j;
    }
}

// A's Euler tour: arc j goes down into child j, arc k + j up out of it, 2k is the end. Down into
// v, then down into v's lightest A-child or up out of v; up out of v, then down into v's next
// heavier sibling, or up out of v's A-parent, or the end when that is a root. Down arcs weigh 1.
extern "C" __global__ void krt_links(const i64* keys, i64 k, const int* child_sorted, const i64* slot,
                                     const i64* first_child, const int* parent, i64* packed) {
    for (i64 j = thread_index(); j < k; j += thread_count()) {
        i64 group = keys[j] / k;
        i64 below = first_child[child_sorted[j]];
        packed[j] = (i64)1 << 32 | (below >= 0 ? below : k + j);
        bool closes = j == k - 1 || keys[j + 1] / k != group;
        packed[k + j] = !closes ? j + 1 : parent[group] == group ? 2 * k : k + slot[group];
        if (j == 0) packed[2 * k] = 2 * k;
    }
}

// Every vertex's KRT leaf position: its tree's first position (first[label]), plus for a child
// the tree's size less the down arcs from its own on; h at that position is its rank.
extern "C" __global__ void krt_positions(i64 n, const int* label, const i64* first, const i64* size, const i64* slot,
                                         const i64* ranked, const int* rank, int* position, int* h) {
    for (i64 v = thread_index(); v < n; v += thread_count()) {
        int tree = label[v];
        i64 place = first[tree];
        if (slot[v] >= 0) place += size[tree] - (ranked[slot[v]] >> 32);
        position[v] = (int)place;
        h[place] = rank[v];
    }
}

// One thread per block of positions: maxima from the block's start (prefix) and to its end
// (suffix) at every position, and the block's maximum (the block table's level 0).
extern "C" __global__ void range_blocks(const int* h, i64 n, int* prefix, int* suffix, int* block_max) {
    for (i64 b = thread_index(); b * RANGE_BLOCK < n; b += thread_count()) {
        i64 lo = b * RANGE_BLOCK, hi = min(lo + RANGE_BLOCK, n);
        int top = -1;
        for (i64 i = lo; i < hi; i++) prefix[i] = top = max(top, h[i]);
        block_max[b] = top;
        top = -1;
        for (i64 i = hi - 1; i >= lo; i--) suffix[i] = top = max(top, h[i]);
    }
}

extern "C" __global__ void range_level(const int* below, int* table, i64 blocks, i64 span) {
    for (i64 b = thread_index(); b < blocks; b += thread_count())
        table[b] = b + span < blocks ? max(below[b], below[b + span]) : below[b];
}

// max(h[begin..last]), begin <= last.
__device__ __forceinline__ int range_maximum(i64 begin, i64 last, const int* h, const int* prefix, const int* suffix,
                                             const int* block_table, i64 blocks) {
    i64 first_block = begin >> RANGE_BLOCK_BITS, last_block = last >> RANGE_BLOCK_BITS;
    int top = -1;
    if (first_block == last_block) {
        for (i64 i = begin; i <= last; i++) top = max(top, h[i]);
        return top;
    }
    top = max(suffix[begin], prefix[last]);
    i64 whole = last_block - first_block - 1;  // blocks strictly between
    if (whole > 0) {
        int j = 63 - __clzll(whole);
        top = max(top, max(block_table[j * blocks + first_block + 1], block_table[j * blocks + last_block - ((i64)1 << j)]));
    }
    return top;
}

// The cycle property, one pass over the input edges: the heaviest forest edge on the path u..v
// has the rank of the range maximum of h after u's position up to v's; that range holds a
// root (rank k) exactly when u and v lie in two trees. Self-loops pass.
template <typename E, typename W>
__global__ void forest_cycle_check(const E* src, const E* dst, const W* weight, i64 m, const int* position,
                                   const int* h, const int* prefix, const int* suffix, const int* block_table,
                                   i64 blocks, const i64* key_of_rank, i64 k, u64* counts) {
    i64 crossing = 0, heavier = 0;
    for (i64 e = thread_index(); e < m; e += thread_count()) {
        i64 pu = position[src[e]], pv = position[dst[e]];
        if (pu == pv) continue;
        i64 first = min(pu, pv), last = max(pu, pv);
        int top = range_maximum(first + 1, last, h, prefix, suffix, block_table, blocks);
        crossing += top == k;
        heavier += top != k && order_key(weight[e]) < key_of_rank[top];
    }
    add_warp_count(crossing, counts + FOREST_CROSSING);
    add_warp_count(heavier, counts + FOREST_HEAVIER);
}
