"""GPU BFS baselines, run in the same process as our kernels on the same CSR.

- seed: the chapter 22 kernel as written: one thread per frontier vertex, atomicCAS on the
  distance of every neighbour, one global atomicAdd per discovered vertex to compact.
- spmv: level-synchronous BFS as sparse matrix-vector products with cupyx.scipy.sparse.
Each returns the mean seconds per root.
"""
import statistics
import time

import cupy as cp
import numpy as np

SEED_KERNEL = r"""
extern "C" __global__ void seed_bfs_level(const int* frontier, int size, const long long* indptr,
        const int* indices, int* dist, int* next, int* next_count, int level) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= size) return;
    int u = frontier[i];
    for (long long e = indptr[u]; e < indptr[u + 1]; ++e) {
        int v = indices[e];
        if (atomicCAS(&dist[v], -1, level + 1) == -1) {
            int idx = atomicAdd(next_count, 1);
            next[idx] = v;
        }
    }
}
"""
_seed = cp.RawKernel(SEED_KERNEL, "seed_bfs_level")


def _time_roots(run, roots):
    run(int(roots[0]))  # warm-up
    times = []
    for r in roots:
        cp.cuda.get_current_stream().synchronize()
        start = time.perf_counter()
        run(int(r))
        cp.cuda.get_current_stream().synchronize()
        times.append(time.perf_counter() - start)
    return statistics.mean(times)


def seed_kernel_bfs(graph, roots):
    n, out = graph.n, graph.out
    dist = cp.empty(n, dtype=cp.int32)
    a, b = cp.empty(n, dtype=cp.int32), cp.empty(n, dtype=cp.int32)
    count = cp.zeros(1, dtype=cp.int32)

    def run(root):
        nonlocal a, b
        dist.fill(-1)
        dist[root] = 0
        a[0] = root
        size, level = 1, 0
        while size:
            count.fill(0)
            _seed(((size + 255) // 256,), (256,), (a, np.int32(size), out.indptr, out.indices, dist, b, count, np.int32(level)))
            size = int(count.get()[0])
            a, b = b, a
            level += 1

    return _time_roots(run, roots)


def spmv_bfs(graph, roots):
    import cupyx.scipy.sparse as csp

    n, out = graph.n, graph.out
    matrix = csp.csr_matrix((cp.ones(out.nnz, dtype=cp.float32), out.indices, out.indptr), shape=(n, n))
    dist = cp.empty(n, dtype=cp.int32)

    def run(root):
        dist.fill(-1)
        dist[root] = 0
        x = cp.zeros(n, dtype=cp.float32)
        x[root] = 1
        level = 0
        while True:
            reached = (matrix @ x > 0) & (dist < 0)
            if not bool(reached.any()):
                break
            level += 1
            dist[reached] = level
            x = reached.astype(cp.float32)

    return _time_roots(run, roots)
