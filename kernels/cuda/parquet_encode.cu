// Result columns' RLE/bit-packed hybrid and dictionary encodings on the GPU: the bytes of
// kernels/parquet/encode.py's hybrid and dictionary (whose docstring gives the layout and the
// choices), with no run-time compilation. Drivers: kernels/parquet/gpu_encode.py.
//
//   values        : V [n]          values to encode: bool (definition levels) or unsigned int
//                                  (dictionary indices), each below 2^width
//   starts        : i64 [pages+1]  each page's first value; starts[pages] = n
//   group_offsets : i64 [pages+1]  each page's first group of 8 values; [pages] = all groups, G
//   run_id        : i64 [G]        run starts at or before each group (its run's index + 1)
//   run_start     : i64 [runs]     each run's first group
//   header        : u64 [runs]     each run's ULEB128 header value
//   run_offset    : i64 [runs+1]   each run's first byte; [runs] = the stream's length
// A group: 8 values of one page, the page's last value repeated to fill its last group.

struct HybridGroup {
    i64 page, first, end;  // its page, its first value, its page's end
    bool uniform;          // its 8 values are one value ...
    u64 lead;              // ... its first value
};

template <typename V>
__device__ __forceinline__ u64 hybrid_value(const V* values, i64 i, i64 end) { return (u64)values[min(i, end - 1)]; }

template <typename V>
__device__ HybridGroup hybrid_group(const V* values, const i64* starts, const i64* group_offsets, i64 pages, i64 g) {
    i64 lo = 1, hi = pages;  // the first page boundary past g: group_offsets[lo] > g
    while (lo < hi) {
        i64 mid = (lo + hi) >> 1;
        if (group_offsets[mid] > g) hi = mid; else lo = mid + 1;
    }
    HybridGroup group;
    group.page = lo - 1;
    group.first = starts[group.page] + 8 * (g - group_offsets[group.page]);
    group.end = starts[group.page + 1];
    group.lead = hybrid_value(values, group.first, group.end);
    group.uniform = true;
    for (int j = 1; j < 8; j++) group.uniform &= hybrid_value(values, group.first + j, group.end) == group.lead;
    return group;
}

__device__ __forceinline__ int uleb128_length(u64 x) {
    int length = 1;
    while (x >= 0x80) {
        x >>= 7;
        length++;
    }
    return length;
}

// A run starts at a page's first group, where uniformity changes, or where a uniform group's
// value differs from the previous uniform group's. run_id gets 1 there, 0 elsewhere (scanned next).
template <typename V>
__global__ void hybrid_run_flags(const V* values, const i64* starts, const i64* group_offsets, i64 pages, i64 groups,
                                 i64* run_id) {
    for (i64 g = thread_index(); g < groups; g += thread_count()) {
        bool starts_run = g == 0;
        if (!starts_run) {
            HybridGroup here = hybrid_group(values, starts, group_offsets, pages, g);
            HybridGroup before = hybrid_group(values, starts, group_offsets, pages, g - 1);
            starts_run = here.page != before.page || here.uniform != before.uniform ||
                         (here.uniform && here.lead != before.lead);
        }
        run_id[g] = starts_run;
    }
}

extern "C" __global__ void hybrid_run_starts(const i64* run_id, i64 groups, i64* run_start) {
    for (i64 g = thread_index(); g < groups; g += thread_count())
        if (g == 0 || run_id[g] != run_id[g - 1]) run_start[run_id[g] - 1] = g;
}

// Each run's header and byte length (into run_offset[r + 1]; scanned next). An RLE run holds the
// values it covers (its page's last group may be short), a bit-packed run whole groups.
template <typename V>
__global__ void hybrid_run_lengths(const V* values, const i64* starts, const i64* group_offsets, i64 pages, i64 groups,
                                   const i64* run_start, i64 runs, int width, u64* header, i64* run_offset) {
    for (i64 r = thread_index(); r < runs; r += thread_count()) {
        i64 s = run_start[r], run_groups = (r + 1 < runs ? run_start[r + 1] : groups) - s;
        HybridGroup group = hybrid_group(values, starts, group_offsets, pages, s);
        u64 h = group.uniform ? (u64)(min(group.first + 8 * run_groups, group.end) - group.first) << 1
                              : (u64)run_groups << 1 | 1;
        header[r] = h;
        run_offset[r + 1] = uleb128_length(h) + (group.uniform ? (width + 7) / 8 : run_groups * width);
    }
}

// Each run's header, and an RLE run's value in ceil(width / 8) little-endian bytes.
template <typename V>
__global__ void hybrid_write_runs(const V* values, const i64* starts, const i64* group_offsets, i64 pages,
                                  const i64* run_start, i64 runs, int width, const u64* header, const i64* run_offset,
                                  unsigned char* out) {
    for (i64 r = thread_index(); r < runs; r += thread_count()) {
        i64 at = run_offset[r];
        u64 h = header[r];
        while (h >= 0x80) {
            out[at++] = (unsigned char)(h & 0x7f | 0x80);
            h >>= 7;
        }
        out[at++] = (unsigned char)h;
        if (header[r] & 1) continue;
        u64 value = hybrid_group(values, starts, group_offsets, pages, run_start[r]).lead;
        for (int b = 0; b < (width + 7) / 8; b++) out[at + b] = (unsigned char)(value >> 8 * b);
    }
}

// Each bit-packed group's width bytes after its run's header: bit b of value j at bit j * width + b,
// least significant first.
template <typename V>
__global__ void hybrid_write_groups(const V* values, const i64* starts, const i64* group_offsets, i64 pages,
                                    i64 groups, const i64* run_id, const i64* run_start, int width, const u64* header,
                                    const i64* run_offset, unsigned char* out) {
    for (i64 g = thread_index(); g < groups; g += thread_count()) {
        HybridGroup group = hybrid_group(values, starts, group_offsets, pages, g);
        if (group.uniform) continue;
        i64 r = run_id[g] - 1;
        i64 at = run_offset[r] + uleb128_length(header[r]) + (g - run_start[r]) * width;
        u64 v[8];
        for (int j = 0; j < 8; j++) v[j] = hybrid_value(values, group.first + j, group.end);
        for (int b = 0; b < width; b++) {
            unsigned byte = 0;
            for (int i = 0; i < 8; i++) {
                int bit = 8 * b + i;
                byte |= (unsigned)(v[bit / width] >> (bit % width) & 1) << i;
            }
            out[at + b] = (unsigned char)byte;
        }
    }
}

// A page's bytes start at its first run, an empty page's at the next page's.
extern "C" __global__ void hybrid_page_offsets(const i64* group_offsets, i64 pages, const i64* run_id,
                                               const i64* run_offset, i64* offsets) {
    for (i64 p = thread_index(); p <= pages; p += thread_count()) {
        i64 g = group_offsets[p];
        offsets[p] = run_offset[g == 0 ? 0 : run_id[g - 1]];
    }
}

// Dictionary: the values' bit patterns (T int or long long) sorted; number gets 1 where a new
// value begins (scanned next, it numbers the distinct values from 1).
template <typename T>
__global__ void dictionary_flags(const T* sorted, i64 n, i64* number) {
    for (i64 i = thread_index(); i < n; i += thread_count()) number[i] = i == 0 || sorted[i] != sorted[i - 1];
}

template <typename T>
__global__ void dictionary_distinct(const T* sorted, i64 n, const i64* number, T* distinct) {
    for (i64 i = thread_index(); i < n; i += thread_count())
        if (i == 0 || number[i] != number[i - 1]) distinct[number[i] - 1] = sorted[i];
}

template <typename T>
__global__ void dictionary_index(const T* values, i64 n, const T* distinct, i64 entries, unsigned* index) {
    for (i64 i = thread_index(); i < n; i += thread_count()) {
        T value = values[i];
        i64 lo = 0, hi = entries - 1;
        while (lo < hi) {
            i64 mid = (lo + hi) >> 1;
            if (distinct[mid] < value) lo = mid + 1; else hi = mid;
        }
        index[i] = (unsigned)lo;
    }
}
