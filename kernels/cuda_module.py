"""The GPU backend's CUDA module compiled ahead of time, and whether it can serve a device.

kernels/cuda/module.fatbin is ``cuda_source.for_nvcc()`` compiled by nvcc to SASS for every
arch in SASS_ARCHS and to PTX for PTX_ARCH (which the driver compiles for a newer GPU);
kernels/cuda/module.json, its manifest, records the sha256 of the text compiled and of the
fatbin, the nvcc version and options, the archs found in the fatbin, and the symbol of every
kernel under the name ``kernels.gpu.kernel`` is asked for (a plain name, or a template's name
expression "msf_band_fill<double,int>"). ``python -m kernels.build_module`` (``make kernels``)
writes both. A process uses the fatbin only when the manifest describes exactly today's
sources and that file; otherwise it compiles the sources with NVRTC, as it would without one.
No CuPy import: the choice is tested without a GPU.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import NamedTuple

from kernels.cuda_source import DIRECTORY, for_nvcc

FATBIN = DIRECTORY / "module.fatbin"
MANIFEST = DIRECTORY / "module.json"
SASS_ARCHS = (80, 90, 100)  # A100, H100/H200, B200: compute capability x 10
PTX_ARCH = 100
NVRTC_ENV = "GRAPH_CUDA_NVRTC"  # set (not 0): always compile with NVRTC, for debugging
REBUILD = "run `make kernels` to rebuild it"


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def read_manifest(path=MANIFEST) -> dict:
    return json.loads(path.read_text())


def sass_for(capability: int, archs) -> int | None:
    """The SASS arch a device runs: same major version, the highest minor not above its own
    (compute capabilities as major * 10 + minor: 86 runs sm_80 code, 90 only sm_90's)."""
    fitting = [a for a in archs if a // 10 == capability // 10 and a <= capability]
    return max(fitting, default=None)


class Choice(NamedTuple):
    target: str | None  # "sm_90" (SASS), "compute_100" (PTX the driver compiles), None: use NVRTC
    symbols: dict  # kernel() name -> symbol in the fatbin
    why: str = ""  # why not, where target is None


def fatbin_choice(capability: int, manifest_path=MANIFEST, fatbin_path=FATBIN) -> Choice:
    """Whether the fatbin serves a device of this compute capability (major * 10 + minor)."""
    if os.environ.get(NVRTC_ENV, "").strip() not in ("", "0"):
        return Choice(None, {}, f"{NVRTC_ENV} is set")
    try:
        manifest = read_manifest(manifest_path)
        fatbin = fatbin_path.read_bytes()
    except (OSError, ValueError) as e:
        return Choice(None, {}, f"no usable prebuilt module ({e}); {REBUILD}")
    if manifest.get("source_sha256") != sha256(for_nvcc()):
        return Choice(None, {}, f"the CUDA sources changed since {fatbin_path.name} was built; {REBUILD}")
    if manifest.get("fatbin_sha256") != sha256(fatbin):
        return Choice(None, {}, f"{fatbin_path.name} is not the file its manifest describes; {REBUILD}")
    sass = sass_for(capability, manifest["sass_archs"])
    if sass is not None:
        return Choice(f"sm_{sass}", manifest["kernels"])
    ptx = [a for a in manifest["ptx_archs"] if a <= capability]
    if ptx:
        return Choice(f"compute_{max(ptx)}", manifest["kernels"])
    return Choice(None, {}, f"{fatbin_path.name} has no code for compute capability "
                            f"{capability // 10}.{capability % 10}")
