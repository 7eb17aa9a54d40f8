#!/usr/bin/env bash
# A partitioned dataset's figures on the GPU machine, in one call (a bundle's env.sh sourced: gnnd, gnnctl, peer_bench
# and ucx_perftest on PATH): rows a peer serves per second against ucx_perftest (bench/peer_bench.sh); batches/s of
# part 0 of 2 and of 3 against the whole products preset, CPU and CUDA sessions (bench/partition_rate.py); and the
# PyG trainer fed by a CUDA session on part 0 of 2 (part 1 another gnnd on this host) against the whole dataset,
# fed / ideal under MPS (bench/coschedule.py). Usage: bash bench/partition_gpu.sh [PARTS...] (peer cpu cuda fed);
# with REMOTE_CACHE=SIZE in the environment the parts are measured with --remote-cache=SIZE too.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3; "$py" -c "import torch" 2>/dev/null || py=python3
parts=${*:-"peer cpu cuda fed"}
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
products() {
  [ -d "$data/products" ] || gnnctl generate --preset products --seed 0 "$data/products" >/dev/null
  echo "$data/products"
}
for part in $parts; do
  start=$SECONDS
  case $part in
    peer) bash "$repo/bench/peer_bench.sh" ;;
    cpu | cuda)
      device=cpu; [ "$part" = cuda ] && device=cuda:0
      PYTHONPATH="$repo/client/python:${PYTHONPATH:-}" "$py" "$repo/bench/partition_rate.py" --dataset "$(products)" \
        --device "$device" --batches 100 --rounds 3 ${REMOTE_CACHE:+--remote-cache "$REMOTE_CACHE"} ;;
    fed)
      p=$(products)
      gnnctl partition --parts 2 --method random "$p" "$data/p2" >/dev/null
      printf 'partition-gpu-bench-token\n' >"$data/token" && chmod 600 "$data/token"
      ports="127.0.0.1:27100,127.0.0.1:27101"
      peer_args="--peers=$ports --peer-token-file=$data/token --peer-shared-memory"
      nvidia-cuda-mps-control -d || echo "MPS did not start"
      gnnd --listen="unix:$data/p1.sock" --dataset="bench=$data/p2/part-1" $peer_args --gpu-cache=none \
        >"$data/p1.log" 2>&1 &
      peer=$!
      PYTHONPATH="$repo/client/python:${PYTHONPATH:-}" "$py" "$repo/bench/coschedule.py" --dataset "$p" \
        --gnnd-args="--producer-sms=auto --gpu-cache=none" --label "MPS, whole products, no hot tier"
      PYTHONPATH="$repo/client/python:${PYTHONPATH:-}" "$py" "$repo/bench/coschedule.py" --dataset "$data/p2/part-0" \
        --gnnd-args="--producer-sms=auto --gpu-cache=none $peer_args" --label "MPS, part 0 of 2 (random), no hot tier"
      if [ -n "${REMOTE_CACHE:-}" ]; then
        PYTHONPATH="$repo/client/python:${PYTHONPATH:-}" "$py" "$repo/bench/coschedule.py" --dataset "$data/p2/part-0" \
          --gnnd-args="--producer-sms=auto --gpu-cache=none $peer_args --remote-cache=$REMOTE_CACHE" \
          --label "MPS, part 0 of 2 (random), no hot tier, --remote-cache=$REMOTE_CACHE"
      fi
      kill "$peer"; wait "$peer"
      echo quit | timeout 30 nvidia-cuda-mps-control ;;
  esac
  echo "$part: $((SECONDS - start)) s" >&2
done
