"""The CUDA source of the GPU backend as one module, and the template kernels it instantiates.

kernels/cuda/common.cuh, graph.cu, bfs.cu, bfs_partitioned.cu, msf.cu, parquet_headers.cu and
parquet_values.cu are compiled together, in that order, as one module; a file may use what the
files before it define. ``make kernels`` builds it ahead of time with nvcc (kernels/build_module.py,
``for_nvcc``); at run time kernels/gpu.py loads that build, or compiles ``source()`` with NVRTC
where the build does not match the sources or the device. Template kernels are named with their
arguments ("msf_min_key<double,int>"): CuPy's name expressions instantiate them under NVRTC;
``for_nvcc`` appends references that instantiate the same list. No CuPy import here, so the
compile test runs without a GPU.
"""
from __future__ import annotations

from pathlib import Path

FILES = ("common.cuh", "graph.cu", "bfs.cu", "bfs_partitioned.cu", "msf.cu", "parquet_headers.cu",
         "parquet_values.cu")
DIRECTORY = Path(__file__).parent / "cuda"

ID_TYPES = {"int32": "int", "int64": "long long", "uint64": "unsigned long long"}
WEIGHT_TYPES = {"float32": "float", "float64": "double"}
EDGE_TYPES = {"int32": "int", "int64": "long long"}
# Parquet values moved as raw bits, by their width in bytes
VALUE_TYPES = {4: "unsigned int", 8: "unsigned long long"}


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
    return names


def source() -> str:
    return "\n".join((DIRECTORY / f).read_text() for f in FILES)


def for_nvcc() -> str:
    """The module with every template instantiated (taking a kernel's address instantiates it)."""
    refs = ",\n".join(f"    (const void*)&{name}" for name in name_expressions())
    return source() + f"\n__device__ const void* instantiated[] = {{\n{refs}\n}};\n"


