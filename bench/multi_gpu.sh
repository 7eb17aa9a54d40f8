#!/usr/bin/env bash
# Several GPUs of one host (run_gpu.sh part `multi`), under MPS: prints markdown tables on stdout.
#  1. Two "nodes" of one GPU each: one gnnd instance per GPU (each sees only its GPU), one
#     `torchrun --nnodes 2` per node, NCCL between the ranks, examples/ddp_sage.py on products; next to it the
#     same script on one GPU alone and on all GPUs under one gnnd. Per-rank steps/s of the last epoch.
#  2. Typed batches on every GPU: gpu_tests (CUDA batches byte-identical to the CPU backend, typed ones too)
#     with each GPU the only one visible; examples/ddp_hetero.py on the mag preset with DDP over all GPUs.
#   bash bench/multi_gpu.sh DATA_DIR LOG_DIR     (the bundle's env.sh sourced: gnnd, gnnctl, gpu_tests on PATH)
set -uo pipefail
data=$1 logs=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
python=/usr/bin/python3
[ -x "$python" ] && "$python" -c "import torch" 2>/dev/null || python=python3
gpus=$(nvidia-smi -L | wc -l)
status=0
[ -f "$data/products/manifest.textproto" ] || gnnctl generate --preset products --seed 0 "$data/products" >/dev/null
[ -f "$data/mag/manifest.textproto" ] || gnnctl generate --preset mag --scale 0.1 --add-reverse --seed 0 "$data/mag" >/dev/null

started=()
start_gnnd() {  # start_gnnd NAME VISIBLE_GPUS DATASET=DIR: gnnd on unix:$logs/NAME.sock, until it serves
  CUDA_VISIBLE_DEVICES=$2 gnnd --listen="unix:$logs/$1.sock" --dataset="$3" >"$logs/$1.log" 2>&1 &
  started+=($!)
  for _ in $(seq 600); do grep -q "event=serving" "$logs/$1.log" && return 0; sleep 0.1; done
  echo "gnnd $1 did not start" >&2; status=1
}
stop_gnnd() { kill "${started[@]}" 2>/dev/null; wait "${started[@]}" 2>/dev/null; started=(); }
rates() {  # rates LOG...: the last epoch's steps/s of every rank, "a / b"
  for log in "$@"; do grep -h "epoch 2:" "$log"; done | sed -E 's/.* ([0-9.]+) steps\/s/\1/' | paste -sd/ | sed 's#/# / #g'
}
torchrun_() { "$python" -m torch.distributed.run --max_restarts 0 "$@"; }

nvidia-cuda-mps-control -d || echo "(MPS did not start: without it)"
echo "| run | GPUs | gnnd instances | ranks | per-rank steps/s (epoch 3) |"
echo "|---|---|---|---|---|"
sage=("$repo/examples/ddp_sage.py" --dataset products --epochs 3)
start_gnnd one 0 "products=$data/products"
GNND_ADDRESS="unix:$logs/one.sock" CUDA_VISIBLE_DEVICES=0 torchrun_ --nproc-per-node 1 "${sage[@]}" \
  >"$logs/sage_one.log" 2>&1 || status=1
stop_gnnd
echo "| one GPU alone | 1 | 1 | 1 | $(rates "$logs/sage_one.log") |"
all=$(seq -s, 0 $((gpus - 1)))
start_gnnd node "$all" "products=$data/products"
GNND_ADDRESS="unix:$logs/node.sock" torchrun_ --nproc-per-node "$gpus" "${sage[@]}" >"$logs/sage_node.log" 2>&1 || status=1
stop_gnnd
echo "| one node, one gnnd | $gpus | 1 | $gpus | $(rates "$logs/sage_node.log") |"
port=$((29600 + RANDOM % 1000)) jobs=()
for n in 0 1; do
  start_gnnd "node$n" $n "products=$data/products"
  GNND_ADDRESS="unix:$logs/node$n.sock" CUDA_VISIBLE_DEVICES=$n torchrun_ --nnodes 2 --nproc-per-node 1 --node-rank $n \
    --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$port" --rdzv-id nodes "${sage[@]}" >"$logs/sage_node$n.log" 2>&1 &
  jobs+=($!)
done
for job in "${jobs[@]}"; do wait "$job" || status=1; done
stop_gnnd
echo "| two nodes of one GPU, NCCL | 2 | 2 | 2 | $(rates "$logs/sage_node0.log" "$logs/sage_node1.log") |"

echo
echo "| typed check | result |"
echo "|---|---|"
for ((g = 0; g < gpus; g++)); do
  CUDA_VISIBLE_DEVICES=$g gpu_tests >"$logs/gpu_tests_$g.log" 2>&1 || status=1
  echo "| gpu_tests on GPU $g alone | $(grep -E '^\[  (PASSED|FAILED)  \]' "$logs/gpu_tests_$g.log" | paste -sd' ') |"
done
start_gnnd mag "$all" "mag=$data/mag"
for ranks in 1 "$gpus"; do
  GNND_ADDRESS="unix:$logs/mag.sock" torchrun_ --nproc-per-node "$ranks" "$repo/examples/ddp_hetero.py" \
    --dir "$data/mag" --dataset mag --epochs 3 >"$logs/hetero_$ranks.log" 2>&1 || status=1
  accuracy=$(grep -h "epoch 2:" "$logs/hetero_$ranks.log" | head -1 | sed -E 's/.*valid accuracy ([0-9.]+).*/\1/')
  echo "| ddp_hetero.py, $ranks GPU(s): valid accuracy; per-rank steps/s | $accuracy; $(rates "$logs/hetero_$ranks.log") |"
done
stop_gnnd
echo quit | timeout 30 nvidia-cuda-mps-control
exit $status
