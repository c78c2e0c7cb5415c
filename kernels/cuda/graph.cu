// CSR construction and vertex renumbering (encodings: kernels/structures.py, kernels/graph.py).
//
//   src, dst : int [m]        dense edge ends, one entry per input row (self-loops included)
//   degree   : i64 [n+1]      degree[v+1] = arcs leaving v (so its prefix sum is indptr)
//   cursor   : i64 [n]        next free slot of each row while scattering (starts at indptr[v])
//   indices  : int [nnz]      row v is indices[indptr[v] .. indptr[v+1]), in arrival order
//   bits     : unsigned [ceil(span/32)]  bit k of word w set when id lo + 32w + k occurs
//   prefix   : i64 [words]    inclusive prefix sum of the words' popcounts (the bitmap's rank)
//
// `mode` of the CSR kernels: 0 writes both arcs of every edge (the symmetric CSR of an undirected
// graph in one pass over the edge list), 1 only src -> dst, 2 only dst -> src.

extern "C" {

__global__ void csr_count(const int* src, const int* dst, i64 m, int mode, int skip_loops,
                          i64* degree) {
    u64* count = (u64*)degree;
    for (i64 e = thread_index(); e < m; e += thread_count()) {
        int s = src[e], d = dst[e];
        if (skip_loops && s == d) continue;
        if (mode != 2) atomicAdd(&count[s + 1], 1ull);
        if (mode != 1) atomicAdd(&count[d + 1], 1ull);
    }
}

__global__ void csr_fill(const int* src, const int* dst, i64 m, int mode, int skip_loops,
                         i64* cursor, int* indices) {
    u64* next = (u64*)cursor;
    for (i64 e = thread_index(); e < m; e += thread_count()) {
        int s = src[e], d = dst[e];
        if (skip_loops && s == d) continue;
        if (mode != 2) indices[atomicAdd(&next[s], 1ull)] = d;
        if (mode != 1) indices[atomicAdd(&next[d], 1ull)] = s;
    }
}

__global__ void ids_word_counts(const unsigned* bits, i64 words, i64* counts) {
    for (i64 w = thread_index(); w < words; w += thread_count()) counts[w] = __popc(bits[w]);
}

// Offsets from the range's low end -> dense ids: the rank of the offset's bit in the bitmap.
__global__ void ids_rank(int* dense, i64 m, const unsigned* bits, const i64* prefix) {
    for (i64 i = thread_index(); i < m; i += thread_count()) {
        unsigned x = (unsigned)dense[i];
        unsigned word = bits[x >> 5];
        unsigned below = word & ((1u << (x & 31)) - 1);
        dense[i] = (int)(prefix[x >> 5] - __popc(word) + __popc(below));
    }
}

}  // extern "C"

template <typename T>
__device__ __forceinline__ u64 id_bits(T x) {
    return (u64)(i64)x;  // two's complement: offsets from lo come out right for signed and unsigned
}

// Mark every id of a chunk in the bitmap and write its offset from lo (the range is < 2^31).
template <typename T>
__global__ void ids_mark(const T* ids, i64 m, u64 lo, unsigned* bits, int* offsets) {
    for (i64 i = thread_index(); i < m; i += thread_count()) {
        u64 offset = id_bits(ids[i]) - lo;
        unsigned bit = 1u << (offset & 31);
        unsigned* word = bits + (offset >> 5);
        if (!(*word & bit)) atomicOr(word, bit);  // most ids repeat: read before the atomic
        offsets[i] = (int)offset;
    }
}

// The original id of every dense vertex, ascending.
template <typename T>
__global__ void ids_list(const unsigned* bits, i64 words, const i64* prefix, u64 lo, T* ids) {
    for (i64 w = thread_index(); w < words; w += thread_count()) {
        unsigned word = bits[w];
        i64 at = prefix[w] - __popc(word);
        while (word) {
            int k = __ffs(word) - 1;
            word &= word - 1;
            ids[at++] = (T)(i64)(lo + (u64)(w * 32 + k));
        }
    }
}
