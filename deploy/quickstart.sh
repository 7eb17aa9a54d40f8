#!/usr/bin/env bash
# The main job on the built-in default: build gnnd, generate the small synthetic dataset, start the
# daemon on it (CPU backend), and run an example trainer that reads an epoch and prints batches/s.
# Usage: bash deploy/quickstart.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${1:-build}")
bash deploy/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target gnnd gnnctl gnnd_client
data="$build/datasets/tiny"
mkdir -p "$(dirname "$data")"
[ -f "$data/manifest.textproto" ] || "$build/tools/gnnctl" generate --preset tiny --seed 0 "$data"

socket="$build/gnnd.sock"
"$build/server/gnnd" --listen "unix:$socket" --dataset "tiny=$data" &
gnnd_pid=$!
trap 'kill -TERM $gnnd_pid 2>/dev/null; wait $gnnd_pid' EXIT
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
"$build/tools/gnnctl" --address "unix:$socket" status
GNND_CLIENT_LIBRARY="$build/client/libgnnd_client.so" PYTHONPATH="$PWD/client/python" \
  /usr/bin/python3 client/python/examples/read_epoch.py --address "unix:$socket" --dataset tiny
