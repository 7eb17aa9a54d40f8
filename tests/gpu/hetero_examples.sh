#!/usr/bin/env bash
# Trains the typed example both ways on a small `mag` preset where PyG is installed (the GPU machine's
# image has it): examples/hetero_pyg.py (PyG's NeighborLoader) and examples/hetero_gnnd.py (gnnd's, the
# same script but two lines), each printing its validation accuracy per epoch.
#   bash tests/gpu/hetero_examples.sh BUNDLE_DIR OUT_DIR [DEVICE]
set -uo pipefail
bundle=$(realpath "$1")
out=${2:-/tmp/gnnd-hetero}
device=${3:-cpu}
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
source "$bundle/env.sh"
python3 -c "import torch_geometric" 2>/dev/null || { echo "torch_geometric not installed: skipped"; exit 0; }
data=$(mktemp -d)
gnnctl generate --preset mag --scale 0.02 --add-reverse --seed 3 "$data/mag" >/dev/null 2>&1 || exit 1
gnnd --listen="unix:$data/gnnd.sock" --dataset="mag=$data/mag" >"$out/gnnd.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null' EXIT
for _ in $(seq 100); do grep -q "event=serving" "$out/gnnd.log" && break; sleep 0.1; done
status=0
for loader in pyg gnnd; do
  GNND_ADDRESS="unix:$data/gnnd.sock" timeout 900 python3 "$repo/examples/hetero_$loader.py" --dir "$data/mag" \
    --dataset mag --device "$device" --epochs 3 >"$out/hetero_$loader.log" 2>&1 || status=1
  echo "hetero_$loader.py:"; tail -4 "$out/hetero_$loader.log"
done
exit $status
