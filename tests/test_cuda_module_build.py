"""The GPU backend's CUDA module ships compiled ahead of time (kernels/cuda/module.fatbin and its
manifest module.json) and a GPU process loads it instead of compiling: the shipped files describe
today's sources and every kernel the drivers ask for; a fresh build gives the same manifest; the
fatbin holds SASS for sm_80, sm_90, sm_100 and PTX; each compute capability gets the right code,
or NVRTC with the reason; on a GPU the first kernel comes from the fatbin, runs right, and leaves
CuPy's kernel cache empty."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernels import backend as be
from kernels.build_module import build, fatbin_entries, nvcc_version
from kernels.cuda_module import (FATBIN, MANIFEST, NVRTC_ENV, PTX_ARCH, SASS_ARCHS, fatbin_choice,
                                 read_manifest, sass_for, sha256)
from kernels.cuda_source import for_nvcc, name_expressions
from tests.helpers import child_pythonpath

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


def test_shipped_manifest_describes_the_current_sources_and_fatbin():
    manifest = read_manifest()
    assert manifest["source_sha256"] == sha256(for_nvcc()), (
        "kernels/cuda/*.cu or kernels/cuda_source.py changed since kernels/cuda/module.fatbin was "
        "built: run `make kernels` and commit module.fatbin and module.json")
    assert manifest["fatbin_sha256"] == sha256(FATBIN.read_bytes()), (
        "kernels/cuda/module.fatbin is not the file module.json describes: run `make kernels`")


def test_every_kernel_name_the_drivers_ask_for_is_in_the_manifest():
    drivers = "\n".join(p.read_text() for p in sorted(KERNELS.rglob("*.py")))
    plain = set(re.findall(r'(?:kernel|launch)\("(\w+)"', drivers))
    assert plain
    missing = sorted((plain | set(name_expressions())) - set(read_manifest()["kernels"]))
    assert missing == [], "not in kernels/cuda/module.json (run `make kernels`)"


def test_shipped_fatbin_holds_sass_for_sm80_sm90_sm100_and_ptx():
    entries = sorted(fatbin_entries(FATBIN.read_bytes()))
    assert entries == sorted([("sass", a) for a in SASS_ARCHS] + [("ptx", PTX_ARCH)])
    assert [80, 90, 100] == list(SASS_ARCHS) and PTX_ARCH == 100
    assert FATBIN.stat().st_size < 1_000_000  # it is committed: compressed, about 200 KB


@pytest.mark.skipif(shutil.which("cuobjdump") is None, reason="cuobjdump not installed")
def test_cuobjdump_lists_the_same_sass_and_ptx():
    listed = subprocess.run(["cuobjdump", "--list-elf", "--list-ptx", str(FATBIN)], capture_output=True,
                            text=True, check=True).stdout
    assert sorted(set(re.findall(r"\.sm_(\d+)\.cubin", listed)), key=int) == ["80", "90", "100"]
    assert re.findall(r"\.(?:sm|compute)_(\d+)\.ptx", listed) == ["100"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_fresh_build_gives_the_shipped_manifest(tmp_path):
    fresh = build(tmp_path)
    assert json.loads((tmp_path / "module.json").read_text()) == fresh
    shipped = read_manifest()
    same = ("source_sha256", "options", "sass_archs", "ptx_archs", "kernels")
    assert {k: fresh[k] for k in same} == {k: shipped[k] for k in same}, (
        "stale kernels/cuda/module.json: run `make kernels`")
    if nvcc_version(shutil.which("nvcc")) == shipped["nvcc"]:  # same compiler: the same bytes
        assert (tmp_path / "module.fatbin").read_bytes() == FATBIN.read_bytes()
        assert fresh == shipped


@pytest.mark.parametrize("capability, target", [
    (80, "sm_80"), (86, "sm_80"), (89, "sm_80"),  # Ampere and Ada run sm_80 code
    (90, "sm_90"), (100, "sm_100"), (103, "sm_100"),
    (120, "compute_100"),  # no SASS of its major version: the driver compiles the PTX
])
def test_each_compute_capability_gets_its_code_from_the_fatbin(monkeypatch, capability, target):
    monkeypatch.delenv(NVRTC_ENV, raising=False)
    choice = fatbin_choice(capability)
    assert (choice.target, choice.why) == (target, "")
    assert choice.symbols == read_manifest()["kernels"]


def test_a_gpu_older_than_every_build_falls_back_to_nvrtc(monkeypatch):
    monkeypatch.delenv(NVRTC_ENV, raising=False)
    assert sass_for(75, SASS_ARCHS) is None
    assert fatbin_choice(75) == (None, {}, "module.fatbin has no code for compute capability 7.5")


def test_the_environment_forces_nvrtc_unless_it_says_0(monkeypatch):
    monkeypatch.setenv(NVRTC_ENV, "1")
    assert fatbin_choice(90) == (None, {}, "GRAPH_CUDA_NVRTC is set")
    monkeypatch.setenv(NVRTC_ENV, "0")
    assert fatbin_choice(90).target == "sm_90"


def test_a_manifest_of_other_sources_or_another_fatbin_means_nvrtc_and_says_make_kernels(tmp_path, monkeypatch):
    monkeypatch.delenv(NVRTC_ENV, raising=False)
    manifest, fatbin = tmp_path / "module.json", tmp_path / "module.fatbin"
    fatbin.write_bytes(FATBIN.read_bytes())
    stale = dict(read_manifest(), source_sha256=sha256(for_nvcc() + "// one kernel edited\n"))
    manifest.write_text(json.dumps(stale))
    assert fatbin_choice(90, manifest, fatbin) == (
        None, {}, "the CUDA sources changed since module.fatbin was built; run `make kernels` to rebuild it")
    manifest.write_text(MANIFEST.read_text())
    damaged = bytearray(FATBIN.read_bytes())
    damaged[1000] ^= 0xFF
    fatbin.write_bytes(damaged)
    assert fatbin_choice(90, manifest, fatbin) == (
        None, {}, "module.fatbin is not the file its manifest describes; run `make kernels` to rebuild it")
    manifest.unlink()
    choice = fatbin_choice(90, manifest, fatbin)
    assert choice.target is None and choice.why.startswith("no usable prebuilt module ([Errno 2]")
    assert choice.why.endswith("run `make kernels` to rebuild it")


# In a fresh process with an empty CuPy cache: the CSR degree count and the int64 id marking
# (a template kernel) run before any CuPy kernel of its own is compiled, so the cache is still
# empty after them exactly when our module was not compiled.
FIRST_KERNELS = """
import json, sys
from pathlib import Path
import cupy as cp, numpy as np
from kernels import gpu, gpu_graph
src = cp.asarray(np.array({src}, dtype=np.int32))
dst = cp.asarray(np.array({dst}, dtype=np.int32))
ids = cp.asarray(np.array({ids}, dtype=np.int64))
degree = cp.zeros({n} + 1, dtype=cp.int64)
gpu.launch("csr_count", src.shape[0], (src, dst, np.int64(src.shape[0]), np.int32(gpu_graph.BOTH), np.int32(1), degree))
bits, offsets = gpu_graph.id_bitmap({span}), cp.empty(ids.shape[0], dtype=cp.int32)
gpu_graph.id_mark(ids, {lo}, bits, offsets)
cp.cuda.Device().synchronize()
cache = sorted(str(p) for p in Path(sys.argv[1]).rglob("*"))
csr = gpu_graph.csr_symmetric(src, dst, {n})
print(json.dumps({{"origin": gpu.module_origin(), "capability": int(cp.cuda.Device().compute_capability),
                   "cache": cache, "degree": degree.get().tolist(), "bits": bits.get().tolist(),
                   "offsets": offsets.get().tolist(), "indptr": csr.indptr.get().tolist(),
                   "rows": [sorted(csr.indices.get()[csr.indptr.get()[v]:csr.indptr.get()[v + 1]].tolist())
                            for v in range({n})]}}))
"""


@pytest.mark.skipif(not be.cupy_usable(), reason="needs a usable CUDA device")
@pytest.mark.parametrize("forced_nvrtc", [False, True], ids=["fatbin", "nvrtc-forced"])
def test_first_kernels_come_from_the_fatbin_without_compiling(tmp_path, forced_nvrtc):
    # a self-loop (left out), a repeated edge (kept twice), a vertex without edges (5)
    src, dst, n = [0, 1, 2, 3, 0, 4, 1], [1, 2, 3, 0, 2, 4, 2], 6
    ids, lo = [2**40 + 7, 2**40 + 3, 2**40 + 7, 2**40 + 40], 2**40
    span = 64
    cache = tmp_path / "cupy-cache"
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if k != NVRTC_ENV}
    env.update(CUPY_CACHE_DIR=str(cache), PYTHONPATH=child_pythonpath())
    if forced_nvrtc:
        env[NVRTC_ENV] = "1"
    code = FIRST_KERNELS.format(src=src, dst=dst, ids=ids, n=n, span=span, lo=lo)
    done = subprocess.run([sys.executable, "-c", code, str(cache)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])

    capability = got["capability"]
    sass = sass_for(capability, SASS_ARCHS)
    if forced_nvrtc:
        assert got["origin"] == "NVRTC (GRAPH_CUDA_NVRTC is set)"
        assert got["cache"]  # NVRTC's compile went to CuPy's cache
    else:
        assert got["origin"] == (f"fatbin sm_{sass}" if sass else f"fatbin compute_{PTX_ARCH}")
        assert got["cache"] == []

    # references computed here with NumPy: both arcs of every edge but the self-loop
    keep = np.array(src) != np.array(dst)
    tails = np.concatenate([np.array(src)[keep], np.array(dst)[keep]])
    heads = np.concatenate([np.array(dst)[keep], np.array(src)[keep]])
    assert got["degree"] == [0] + np.bincount(tails, minlength=n).tolist()
    assert got["indptr"] == [0] + np.cumsum(np.bincount(tails, minlength=n)).tolist()
    assert got["rows"] == [sorted(heads[tails == v].tolist()) for v in range(n)]
    offsets = np.array(ids) - lo
    bits = [0] * (span // 32)
    for o in offsets.tolist():
        bits[o // 32] |= 1 << (o % 32)
    assert got["offsets"] == offsets.tolist()
    assert got["bits"] == bits
