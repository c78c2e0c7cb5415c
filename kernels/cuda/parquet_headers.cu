// Parquet page headers (Thrift compact PageHeader) parsed on the GPU, and page CRC32s.
// Driver: kernels/parquet/gpu_headers.py (which states the contracts and the status codes).
//
// ---- page headers -------------------------------------------------------------------------
//   buffer   : u8 [..]          column chunks back to back; chunk c is
//                               buffer[starts[c] .. starts[c] + sizes[c]): header, page, header, ...
//   expected : i64 [chunks]     the footer's value count per chunk (nulls included)
//   info     : i64 [3][chunks]  per chunk: status (PH_OK or an error code), where (the chunk byte
//                               of the failing page header; the chunk's size for a value count
//                               that does not add up; -1 when ok), pages (0 when not ok)
//   first    : i64 [chunks]     exclusive prefix sum of info's pages: the chunk's first row
//   table    : i64 [PH_FIELDS][total]  one column per field, column-major (row k of field f at
//                               f * total + k), pages of ok chunks in chunk then file order
//
// One thread walks one chunk: where a chunk's next page starts is known only once its header
// is parsed. Two passes of the same walk: page_headers_count (status and page count), then,
// after the scan, page_headers_fill (the rows). Parsing twice costs less than bounding the
// table without counting: a page can be 5 header bytes long, so a bound would be size / 5 rows.
//
// The walk mirrors kernels/parquet/headers.py page_headers (_parse_header, and thrift.py's skip
// and skip_flat_struct) decision for decision, so a chunk's status is non-zero exactly where that
// parser raises for the chunk alone. Where Python's integers are unbounded, a varint here keeps
// its low 64 bits and a flag saying whether more were set ("wide"). The differences, all for
// values no writer produces: nesting deeper than PH_MAX_DEPTH is refused (PH_TOO_DEEP; Python
// recurses until its recursion limit); a list or map whose elements need not be read (bools,
// bytes, doubles) is skipped in one step, where Python iterates (for a map of bool keys and
// values, 2**64 times); a size read past the chunk's end is refused when it is read, where
// Python refuses at its next read (there always is one: a header ends with its stop byte).

// The format's facts (page types DATA_PAGE.., the compact protocol's types T_TRUE..T_STRUCT, a
// page row's slots PH_CHUNK..PH_IS_COMPRESSED and PH_FIELDS, PageHeader's kept fields:
// page_header_slot, page_header_nested, nested_header_slot) come from kernels/parquet/format.py,
// written before the module's files by kernels/cuda_source.py (parquet_preamble).

// Chunk status (kernels/parquet/gpu_headers.py names them).
enum {
    PH_OK,
    PH_UNPARSABLE,  // a read past the chunk's end or an unknown Thrift type (Python: IndexError, ValueError)
    PH_BAD_SIZE,    // compressed_size negative or missing, page_type negative or missing, page past the chunk
    PH_VALUE_COUNT, // the data pages' num_values do not add up to the footer's count
    PH_TOO_DEEP,    // containers nested deeper than PH_MAX_DEPTH
    PH_TOO_LARGE    // a field's value beyond int64 (Python: OverflowError building the table)
};

#define PH_MAX_DEPTH 32
#define PH_CRC_ABSENT (-(1ll << 40))  // headers.py's marker: outside i32, so a stored -1 stays apart
#define PH_FAR_FIELD (1ull << 62)     // a field id from a varint wider than 64 bits: matches nothing

// Thrift compact protocol: the low nibble of a field header (or a list's element header) is
// the value's type; a field header's high nibble is the id's delta from the previous field's,
// 0 meaning a zigzag varint id follows. Integers are zigzag varints (LEB128, 7 bits a byte,
// least significant first); binary is a varint length and the bytes; a list or set is a byte
// (count << 4 | element type; count 15: a varint count follows) and its elements; a map is a
// varint count and, when not 0, a byte (key type << 4 | value type) and the pairs; a struct is
// its fields and a 0 byte. A bool field's value is its header's type (T_TRUE or T_FALSE).

// The chunk's bytes [0, end) and the read position; every read checks the end.
struct ThriftIn {
    const unsigned char* bytes;
    i64 pos, end;

    __device__ __forceinline__ bool byte(unsigned& b) {
        if (pos >= end) return false;
        b = bytes[pos++];
        return true;
    }

    // A varint of any length: its low 64 bits, `wide` when a bit above them is set.
    __device__ __forceinline__ bool varint(u64& value, bool& wide) {
        value = 0;
        wide = false;
        for (int shift = 0;; shift = shift < 64 ? shift + 7 : shift) {
            if (pos >= end) return false;
            unsigned b = bytes[pos++];
            u64 payload = b & 0x7F;
            if (shift < 64) {
                value |= payload << shift;
                if (shift == 63 && payload > 1) wide = true;  // only bit 0 fits at bit 63
            } else if (payload) {
                wide = true;
            }
            if (b < 0x80) return true;
        }
    }

    __device__ __forceinline__ bool skip_varint() {
        for (;;) {
            if (pos >= end) return false;
            if (bytes[pos++] < 0x80) return true;
        }
    }

    // Moves past n bytes not read. Refused when they pass the end (see the top of the file).
    __device__ __forceinline__ bool advance(u64 n) {
        if (n > (u64)(end - pos)) return false;
        pos += (i64)n;
        return true;
    }
};

__device__ __forceinline__ i64 zigzag(u64 raw) { return (i64)(raw >> 1) ^ -(i64)(raw & 1); }

__device__ __forceinline__ bool thrift_type_known(unsigned t) { return t >= T_TRUE && t <= T_STRUCT; }

// Bytes a value of type t takes when skipped without reading it (as skip does: a bool none,
// being in its field header; a byte one; a double eight), -1 for a type that must be read.
__device__ __forceinline__ int thrift_unread_size(unsigned t) {
    return t == T_TRUE || t == T_FALSE ? 0 : t == T_BYTE ? 1 : t == T_DOUBLE ? 8 : -1;
}

// A container being skipped: its kind, elements left and element types.
struct SkipFrame {
    u64 left;             // list: elements left; map: pairs left
    unsigned char kind;   // SKIP_STRUCT, SKIP_FLAT_STRUCT, SKIP_LIST, SKIP_MAP
    unsigned char type;   // list: element type; map: key type
    unsigned char type2;  // map: value type
    unsigned char key;    // map: 1 when the next element is a key
};
#define SKIP_STRUCT 0
#define SKIP_FLAT_STRUCT 1  // skip_flat_struct: type 0, 1, 2 fields take no bytes, and no error
#define SKIP_LIST 2
#define SKIP_MAP 3

// Moves `in` past one value of type `type` (a struct of the flat kind when `flat`), iteratively
// with an explicit stack where skip recurses. Returns PH_OK or an error code.
__device__ int thrift_skip(ThriftIn& in, unsigned type, bool flat) {
    SkipFrame stack[PH_MAX_DEPTH];
    int depth = 0;
    int pending = (int)type;  // a value of this type starts at in.pos; -1: none
    for (;;) {
        if (pending >= 0) {
            unsigned t = (unsigned)pending;
            pending = -1;
            u64 n;
            bool wide;
            unsigned head;
            switch (t) {
                case T_TRUE:
                case T_FALSE:
                    break;
                case T_BYTE:
                    if (!in.advance(1)) return PH_UNPARSABLE;
                    break;
                case T_DOUBLE:
                    if (!in.advance(8)) return PH_UNPARSABLE;
                    break;
                case T_I16:
                case T_I32:
                case T_I64:
                    if (!in.skip_varint()) return PH_UNPARSABLE;
                    break;
                case T_BINARY:
                    if (!in.varint(n, wide) || wide || !in.advance(n)) return PH_UNPARSABLE;
                    break;
                case T_LIST:
                case T_SET: {
                    if (!in.byte(head)) return PH_UNPARSABLE;
                    n = head >> 4;
                    if (n == 15) {
                        if (!in.varint(n, wide)) return PH_UNPARSABLE;
                        if (wide) n = U64_MAX;  // every element takes a byte: the end comes first
                    }
                    if (n == 0) break;
                    unsigned e = head & 0x0F;
                    if (!thrift_type_known(e)) return PH_UNPARSABLE;  // skip raises at the first element
                    int size = e == T_TRUE || e == T_FALSE ? 1 : thrift_unread_size(e);  // bools in a list: a byte each
                    if (size > 0) {
                        if (n > (u64)(in.end - in.pos) / (u64)size) return PH_UNPARSABLE;
                        in.pos += (i64)(n * (u64)size);
                        break;
                    }
                    if (depth == PH_MAX_DEPTH) return PH_TOO_DEEP;
                    stack[depth++] = SkipFrame{n, SKIP_LIST, (unsigned char)e, 0, 0};
                    break;
                }
                case T_MAP: {
                    if (!in.varint(n, wide)) return PH_UNPARSABLE;
                    if (wide) n = U64_MAX;
                    if (n == 0) break;
                    if (!in.byte(head)) return PH_UNPARSABLE;
                    unsigned k = head >> 4, v = head & 0x0F;
                    if (!thrift_type_known(k) || !thrift_type_known(v)) return PH_UNPARSABLE;
                    int ks = thrift_unread_size(k), vs = thrift_unread_size(v);
                    if (ks >= 0 && vs >= 0) {  // skip reads nothing of these pairs
                        u64 size = (u64)(ks + vs);
                        if (size == 0) break;  // bool keys and values: skip takes no byte for them
                        if (n > (u64)(in.end - in.pos) / size) return PH_UNPARSABLE;
                        in.pos += (i64)(n * size);
                        break;
                    }
                    if (depth == PH_MAX_DEPTH) return PH_TOO_DEEP;
                    stack[depth++] = SkipFrame{n, SKIP_MAP, (unsigned char)k, (unsigned char)v, 1};
                    break;
                }
                case T_STRUCT:
                    if (depth == PH_MAX_DEPTH) return PH_TOO_DEEP;
                    stack[depth++] = SkipFrame{0, (unsigned char)(flat ? SKIP_FLAT_STRUCT : SKIP_STRUCT), 0, 0, 0};
                    break;
                default:  // 0 and 13..15: skip's "Thrift compact type unknown"
                    return PH_UNPARSABLE;
            }
            flat = false;  // only the outermost struct can be the flat kind
        }
        if (depth == 0) return PH_OK;
        SkipFrame& f = stack[depth - 1];
        if (f.kind == SKIP_LIST) {
            if (f.left == 0) {
                depth--;
            } else {
                f.left--;
                pending = f.type;
            }
        } else if (f.kind == SKIP_MAP) {
            if (f.key) {
                if (f.left == 0) {
                    depth--;
                } else {
                    f.key = 0;
                    pending = f.type;
                }
            } else {
                f.key = 1;
                f.left--;
                pending = f.type2;
            }
        } else {
            unsigned head;
            if (!in.byte(head)) return PH_UNPARSABLE;
            if (head == 0) {
                depth--;
                continue;
            }
            unsigned t = head & 0x0F;
            if (f.kind == SKIP_STRUCT) {
                if ((head >> 4) == 0 && !in.skip_varint()) return PH_UNPARSABLE;  // long-form field id
                pending = (int)t;
            } else {  // skip_flat_struct
                if (head < 0x10 && !in.skip_varint()) return PH_UNPARSABLE;
                if (t == T_BINARY) {
                    u64 n;
                    bool wide;
                    if (!in.varint(n, wide) || wide || !in.advance(n)) return PH_UNPARSABLE;
                } else if (t >= T_I16 && t <= T_I64) {
                    if (!in.skip_varint()) return PH_UNPARSABLE;
                } else if (t > T_FALSE) {
                    pending = (int)t;
                }
            }
        }
    }
}

// A kept integer field: the zigzag value and whether it lies beyond int64 (bit `slot` of `wide`).
__device__ __forceinline__ bool read_field(ThriftIn& in, i64* row, unsigned& wide, int slot) {
    u64 raw;
    bool beyond;
    if (!in.varint(raw, beyond)) return false;
    row[slot] = zigzag(raw);  // its sign is right even when beyond: the sign is raw's bit 0
    wide = beyond ? wide | (1u << slot) : wide & ~(1u << slot);
    return true;
}

// The next field id: the previous one plus the header's delta, or a long-form zigzag id.
// Ids are kept as u64 (wrapping like the two's complement i64 they are) so no overflow is UB.
__device__ __forceinline__ bool field_id(ThriftIn& in, unsigned head, u64& id) {
    if (head >> 4) {
        id += head >> 4;
        return true;
    }
    u64 raw;
    bool beyond;
    if (!in.varint(raw, beyond)) return false;
    id = beyond ? PH_FAR_FIELD : (u64)zigzag(raw);
    return true;
}

// The PageHeader at in.pos into `row`; `wide` gets the slots whose value lies beyond int64.
// The fields kept and the nested headers read are format.py's PAGE_HEADER_FIELDS and
// NESTED_HEADER_FIELDS (the preamble's page_header_slot, page_header_nested, nested_header_slot).
__device__ int parse_page_header(ThriftIn& in, i64* row, unsigned& wide) {
    u64 id = 0;
    for (;;) {
        unsigned head;
        if (!in.byte(head)) return PH_UNPARSABLE;
        if (head == 0) return PH_OK;
        unsigned t = head & 0x0F;
        if (!field_id(in, head, id)) return PH_UNPARSABLE;
        if (t == T_I32 && page_header_slot(id) >= 0) {
            if (!read_field(in, row, wide, page_header_slot(id))) return PH_UNPARSABLE;
        } else if (t == T_STRUCT && page_header_nested(id)) {
            u64 inner = 0;
            for (;;) {
                unsigned h;
                if (!in.byte(h)) return PH_UNPARSABLE;
                if (h == 0) break;
                unsigned u = h & 0x0F;
                if (!field_id(in, h, inner)) return PH_UNPARSABLE;
                int slot = nested_header_slot(id, inner);
                int code = PH_OK;
                if (slot < 0) {
                    code = thrift_skip(in, u, u == T_STRUCT);  // statistics: the flat skip
                } else if (u == T_I32) {
                    if (!read_field(in, row, wide, slot)) return PH_UNPARSABLE;
                } else if (u == T_TRUE || u == T_FALSE) {
                    row[slot] = u == T_TRUE;
                    wide &= ~(1u << slot);
                } else {
                    code = thrift_skip(in, u, false);
                }
                if (code != PH_OK) return code;
            }
        } else {
            int code = thrift_skip(in, t, false);
            if (code != PH_OK) return code;
        }
    }
}

// Walks chunk `chunk`'s pages: returns its status; *where as in `info`; *pages its page count.
// With a table, writes each page's row there from row `first` on (`total` rows in all).
__device__ int walk_chunk(const unsigned char* bytes, i64 size, i64 expected, i64 chunk, i64* where,
                          i64* pages, i64* table, i64 total, i64 first) {
    ThriftIn in{bytes, 0, size};
    i64 count = 0;
    // The data pages' value count, as a two's complement 128-bit sum (Python sums without
    // bound; 2^40 pages of at most 2^63 values stay far inside 128 bits).
    u64 sum_low = 0;
    i64 sum_high = 0;
    bool sum_beyond = false;
    int late = PH_OK;  // a value beyond int64: Python fails on it last, building the table
    i64 late_where = -1;
    while (in.pos < size) {
        i64 row[PH_FIELDS];
        for (int s = 0; s < PH_FIELDS; s++) row[s] = -1;
        row[PH_IS_COMPRESSED] = 1;  // DataPageHeaderV2's default
        row[PH_CRC] = PH_CRC_ABSENT;
        row[PH_CHUNK] = chunk;
        row[PH_HEADER_OFFSET] = in.pos;
        unsigned wide = 0;
        int code = parse_page_header(in, row, wide);
        if (code != PH_OK) {
            *where = row[PH_HEADER_OFFSET];
            return code;
        }
        i64 stored = row[PH_COMPRESSED_SIZE];
        if (stored < 0 || (wide >> PH_COMPRESSED_SIZE & 1) || row[PH_PAGE_TYPE] < 0 || stored > size - in.pos) {
            *where = row[PH_HEADER_OFFSET];
            return PH_BAD_SIZE;
        }
        row[PH_OFFSET] = in.pos;
        in.pos += stored;
        i64 type = row[PH_PAGE_TYPE];
        if (!(wide >> PH_PAGE_TYPE & 1) && (type == DATA_PAGE || type == DATA_PAGE_V2)) {
            if (wide >> PH_NUM_VALUES & 1) {
                sum_beyond = true;
            } else {
                i64 v = row[PH_NUM_VALUES];  // -1 when absent, added all the same (as headers.py does)
                u64 low = sum_low + (u64)v;
                sum_high += (i64)(low < sum_low) - (i64)(v < 0);
                sum_low = low;
            }
        }
        if (wide && late == PH_OK) {
            late = PH_TOO_LARGE;
            late_where = row[PH_HEADER_OFFSET];
        }
        if (table) {
            i64 crc = row[PH_CRC];
            row[PH_CRC] = crc == PH_CRC_ABSENT ? -1 : crc & 0xFFFFFFFFll;  // i32 on the wire
            for (int s = 0; s < PH_FIELDS; s++) table[s * total + first + count] = row[s];
        }
        count++;
    }
    *pages = count;
    if (sum_beyond || sum_low != (u64)expected || sum_high != (expected < 0 ? -1 : 0)) {
        *where = size;
        return PH_VALUE_COUNT;
    }
    *where = late_where;
    return late;
}

extern "C" {

__global__ void page_headers_count(const unsigned char* buffer, const i64* starts, const i64* sizes,
                                   const i64* expected, i64 chunks, i64* info) {
    for (i64 c = thread_index(); c < chunks; c += thread_count()) {
        i64 where = -1, pages = 0;
        int status = walk_chunk(buffer + starts[c], sizes[c], expected[c], c, &where, &pages, nullptr, 0, 0);
        info[c] = status;
        info[chunks + c] = where;
        info[2 * chunks + c] = status == PH_OK ? pages : 0;
    }
}

__global__ void page_headers_fill(const unsigned char* buffer, const i64* starts, const i64* sizes,
                                  const i64* expected, i64 chunks, const i64* info, const i64* first,
                                  i64 total, i64* table) {
    for (i64 c = thread_index(); c < chunks; c += thread_count()) {
        if (info[c] != PH_OK) continue;
        i64 where, pages;
        walk_chunk(buffer + starts[c], sizes[c], expected[c], c, &where, &pages, table, total, first[c]);
    }
}

}  // extern "C"

// ---- CRC32 --------------------------------------------------------------------------------
// zlib's CRC-32: polynomial P = x^32 + x^26 + ... + 1 (0x04C11DB7), bits reflected (0xEDB88320),
// register preset to ~0 and complemented at the end. In the reflected form a 32-bit word is a
// polynomial of degree < 32 with bit 31 the coefficient of x^0 and bit 0 that of x^31, and a
// message M (bytes, each least significant bit first) is the polynomial whose first bit is the
// highest power.
//
// Let R(M) = M * x^32 mod P, the register after M from a register of 0 (the byte-wise update
// r = T0[(r ^ b) & 0xFF] ^ (r >> 8) from 0). From a register r, M leaves r * x^(8|M|) + R(M)
// (GF(2): + is xor), both terms linear, so
//     R(A || B) = R(A) * x^(8|B|) + R(B)                                       (1)
//     crc32(M)  = ~(0xFFFFFFFF * x^(8|M|) + R(M))                              (2)
// (2) treats the preset as 32 ones before M. Applying (1) to a page cut into segments S_1..S_k:
//     crc32(page) = ~(0xFFFFFFFF * x^(8L) + sum_j R(S_j) * x^(8 a_j))
// with L the page's length and a_j the bytes after S_j. Every term is computed independently
// (one thread per segment) and the sum is an xor: crc starts at 0xFFFFFFFF (the complement),
// each segment's thread xors its term in with atomicXor, the first segment's thread also the
// preset's term. A page of 0 bytes has one empty segment: its crc is ~0xFFFFFFFF = 0.
//
// x^(8n) mod P for any n: `powers` (the driver computes it) holds x^(8 d 16^k) mod P at
// [16k + d] for k < 16, d < 16, so n's hexadecimal digits select at most 16 products.
//   segments : i64 [pages + 1]  exclusive prefix sum of each page's max(1, ceil(len / CRC_SEGMENT))

#define CRC_POLY 0xEDB88320u
#define CRC_SEGMENT 4096
#define CRC_THREADS 256

// a * b mod P (reflected). For i = 0..31, b holds b * x^i: multiplying by x shifts toward
// bit 0, and an x^32 leaving bit 0 comes back as P's lower terms.
__device__ __forceinline__ unsigned crc_times(unsigned a, unsigned b) {
    unsigned p = 0;
    for (int i = 0; i < 32; i++) {
        p ^= b & (0u - ((a >> (31 - i)) & 1u));
        b = (b >> 1) ^ (CRC_POLY & (0u - (b & 1u)));
    }
    return p;
}

// r * x^(8n) mod P.
__device__ __forceinline__ unsigned crc_shift(unsigned r, u64 n, const unsigned* power) {
    for (int k = 0; n && r; k++, n >>= 4) {
        unsigned d = (unsigned)(n & 15);
        if (d) r = crc_times(r, power[16 * k + d]);
    }
    return r;
}

// R(bytes[0 .. n)) (register from 0, no complement). Slicing by 16: table[256 j + b] is byte b
// followed by j zero bytes, so 16 bytes (the register xored into the first 4) take 16 lookups
// in independent tables; loads are 16-byte aligned, the bytes before and after one at a time.
__device__ unsigned crc_raw(const unsigned char* bytes, i64 n, const unsigned* table) {
    unsigned r = 0;
    i64 head = (i64)((16 - ((u64)bytes & 15)) & 15);
    if (head > n) head = n;
    for (i64 i = 0; i < head; i++) r = table[(r ^ bytes[i]) & 0xFF] ^ (r >> 8);
    const uint4* words = (const uint4*)(bytes + head);
    i64 count = (n - head) >> 4;
#pragma unroll 4
    for (i64 i = 0; i < count; i++) {
        uint4 w = __ldg(words + i);  // little-endian: w.x holds the first 4 bytes
        unsigned a = w.x ^ r;
        r = table[15 * 256 + (a & 0xFF)] ^ table[14 * 256 + ((a >> 8) & 0xFF)] ^
            table[13 * 256 + ((a >> 16) & 0xFF)] ^ table[12 * 256 + (a >> 24)] ^
            table[11 * 256 + (w.y & 0xFF)] ^ table[10 * 256 + ((w.y >> 8) & 0xFF)] ^
            table[9 * 256 + ((w.y >> 16) & 0xFF)] ^ table[8 * 256 + (w.y >> 24)] ^
            table[7 * 256 + (w.z & 0xFF)] ^ table[6 * 256 + ((w.z >> 8) & 0xFF)] ^
            table[5 * 256 + ((w.z >> 16) & 0xFF)] ^ table[4 * 256 + (w.z >> 24)] ^
            table[3 * 256 + (w.w & 0xFF)] ^ table[2 * 256 + ((w.w >> 8) & 0xFF)] ^
            table[1 * 256 + ((w.w >> 16) & 0xFF)] ^ table[w.w >> 24];
    }
    for (i64 i = head + (count << 4); i < n; i++) r = table[(r ^ bytes[i]) & 0xFF] ^ (r >> 8);
    return r;
}

extern "C" __global__ void __launch_bounds__(CRC_THREADS)
crc32_segments(const unsigned char* buffer, const i64* starts, const i64* lengths, const i64* segments,
               i64 pages, const unsigned* powers, unsigned* crc) {
    __shared__ unsigned table[16 * 256];
    __shared__ unsigned power[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        unsigned c = (unsigned)b;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (CRC_POLY & (0u - (c & 1u)));
        table[b] = c;
        power[b] = powers[b];
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {  // reads only table[0 .. 256)
        unsigned c = table[b];
        for (int j = 1; j < 16; j++) {
            c = (c >> 8) ^ table[c & 0xFF];
            table[256 * j + b] = c;
        }
    }
    __syncthreads();
    i64 total = segments[pages];
    for (i64 s = thread_index(); s < total; s += thread_count()) {
        i64 lo = 0, hi = pages - 1;  // the page: the last p with segments[p] <= s
        while (lo < hi) {
            i64 mid = (lo + hi + 1) >> 1;
            if (segments[mid] <= s) lo = mid; else hi = mid - 1;
        }
        i64 length = lengths[lo];
        i64 a = (s - segments[lo]) * CRC_SEGMENT;
        i64 b = a + CRC_SEGMENT < length ? a + CRC_SEGMENT : length;
        unsigned term = crc_shift(crc_raw(buffer + starts[lo] + a, b - a, table), (u64)(length - b), power);
        if (a == 0) term ^= crc_shift(0xFFFFFFFFu, (u64)length, power);
        if (term) atomicXor(crc + lo, term);
    }
}
