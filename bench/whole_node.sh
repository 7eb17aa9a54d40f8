#!/usr/bin/env bash
# One gnnd feeding every GPU of a node (run_gpu.sh part `node`; issue 26's whole-node run): markdown on stdout.
#   checks  how the GPUs are linked; gpu_tests on every GPU alone, all at once (CUDA batches byte-identical to
#           the CPU backend); test_gpu_session.py's split-tier test (one gnnd, a hot tier split over all GPUs,
#           sessions on every GPU at once, every batch equal to the CPU reference).
#   tier    gpu_bench tier on the papers100M-sized synthetic graph, the tier split over all GPUs and all
#           gathering at once, then on one GPU: GB/s per GPU and the rows cached in all vs one.
#   sage    examples/ddp_sage.py (batch 1024, [15, 10, 5]) on the papers preset (GNND_NODE_SCALE, default 1:
#           111 M nodes, 128 float32 features) under MPS: one GPU under a gnnd that sees only it, then every GPU
#           under one gnnd; per-rank steps/s of the last epoch; gnnd's threads, CPU use and memory meanwhile.
#   bash bench/whole_node.sh DATA_DIR LOG_DIR [PART...]   (the bundle's env.sh sourced)
set -uo pipefail
data=$1 logs=$2
shift 2
parts=${*:-checks tier sage}
repo=$(cd "$(dirname "$0")/.." && pwd)
python=/usr/bin/python3
[ -x "$python" ] && "$python" -c "import torch" 2>/dev/null || python=python3
gpus=$(nvidia-smi -L | wc -l)
all=$(seq -s, 0 $((gpus - 1)))
papers=$data/papers${GNND_NODE_SCALE:-1}
status=0
mkdir -p "$data" "$logs"

generating=
if [[ " $parts " == *" sage "* && ! -f "$papers/manifest.textproto" ]]; then  # in the background, meanwhile
  (time gnnctl generate --preset papers --scale "${GNND_NODE_SCALE:-1}" --seed 0 "$papers") >"$logs/generate.log" 2>&1 &
  generating=$!
fi

for part in $parts; do
  case "$part" in
    checks)
      nvidia-smi topo -m >"$logs/topo.txt" 2>&1
      echo "GPUs: $gpus; links (nvidia-smi topo -m, GPU0's row): $(grep -E '^GPU0' "$logs/topo.txt" | tr -s ' \t' ' ')"
      echo
      echo "| check | result |"
      echo "|---|---|"
      pids=()
      for ((g = 0; g < gpus; g++)); do
        CUDA_VISIBLE_DEVICES=$g gpu_tests >"$logs/gpu_tests_$g.log" 2>&1 &
        pids+=($!)
      done
      for ((g = 0; g < gpus; g++)); do
        wait "${pids[$g]}" || status=1
        echo "| gpu_tests on GPU $g alone (all GPUs at once) | $(grep -E '^\[  (PASSED|FAILED)  \]' "$logs/gpu_tests_$g.log" | paste -sd' ') |"
      done
      GNND=$(command -v gnnd) GNNCTL=$(command -v gnnctl) PYTHONPATH="$repo/tests/python:$repo/client/python" \
        timeout 300 "$python" -m pytest -q -p no:cacheprovider "$repo/tests/python/test_gpu_session.py" -k split \
        >"$logs/split_tier.log" 2>&1 || status=1
      echo "| test_gpu_session.py -k split: every GPU of a split hot tier at once vs the CPU reference |" \
        "$(grep -E '[0-9]+ (passed|failed|skipped)' "$logs/split_tier.log" | tail -1) |" ;;
    tier)
      for n in "$gpus" 1; do
        echo
        timeout 420 gpu_bench tier --synthetic_nodes 111059956 --synthetic_skew 4 --row_bytes 512 --batches 40 \
          --tier_gpus "$n" 2>>"$logs/tier.log" || { echo "(gpu_bench tier --tier_gpus $n failed)"; status=1; }
      done ;;
    sage)
      [ -n "$generating" ] && { wait "$generating" || { echo "generate failed"; tail "$logs/generate.log"; exit 1; }; }
      grep -E "^real|nodes," "$logs/generate.log" | sed 's/^/    /'
      nvidia-cuda-mps-control -d || echo "(MPS did not start: without it)"
      echo
      echo "| run | GPUs under one gnnd | hot tier | per-rank steps/s (epoch 3) | gnnd threads | gnnd CPU cores busy | gnnd RSS GiB (of it shared memory) |"
      echo "|---|---|---|---|---|---|---|"
      for visible in 0 "$all"; do
        ranks=$(($(tr -cd , <<<"$visible" | wc -c) + 1))
        log=$logs/sage_$ranks
        CUDA_VISIBLE_DEVICES=$visible gnnd --listen="unix:$log.sock" --dataset="papers=$papers" --prepare-gpus=all \
          >"$log.gnnd.log" 2>&1 &
        gnnd_pid=$!
        for _ in $(seq 3000); do grep -q "event=serving" "$log.gnnd.log" && break; sleep 0.1; done
        ticks0=$(awk '{print $14 + $15}' "/proc/$gnnd_pid/stat") start=$(date +%s.%N)
        (while sleep 2; do grep -E "^(Threads|VmRSS|RssShmem)" "/proc/$gnnd_pid/status" | tr -s ' \t' ' ' | paste -sd' '; done) \
          >"$log.proc" 2>/dev/null &
        sampler=$!
        GNND_ADDRESS="unix:$log.sock" "$python" -m torch.distributed.run --max_restarts 0 --nproc-per-node "$ranks" \
          "$repo/examples/ddp_sage.py" --dataset papers --in-dim 128 --classes 172 --epochs 3 >"$log.log" 2>&1 || status=1
        ticks1=$(awk '{print $14 + $15}' "/proc/$gnnd_pid/stat") end=$(date +%s.%N)
        kill "$sampler"
        kill "$gnnd_pid"; wait "$gnnd_pid"
        rates=$(grep -h "epoch 2:" "$log.log" | sed -E 's/.* ([0-9.]+) steps\/s/\1/' | paste -sd/ | sed 's#/# / #g')
        tier=$(grep -h "event=hot_tier_built" "$log.gnnd.log" | sed -E 's/.*hot tier of ([0-9]+) rows.*\(([0-9.]+)% of nodes\).*, ([0-9.]+) GB per GPU.*/\1 rows (\2 %), \3 GB a GPU/')
        peak=$(sort -t' ' -k2 -n "$log.proc" | tail -1)  # "VmRSS: N kB RssShmem: N kB Threads: N", most RSS
        cores=$(awk -v a="$ticks0" -v b="$ticks1" -v s="$start" -v e="$end" -v hz="$(getconf CLK_TCK)" \
          'BEGIN { printf "%.2f", (b - a) / hz / (e - s) }')
        echo "| ddp_sage.py, $ranks rank(s) | $visible | ${tier:-none} | $rates | $(awk '{print $8}' <<<"$peak") | $cores |" \
          "$(awk '{printf "%.1f (%.1f)", $2 / 1048576, $5 / 1048576}' <<<"$peak") |"
      done
      echo quit | timeout 30 nvidia-cuda-mps-control ;;
    *) echo "unknown part $part" >&2; status=2 ;;
  esac
done
exit $status
