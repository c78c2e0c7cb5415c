"""Parquet's format facts, each defined once: the enums of parquet.thrift the reader and the
writer use, the Thrift field ids of its structs they read or write, the compact protocol's type
codes, ULEB128 and zigzag varints, and the page table's fields. Every other module imports them from here, the CUDA sources included
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

# Thrift field ids of the parquet.thrift structs the reader and the writer read or write, one
# class per struct, named after the struct with "Field" appended (kernels.parquet.thrift's trees
# are lists of [field id, type, value]), each attribute named after parquet.thrift's field.


class PageHeaderField:  # PageHeader
    type = 1  # PageType
    uncompressed_page_size = 2
    compressed_page_size = 3
    crc = 4
    data_page_header = 5
    index_page_header = 6
    dictionary_page_header = 7
    data_page_header_v2 = 8


class DataPageHeaderField:  # DataPageHeader
    num_values = 1
    encoding = 2
    definition_level_encoding = 3
    repetition_level_encoding = 4
    statistics = 5


class DictionaryPageHeaderField:  # DictionaryPageHeader
    num_values = 1
    encoding = 2
    is_sorted = 3


class DataPageHeaderV2Field:  # DataPageHeaderV2
    num_values = 1
    num_nulls = 2
    num_rows = 3
    encoding = 4
    definition_levels_byte_length = 5
    repetition_levels_byte_length = 6
    is_compressed = 7
    statistics = 8


class StatisticsField:  # Statistics
    max = 1  # deprecated: signed order only
    min = 2  # deprecated: signed order only
    null_count = 3
    distinct_count = 4
    max_value = 5
    min_value = 6
    is_max_value_exact = 7
    is_min_value_exact = 8
    nan_count = 9


class SizeStatisticsField:  # SizeStatistics
    unencoded_byte_array_data_bytes = 1
    repetition_level_histogram = 2
    definition_level_histogram = 3


class SchemaElementField:  # SchemaElement
    type = 1  # Type, the physical type
    type_length = 2
    repetition_type = 3
    name = 4
    num_children = 5
    converted_type = 6
    scale = 7
    precision = 8
    field_id = 9
    logicalType = 10
    vector_length = 11


class KeyValueField:  # KeyValue
    key = 1
    value = 2


class PageEncodingStatsField:  # PageEncodingStats
    page_type = 1
    encoding = 2
    count = 3


class ColumnMetaDataField:  # ColumnMetaData
    type = 1  # Type, the physical type
    encodings = 2
    path_in_schema = 3
    codec = 4
    num_values = 5
    total_uncompressed_size = 6
    total_compressed_size = 7
    key_value_metadata = 8
    data_page_offset = 9
    index_page_offset = 10
    dictionary_page_offset = 11
    statistics = 12
    encoding_stats = 13
    bloom_filter_offset = 14
    bloom_filter_length = 15
    size_statistics = 16
    geospatial_statistics = 17


class ColumnChunkField:  # ColumnChunk
    file_path = 1
    file_offset = 2  # deprecated
    meta_data = 3
    offset_index_offset = 4
    offset_index_length = 5
    column_index_offset = 6
    column_index_length = 7
    crypto_metadata = 8
    encrypted_column_metadata = 9


class RowGroupField:  # RowGroup
    columns = 1
    total_byte_size = 2
    num_rows = 3
    sorting_columns = 4
    file_offset = 5
    total_compressed_size = 6
    ordinal = 7


class ColumnOrderField:  # ColumnOrder, a union
    TYPE_ORDER = 1
    IEEE_754_TOTAL_ORDER = 2
    INT96_TIMESTAMP_ORDER = 3


class FileMetaDataField:  # FileMetaData
    version = 1
    schema = 2
    num_rows = 3
    row_groups = 4
    key_value_metadata = 5
    created_by = 6
    column_orders = 7
    encryption_algorithm = 8
    footer_signing_key_metadata = 9


# PageHeader's fields the page table keeps: field id -> PAGE_FIELDS name, and the nested
# headers' fields by the id of the PageHeader field holding them
PAGE_HEADER_FIELDS = {PageHeaderField.type: "page_type", PageHeaderField.uncompressed_page_size: "uncompressed_size",
                      PageHeaderField.compressed_page_size: "compressed_size", PageHeaderField.crc: "crc"}
NESTED_HEADER_FIELDS = {
    PageHeaderField.data_page_header: {
        DataPageHeaderField.num_values: "num_values", DataPageHeaderField.encoding: "encoding",
        DataPageHeaderField.definition_level_encoding: "definition_level_encoding"},
    PageHeaderField.dictionary_page_header: {
        DictionaryPageHeaderField.num_values: "num_values", DictionaryPageHeaderField.encoding: "encoding"},
    PageHeaderField.data_page_header_v2: {
        DataPageHeaderV2Field.num_values: "num_values", DataPageHeaderV2Field.num_nulls: "num_nulls",
        DataPageHeaderV2Field.num_rows: "num_rows", DataPageHeaderV2Field.encoding: "encoding",
        DataPageHeaderV2Field.definition_levels_byte_length: "definition_levels_length",
        DataPageHeaderV2Field.repetition_levels_byte_length: "repetition_levels_length",
        DataPageHeaderV2Field.is_compressed: "is_compressed"},
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
