"""The yardstick of the GPU Parquet reader and writer: RAPIDS libcudf (pylibcudf) timed on the
same files in the same run, where it is installed. It is a yardstick, not a dependency: the
harness asks for it, and records None with the reason where it cannot run.

libcudf pins an nvCOMP of its own, so it runs in a process of its own, with the site folder
named by ``--libcudf-site`` (or LIBCUDF_SITE) in front of PYTHONPATH:

    python -m benchmarks.libcudf read PATH [PATH ...]            # one dataset, its files read as one table
    python -m benchmarks.libcudf write OUTDIR RESULT [RESULT ...] # each result read, then written (Snappy)

Each prints one line ``LIBCUDF {json}``: best-of-3 seconds after one untimed warm-up, the
device synchronized before each timer stops."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 3
ROOT = Path(__file__).resolve().parents[1]


def _synchronize() -> None:
    import cupy

    cupy.cuda.Device().synchronize()


def _best(run) -> float:
    run()
    _synchronize()
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        _synchronize()
        best = min(best, time.perf_counter() - started)
    return best


def _read(paths: list[str]):
    import pylibcudf as plc

    options = plc.io.parquet.ParquetReaderOptions.builder(plc.io.SourceInfo(paths)).build()
    return plc.io.parquet.read_parquet(options)


def read_seconds(paths: list[str]) -> dict:
    rows = _read(paths).tbl.num_rows()
    return {"seconds": round(_best(lambda: _read(paths)), 4), "rows": rows}


def write_seconds(out: str, results: list[str]) -> dict:
    """Every result read into the GPU first (untimed), then all of them written one after another
    as Snappy files: the seconds of the writes together."""
    import pylibcudf as plc

    tables = [_read([path]) for path in results]

    def write_all():
        for k, table in enumerate(tables):
            sink = plc.io.SinkInfo([os.path.join(out, f"libcudf-{k}.parquet")])
            options = (plc.io.parquet.ParquetWriterOptions.builder(sink, table.tbl)
                       .compression(plc.io.types.CompressionType.SNAPPY).build())
            plc.io.parquet.write_parquet(options)

    os.makedirs(out, exist_ok=True)
    return {"seconds": round(_best(write_all), 4), "rows": [t.tbl.num_rows() for t in tables]}


def measure(what: str, args: list[str], site: str | None = None) -> dict:
    """``read`` or ``write`` (the module's commands) in a process of its own; its result, with
    libcudf's version, or {"seconds": None, "why": ...} where libcudf is not importable or fails."""
    site = site or os.environ.get("LIBCUDF_SITE")
    env = dict(os.environ)
    if site:
        env["PYTHONPATH"] = os.pathsep.join([site, str(ROOT)])  # libcudf's nvCOMP, not the reader's
    done = subprocess.run([sys.executable, "-m", "benchmarks.libcudf", what, *args], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    line = next((x for x in done.stdout.splitlines() if x.startswith("LIBCUDF ")), None)
    if line is None:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"seconds": None, "why": tail[:300]}
    return json.loads(line[len("LIBCUDF "):])


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    what, rest = argv[0], argv[1:]
    try:
        import pylibcudf
    except ImportError as exc:
        print(f"LIBCUDF {json.dumps({'seconds': None, 'why': f'pylibcudf not importable ({exc})'})}")
        return 0
    result = read_seconds(rest) if what == "read" else write_seconds(rest[0], rest[1:])
    result["version"] = getattr(pylibcudf, "__version__", None)
    print(f"LIBCUDF {json.dumps(result)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
