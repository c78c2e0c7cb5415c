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
