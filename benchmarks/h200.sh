#!/usr/bin/env bash
# Everything one H200 session runs, in one call (each machine start costs budget):
#   benchmarks/h200.sh tests|bench|all  OUTDIR
# Needs .whl/ (../shared/tools/device-wheels.sh) and .realgraphs/ carried with the checkout.
set -uo pipefail
what=${1:-all}; out=${2:-${OUT:-/tmp/out}}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD GRAPH_REALGRAPHS=$PWD/.realgraphs PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if [[ $what == tests || $what == all ]]; then
  timeout 330 python3 -m pytest -q -p no:cacheprovider 2>&1 | tee "$out/pytest.log" | tail -25
fi
if [[ $what == bench || $what == all ]]; then
  json="$out/h200-$(date +%F).json"
  b() { timeout 200 python3 -m benchmarks --backend cupy --json "$json" "$@" 2>&1 | tee -a "$out/bench.log"; }
  b --graph kron:20 --graph kron:22 --graph kron:24 --algo bfs --baseline spmv,seed
  b --graph grid:4096 --graph parquet:.realgraphs/luxembourg_osm.parquet --algo bfs --baseline spmv
  b --graph kron:24 --algo csr,mst --baseline none
  b --graph kron:20 --graph kron:22 --algo csr,mst --baseline scipy --repeat 2
fi
