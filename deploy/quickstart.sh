#!/usr/bin/env bash
# The main job on the built-in default: build, generate the small synthetic dataset, load it into
# shared memory with gnnd and print its summary. Usage: bash deploy/quickstart.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bash deploy/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target gnnd gnnctl
data="$build/datasets/tiny"
[ -f "$data/manifest.textproto" ] || "$build/client/gnnctl" generate --preset tiny --seed 0 "$data"
"$build/server/gnnd" --dataset "tiny=$data" --exit_after_load
