#!/usr/bin/env bash
# The main job on the built-in default: build gnnd, generate the small synthetic dataset, start the
# daemon on it (the CPU backend; the CUDA one too where a GPU is present), and run an example trainer that
# reads an epoch and prints batches/s. Builds only what it runs (a unity build; CUDA only where a GPU will
# run it) and prints the seconds of each step last.
# Usage: bash deploy/quickstart.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${1:-build}")
timings=()
step() {  # step NAME COMMAND...
  local name=$1 start=$SECONDS
  shift
  "$@"
  timings+=("$name $((SECONDS - start))")
}
trap 'for t in "${timings[@]}"; do printf "%-10s %4d s\n" $t; done' EXIT
step apt bash deploy/install-deps.sh --build
cuda=OFF
nvidia-smi -L >/dev/null 2>&1 && cuda=ON
step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
  -DGNND_CUDA=$cuda >/dev/null
step compile cmake --build "$build" --target gnnd gnnctl gnnd_client
data="$build/datasets/tiny"
mkdir -p "$(dirname "$data")"
[ -f "$data/manifest.textproto" ] || step generate "$build/tools/gnnctl" generate --preset tiny --seed 0 "$data"

socket="$build/gnnd.sock"
"$build/server/gnnd" --listen "unix:$socket" --dataset "tiny=$data" &
gnnd_pid=$!
trap 'kill -TERM $gnnd_pid 2>/dev/null; wait $gnnd_pid; for t in "${timings[@]}"; do printf "%-10s %4d s\n" $t; done' EXIT
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
"$build/tools/gnnctl" --address "unix:$socket" status
GNND_CLIENT_LIBRARY="$build/client/libgnnd_client.so" PYTHONPATH="$PWD/client/python" \
  step train /usr/bin/python3 client/python/examples/read_epoch.py --address "unix:$socket" --dataset tiny
