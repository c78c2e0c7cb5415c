"""The CUDA source of the GPU backend as one module, and the template kernels it instantiates.

kernels/cuda/common.cuh, arrays.cu, verify.cu, graph.cu, bfs.cu, bfs_partitioned.cu, msf.cu,
parquet_headers.cu, parquet_values.cu and parquet_encode.cu are compiled together, in that order,
as one module; a file may use what the files before it define. Before them comes ``parquet_preamble()``: the Parquet format's facts the
kernels use (page types, the compact protocol's type codes, the page table's slots, PageHeader's
kept fields), written as C++ from kernels/parquet/format.py, so the kernels spell none of them. ``make kernels`` builds it ahead of time with nvcc (kernels/build_module.py,
``for_nvcc``); at run time kernels/gpu.py loads that build, or compiles ``source()`` with NVRTC
where the build does not match the sources or the device. Template kernels are named with their
arguments ("msf_min_key<double,int>"): CuPy's name expressions instantiate them under NVRTC;
``for_nvcc`` appends references that instantiate the same list. No CuPy import here, so the
compile test runs without a GPU.
"""
from __future__ import annotations

from pathlib import Path

from kernels.parquet import format as parquet

FILES = ("common.cuh", "arrays.cu", "verify.cu", "graph.cu", "bfs.cu", "bfs_partitioned.cu", "msf.cu", "parquet_headers.cu",
         "parquet_values.cu", "parquet_encode.cu")
DIRECTORY = Path(__file__).parent / "cuda"

ID_TYPES = {"int32": "int", "int64": "long long", "uint64": "unsigned long long"}
WEIGHT_TYPES = {"float32": "float", "float64": "double"}
EDGE_TYPES = {"int32": "int", "int64": "long long"}
# Parquet values moved as raw bits, by their width in bytes
VALUE_TYPES = {4: "unsigned int", 8: "unsigned long long"}
# kernels/cuda/arrays.cu's element types, by NumPy dtype name
ARRAY_TYPES = {"int32": "int", "int64": "long long", "uint32": "unsigned int", "uint64": "unsigned long long",
               "float32": "float", "float64": "double"}
INTEGER_TYPES = ("int32", "int64", "uint32", "uint64")
ARRAY_CASTS = (("int32", "int64"), ("int64", "int32"))
# float widths as the unsigned integers count_nonfinite reads their bits as
FLOAT_BITS = {"float32": ("float", "unsigned int"), "float64": ("double", "unsigned long long")}
# values kernels/cuda/parquet_encode.cu's hybrid encoder takes, and the signed integers its
# dictionary orders 4- and 8-byte values' bit patterns as (NumPy view, C++ type)
HYBRID_TYPES = {"bool": "bool", "uint32": "unsigned int"}
BIT_PATTERN_TYPES = {4: ("int32", "int"), 8: ("int64", "long long")}
# weights the forest's checks order (kernels/cuda/verify.cu, order_key)
FOREST_WEIGHT_TYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long"}


def template(name: str, *types: str) -> str:
    return f"{name}<{','.join(types)}>"


def name_expressions() -> list[str]:
    names = []
    for t in ID_TYPES.values():
        names += [template("ids_mark", t), template("ids_list", t)]
    for w in WEIGHT_TYPES.values():
        names += [template(k, w) for k in ("msf_sample", "msf_histogram")]
        names += [template("msf_band_fill", w, e) for e in EDGE_TYPES.values()]
    for e in EDGE_TYPES.values():
        names += [template(k, e) for k in ("msf_min_edge", "msf_hook", "msf_relabel")]
    for v in VALUE_TYPES.values():
        names += [template(k, v) for k in ("plain_copy", "dictionary_expand")]
    names += [template("array_iota", ARRAY_TYPES[t]) for t in INTEGER_TYPES]
    names += [template(k, t) for t in ARRAY_TYPES.values() for k in ("array_fill", "array_take")]
    names += [template(k, t) for t in EDGE_TYPES.values() for k in ("count_at_least", "count_ends_reached",
                                                                   "array_bincount")]
    names += [template("array_cast", ARRAY_TYPES[a], ARRAY_TYPES[b]) for a, b in ARRAY_CASTS]
    names += [template("count_equal", t) for t in EDGE_TYPES.values()]
    names += [template("count_nonfinite", *bits) for bits in FLOAT_BITS.values()]
    for d in EDGE_TYPES.values():
        names += [template(k, d) for k in ("bfs_check_sources", "bfs_check_vertices")]
        names += [template("bfs_check_arcs", e, d) for e in EDGE_TYPES.values()]
    for e in EDGE_TYPES.values():
        names += [template(k, e) for k in ("forest_hook", "forest_crossing", "forest_arc_keys", "forest_orient")]
        names += [template("forest_cycle_check", e, w) for w in FOREST_WEIGHT_TYPES.values()]
    names += [template(k, w) for w in FOREST_WEIGHT_TYPES.values() for k in ("forest_weight_keys", "forest_ranks")]
    names += [template("array_compress", t) for t in ARRAY_TYPES.values()]
    names += [template("bfs_result_columns", ARRAY_TYPES[i], p) for i in INTEGER_TYPES for p in EDGE_TYPES.values()]
    names += [template("exact_slot_sums", *bits) for bits in FLOAT_BITS.values()]
    names += [template(k, v) for v in HYBRID_TYPES.values()
              for k in ("hybrid_run_flags", "hybrid_run_lengths", "hybrid_write_runs", "hybrid_write_groups")]
    names += [template(k, t) for _, t in BIT_PATTERN_TYPES.values()
              for k in ("dictionary_flags", "dictionary_distinct", "dictionary_index")]
    return names


# The compact protocol's type codes, as the kernels name them (T_ and format.py's name)
THRIFT_TYPES = ("TRUE", "FALSE", "BYTE", "I16", "I32", "I64", "DOUBLE", "BINARY", "LIST", "SET", "MAP", "STRUCT")


def _switch(value: str, cases: dict, default: str) -> str:
    arms = " ".join(f"case {k}: return {v};" for k, v in cases.items())
    return f"switch ({value}) {{ {arms} default: return {default}; }}"


def parquet_preamble() -> str:
    """kernels/parquet/format.py's facts the CUDA kernels use, as C++ definitions."""
    slot = {name: f"PH_{name.upper()}" for name in parquet.PAGE_FIELDS}
    nested = {header: _switch("id", {k: slot[v] for k, v in fields.items()}, "-1")
              for header, fields in parquet.NESTED_HEADER_FIELDS.items()}
    lines = [
        "// Parquet's format facts (kernels/parquet/format.py), written by kernels/cuda_source.py.",
        *(f"constexpr int {name} = {getattr(parquet, name)};  // PageType"
          for name in ("DATA_PAGE", "INDEX_PAGE", "DICTIONARY_PAGE", "DATA_PAGE_V2")),
        *(f"constexpr unsigned T_{name} = {getattr(parquet, name)};  // compact protocol type" for name in THRIFT_TYPES),
        "// Slots of a page row: PAGE_FIELDS, in that order; PH_FIELDS slots in all.",
        f"enum {{ {', '.join(slot.values())}, PH_FIELDS }};",
        "// The slot of PageHeader field `id` (an i32 the table keeps), -1 for another field.",
        "__device__ __forceinline__ int page_header_slot(unsigned long long id) { "
        + _switch("id", {k: slot[v] for k, v in parquet.PAGE_HEADER_FIELDS.items()}, "-1") + " }",
        "// Whether PageHeader field `id` is a nested header (a struct) whose fields the table keeps.",
        "__device__ __forceinline__ bool page_header_nested(unsigned long long id) { "
        + _switch("id", {k: "true" for k in nested}, "false") + " }",
        "// The slot of field `id` of the nested header in PageHeader field `header`, -1 if not kept.",
        "__device__ __forceinline__ int nested_header_slot(unsigned long long header, unsigned long long id) {",
        *(f"    if (header == {header}) {{ {body} }}" for header, body in nested.items()),
        "    return -1;",
        "}",
    ]
    return "\n".join(lines) + "\n"


def source() -> str:
    return "\n".join([parquet_preamble(), *((DIRECTORY / f).read_text() for f in FILES)])


def for_nvcc() -> str:
    """The module with every template instantiated (taking a kernel's address instantiates it)."""
    refs = ",\n".join(f"    (const void*)&{name}" for name in name_expressions())
    return source() + f"\n__device__ const void* instantiated[] = {{\n{refs}\n}};\n"


