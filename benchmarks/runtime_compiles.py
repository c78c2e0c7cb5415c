"""Which CUDA kernels a command compiles at run time, and which line of the project asked.

    python -m benchmarks.runtime_compiles LOG.json -m flows.pipeline GRAPH --source S ...

Runs the module as `python -m` would, in this process, with CuPy's NVRTC step wrapped: every
compilation (a kernel CuPy builds on first use and did not find in CUPY_CACHE_DIR) is recorded
with the kernels it defines, its seconds, and the innermost frames of the project's own code on
the stack. With CUPY_CACHE_DIR an empty folder this lists everything a fresh machine compiles.
Writes LOG.json as the command ends (at exit: the command line leaves by os._exit after its
exit handlers). Needs a GPU.
"""
from __future__ import annotations

import atexit
import json
import re
import runpy
import sys
import time
import traceback
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = ("kernels", "tasks", "flows", "benchmarks", "data")
KERNEL_NAME = re.compile(r"__global__\s+void\s+(\w+)")


def project_frames(stack) -> list[str]:
    """file:line function of the project's frames, innermost first (this file left out)."""
    frames = []
    for frame in reversed(stack):
        path = Path(frame.filename)
        try:
            relative = path.resolve().relative_to(PROJECT)
        except ValueError:
            continue
        if relative.parts[0] in PROJECT_PACKAGES and path.resolve() != Path(__file__).resolve():
            frames.append(f"{relative}:{frame.lineno} {frame.name}")
    return frames


def record_compilations(log: list) -> None:
    from cupy.cuda import compiler

    compile_source = compiler._compile_using_nvrtc_no_warning

    def recorded(source, *args, **kwargs):
        started = time.perf_counter()
        try:
            return compile_source(source, *args, **kwargs)
        finally:
            log.append({"kernels": KERNEL_NAME.findall(source) or [source[:80]],
                        "seconds": round(time.perf_counter() - started, 3),
                        "called_from": project_frames(traceback.extract_stack()[:-1])[:4]})

    compiler._compile_using_nvrtc_no_warning = recorded


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "-m":
        print(__doc__, file=sys.stderr)
        return 2
    target, module, arguments = Path(argv[0]), argv[2], argv[3:]
    log: list = []
    record_compilations(log)
    sys.argv = [module, *arguments]
    started = time.perf_counter()

    def write_log():
        target.write_text(json.dumps({"command": [module, *arguments],
                                      "seconds": round(time.perf_counter() - started, 2),
                                      "compilations": len(log),
                                      "compile_seconds": round(sum(entry["seconds"] for entry in log), 2),
                                      "log": log}, indent=1))

    atexit.register(write_log)
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
