"""The GPU backend's CUDA module ships compiled ahead of time (kernels/cuda/module.fatbin and its
manifest module.json) and a GPU process loads it instead of compiling: the shipped files describe
today's sources and every kernel the drivers ask for; a fresh build gives the same manifest; the
fatbin holds SASS for sm_80, sm_90, sm_100 and PTX; each compute capability gets the right code,
or NVRTC with the reason."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kernels.build_module import build, fatbin_entries, nvcc_version
from kernels.cuda_module import (FATBIN, MANIFEST, NVRTC_ENV, PTX_ARCH, SASS_ARCHS, fatbin_choice,
                                 read_manifest, sass_for, sha256)
from kernels.cuda_source import for_nvcc, name_expressions

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


def test_shipped_manifest_describes_the_current_sources_and_fatbin():
    manifest = read_manifest()
    assert manifest["source_sha256"] == sha256(for_nvcc()), (
        "kernels/cuda/*.cu or kernels/cuda_source.py changed since kernels/cuda/module.fatbin was "
        "built: run `make kernels` and commit module.fatbin and module.json")
    assert manifest["fatbin_sha256"] == sha256(FATBIN.read_bytes()), (
        "kernels/cuda/module.fatbin is not the file module.json describes: run `make kernels`")


def test_every_kernel_name_the_drivers_ask_for_is_in_the_manifest():
    drivers = "\n".join(p.read_text() for p in sorted(KERNELS.glob("gpu*.py")))
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
