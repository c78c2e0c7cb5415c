"""Parquet's format facts, each defined once: the enums of parquet.thrift the reader and the
writer use, the compact protocol's type codes, ULEB128 and zigzag varints, and the page table's
fields. Every other module imports them from here, the CUDA sources included
(kernels.cuda_source writes the constants the kernels use as a preamble of ``constexpr``
definitions).

Standard library only, like kernels.structures' constants: the command line and the CUDA build
read it without NumPy. The sources cited: parquet-format's src/main/thrift/parquet.thrift
("parquet.thrift"), Encodings.md, Compression.md, and Thrift's compact protocol
(thrift/doc/specs/thrift-compact-protocol.md, "compact protocol").
"""
from __future__ import annotations

# PageType (parquet.thrift)
DATA_PAGE = 0
INDEX_PAGE = 1
DICTIONARY_PAGE = 2
DATA_PAGE_V2 = 3
DATA_PAGES = (DATA_PAGE, DATA_PAGE_V2)  # the page types that hold a column's values

# Encoding (parquet.thrift; Encodings.md describes each); 1 is unused (GROUP_VAR_INT, removed)
PLAIN = 0
PLAIN_DICTIONARY = 2  # the dictionary encoding of format 1.0: indices as RLE_DICTIONARY's
RLE = 3  # the RLE/bit-packed hybrid (levels, booleans)
BIT_PACKED = 4  # deprecated levels encoding
DELTA_BINARY_PACKED = 5
DELTA_LENGTH_BYTE_ARRAY = 6
DELTA_BYTE_ARRAY = 7
RLE_DICTIONARY = 8  # dictionary indices: a bit-width byte, then the hybrid
BYTE_STREAM_SPLIT = 9
ENCODING_NAMES = {PLAIN: "PLAIN", PLAIN_DICTIONARY: "PLAIN_DICTIONARY", RLE: "RLE", BIT_PACKED: "BIT_PACKED",
                  DELTA_BINARY_PACKED: "DELTA_BINARY_PACKED", DELTA_LENGTH_BYTE_ARRAY: "DELTA_LENGTH_BYTE_ARRAY",
                  DELTA_BYTE_ARRAY: "DELTA_BYTE_ARRAY", RLE_DICTIONARY: "RLE_DICTIONARY",
                  BYTE_STREAM_SPLIT: "BYTE_STREAM_SPLIT"}
# A dictionary page's values are PLAIN; format 1.0 files call that PLAIN_DICTIONARY (Encodings.md)
DICTIONARY_PAGE_ENCODINGS = (PLAIN, PLAIN_DICTIONARY)
# A data page in these holds indices into its chunk's dictionary page (Encodings.md)
DICTIONARY_INDEX_ENCODINGS = (PLAIN_DICTIONARY, RLE_DICTIONARY)

# Type, the physical types (parquet.thrift), by the name pyarrow's metadata gives them
PHYSICAL_TYPES = {"BOOLEAN": 0, "INT32": 1, "INT64": 2, "INT96": 3, "FLOAT": 4, "DOUBLE": 5, "BYTE_ARRAY": 6,
                  "FIXED_LEN_BYTE_ARRAY": 7}
# The fixed-width physical types the page decoder reads and the page writer writes, with their
# NumPy dtype: PLAIN stores them little-endian (Encodings.md)
PHYSICAL_DTYPES = {"INT32": "<i4", "INT64": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}

# FieldRepetitionType (parquet.thrift)
REQUIRED = 0
OPTIONAL = 1
REPEATED = 2

# CompressionCodec (parquet.thrift), by the name pyarrow's metadata gives a chunk's codec. LZ4
# is Hadoop's framing of LZ4 blocks, LZ4_RAW one bare block, GZIP RFC 1952 (Compression.md)
CODECS = {"UNCOMPRESSED": 0, "SNAPPY": 1, "GZIP": 2, "LZO": 3, "BROTLI": 4, "LZ4": 5, "ZSTD": 6, "LZ4_RAW": 7}

# The compact protocol's type codes: the low nibble of a field header or of a list's header
# (compact protocol); a boolean field's value is its type, TRUE or FALSE
TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)

# PageHeader's fields the page table keeps (parquet.thrift): field id -> PAGE_FIELDS name, and
# the nested headers' fields by the id of the PageHeader field holding them
PAGE_HEADER_FIELDS = {1: "page_type", 2: "uncompressed_size", 3: "compressed_size", 4: "crc"}
NESTED_HEADER_FIELDS = {
    5: {1: "num_values", 2: "encoding", 3: "definition_level_encoding"},  # DataPageHeader
    7: {1: "num_values", 2: "encoding"},  # DictionaryPageHeader
    8: {1: "num_values", 2: "num_nulls", 3: "num_rows", 4: "encoding",  # DataPageHeaderV2
        5: "definition_levels_length", 6: "repetition_levels_length", 7: "is_compressed"},
}

# The page table's columns (kernels.parquet.headers.PageTable; kernels/cuda/parquet_headers.cu
# fills them in this slot order), int64 each, one row per page; -1 where a header lacks the field.
PAGE_FIELDS = (
    "chunk",  # index into the plan
    "header_offset",  # offset of the page header inside the chunk's bytes
    "offset",  # offset of the page's bytes (after the header) inside the chunk's bytes
    "page_type",  # DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2
    "uncompressed_size",
    "compressed_size",  # bytes stored after the header
    "crc",  # CRC32 of the stored bytes as an unsigned 32-bit value; -1 = not stored
    "num_values",  # values (data pages: nulls included) or dictionary entries
    "encoding",  # the values' Encoding
    "definition_level_encoding",  # v1 data pages
    "num_nulls",  # v2 data pages
    "num_rows",  # v2 data pages
    "definition_levels_length",  # v2: bytes of definition levels (stored uncompressed)
    "repetition_levels_length",  # v2: bytes of repetition levels (stored uncompressed)
    "is_compressed",  # v2: 0 when the values are stored uncompressed; 1 otherwise (its default)
)


def read_uleb128(data, pos: int) -> tuple[int, int]:
    """(value, position after) of the ULEB128 at ``data[pos]``: 7 bits a byte, least significant
    first, a byte below 0x80 the last (the hybrid's run headers, Thrift's varints, Snappy's
    preamble). ``data`` indexes to ints (bytes, bytearray, a memoryview of uint8); IndexError
    where the varint runs past its end."""
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def uleb128(value: int) -> bytes:
    """A non-negative integer as ULEB128 (``read_uleb128`` reads it back)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag_decode(n: int) -> int:
    """The signed integer a zigzag code stands for (0, -1, 1, -2, ... from 0, 1, 2, 3, ...):
    Thrift's integers, DELTA_BINARY_PACKED's first value and minimum deltas."""
    return (n >> 1) ^ -(n & 1)


def zigzag_encode(n: int) -> int:
    """The zigzag code of a signed 64-bit integer."""
    return (n << 1) ^ (n >> 63)
