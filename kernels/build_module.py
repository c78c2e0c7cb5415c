"""Compile the GPU backend's CUDA module ahead of time: ``python -m kernels.build_module``
(``make kernels``) writes kernels/cuda/module.fatbin and module.json (kernels/cuda_module.py
says what they hold and when a process uses them). Run it after any change to kernels/cuda/.

nvcc (``$NVCC``, else the one on PATH, else /usr/local/cuda/bin/nvcc) compiles
``cuda_source.for_nvcc()`` with the options NVRTC gets at run time: ``-std=c++17`` and CuPy's
``-ftz=true``, so both builds treat float denormals alike. The fatbin is compressed for size
(``--compress-mode=size``: about 200 KB instead of 1.2 MB; a driver for CUDA 13, which
cupy-cuda13x needs, reads it) and is the same bytes for the same sources and nvcc. Kernel
symbols are read from the PTX of this very compile (its ``.entry`` lines), demangled with
cu++filt or c++filt and spelled as name expressions are; the archs are read from the fatbin's
own entry headers (there may be no cuobjdump).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from kernels.cuda_module import FATBIN, MANIFEST, PTX_ARCH, SASS_ARCHS, sha256
from kernels.cuda_source import for_nvcc, name_expressions

OPTIONS = ("-std=c++17", "-ftz=true", "--compress-mode=size")
ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)\s*\(", re.M)


class BuildError(RuntimeError):
    pass


def find_nvcc() -> str:
    found = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(found).exists() and not shutil.which(found):
        raise BuildError(f"nvcc not found ({found}): set NVCC to its path")
    return found


def gencode() -> list[str]:
    flags = []
    for arch in SASS_ARCHS:
        code = f"[sm_{arch},compute_{arch}]" if arch == PTX_ARCH else f"sm_{arch}"
        flags += ["-gencode", f"arch=compute_{arch},code={code}"]
    return flags


def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\bV(\d+\.\d+\.\d+)", out)
    if found is None:
        raise BuildError(f"cannot read the version of {nvcc} from: {out.strip()}")
    return found.group(1)


def fatbin_entries(data: bytes) -> list[tuple[str, int]]:
    """("sass" | "ptx", arch) of every entry of a fatbin. Layout: a 16-byte header (u32 magic
    0xBA55ED50, u16 version, u16 header size, u64 size of the entries), then per entry a header
    (u16 kind: 1 PTX, 2 ELF; u16; u32 header size; u64 payload size; ...; u32 arch at byte 28)
    and its payload."""
    magic, _, header, size = struct.unpack_from("<IHHQ", data, 0)
    if magic != 0xBA55ED50:
        raise BuildError("not a fatbin (bad magic number)")
    entries, at = [], header
    while at < header + size:
        kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, at)
        (arch,) = struct.unpack_from("<I", data, at + 28)
        entries.append(({1: "ptx", 2: "sass"}.get(kind, f"kind {kind}"), arch))
        at += entry_header + payload
    return entries


def demangle(symbols: list[str]) -> list[str]:
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if tool is None:
        raise BuildError("neither cu++filt nor c++filt found (binutils has c++filt)")
    out = subprocess.run([tool], input="\n".join(symbols) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    if len(out) != len(symbols):
        raise BuildError(f"{tool} answered {len(out)} lines for {len(symbols)} symbols")
    return out


def spelled(demangled: str) -> str:
    """"void msf_band_fill<double, int>(int const*, ...)" -> "msf_band_fill<double,int>": the
    name and template arguments, spaces only inside a type ("unsigned long long")."""
    name = demangled.removeprefix("void ")
    depth = 0
    for i, c in enumerate(name):
        depth += (c == "<") - (c == ">")
        if c == "(" and depth == 0:
            name = name[:i]
            break
    return re.sub(r"\s*([<>,])\s*", r"\1", name).strip()


def kernel_symbols(ptx_texts: list[str]) -> dict[str, str]:
    """name (as kernel() is asked for it) -> symbol, from the PTX of every arch (which agree)."""
    entries = {tuple(sorted(set(ENTRY.findall(text)))) for text in ptx_texts}
    if len(entries) != 1:
        raise BuildError("the archs' PTX files name different kernels")
    symbols = list(entries.pop())
    mangled = [s for s in symbols if s.startswith("_Z")]
    names = {s: s for s in symbols if not s.startswith("_Z")}
    for symbol, text in zip(mangled, demangle(mangled)):
        names[spelled(text)] = symbol
    if len(names) != len(symbols):
        raise BuildError("two kernels have one name")
    missing = sorted(set(name_expressions()) - set(names))
    if missing:
        raise BuildError(f"instantiated templates not found in the module: {', '.join(missing)}")
    return dict(sorted(names.items()))


def build(out_dir: Path | None = None) -> dict:
    """Compile, then write module.fatbin and module.json into out_dir (kernels/cuda/ by default;
    each file replaced whole). Returns the manifest."""
    fatbin_path = FATBIN if out_dir is None else Path(out_dir) / FATBIN.name
    manifest_path = MANIFEST if out_dir is None else Path(out_dir) / MANIFEST.name
    nvcc = find_nvcc()
    text = for_nvcc()
    with tempfile.TemporaryDirectory(prefix="cuda-module-") as tmp:
        tmp = Path(tmp)
        (tmp / "keep").mkdir()
        # a fixed file name: nvcc derives the module's internal id from it
        (tmp / "module.cu").write_text(text)
        command = [nvcc, *OPTIONS, *gencode(), "-fatbin", "--keep", "--keep-dir", "keep",
                   "module.cu", "-o", "module.fatbin"]
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
        if done.returncode:
            raise BuildError(f"nvcc failed:\n{done.stderr}")
        fatbin = (tmp / "module.fatbin").read_bytes()
        kernels = kernel_symbols([p.read_text() for p in sorted((tmp / "keep").glob("*.ptx"))])
    entries = fatbin_entries(fatbin)
    manifest = {
        "source_sha256": sha256(text),
        "fatbin_sha256": sha256(fatbin),
        "nvcc": nvcc_version(nvcc),
        "options": [*OPTIONS, *gencode()],
        "sass_archs": sorted(a for kind, a in entries if kind == "sass"),
        "ptx_archs": sorted(a for kind, a in entries if kind == "ptx"),
        "kernels": kernels,
    }
    if manifest["sass_archs"] != sorted(SASS_ARCHS) or manifest["ptx_archs"] != [PTX_ARCH]:
        raise BuildError(f"the fatbin holds {entries}, not SASS for {SASS_ARCHS} and PTX for {PTX_ARCH}")
    fatbin_path.parent.mkdir(parents=True, exist_ok=True)
    for path, data in ((fatbin_path, fatbin), (manifest_path, (json.dumps(manifest, indent=1) + "\n").encode())):
        part = path.with_name(path.name + ".part")
        part.write_bytes(data)
        os.replace(part, path)
    return manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels.build_module", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="directory for module.fatbin and module.json (default: kernels/cuda)")
    args = parser.parse_args(argv)
    try:
        manifest = build(args.out)
    except BuildError as e:
        print(f"kernels.build_module: {e}", file=sys.stderr)
        return 1
    where = args.out or FATBIN.parent
    print(f"{where / FATBIN.name}: {len(manifest['kernels'])} kernels, SASS sm_"
          f"{', sm_'.join(map(str, manifest['sass_archs']))}, PTX compute_{PTX_ARCH}, nvcc {manifest['nvcc']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
