"""GPU memory a run needs, array by array (the lean device layout of kernels/structures.py).

m = input edges (rows), n = vertices, W = weight bytes (8 float64, 4 float32, 0 without), I = id
bytes as uploaded (8 for int64 ids). Peak of each stage of the pipeline, with what is alive:

  prepare  upload + renumber (kernels.graph.renumber on whole columns)
             src, dst ids as uploaded                       2 I m
             weight                                          W m
             src, dst dense int32 (written in place of nothing: new arrays)   8 m
             presence bitmap + word counts + rank (span <= 8 m + 2^24 ids, 1/2 byte per id)
                                                            <= 4 m
             ids of the dense vertices                       8 n
           (the id columns are freed after it; a streaming reader using kernels.graph.IdRange
            holds one chunk of ids instead of 2 I m)
  edges    src, dst int32 + weight                       (8 + W) m
  csr      edge list                                     (8 + W) m
             indices int32, both arcs of every edge          8 m
             degree -> indptr int64 (prefix sum beside it)  16 n
             scatter cursors int64                           8 n
  bfs      edge list + CSR (indptr kept)                 (16 + W) m + 8 n
             distance, predecessor int32                     8 n
             workspace: 2 queues int32 8 n, degree offsets int64 8 n, visited + 2 frontier
             bitmaps 3/8 n, step codes 1 n               ~17.4 n
  msf      edge list + CSR + BFS results (the pipeline keeps them for validation and output;
           the BFS workspace is released)             (16 + W) m + 16 n
             parent int32 4 n, best key u64 8 n, best edge u64 8 n, forest int64 8 n     28 n
             worklist items: ends int32 x 2, edge index E (int32 below 2^31 edges), key u64;
             double-buffered; a band <= m/4 (+ one bin of m/256)
                                                    2 (16 + E) 0.254 m = 10.2 m (E = 4)
  (an MSF-only run has no CSR and no BFS results)

Kron-26 (m = 2^30, n = 2^26, float64, int64 ids): prepare 36.5, bfs 26.1, msf 36.9 bytes per
edge; peak 36.9 against 143 before (H200, CuPy pool's peak). Validation (kernels/verify.py) is
not counted here.
"""
from __future__ import annotations

# Host memory of a NumPy run, per input edge, by the algorithms it runs: peak resident memory of
# the whole command (threads runner) less that of the same command on the 9-edge sample (160 MiB:
# the interpreter, Prefect, pyarrow), over the input rows, measured on Kronecker graphs with
# int64 ids and float64 weights (the widest types, so narrower inputs need less):
#            Kron-18 (4.2 M edges)   Kron-20 (16.8 M edges)
#   bfs               -                   52
#   msf              97                   74
#   pipeline        136                  110
# NumPy's temporaries (sorts, gathers, the verifiers' copies) and pyarrow's decoded columns
# dominate; the figures carry the larger of the two scales.
HOST_BYTES_PER_EDGE = {"bfs": 60, "msf": 100, "bfs+msf": 140}

RANGE_BYTES_PER_EDGE = 4  # presence bitmap, counts and rank at the widest accepted id range


def host_bytes(edges: int, algorithms=("bfs", "msf")) -> int:
    """Peak host bytes of a NumPy run over `edges` input rows, beyond the process's own (see
    HOST_BYTES_PER_EDGE)."""
    kind = "+".join(a for a in ("bfs", "msf") if a in algorithms)
    return int(edges) * HOST_BYTES_PER_EDGE[kind]


def gpu_bytes(edges: int, vertices: int | None = None, weight_bytes: int = 8,
              algorithms=("bfs", "msf"), directed: bool = False, id_bytes: int = 8) -> int:
    """Peak GPU bytes of a run over `edges` input rows (see the module's table). Before
    renumbering the vertex count is unknown: then it is taken as equal to the edges (sparse
    graphs: road networks have about as many vertices as edges; Kronecker graphs 1/16)."""
    m = int(edges)
    n = m if vertices is None else int(vertices)
    w = int(weight_bytes)
    edge_index = 4 if m < 2**31 else 8
    edge_list = (8 + w) * m
    stages = {
        "prepare": (2 * id_bytes + w + 8 + RANGE_BYTES_PER_EDGE) * m + 8 * n,
        "edges": edge_list,
    }
    bfs = "bfs" in algorithms
    if bfs:
        csr_indptr = (16 if directed else 8) * n  # one CSR each way when directed
        stages["csr"] = edge_list + 8 * m + csr_indptr + 16 * n + 8 * n
        stages["bfs"] = edge_list + 8 * m + csr_indptr + 8 * n + 17.4 * n
    if "msf" in algorithms:
        kept = (8 * m + (16 if directed else 8) * n + 8 * n) if bfs else 0
        worklists = 2 * (16 + edge_index) * 0.254 * m
        stages["msf"] = edge_list + kept + 28 * n + worklists
    return int(max(stages.values()))
