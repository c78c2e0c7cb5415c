"""Whether nvCOMP's decoders survive damaged streams (GPU with nvCOMP only):
`python -m benchmarks.nvcomp_damage`.

For each codec (Snappy, Zstd, LZ4, Gzip) and each damage (256 zeroed bytes, 20 flipped bytes,
the stream cut in half) a fresh process compresses 1 MiB of int64 values with pyarrow's codec,
damages the stream, decodes it with nvCOMP into a buffer of the original size, then runs one
CuPy operation: the line says whether nvCOMP returned, raised, hung, or ended the CUDA context
(a device-side trap kills the process or leaves every later CUDA call failing). The page reader
sends nvCOMP only streams a CRC32 or the Snappy walk vouches for because of what this shows."""
from __future__ import annotations

import subprocess
import sys

from tasks.parquet.codec.decompress import HOST_CODECS, NVCOMP_CODECS

# pyarrow's codec that writes the streams of each nvCOMP decoder
HOST_CODEC_OF = {algorithm: HOST_CODECS[codec] for codec, (algorithm, _) in NVCOMP_CODECS.items()}
DAMAGES = ("zeros", "flips", "truncate")
WAIT = 30  # seconds a case may take before it counts as hung


def one(codec: str, damage: str) -> str:
    import cupy
    import numpy as np
    import pyarrow as pa
    from nvidia import nvcomp

    rng = np.random.default_rng(1)
    raw = rng.integers(0, 5000, 1 << 17).astype(np.int64).tobytes()
    stream = bytearray(pa.Codec(HOST_CODEC_OF[codec]).compress(raw, asbytes=True))
    if damage == "zeros":
        at = len(stream) // 3
        stream[at:at + 256] = bytes(256)
    elif damage == "flips":
        for at in rng.integers(0, len(stream), 20):
            stream[at] ^= 0x5A
    else:
        del stream[len(stream) // 2:]
    out = cupy.zeros(len(raw), cupy.uint8)
    try:
        nvcomp.Codec(algorithm=codec, bitstream_kind=nvcomp.BitstreamKind.RAW).decode(
            nvcomp.as_arrays([cupy.asarray(np.frombuffer(bytes(stream), np.uint8))]), out=nvcomp.as_arrays([out]))
        cupy.cuda.Device().synchronize()
        outcome = "returned " + ("the original bytes" if bytes(out.get()) == raw else "other bytes")
    except Exception as exc:  # noqa: BLE001 (what nvCOMP raises is the finding)
        outcome = f"raised {type(exc).__name__}"
    try:
        state = "context alive" if int(cupy.arange(10).sum()) == 45 else "context wrong"
    except Exception as exc:  # noqa: BLE001
        state = f"CONTEXT DEAD ({type(exc).__name__})"
    return f"{outcome}; {state}"


def main() -> int:
    for codec in HOST_CODEC_OF:
        for damage in DAMAGES:
            try:
                result = subprocess.run([sys.executable, "-c", "import sys; from benchmarks.nvcomp_damage import one; "
                                         "print(one(*sys.argv[1:]))", codec, damage],
                                        capture_output=True, text=True, timeout=WAIT)
            except subprocess.TimeoutExpired:
                print(f"{codec:7s} {damage:9s} no answer within {WAIT} s (the decode hangs)")
                continue
            lines = (result.stdout + result.stderr).strip().splitlines()
            last = lines[-1] if lines else f"exit status {result.returncode}"
            print(f"{codec:7s} {damage:9s} {last if result.returncode == 0 else 'process died: ' + last}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
