"""The GPU backend's CUDA module compiles for the H200 (sm_90) with nvcc, where nvcc exists
(this machine and CI have it, without a GPU), every template instantiated; registers and
spills are reported. And every kernel the drivers launch by name exists in the module."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kernels.cuda_source import for_nvcc, name_expressions, source

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_module_compiles_for_sm90_without_spills(tmp_path):
    path = tmp_path / "module.cu"
    path.write_text(for_nvcc())
    result = subprocess.run(
        ["nvcc", "-arch=sm_90", "-std=c++17", "-c", "-Xptxas", "-v", str(path), "-o", str(tmp_path / "k.o")],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = [line for line in result.stderr.splitlines() if "registers" in line or "spill" in line]
    print("\n".join(report))
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill", result.stderr)]
    assert not any(spills), result.stderr
    assert len(re.findall(r"Function properties for", result.stderr)) >= len(name_expressions()) + 10


def test_every_kernel_the_drivers_launch_is_defined():
    """The drivers launch kernels by name (templates through cuda_source.template); each plain
    name must be a kernel of the module, each template one of the instantiated names."""
    module = source()
    drivers = "\n".join(p.read_text() for p in sorted(KERNELS.rglob("*.py")))
    plain = set(re.findall(r'(?:kernel|launch)\("(\w+)"', drivers))
    templated = set(re.findall(r'template\("(\w+)"', drivers))
    assert plain and templated
    for name in plain:
        assert re.search(rf"__global__ void (__launch_bounds__\([^)]*\)\s+)?{name}\(", module), name
    instantiated = {n.split("<")[0] for n in name_expressions()}
    assert templated <= instantiated
    for name in instantiated:
        assert re.search(rf"template <[^>]*>\s+__global__ void {name}\(", module), name
