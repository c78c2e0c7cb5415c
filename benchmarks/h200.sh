#!/usr/bin/env bash
# Everything one H200 session runs, in one call (each machine start costs budget):
#   benchmarks/h200.sh install|tests|flow|big|cores|kernels|partitioned|parquet|reader|batches|threshold|startup|timeline|all|profile  OUTDIR
# tests, flow, big, cores, partitioned, parquet, reader, startup and all need .whl/ (`make wheels`; tests also .whl-test/); kernels and profile need no
# wheels (NumPy, CuPy and pytest are on the machine). .realgraphs/ travels with the checkout.
# parquet times the page reader and writer beside libcudf where /tmp/cudf.tar holds its wheels
# (../shared/tools/cudf-wheels.sh's parts, put together by earlier calls).
# partitioned needs a machine with two GPUs or more.
set -uo pipefail
what=${1:-all}; out=${2:-${OUT:-/tmp/out}}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} GRAPH_REALGRAPHS=${GRAPH_REALGRAPHS:-$PWD/.realgraphs} PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on shared machines
install() {  # $1: a folder of wheels, installed into /tmp/site once per machine
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$1"/*.whl \
    && touch "/tmp/site/.installed-${1#.}"
}
if [[ $what != kernels && $what != profile ]]; then
  # .whl (Prefect, Dask, ...), .whl-test (the test extra the machine lacks: DuckDB, moto's S3 server,
  # fastparquet) and .whl-gpu (nvCOMP) together pass a call's 64 MiB, so each may come in a call of
  # its own on the same warm machine; the wheels of an earlier call stay installed
  [[ -f /tmp/site/.installed-whl ]] || install .whl || exit 1
  for set in .whl-test .whl-gpu; do
    [[ -d $set && ! -f /tmp/site/.installed-${set#.} ]] && { install $set || exit 1; }
  done
  # byte-compiled, as a plain `pip install` leaves a user's packages: the machine sets
  # PYTHONDONTWRITEBYTECODE, so otherwise every process (each Dask worker too) compiles Prefect's
  # sources again (`import prefect` 2.6-2.8 s, against 1.4-1.9 s compiled)
  python3 -m compileall -q -j 0 /tmp/site flows tasks kernels benchmarks > /dev/null
  export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
if [[ $what == install ]]; then exit 0; fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt"
if [[ $what == tests || $what == all ]]; then
  # eight processes (pytest-xdist and pytest-timeout are in the GPU image): 5-6 minutes
  # TESTS: test files or -k expressions to run instead of the whole suite (default: all of it)
  timeout 560 python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 200 -rfE --tb=short ${TESTS:-} 2>&1 \
    | grep -v PytestBenchmarkWarning | tee "$out/pytest.log" | tail -25
fi
server() {  # one Prefect server for the flows and their dask-cuda workers (GUIDE section 5)
  export PREFECT_HOME=/tmp/prefect-home PREFECT_SERVER_ANALYTICS_ENABLED=false PREFECT_API_URL=http://127.0.0.1:4200/api
  python3 -m prefect server start --host 127.0.0.1 --port 4200 > "$out/server.log" 2>&1 &
  for _ in $(seq 60); do python3 -c "import urllib.request; urllib.request.urlopen('$PREFECT_API_URL/health')" 2>/dev/null && break; sleep 1; done
}
if [[ $what == flow || $what == all ]]; then
  # Kron-24 from Parquet to Parquet, input snappy and uncompressed; flows on the snappy input
  server
  timeout 420 python3 -m benchmarks.orchestration --graph kron:24 --input-compression snappy,none --flows snappy \
    --runner dask --workdir /tmp/orchestration --json "$out/h200-flow-$(date +%F).json" 2>&1 \
    | grep -v "distributed\." | tee "$out/flow.log" | tail -60
  rm -rf /tmp/orchestration
fi
if [[ $what == parquet ]]; then
  # Kron-24 bare, one file per compression, with libcudf's read and write of the same files; then
  # each page reader step alone and its whole read at three batch sizes on the Snappy file
  if [[ -f /tmp/cudf.tar && ! -d /tmp/cudf ]]; then
    (cd /tmp && tar -xf cudf.tar && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target /tmp/cudf cudfset/*.whl)
  fi
  [[ -d /tmp/cudf ]] && export LIBCUDF_SITE=/tmp/cudf
  timeout 330 python3 -m benchmarks.orchestration --graph kron:24 --input-compression snappy,none,zstd --flows '' \
    --workdir /tmp/parquet24 --json "$out/h200-parquet-$(date +%F).json" 2>&1 | tee "$out/parquet.log" | tail -80
  timeout 200 python3 -m benchmarks.page_reader_steps /tmp/parquet24/snappy/input-snappy.parquet --batch-mib 256,512,1024 \
    --json "$out/h200-page-reader-steps-$(date +%F).json" --profile "$out/page-reader-profile.txt" 2>&1 \
    | tee "$out/steps.log" | tail -20
  timeout 120 python3 -m benchmarks.page_reader_steps /tmp/parquet24/zstd/input-zstd.parquet --batch-mib 256 \
    --json "$out/h200-page-reader-steps-zstd-$(date +%F).json" --profile "$out/page-reader-profile-zstd.txt" 2>&1 \
    | tee -a "$out/steps.log" | tail -8
fi
if [[ $what == reader ]]; then
  # the page reader's and writer's GPU cases, then its steps and whole read on a Kron-24 file of
  # pyarrow's defaults (Snappy), left in /tmp/kron24.parquet for the modes after it
  timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 150 -rfE --tb=short tests/test_page_reader.py \
    tests/test_batched_page_decoding.py tests/test_parquet_pages.py tests/test_page_headers_on_gpu.py \
    tests/test_snappy_walk_ahead.py tests/test_page_writer.py 2>&1 | tee "$out/pytest-reader.log" | tail -8
  [[ -f /tmp/kron24.parquet ]] || python3 -c "import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
from data.generators import kronecker
src, dst, weight = kronecker(np, 24)
pq.write_table(pa.table({'src': src, 'dst': dst, 'weight': weight}), sys.argv[1])" /tmp/kron24.parquet
  timeout 150 python3 -m benchmarks.page_reader_steps /tmp/kron24.parquet --batch-mib 256,1024 \
    --json "$out/h200-page-reader-steps-$(date +%F).json" --profile "$out/page-reader-profile.txt" 2>&1 | tail -14
fi
if [[ $what == batches ]]; then
  # the page reader's batches on a Kron-24 file of pyarrow's defaults, step by step on each thread
  # (benchmarks.page_reader_timeline) with 1 to 4 batches in flight, then each step alone and the
  # whole read at two batch sizes (benchmarks.page_reader_steps)
  [[ -f /tmp/kron24.parquet ]] || python3 -c "import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
from data.generators import kronecker
src, dst, weight = kronecker(np, 24)
pq.write_table(pa.table({'src': src, 'dst': dst, 'weight': weight}), sys.argv[1])" /tmp/kron24.parquet
  timeout 200 python3 -m benchmarks.page_reader_timeline /tmp/kron24.parquet --batch-mib 256 --in-flight 1,2,3,4 \
    --json "$out/h200-page-reader-timeline-$(date +%F).json" 2>&1 | tee -a "$out/batches.log" | sed -n 1,200p
  timeout 150 python3 -m benchmarks.page_reader_steps /tmp/kron24.parquet --batch-mib 256,1024 \
    --json "$out/h200-page-reader-steps-$(date +%F).json" 2>&1 | tee -a "$out/batches.log" | tail -14
fi
if [[ $what == threshold ]]; then
  # a fresh command per backend on the sample and at growing scales: where the GPU starts to pay
  timeout 400 python3 -m benchmarks.backend_threshold ${THRESHOLD_SCALES:---scale 12 --scale 14 --scale 16 --scale 18 --scale 20} \
    --repeat ${THRESHOLD_REPEAT:-3} --backends ${THRESHOLD_BACKENDS:-numpy,cupy,auto} \
    --json "$out/h200-backend-threshold-$(date +%F).json" 2>&1 | tee "$out/threshold.log" | tail -12
fi
if [[ $what == startup ]]; then
  # a fresh process against a warm one at Kron-24 (empty CuPy cache, then the cache it left;
  # STARTUP_GRAPH names a Parquet file instead of generating one), with each run's stages; then the
  # command line on the bundled sample, cold and against a running server, and each request it sends
  timeout 330 python3 -m benchmarks.cold_start --graph ${STARTUP_GRAPH:-kron:24} --json "$out/h200-cold-start-$(date +%F).json" 2>&1 \
    | tee "$out/startup.log" | tail -5
  timeout 200 python3 -m benchmarks.cli_startup --json "$out/h200-cli-startup-$(date +%F).json" 2>&1 \
    | tee -a "$out/startup.log" | tail -3
  timeout 150 python3 -m benchmarks.api_round_trips --json "$out/h200-api-round-trips-$(date +%F).json" 2>&1 \
    | tee -a "$out/startup.log" | tail -30
fi
if [[ $what == timeline ]]; then
  # where a command's seconds go on this host: the sample (auto and --backend numpy, each also
  # under -X importtime) and Kron-24 (the cold start's command) against one running server
  server
  sleep 20  # the server's first rounds of its services
  [[ -f /tmp/kron24.parquet ]] || python3 -c "import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
from data.generators import kronecker
src, dst, weight = kronecker(np, 24)
pq.write_table(pa.table({'src': src, 'dst': dst, 'weight': weight}), sys.argv[1])" /tmp/kron24.parquet
  json="$out/h200-command-timeline-$(date +%F).json"
  # the interpreter alone: its start (site, .pth files) and sys.path, beside the command's
  python3 -X importtime -c "import sys; print(sys.version); print(sys.path)" 2> "$out/interpreter-imports.txt" \
    | tee -a "$out/timeline.log"
  TIMEFORMAT='interpreter alone %R s'; for _ in 1 2 3; do time python3 -c pass; done 2>&1 | tee -a "$out/timeline.log"
  t() { timeout 150 python3 -m benchmarks.command_timeline --server "$PREFECT_API_URL" --json "$json" "$@" 2>&1 \
    | tee -a "$out/timeline.log" | sed -n 1,40p; }  # (head would end the pipe, and the run, before its record)
  t --flow mst --importtime --folded "$out/sample.folded" -- data/graph.parquet
  t --flow mst --importtime -- data/graph.parquet --backend numpy
  source=$(python3 -c "import sys, pyarrow.parquet as pq; print(pq.read_table(sys.argv[1], columns=['src']).column(0)[0])" /tmp/kron24.parquet)
  t --folded "$out/kron24.folded" -- /tmp/kron24.parquet --source "$source" --backend cupy --runner threads
fi
if [[ $what == big || $what == all ]]; then
  # Kron-26 (1.07 G edges) through the whole pipeline on one GPU: input as 16 snappy parts
  timeout 420 python3 -m benchmarks.orchestration --graph kron:26 --input-compression snappy --flows '' --parts 16 \
    --workdir /tmp/orchestration26 --json "$out/h200-flow-kron26-$(date +%F).json" 2>&1 | tee "$out/big.log" | tail -40
  rm -rf /tmp/orchestration26
fi
if [[ $what == cores ]]; then
  # Kron-26 from 16 Snappy files on all of the host's cores and on each half (taskset)
  timeout 480 python3 -m benchmarks.host_cores --graph kron:26 --parts 16 --workdir /tmp/cores \
    --json "$out/h200-host-cores-$(date +%F).json" 2>&1 | tee "$out/cores.log" | tail -5
  rm -rf /tmp/cores
fi
if [[ $what == partitioned ]]; then
  # every GPU of the machine: the two-GPU tests, then Kron-26 on two partitions against the
  # one-GPU recipe in the same process (the scale of the goals)
  timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_partitioned_gpu.py tests/test_partitioned_kernels.py 2>&1 \
    | tee "$out/pytest-partitioned.log" | tail -5
  server
  timeout 400 python3 -m benchmarks.partitioned --graph kron:26 --partitions 2 --bare --workdir /tmp/partitioned26 \
    --json "$out/h200x2-$(date +%F).json" 2>&1 | grep -v "distributed\." | tee "$out/partitioned.log" | tail -40
  rm -rf /tmp/partitioned26
fi
if [[ $what == kernels || $what == all ]]; then
  # BFS against the SpMV BFS at each scale in the same process; high-diameter graphs; CSR and
  # MST at Kron-24 and on the high-diameter graphs
  json="$out/h200-kernels-$(date +%F).json"
  b() { timeout 240 python3 -m benchmarks --backend cupy --json "$json" "$@" 2>&1 | tee -a "$out/bench.log"; }
  b --graph kron:20 --graph kron:22 --graph kron:24 --algo bfs --baseline spmv
  b --graph grid:4096 --graph parquet:.realgraphs/luxembourg_osm.parquet --algo bfs,mst --baseline spmv
  b --graph kron:24 --algo csr,mst --baseline none
fi
if [[ $what == profile ]]; then
  # Nsight Compute on one CSR build, BFS and MSF at Kron-22 (hardware counters on Firecracker)
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
  timeout 300 ncu --clock-control none --csv --metrics $metrics -k 'regex:^(bfs_|msf_|csr_)' \
    python3 -m benchmarks.profile_kernels --graph kron:22 > "$out/ncu.csv" 2> "$out/ncu.log"
  tail -3 "$out/ncu.log"
fi
