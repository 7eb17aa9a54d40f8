#!/usr/bin/env bash
# gnnd's GPU benchmark suite: checks, then times every stage and the whole path, and writes RESULTS.md.
#
#   bash bench/run_gpu.sh build BUILD_DIR OUT_DIR     here: build (CUDA on) and bundle what the suite runs
#   bash bench/run_gpu.sh run BUNDLE_DIR OUT_DIR [PART...]   on the GPU machine, from the repository root
#
# PARTs (default all but soak, storage, trainer and multi): check sessions sampling gather typed tier torch coschedule hetero first
# next; soak (6 min: bench/gpu_soak.py, GNND_SOAK_SECONDS and GNND_SOAK_CHURNERS); storage (features larger than
# memory: papers x0.3, 16 GiB of 512 B rows, under a cgroup memory.max of GNND_STORAGE_MEMORY, default 12G; GNND_STORAGE_STEPS and _WARMUP batches a case, _CACHES, _SLOTS, _MMAP=false); multi
# (two or more GPUs: bench/multi_gpu.sh and test_nodes.py's GPU cases); node (every GPU of a node under one gnnd:
# bench/whole_node.sh, GNND_NODE_PARTS of checks tier sage, GNND_NODE_SCALE of the papers preset); trainer (a trainer fed from storage against
# features in memory: bench/coschedule.py on papers x0.3, GNND_TRAINER_CACHES, GNND_STORAGE_MEMORY); link (link against
# node batches on the GPU: gpu_bench link); edges (edge data and weighted sampling: gpu_bench edges); slots (slots sized by the batches: bench/slot_sizing.py on products and
# igbh x0.005 / x0.02 with an R-GAT, GNND_SLOTS_STEPS, GNND_RGAT_STEPS); versus (a baseline build's gpu_bench, GNND_BASELINE_BENCH, against
# this one); mlperf (bench/mlperf_rgat.py on igbh x GNND_MLPERF_SCALE, uniform against LABOR, GNND_MLPERF_ARGS, GNND_MLPERF_GNND_ARGS);
# tier-trainer (a PyG trainer
# beside a partial hot tier on papers x0.3, GNND_TIER_BYTES, GNND_TIER_SMS, GNND_TIER_CLIENT_PRIORITY: "0 1" runs gnnd as
# an MPS client of each priority, GNND_TIER_TRAINER_PERCENT: "unset 94" runs the trainer with each
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); storage-labor (the trainer on storage,
# uniform against LABOR with and without batch_dependency). OUT_DIR/RESULTS.md gets the
# device, date, commit and command, then one section per part with its table; save it as
# bench/runs/run-NEXT.md and update the rows of bench/RESULTS.md it changes.
# `coschedule` starts and quits the CUDA MPS control daemon itself (never touches clocks or compute mode).
set -uo pipefail
mode=${1:-}
case "$mode" in
  build)
    [ $# -eq 3 ] || { echo "usage: $0 build BUILD_DIR OUT_DIR" >&2; exit 2; }
    cmake --build "$2" --target gnnd gnnctl gnnd_client gpu_bench gpu_tests storage_bench || exit 1
    archives=$(mktemp -d)
    bash "$(dirname "$0")/../deploy/bundle.sh" "$2" "$archives" "$2/bench/gpu_bench" "$2/tests/gpu_tests" "$2/bench/storage_bench" >/dev/null || exit 1
    mkdir -p "$3" && rm -rf "$3"/gnnd-*/ && tar -C "$3" -xzf "$archives"/gnnd-*.tar.gz && rm -rf "$archives"
    git -C "$(dirname "$0")" describe --always --dirty >"$(ls -d "$3"/gnnd-*/ | head -1)/commit.txt"
    ls -d "$3"/gnnd-*/
    exit 0 ;;
  run) ;;
  *) echo "usage: $0 build BUILD_DIR OUT_DIR | run BUNDLE_DIR OUT_DIR [PART...]" >&2; exit 2 ;;
esac
[ $# -ge 3 ] || { echo "usage: $0 run BUNDLE_DIR OUT_DIR [PART...]" >&2; exit 2; }
bundle=$(realpath "$2")
out=$(mkdir -p "$3" && realpath "$3")
shift 3
parts=${*:-check sessions sampling gather typed tier torch coschedule hetero first next}
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$bundle/env.sh"
export PYTHONPATH="$repo/client/python:$repo/bench:$PYTHONPATH" PYTHONUNBUFFERED=1
python=/usr/bin/python3
[ -x "$python" ] && "$python" -c "import torch" 2>/dev/null || python=python3
data=${GNND_BENCH_DATA:-/tmp/gnnd-bench}
mkdir -p "$data"
results="$out/RESULTS.md"
status=0

{
  echo "# GPU benchmark results"
  echo
  echo "- Device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)," \
    "$(nproc) CPU cores"
  echo "- Date: $(date -u +%Y-%m-%d); commit $(cat "$bundle/commit.txt" 2>/dev/null || echo unknown)"
  echo "- Command: \`bash bench/run_gpu.sh run BUNDLE OUT $parts\` (bundle from \`bash bench/run_gpu.sh build build OUT\`)"
  echo "- Batches: 1024 seeds, fanouts [15, 10, 5] unless a table says otherwise; medians."
} >"$results"

section() {  # section TITLE TEXT: a heading and a paragraph
  printf '\n## %s\n\n%s\n\n' "$1" "$2" >>"$results"
  echo "== $1 ($(date +%T))"
}
run() {  # run COMMAND...: its stdout into the results, stderr into the log
  echo "\$ $*" >>"$out/log.txt"
  "$@" >>"$results" 2>>"$out/log.txt" || { echo "FAILED: $*"; tail -5 "$out/log.txt"; status=1; }
}
products() {
  [ -f "$data/products/manifest.textproto" ] ||
    gnnctl generate --preset products --seed 0 "$data/products" >/dev/null 2>>"$out/log.txt"
  echo "$data/products"
}

papers03() {  # papers x0.3: 33.3 M nodes, 16 GiB of 512 B rows (features larger than the memory limit below)
  [ -f "$data/papers03/manifest.textproto" ] ||
    gnnctl generate --preset papers --scale 0.3 --seed 0 "$data/papers03" >/dev/null 2>>"$out/log.txt"
  echo "$data/papers03"
}
memory_cgroup() {  # memory_cgroup NAME: a cgroup of memory.max GNND_STORAGE_MEMORY (default 12G); prints its path
  mkdir -p "/sys/fs/cgroup/$1" && echo "${GNND_STORAGE_MEMORY:-12G}" >"/sys/fs/cgroup/$1/memory.max" ||
    echo "no cgroup memory limit (cgroup v2 not writable)" >>"$results"
  echo "/sys/fs/cgroup/$1"
}

for part in $parts; do
  case "$part" in
    check)
      section "Check: CUDA batches byte-identical to the CPU backend" \
        "\`gpu_tests\` (every dtype and row shape, fanout -1, Philox on the device)."
      gpu_tests >"$out/gpu_tests.log" 2>&1 && grep -q PASSED "$out/gpu_tests.log" && ! grep -q FAILED "$out/gpu_tests.log" ||
        { echo "gpu_tests FAILED"; status=1; }
      grep -E "^\[  PASSED  \]|^\[  FAILED  \]" "$out/gpu_tests.log" | sed 's/^/    /' >>"$results" ;;
    sessions)
      section "Check: GPU sessions end to end" \
        "\`tests/python/test_gpu_session.py\` (gnnd serving torch trainers through CUDA IPC), without and with MPS."
      for mps in no-mps mps; do
        [ $mps = mps ] && { nvidia-cuda-mps-control -d || continue; }
        GNND=$(command -v gnnd) GNNCTL=$(command -v gnnctl) PYTHONPATH="$repo/tests/python:$PYTHONPATH" \
          timeout 300 "$python" -m pytest -q -p no:cacheprovider "$repo/tests/python/test_gpu_session.py" \
          >"$out/gpu_session_$mps.log" 2>&1 || { echo "GPU sessions ($mps) FAILED"; status=1; }
        pkill -x gnnd 2>/dev/null
        [ $mps = mps ] && { echo quit | timeout 30 nvidia-cuda-mps-control; }
        echo "    $mps: $(grep -E '[0-9]+ (passed|failed)' "$out/gpu_session_$mps.log" | tail -1)" >>"$results"
      done ;;
    sampling)
      section "Sampling stage and whole batches" \
        "\`gpu_bench sampling\`: the sampling stage (hops, dedup, relabel; CUDA events around it) and the whole \
batch (+ feature gather and labels), products preset (2.45 M nodes, 100 float32 features) and a synthetic \
papers100M-sized graph (111 M nodes, log-normal in-degrees of mean 14.5, uniform sources; one feature)."
      run gpu_bench sampling --dataset "$(products)" --fanouts 15,10,5/20,15,10
      echo >>"$results"
      run gpu_bench sampling --synthetic_nodes 111059956 --fanouts 15,10,5/20,15,10 ;;
    slots)
      section "Slots sized by the batches (issue 37)" \
        "\`bench/slot_sizing.py\`: gnnd.Loader sessions on cuda:0 (slots sized by 16 batches sampled at open, with \
headroom), batch 1024, [15, 10, 5] on every relation: one slot against the largest batch delivered and against the \
bound (every feature row a batch could reach: the slot of a session without slots_may_grow), slots added; an epoch \
(steps) or the steps given. R-GAT: PyG to_hetero(GATConv) 3 layers, 512 = 4 x 128 wide, trained on the batches \
(HeteroData from gnnd.pyg.NeighborLoader) beside the slots, default limits: steps/s and PyTorch's peak GPU memory."
      echo "| dataset | kind | steps | slot MiB | largest batch MiB | slot / largest | bound MiB | bound / slot | slots added | open s | R-GAT steps/s | peak GiB |" >>"$results"
      echo "|---|---|---|---|---|---|---|---|---|---|---|---|" >>"$results"
      for scale in 0.005 0.02; do
        [ -f "$data/igbh$scale/manifest.textproto" ] ||
          gnnctl generate --preset igbh --scale $scale --feature-dtype float8_e4m3fn --add-reverse \
            --link-relation paper___cites___paper --seed 0 "$data/igbh$scale" >/dev/null 2>>"$out/log.txt"
      done
      run "$python" "$repo/bench/slot_sizing.py" --dir "$(products)" --kind node
      run "$python" "$repo/bench/slot_sizing.py" --dir "$data/igbh0.005" --kind typed
      run "$python" "$repo/bench/slot_sizing.py" --dir "$data/igbh0.005" --kind link --steps ${GNND_SLOTS_STEPS:-300}
      run "$python" "$repo/bench/slot_sizing.py" --dir "$data/igbh0.02" --kind typed --rgat --steps ${GNND_RGAT_STEPS:-60} ;;
    versus)
      # A baseline build's gpu_bench ($GNND_BASELINE_BENCH, run with this bundle's libraries) against this one,
      # alternated on the same graphs and machine: a change's before and after in one run.
      base=${GNND_BASELINE_BENCH:-$bundle/bin/gpu_bench_before}
      section "Against a baseline build" \
        "\`gpu_bench sampling\`, \`typed\` and \`link\` of a baseline build ($(basename "$base")) and of this one, \
alternated (baseline, this, baseline, this for sampling): products preset and the synthetic papers100M-sized graph."
      for round in 1 2; do
        for bin in "$base" gpu_bench; do
          printf '\n### %s, round %s\n\n' "$([ "$bin" = gpu_bench ] && echo this build || echo baseline)" "$round" >>"$results"
          run "$bin" sampling --dataset "$(products)" --fanouts 15,10,5/20,15,10 --csc gpu,host
          echo >>"$results"
          run "$bin" sampling --synthetic_nodes 111059956 --fanouts 15,10,5/20,15,10 --csc gpu
          if [ "$round" = 1 ]; then
            echo >>"$results"
            run "$bin" typed
            echo >>"$results"
            run "$bin" link --dataset "$(products)"
          fi
        done
      done ;;
    gather)
      section "Feature gather against the ceiling and memcpy" \
        "\`gpu_bench gather\`: node ids of sampled products batches (gnnd's order), rows from a pinned table of \
each size; gnnd's gather vs a plain warp-per-row gather of the same ids sorted (the density ceiling) vs a \
pinned cudaMemcpy of the same bytes."
      run gpu_bench gather --dataset "$(products)" --row_bytes 256,400,512,1024,2052,4096 ;;
    typed)
      section "Typed graphs: sampling against the homogeneous kernel" \
        "\`gpu_bench typed\`: typed sampling (CudaSampler, CSC in GPU memory, CUDA graphs, every relation's \
reverse added, 16-byte features) on in-memory graphs of MAG240M's node and edge counts and IGBH-Full's at half \
scale, seeds 1 % of the papers, then the homogeneous sampler on a graph of the same node and edge counts; sampled \
edges per second of the sampling stage. Then the gather for MAG240M's 1536-byte float16 rows and IGBH's \
1024-byte float8 rows."
      run gpu_bench typed --batches 30
      echo >>"$results"
      run gpu_bench gather --dataset "$(products)" --row_bytes 1536,1024 ;;
    tier)
      section "Hot tier: feature rows in GPU memory" \
        "\`gpu_bench tier\`: hot rows by the expected-reads ranking (what \`gnnctl hotness --write\` stores), caches \
of 0-50 % of the rows, gnnd's gather of sampled batches in GB/s of rows delivered; a papers100M-sized synthetic \
graph whose sources are skewed like papers100M's (about a third of the edges leave 1 % of the nodes), 128 \
float32 features (512 B rows), and the products preset (its generator's skew)."
      run gpu_bench tier --synthetic_nodes 111059956 --synthetic_skew 4 --row_bytes 512 --batches 40
      echo >>"$results"
      run gpu_bench tier --dataset "$(products)" --row_bytes 512 --batches 40 ;;
    torch)
      section "torch baselines on the same kind of ids" \
        "\`bench/torch_gather.py\`: products, 400 B rows (compare with the 400 B row of the gather table)."
      run "$python" "$repo/bench/torch_gather.py" --dataset "$(products)" ;;
    coschedule)
      section "Does the trainer notice gnnd? (end to end, SM sweep)" \
        "\`bench/coschedule.py\`: a PyG SAGEConv 3 x 256 trainer fed by gnnd (gnnd.pyg.NeighborLoader, CUDA IPC) \
against the same loop on batches already in its GPU memory; products; 200 steps per measurement, median \
of 2 alternated rounds. producer_sms: SMs of the producer's green context (auto: 8, more while the trainer waits; 0: whole GPU). \
next(): the trainer's host µs in one next() between steps, after waiting for the GPU and 5 ms for gnnd's refill \
(in the timed loop the host runs ahead of its queued steps and next() waits for the GPU to consume a released slot \
and gnnd to refill it), median (quartiles); stand-in: next()'s torch and PyG work without gnnd in the same place \
(slices, the int64 edge_index, PyG's Data), median."
      echo "| gnnd | ideal steps/s | fed steps/s | fed / ideal | next() µs | stand-in µs |" >>"$results"
      echo "|---|---|---|---|---|---|" >>"$results"
      # The products set has its hot_order.npy (gnnctl generate stores it), so gnnd's default gpu_cache (auto)
      # caches every row; --gpu-cache=none is the path where every row crosses PCIe.
      p=$(products)
      for mps in no-mps mps; do
        [ $mps = mps ] && { nvidia-cuda-mps-control -d || { echo "| MPS did not start | | | | | |" >>"$results"; break; }; }
        label=${mps/no-mps/no MPS}; label=${label/mps/MPS}
        run "$python" "$repo/bench/coschedule.py" --dataset "$p" --gnnd-args="--producer-sms=auto --gpu-cache=none" \
          --label "$label, producer_sms auto, no hot tier"
        run "$python" "$repo/bench/coschedule.py" --dataset "$p" --gnnd-args="--producer-sms=auto" \
          --label "$label, producer_sms auto, hot tier (gpu_cache auto: every row)"
        [ $mps = mps ] || continue
        for sms in 0 16 64; do
          run "$python" "$repo/bench/coschedule.py" --dataset "$p" --gnnd-args="--producer-sms=$sms --gpu-cache=none" \
            --label "MPS, producer_sms $sms, no hot tier"
        done
        echo quit | timeout 30 nvidia-cuda-mps-control
      done ;;
    multi)
      section "Several GPUs of one host (issue 26)" \
        "\`bench/multi_gpu.sh\` under MPS: examples/ddp_sage.py on products (batch 1024, [15, 10, 5]) on one GPU, on all \
under one gnnd, and as two \"nodes\" of one GPU each (a gnnd instance per GPU, \`torchrun --nnodes 2\`, NCCL); \
gpu_tests with each GPU alone; examples/ddp_hetero.py on the mag preset (x0.1, reverses) with DDP. Then \
\`tests/python/test_nodes.py\` (its GPU cases: one GPU per node, NCCL; shards cover the split exactly)."
      run bash "$repo/bench/multi_gpu.sh" "$data" "$out"
      GNND=$(command -v gnnd) GNNCTL=$(command -v gnnctl) PYTHONPATH="$repo/tests/python:$PYTHONPATH" \
        timeout 420 "$python" -m pytest -q -p no:cacheprovider "$repo/tests/python/test_nodes.py" \
        >"$out/test_nodes.log" 2>&1 || { echo "test_nodes FAILED"; status=1; }
      echo "    test_nodes.py: $(grep -E '[0-9]+ (passed|failed)' "$out/test_nodes.log" | tail -1)" >>"$results" ;;
    node)
      section "One gnnd feeding a whole node (issue 26)" \
        "\`bench/whole_node.sh\`: gpu_tests on every GPU alone, all at once; test_gpu_session.py's split-tier test \
(sessions on every GPU of a hot tier split over NVLink peers, batches equal to the CPU backend's); \`gpu_bench tier\` \
on the papers100M-sized synthetic graph with the tier split over all GPUs, all gathering at once, then on one GPU; \
examples/ddp_sage.py on the papers preset (x${GNND_NODE_SCALE:-1}) under MPS on one GPU and on all under one gnnd \
(--prepare-gpus=all, gpu_cache auto), with gnnd's threads, CPU use and memory during the run."
      run bash "$repo/bench/whole_node.sh" "$data" "$out" ${GNND_NODE_PARTS:-} ;;
    hetero)
      section "Does a typed trainer notice gnnd? (end to end, MPS)" \
        "\`bench/coschedule_typed.py\`: examples/hetero_pyg.py's \`to_hetero\` GraphSAGE (2 x 128) on the mag preset \
at scale 0.1 with reverses (8 relations), batch 1024, [15, 10], fed by gnnd.pyg.NeighborLoader on cuda:0 against the \
same loop on 30 premade batches in its memory, ${GNND_HETERO_BLOCKS:-12} blocks of 100 steps of each taken in turn; producer_sms auto."
      echo "| gnnd | ideal steps/s | fed steps/s | fed / ideal | per block pair, median (quartiles) | next() µs |" >>"$results"
      echo "|---|---|---|---|---|---|" >>"$results"
      [ -f "$data/mag/manifest.textproto" ] ||
        gnnctl generate --preset mag --scale 0.1 --add-reverse --seed 0 "$data/mag" >/dev/null 2>>"$out/log.txt"
      nvidia-cuda-mps-control -d || { echo "| MPS did not start | | | | | |" >>"$results"; continue; }
      for slots in 2 4; do
        run "$python" "$repo/bench/coschedule_typed.py" --dir "$data/mag" --steps 100 --blocks ${GNND_HETERO_BLOCKS:-12} --slots $slots \
          --label "MPS, producer_sms auto, $slots slots"
      done
      echo quit | timeout 30 nvidia-cuda-mps-control ;;
    first)
      section "First batch after connecting" \
        "\`bench/session_rate.py\`: a trainer process connects to a gnnd that has the dataset loaded (datasets \
prepared for the GPUs at load, the default) and times its first batch; also batches/s of a trainer that only \
takes and releases."
      run "$python" "$repo/bench/session_rate.py" --dataset "$(products)" --device cuda:0 --rounds 2 --batches 100 ;;
    next)
      section "A trainer's next()" \
        "\`bench/trainer_overhead.py\`: the trainer-side time of one next() with the batch already made (on the GPU \
with a cProfile of those calls)."
      run "$python" "$repo/bench/trainer_overhead.py" --dataset "$(products)" --device cuda:0 --idle 0
      echo >>"$results"
      run "$python" "$repo/bench/trainer_overhead.py" --dataset "$(products)" --device cuda:0 --idle 0 --wait busy --profile
      echo >>"$results"
      run "$python" "$repo/bench/trainer_overhead.py" --dataset "$(products)" --device cpu --idle 0 ;;
    soak)
      section "Soak: GPU sessions opened and closed beside steady trainers" \
        "\`bench/gpu_soak.py\`: one gnnd under MPS serving products on cuda:0; 2 steady trainers (batch 1024, \
[15, 10, 5], a 100 x 256 matmul per batch) alone, then beside ${GNND_SOAK_CHURNERS:-16} processes opening and \
closing GPU sessions of varied shapes (batch 64-1024, [5, 5] or [15, 10, 5], 1-4 slots, 0-3 batches each; 6 \
SIGKILLed mid-run and restarted) for ${GNND_SOAK_SECONDS:-300} s, then alone again; a checker comparing every GPU batch \
with the CPU backend's. Leaks: gnnd's descriptors, threads, RSS, slot bytes and the GPU's used memory, before and \
after the churn with the same 4 sessions open."
      nvidia-cuda-mps-control -d || echo "(MPS did not start: without it)" >>"$results"
      run "$python" "$repo/bench/gpu_soak.py" --dataset "$(products)" --seconds "${GNND_SOAK_SECONDS:-300}" \
        --churners "${GNND_SOAK_CHURNERS:-16}"
      pkill -x gnnd 2>/dev/null
      echo quit | timeout 30 nvidia-cuda-mps-control ;;
    storage)
      section "Features larger than memory (issue 24)" \
        "papers x0.3 (512 B rows) in a cgroup with memory.max ${GNND_STORAGE_MEMORY:-12G}, page cache dropped before each case: the disk's limits, batches through the storage tier (host caches 2 / 4 / 8 GiB) and through mmap, hit rates at equal rows (\`storage_bench\`, CPU producers)."
      papers=$(papers03)
      cgroup=$(memory_cgroup gnnd-storage-bench)
      run bash -c "echo \$\$ >$cgroup/cgroup.procs 2>/dev/null; exec storage_bench --dataset $papers \
        --cache ${GNND_STORAGE_CACHES:-2GiB,4GiB,8GiB} --drop_caches --steps ${GNND_STORAGE_STEPS:-200} \
        --warmup ${GNND_STORAGE_WARMUP:-50} --threads $(nproc) --slots ${GNND_STORAGE_SLOTS:-8} --mmap=${GNND_STORAGE_MMAP:-true}"
      rmdir "$cgroup" 2>/dev/null ;;
    edges)
      section "Edge data and weighted sampling on the GPU (issue 38)" \
        "\`gpu_bench edges\`: the papers-sized synthetic graph with each edge's id, a float32 weight and a 16-byte feature (CSC and weights in GPU memory, ids and features in pinned host memory), uniform and weighted draws, without and with the edge data in the batch; CUDA graphs."
      run gpu_bench edges --synthetic_nodes 111059956 --fanouts 15,10,5/20,15,10 --batches 40
      echo "With the host arrays in transparent huge pages (madvise), as gnnd's huge_pages dataset option holds them:" >>"$results"
      echo >>"$results"
      run gpu_bench edges --synthetic_nodes 111059956 --fanouts 15,10,5/20,15,10 --batches 40 --huge_pages ;;
    link)
      section "Link batches on the GPU (issue 25)" \
        "\`gpu_bench link\`: CudaLinkSampler on the papers-sized synthetic graph (CSC in GPU memory), 1024 positives a batch, [15, 10, 5], against node batches of the same hop-0 nodes as seeds; whole batches, every kernel launched."
      run gpu_bench link --synthetic_nodes 111059956 --batches 40 ;;
    trainer)
      section "A trainer fed from storage (issue 24)" \
        "\`bench/coschedule.py\` (PyG SAGEConv 3 x 256, batch 1024, [15, 10, 5], under MPS) on papers x0.3 (16 GiB of 512 B rows): features in memory, then on storage behind host caches of ${GNND_TRAINER_CACHES:-8GiB 2GiB} and a GPU hot tier of 2 GiB, gnnd in a cgroup with memory.max ${GNND_STORAGE_MEMORY:-12G}, page cache dropped before each; 100 steps after 10 of warm-up, one round. ideal: the same loop on 40 batches already in GPU memory."
      papers=$(papers03)
      cgroup=$(memory_cgroup gnnd-storage-trainer)
      wrapper=$data/gnnd-in-cgroup  # gnnd alone in the cgroup: the trainer's memory is its own
      printf '#!/bin/bash\necho $$ >%s/cgroup.procs 2>/dev/null\nexec %s "$@"\n' "$cgroup" "$(command -v gnnd)" >"$wrapper"
      chmod +x "$wrapper"
      nvidia-cuda-mps-control -d || echo "(MPS did not start: without it)"
      echo "| features | ideal steps/s | fed steps/s | fed / ideal | next() µs | stand-in µs |" >>"$results"
      echo "|---|---|---|---|---|---|" >>"$results"
      run "$python" "$repo/bench/coschedule.py" --dataset "$papers" --gnnd-args="--gpu-cache=2GiB" --steps 100 \
        --rounds 1 --label "in memory, GPU tier 2 GiB"
      for cache in ${GNND_TRAINER_CACHES:-8GiB 2GiB}; do
        sync; echo 3 >/proc/sys/vm/drop_caches
        run "$python" "$repo/bench/coschedule.py" --dataset "$papers" --gnnd "$wrapper" --steps 100 --rounds 1 \
          --gnnd-args="--feature-cache=bench=$cache --gpu-cache=2GiB" --label "on storage, host cache $cache, GPU tier 2 GiB"
        echo "memory.peak of gnnd's cgroup so far: $(cat "$cgroup/memory.peak" 2>/dev/null) bytes" >>"$results"
      done
      echo quit | timeout 30 nvidia-cuda-mps-control
      rmdir "$cgroup" 2>/dev/null ;;
    mlperf)
      scale=${GNND_MLPERF_SCALE:-0.02}
      section "An MLPerf-shaped run: R-GAT on an IGBH-shaped graph (issue 40)" \
        "\`bench/mlperf_rgat.py\` under MPS: R-GAT 3 x 512 (4 heads; bench/rgat.py, MLPerf's reference model), batch 1024 of paper seeds, [15, 10, 5], bf16, on igbh x$scale (FP8 features, reverse relations) served by gnnd with the rows in pinned host memory (--gpu-cache=none, as MLPerf's H100 runs hold them); uniform against LABOR-0, the same initial model and seeds; ideal: the same steps on batches already in GPU memory."
      igbh=$data/igbh$scale
      [ -f "$igbh/manifest.textproto" ] || gnnctl generate --preset igbh --scale "$scale" --feature-dtype float8_e4m3fn \
        --add-reverse --seed 0 "$igbh" >/dev/null 2>>"$out/log.txt"
      nvidia-cuda-mps-control -d || echo "(MPS did not start: without it)"
      export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
      # shellcheck disable=SC2086
      run "$python" "$repo/bench/mlperf_rgat.py" --dir "$igbh" --gnnd-args="--gpu-cache=none ${GNND_MLPERF_GNND_ARGS:-}" ${GNND_MLPERF_ARGS:-} \
        --steps "${GNND_MLPERF_STEPS:-100}" --eval-at "${GNND_MLPERF_EVAL_AT:-20,50,100}"
      unset PYTORCH_CUDA_ALLOC_CONF
      echo quit | timeout 30 nvidia-cuda-mps-control ;;
    tier-trainer)
      section "A PyG trainer beside a partial hot tier (issue 40)" \
        "\`bench/coschedule.py\` (PyG SAGEConv 3 x 256, batch 1024, [15, 10, 5], under MPS) on papers x0.3 (16 GiB of 512 B rows) in memory, a GPU hot tier of ${GNND_TIER_BYTES:-3840MiB} (24 % of the rows), the producer's SMs as given; ${GNND_TIER_ROUNDS:-2} rounds of 200 steps. Beside / ideal: the ideal loop (premade batches) fetching and dropping a gnnd batch each step, over the ideal: the producer and next() beside the trainer, its slots never read (where the trainer has an active thread percentage, its ideal runs under it too). With stand-in / ideal: the ideal loop running next()'s torch and PyG work without gnnd (coschedule.py's stand-in) each step, over the ideal."
      papers=$(papers03)
      nvidia-cuda-mps-control -d || echo "(MPS did not start: without it)"
      echo "| gnnd | ideal steps/s | fed steps/s | fed / ideal | beside / ideal | with stand-in / ideal | next() µs | stand-in µs |" >>"$results"
      echo "|---|---|---|---|---|---|---|---|" >>"$results"
      for percent in ${GNND_TIER_TRAINER_PERCENT:-unset}; do
        for priority in ${GNND_TIER_CLIENT_PRIORITY:-unset}; do
          # gnnd as an MPS client of this priority (CUDA_MPS_CLIENT_PRIORITY: 0 normal, 1 below normal), on the whole
          # GPU whatever the trainer's share (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: the SMs its grids are sized for)
          gnnd_bin=$data/gnnd-priority-$priority
          priority_env=""
          [ "$priority" != unset ] && priority_env="CUDA_MPS_CLIENT_PRIORITY=$priority "
          printf '#!/bin/bash\nunset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\n%sexec %s "$@"\n' "$priority_env" "$(command -v gnnd)" >"$gnnd_bin"
          chmod +x "$gnnd_bin"
          trainer_env=()
          [ "$percent" != unset ] && trainer_env=("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$percent")
          for sms in ${GNND_TIER_SMS:-auto 16 8}; do
            run env "${trainer_env[@]}" "$python" "$repo/bench/coschedule.py" --dataset "$papers" --beside --stand-in \
              --rounds "${GNND_TIER_ROUNDS:-2}" --gnnd "$gnnd_bin" --next-steps 20 \
              --gnnd-args="--gpu-cache=${GNND_TIER_BYTES:-3840MiB} --producer-sms=$sms" \
              --label "GPU tier ${GNND_TIER_BYTES:-3840MiB}, producer_sms $sms, gnnd's MPS client priority $priority, the trainer's active thread percentage $percent"
          done
        done
      done
      echo quit | timeout 30 nvidia-cuda-mps-control ;;
    storage-labor)
      section "LABOR and the storage tier (issue 40)" \
        "\`bench/coschedule.py\` (PyG SAGEConv 3 x 256, batch 1024, [15, 10, 5], under MPS) on papers x0.3 (16 GiB of 512 B rows) on storage behind a host cache of ${GNND_TRAINER_CACHES:-8GiB} and a GPU tier of 2 GiB, gnnd in a cgroup with memory.max ${GNND_STORAGE_MEMORY:-12G}, page cache dropped before each case; uniform, LABOR-0, LABOR-0 with batch_dependency ${GNND_BATCH_DEPENDENCY:-4096} (GraphBolt's disk example); ${GNND_STORAGE_STEPS:-60} steps after 10 of warm-up, 10 premade batches for the ideal. The last columns: the host cache's hit rate over the timed steps (rows a gather found cached or read ahead), and the rows storage served a step (read by a gather or ahead of it)."
      papers=$(papers03)
      cgroup=$(memory_cgroup gnnd-storage-labor)
      wrapper=$data/gnnd-in-cgroup-labor
      printf '#!/bin/bash\necho $$ >%s/cgroup.procs 2>/dev/null\nexec %s "$@"\n' "$cgroup" "$(command -v gnnd)" >"$wrapper"
      chmod +x "$wrapper"
      nvidia-cuda-mps-control -d || echo "(MPS did not start: without it)"
      peaks=""
      echo "| features, sampler | ideal steps/s | fed steps/s | fed / ideal | hit rate | rows read a step |" >>"$results"
      echo "|---|---|---|---|---|---|" >>"$results"
      for sampler in ${GNND_STORAGE_SAMPLERS:-uniform labor labor-bd}; do
        case $sampler in
          uniform) flags="" ;;
          labor) flags="--labor" ;;
          *) flags="--labor --batch-dependency ${GNND_BATCH_DEPENDENCY:-4096}"; sampler="labor, batch_dependency ${GNND_BATCH_DEPENDENCY:-4096}" ;;
        esac
        sync; echo 3 >/proc/sys/vm/drop_caches
        # shellcheck disable=SC2086
        run "$python" "$repo/bench/coschedule.py" --dataset "$papers" --gnnd "$wrapper" --rounds 1 \
          --steps "${GNND_STORAGE_STEPS:-60}" --premade 10 --next-steps 0 $flags \
          --gnnd-args="--feature-cache=bench=${GNND_TRAINER_CACHES:-8GiB} --gpu-cache=2GiB" \
          --label "on storage, cache ${GNND_TRAINER_CACHES:-8GiB}, $sampler"
        # Cumulative over the cases run so far (the cgroup is shared): where a case raised them shows.
        peaks+="$sampler: memory.peak $(cat "$cgroup/memory.peak" 2>/dev/null), events at memory.max $(awk '$1 == "max" {print $2}' "$cgroup/memory.events" 2>/dev/null); "
      done
      echo quit | timeout 30 nvidia-cuda-mps-control
      echo "gnnd's cgroup (memory.max ${GNND_STORAGE_MEMORY:-12G}) after each case: ${peaks:-}" >>"$results"
      echo "gnnd's cgroup: memory.events: $(tr '\n' ' ' <"$cgroup/memory.events" 2>/dev/null)" >>"$results"
      rmdir "$cgroup" 2>/dev/null ;;
    *) echo "unknown part: $part" >&2; status=2 ;;
  esac
done
echo "results: $results"
exit $status
