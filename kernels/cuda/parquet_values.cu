// Parquet page bodies checked and decoded on the GPU, many pages per launch (kernels/parquet/gpu_pages.py
// drives them; kernels/parquet/batch.py holds the NumPy reference of every step and the plan).
//
// Encodings:
// - `body` is one uint8 buffer holding every page's uncompressed bytes; a page is known by the
//   byte offsets of its parts in it (values_at: its first value byte).
// - RLE/bit-packed hybrid: runs headed by a ULEB128 h; h & 1: a bit-packed run of (h >> 1) * 8
//   values of `width` bits, least significant bit first; else an RLE run of h >> 1 copies of one
//   value stored in ceil(width / 8) little-endian bytes.
// - status words: 0 = the page decodes here; non-zero = the host's reference decoder takes its
//   column chunk (it names the fault, or decodes what this path leaves to it, such as nulls).

// ---- Snappy streams checked before nvCOMP decodes them ----
// Driver: kernels/parquet/snappy.py (stream_faults_on_gpu), beside the walk's host reference.
// nvCOMP's Snappy decoder traps on a damaged stream (the trap ends the process's CUDA context),
// so every stream is first walked here: a stream passes only when each literal lies inside the
// input, each copy reaches back no further than the bytes produced so far (offset >= 1), nothing
// is written past the declared size, the input ends on an element boundary and the output is
// exactly the declared size. A decoder fed such a stream stays inside its buffers. Snappy
// elements: tag & 3 == 0 a literal of (tag >> 2) + 1 bytes, or for tag >> 2 >= 60 a length - 1
// in the 1..4 little-endian bytes that follow; 1: a copy of 4 + ((tag >> 2) & 7) bytes at an
// 11-bit offset ((tag >> 5) << 8 | next byte); 2 and 3: a copy of (tag >> 2) + 1 bytes at a 16-
// or 32-bit little-endian offset. The stream starts with its uncompressed size as a ULEB128.
// status[i]: 0 = well-formed; else 1 + the input byte (relative to the stream) where it fails.
//
// The walk is serial within a stream (each tag says where the next element starts), so one warp
// takes a stream, a window of SNAPPY_WINDOW bytes at a time, staged in shared memory together:
// 1. every lane decodes, at each of its window positions, the element that would start there
//    (its tag and up to 4 length/offset bytes lie in the window's 8 extra bytes): next[i], the
//    window position after it (SNAPPY_WINDOW when it ends beyond the window);
// 2. the chain of element starts from the walk's position, marked: next[] is doubled five times
//    (hop[i]: the position 32 elements on), lane 0 follows hop[] to every 32nd element, and lane
//    m walks the m-th run of 32 elements with next[], marking them (a window holds at most 512
//    elements, so 16 lanes at most);
// 3. the lanes check the marked elements together: each element's bounds, and, after a warp scan
//    of the bytes they produce, each copy's offset against the bytes produced before it; the
//    first element that fails (the lowest position) is the stream's fault.
// A literal's data is skipped, not read. Blocks of SNAPPY_WARPS warps.
#define SNAPPY_WARPS 4
#define SNAPPY_WINDOW 1024
#define SNAPPY_SPAN (SNAPPY_WINDOW / 32)  // window positions per lane in step 3 (consecutive)

// The element starting at w[i]: its header bytes (tag and length/offset bytes), the bytes it
// produces, and its copy offset (0 for a literal; a copy's offset 0 is a fault).
struct SnappyElement {
    int header;
    i64 produces;
    i64 offset;
    bool literal;
};

__device__ __forceinline__ SnappyElement snappy_element(const unsigned char* w) {
    const unsigned tag = w[0];
    SnappyElement e{1, 0, 0, (tag & 3) == 0};
    if (e.literal) {
        i64 length = tag >> 2;
        if (length >= 60) {
            const int extra = (int)length - 59;
            length = 0;
            for (int k = 0; k < extra; ++k) length |= (i64)w[1 + k] << (8 * k);
            e.header += extra;
        }
        e.produces = length + 1;
    } else if ((tag & 3) == 1) {
        e.header = 2;
        e.produces = 4 + ((tag >> 2) & 7);
        e.offset = ((i64)(tag >> 5) << 8) | w[1];
    } else {
        e.header = (tag & 3) == 2 ? 3 : 5;
        e.produces = (tag >> 2) + 1;
        e.offset = (i64)w[1] | ((i64)w[2] << 8);
        if (e.header == 5) e.offset |= ((i64)w[3] << 16) | ((i64)w[4] << 24);
    }
    return e;
}

extern "C" __global__ void __launch_bounds__(SNAPPY_WARPS * 32)
snappy_check(const unsigned char* in, const i64* starts, const i64* lengths, const i64* declared, i64 streams,
             i64* status) {
    __shared__ unsigned char windows[SNAPPY_WARPS][SNAPPY_WINDOW + 8];
    // next and the two doubling buffers: position -> position (SNAPPY_WINDOW: past the window,
    // where every hop stays)
    __shared__ unsigned short nexts[SNAPPY_WARPS][3][SNAPPY_WINDOW + 1];
    __shared__ unsigned char marks[SNAPPY_WARPS][SNAPPY_WINDOW];
    __shared__ unsigned short runs[SNAPPY_WARPS][32];  // the first element of each run of 32
    const int warp = threadIdx.x >> 5, lane = lane_id();
    unsigned char* w = windows[warp];
    unsigned short* next = nexts[warp][0];
    unsigned char* mark = marks[warp];
    unsigned short* run = runs[warp];
    const i64 warps = (i64)gridDim.x * SNAPPY_WARPS;
    for (i64 s = (i64)blockIdx.x * SNAPPY_WARPS + warp; s < streams; s += warps) {
        const unsigned char* p = in + starts[s];
        const i64 end = lengths[s];
        // the preamble: a ULEB128 of at most 5 bytes, below 2^32, equal to the declared size
        i64 pos = 0, fault = 0;
        u64 size = 0;
        bool ok = false;
        for (int k = 0; k < 5 && pos < end; ++k) {
            const unsigned b = p[pos];
            ++pos;
            size |= (u64)(b & 0x7f) << (7 * k);
            if (b < 0x80) {
                ok = true;
                break;
            }
        }
        if (!ok || size > 0xffffffffull || (i64)size != declared[s]) fault = 1 + pos;
        const i64 total = (i64)size;
        i64 produced = 0;
        while (!fault && pos < end) {
            const i64 base = pos;
            const int limit = (int)min((i64)SNAPPY_WINDOW, end - base);  // positions where elements may start
            __syncwarp();
            {  // every load issued before the first store: one memory latency per window, not 33
                unsigned char staged[(SNAPPY_WINDOW + 8 + 31) / 32];
#pragma unroll
                for (int j = 0; j < (SNAPPY_WINDOW + 8 + 31) / 32; ++j) {
                    const i64 k = base + lane + 32 * j;
                    staged[j] = k < end ? __ldg(p + k) : 0;
                }
#pragma unroll
                for (int j = 0; j < (SNAPPY_WINDOW + 8 + 31) / 32; ++j)
                    if (lane + 32 * j < SNAPPY_WINDOW + 8) w[lane + 32 * j] = staged[j];
            }
            __syncwarp();
            for (int i = lane; i < SNAPPY_WINDOW; i += 32) {  // 1. where each position's element ends
                const SnappyElement e = snappy_element(w + i);
                const i64 after = i + e.header + (e.literal ? e.produces : 0);
                next[i] = (unsigned short)min(after, (i64)SNAPPY_WINDOW);
                mark[i] = 0;
            }
            if (lane == 0) next[SNAPPY_WINDOW] = SNAPPY_WINDOW;
            __syncwarp();
            // 2. the chain of element starts, from the walk's position
            const unsigned short* hop = next;
            for (int round = 0; round < 5; ++round) {  // hop: 2^(round + 1) elements on
                unsigned short* doubled = nexts[warp][1 + (round & 1)];
                for (int i = lane; i <= SNAPPY_WINDOW; i += 32) doubled[i] = hop[hop[i]];
                hop = doubled;
                __syncwarp();
            }
            int runs_found = 0;
            if (lane == 0) {
                for (int i = 0; i < limit; i = hop[i]) run[runs_found++] = (unsigned short)i;
            }
            runs_found = __shfl_sync(FULL_MASK, runs_found, 0);
            __syncwarp();
            int i = SNAPPY_WINDOW, last = 0;  // lane's run: where it stops, its last element
            if (lane < runs_found) {
                i = run[lane];
                for (int k = 0; k < 32 && i < limit; ++k) {
                    mark[i] = 1;
                    last = i;
                    i = next[i];
                }
            }
            i64 after = i;
            if (lane == runs_found - 1 && i == SNAPPY_WINDOW) {  // the last element may end past the window
                const SnappyElement e = snappy_element(w + last);
                after = last + e.header + (e.literal ? e.produces : 0);
            }
            after = __shfl_sync(FULL_MASK, after, runs_found - 1);
            __syncwarp();
            // 3. the marked elements checked together, in order of position
            const int first = lane * SNAPPY_SPAN;
            i64 made = 0;
            for (int i = first; i < first + SNAPPY_SPAN; ++i)
                if (mark[i]) made += snappy_element(w + i).produces;
            i64 before = made;  // inclusive scan of the bytes produced, then exclusive
            for (int o = 1; o < 32; o <<= 1) {
                const i64 y = __shfl_up_sync(FULL_MASK, before, o);
                if (lane >= o) before += y;
            }
            const i64 window_made = __shfl_sync(FULL_MASK, before, 31);
            before = produced + before - made;
            unsigned failed = SNAPPY_WINDOW;  // the lane's first failing position
            for (int i = first; i < first + SNAPPY_SPAN && failed == SNAPPY_WINDOW; ++i) {
                if (!mark[i]) continue;
                const SnappyElement e = snappy_element(w + i);
                const i64 at = base + i;
                bool bad = at + e.header > end || before + e.produces > total;
                if (e.literal) bad = bad || at + e.header + e.produces > end;
                else bad = bad || e.offset == 0 || e.offset > before;
                if (bad) failed = (unsigned)i;
                before += e.produces;
            }
            failed = __reduce_min_sync(FULL_MASK, failed);
            if (failed < SNAPPY_WINDOW) {
                fault = 1 + base + failed;
            } else {
                produced += window_made;
                pos = base + after;
            }
        }
        if (!fault && produced != total) fault = 1 + end;
        if (lane == 0) status[s] = fault;
    }
}

// Byte ranges copied: segment i's lengths[i] bytes from src + src_at[i] to dst + dst_at[i]
// (pages stored uncompressed, v2 pages' level bytes, inputs realigned for a codec). One block
// per segment (grid-stride over segments).
extern "C" __global__ void copy_segments(const unsigned char* src, const i64* src_at, unsigned char* dst,
                                         const i64* dst_at, const i64* lengths, i64 segments) {
    for (i64 i = blockIdx.x; i < segments; i += gridDim.x) {
        const unsigned char* from = src + src_at[i];
        unsigned char* to = dst + dst_at[i];
        for (i64 j = threadIdx.x; j < lengths[i]; j += blockDim.x) to[j] = from[j];
    }
}

// ---- hybrid stream walks ----
// A ULEB128 of at most 10 bytes at p[pos] below `end`; false past the end or when longer (the
// reference decoder names such a stream).
__device__ __forceinline__ bool read_uleb(const unsigned char* p, i64 end, i64& pos, u64& value) {
    value = 0;
    for (int k = 0; k < 10; ++k) {
        if (pos >= end) return false;
        unsigned b = p[pos++];
        value |= (u64)(b & 0x7f) << (7 * k);
        if (b < 0x80) return true;
    }
    return false;
}

// Page status codes (kernels/parquet/batch.py names them)
#define PAGE_REFERENCE 1  // levels or indices malformed, or nulls: the reference decodes the chunk
#define PAGE_BAD_INDEX 2  // a dictionary index past the dictionary

// Definition levels of flat columns (max level 1) in front of each data page's values: v1 pages
// store them as a u32 byte length and a hybrid stream of width 1, v2 pages as a hybrid stream of
// the header's length (repetition levels, absent in flat columns, are checked on the host).
// Out per page: values_at (first value byte in `body`), present (values that are not null), and
// status PAGE_REFERENCE when the levels are malformed or the page holds a null.
// version: 1 or 2; max_def: 0 (REQUIRED: no levels stored) or 1.
extern "C" __global__ void page_levels(const unsigned char* body, const i64* body_start, const i64* body_size,
                                       const int* version, const int* max_def, const i64* def_length,
                                       const i64* num_values, i64 pages, i64* values_at, i64* present,
                                       int* status) {
    for (i64 i = thread_index(); i < pages; i += thread_count()) {
        const i64 n = num_values[i], size = body_size[i];
        const unsigned char* p = body + body_start[i];
        i64 levels_at = 0, levels_end = 0, at = 0;
        int bad = 0;
        if (version[i] == 2) {
            levels_end = def_length[i];
            at = levels_end;
            if (levels_end < 0 || levels_end > size || (max_def[i] == 0 && levels_end != 0)) bad = 1;
        } else if (max_def[i]) {
            if (size < 4) {
                bad = 1;
            } else {
                i64 length = (i64)p[0] | ((i64)p[1] << 8) | ((i64)p[2] << 16) | ((i64)p[3] << 24);
                levels_at = 4;
                levels_end = 4 + length;
                at = levels_end;
                if (levels_end > size) bad = 1;
            }
        }
        i64 defined = n;
        if (!bad && max_def[i]) {
            defined = 0;
            i64 pos = levels_at, have = 0;
            while (have < n) {
                u64 h;
                if (!read_uleb(p, levels_end, pos, h)) { bad = 1; break; }
                u64 run = h >> 1;
                if (h & 1) {  // run bytes of 8 one-bit levels
                    if (run == 0 || run > (u64)(levels_end - pos)) { bad = 1; break; }
                    i64 take = min((i64)run * 8, n - have);
                    for (i64 b = 0; b * 8 < take; ++b) {
                        unsigned byte = p[pos + b];
                        i64 bits = min((i64)8, take - b * 8);
                        if (bits < 8) byte &= (1u << bits) - 1;
                        defined += __popc(byte);
                    }
                    pos += run;
                    have += (i64)run * 8;
                } else {  // run copies of one level in one byte: defined only when it is 1
                    if (run == 0 || pos + 1 > levels_end) { bad = 1; break; }
                    i64 take = run > (u64)(n - have) ? n - have : (i64)run;
                    if (p[pos] == 1) defined += take;
                    pos += 1;
                    have += take;
                }
            }
        }
        values_at[i] = body_start[i] + at;
        present[i] = defined;
        status[i] = (bad || defined != n) ? PAGE_REFERENCE : 0;
    }
}

// ---- PLAIN values to their rows ----
// Page i's counts[i] values of T, stored back to back from body + src_at[i] (any alignment: a
// v1 page's values follow its levels), written to the T array at address dst[i]. One block per
// page (grid-stride over pages).
template <typename T>
__global__ void plain_copy(const unsigned char* body, const i64* src_at, const u64* dst, const i64* counts, i64 pages) {
    for (i64 i = blockIdx.x; i < pages; i += gridDim.x) {
        const unsigned char* s = body + src_at[i];
        T* d = (T*)dst[i];
        const i64 n = counts[i];
        if (((size_t)s & (sizeof(T) - 1)) == 0) {
            for (i64 j = threadIdx.x; j < n; j += blockDim.x) d[j] = ((const T*)s)[j];
        } else {
            for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
                T v = 0;
#pragma unroll
                for (int k = 0; k < (int)sizeof(T); ++k) v |= (T)s[j * sizeof(T) + k] << (8 * k);
                d[j] = v;
            }
        }
    }
}

// ---- dictionary indices ----
// The run table of every RLE_DICTIONARY / PLAIN_DICTIONARY page's index stream (a bit-width
// byte <= 32, then a hybrid stream of counts[i] indices in [values_at[i], values_end[i])). Two
// passes of one walk per page: with first_run == nullptr it counts the runs (runs[i]) and checks
// the stream (status[i] = PAGE_REFERENCE when malformed, PAGE_BAD_INDEX when an RLE run's index
// is past the dictionary); with first_run (the exclusive sum of the counts) it fills entries
// first_run[i] .. of the pages the first pass passed, as:
//   run_page: the page; run_first: the run's first value within the page; run_count: the values
//   of the run the page uses; run_payload: an RLE run's index, or a bit-packed run's first bit
//   in `body`, told apart by run_packed (1 = bit-packed).
// width[i] gets the page's bit width.
extern "C" __global__ void dictionary_runs(const unsigned char* body, const i64* values_at, const i64* values_end,
                                           const i64* counts, const i64* dictionary_size, i64 pages,
                                           const i64* first_run, i64* runs, int* width, int* status,
                                           i64* run_page, i64* run_first, i64* run_count, i64* run_payload,
                                           unsigned char* run_packed) {
    for (i64 i = thread_index(); i < pages; i += thread_count()) {
        if (first_run && status[i]) continue;  // counted as no runs: its entries belong to the next page
        const i64 n = counts[i], end = values_end[i];
        i64 pos = values_at[i], have = 0, r = 0;
        int bad = 0;
        int w = 0;
        if (pos >= end) {
            bad = PAGE_REFERENCE;
        } else {
            w = body[pos++];
            if (w > 32) bad = PAGE_REFERENCE;
        }
        const int value_bytes = (w + 7) / 8;
        while (!bad && have < n) {
            u64 h;
            if (!read_uleb(body, end, pos, h)) { bad = PAGE_REFERENCE; break; }
            u64 length = h >> 1;
            i64 take;
            i64 payload;
            if (h & 1) {
                if (length == 0 || (w && length > (u64)(end - pos) / w)) { bad = PAGE_REFERENCE; break; }
                payload = pos * 8;
                pos += (i64)length * w;
                take = min((i64)length * 8, n - have);
            } else {
                if (length == 0 || pos + value_bytes > end) { bad = PAGE_REFERENCE; break; }
                u64 index = 0;
                for (int k = 0; k < value_bytes; ++k) index |= (u64)body[pos + k] << (8 * k);
                pos += value_bytes;
                take = length > (u64)(n - have) ? n - have : (i64)length;
                if (index >= (u64)dictionary_size[i]) { bad = PAGE_BAD_INDEX; break; }
                payload = (i64)index;
            }
            if (first_run) {
                i64 e = first_run[i] + r;
                run_page[e] = i;
                run_first[e] = have;
                run_count[e] = take;
                run_payload[e] = payload;
                run_packed[e] = (h & 1) ? 1 : 0;
            }
            ++r;
            have += take;
        }
        if (!first_run) {
            runs[i] = bad ? 0 : r;
            width[i] = w;
            status[i] = bad;
        }
    }
}

// The runs expanded to values: one warp per run, lanes over its values. A bit-packed index
// past the dictionary marks its page PAGE_BAD_INDEX (the host then lets the reference name it).
// dictionary[i] / dst[i]: addresses of page i's dictionary values and first output value.
template <typename T>
__global__ void dictionary_expand(const unsigned char* body, const i64* run_page, const i64* run_first,
                                  const i64* run_count, const i64* run_payload, const unsigned char* run_packed,
                                  i64 runs, const int* width, const u64* dictionary, const i64* dictionary_size,
                                  const u64* dst, int* status) {
    const i64 warps = thread_count() >> 5;
    for (i64 r = thread_index() >> 5; r < runs; r += warps) {
        const i64 page = run_page[r], n = run_count[r];
        const T* values = (const T*)dictionary[page];
        T* d = (T*)dst[page] + run_first[r];
        if (!run_packed[r]) {
            const T v = values[run_payload[r]];
            for (i64 j = lane_id(); j < n; j += 32) d[j] = v;
            continue;
        }
        const int w = width[page];
        const u64 limit = (u64)dictionary_size[page];
        const i64 bit0 = run_payload[r];
        for (i64 j = lane_id(); j < n; j += 32) {
            u64 index = 0;
            if (w) {
                const i64 bit = bit0 + j * w;
                const unsigned char* b = body + (bit >> 3);
                const int shift = (int)(bit & 7);
                const int bytes = (shift + w + 7) >> 3;  // at most 5 for w <= 32
                u64 word = 0;
                for (int k = 0; k < bytes; ++k) word |= (u64)b[k] << (8 * k);
                index = (word >> shift) & ((1ull << w) - 1);
            }
            if (index >= limit) {
                atomicOr(status + page, PAGE_BAD_INDEX);
                index = 0;
            }
            d[j] = values[index];
        }
    }
}
