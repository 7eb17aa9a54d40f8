#!/usr/bin/env bash
# Runs the GPU tests on a machine with a GPU from the relocatable bundle (deploy/bundle.sh) made here:
#   bash deploy/bundle.sh build out build/tests/gpu_tests && tar -C out -xzf out/gnnd-*.tar.gz
#   bash tests/gpu/run_on_gpu.sh out/gnnd-VERSION-ARCH OUT_DIR      (on the GPU machine)
# 1. gpu_tests (CUDA vs CPU byte-identical batches; Philox on the device),
# 2. compute-sanitizer memcheck over some cases of them (the typed link stage: disjoint and temporal too),
# 3. `gnnctl sample --device cuda:0` against `--device cpu` on a generated dataset (with edge attributes),
#    compared with numpy,
#    uniform, weighted (weight_attr), temporal (time_attr: edge and node times, uniform and last), disjoint,
#    LABOR (labor, batch_dependency),
# 4. the same for typed datasets (mag with edge attributes, weighted; igbh with float8 features),
# 5. GPU sessions (a torch trainer through CUDA IPC), without and with MPS.
set -uo pipefail
bundle=$(realpath "$1")
out=${2:-/tmp/gnnd-gpu}
mkdir -p "$out"
source "$bundle/env.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
status=0
gpu_tests 2>&1 | tee "$out/gpu_tests.log" | tail -25 || status=1
grep -q "FAILED" "$out/gpu_tests.log" && status=1
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 gpu_tests --gtest_filter='*mag_labor_tight_bounds_drawn_again*:*mag_labor_host_per_relation_layer*:*mag_labor_hot_wide_batch_dependency*:*f32_129_all*:*bf16_128*:*mag_host_per_relation*:*mag_weighted_host_per_relation*:*igbh_fp8*:*mag_node_time_last_host_given*:*mag_edge_time_uniform_host_indices_given*:CudaLinkStage.TypedBatchesEqualTheCpus' \
    >"$out/memcheck.log" 2>&1 && echo "memcheck: clean" || { echo "memcheck: FAILED"; tail -30 "$out/memcheck.log"; status=1; }
  grep -E "ERROR SUMMARY" "$out/memcheck.log"
fi
data=$(mktemp -d)
gnnctl generate --preset products --scale 0.05 --seed 3 --edge-attr --temporal "$data/p" >/dev/null 2>&1
# The weighted and temporal rules through gnnctl's open request (OpenSession.weight_attr, time_attr).
for draws in uniform weighted temporal_edge temporal_last disjoint labor; do
  fields=""
  [ "$draws" = weighted ] && fields='weight_attr: "edge_weight"'
  [ "$draws" = temporal_edge ] && fields='time_attr: "time"'
  [ "$draws" = temporal_last ] && fields='time_attr: "node_time" temporal_strategy: "last"'
  [ "$draws" = disjoint ] && fields='disjoint: true'
  [ "$draws" = labor ] && fields='labor: true batch_dependency: 3 edge_attrs { names: "edge_feat" }'  # not p's own edge_weight
  for device in cpu cuda:0; do
    gnnctl sample --dataset "$data/p" --batch-size 1024 --fanouts 15,10,5 --seed 5 --epoch 2 --step 7 --device "$device" \
      --open_fields="$fields" --out "$data/batch-$draws-${device/:/}.npz" || status=1
  done
  python3 - "$data/batch-$draws" <<'PY' || status=1
import sys, numpy as np
a, b = np.load(f"{sys.argv[1]}-cpu.npz"), np.load(f"{sys.argv[1]}-cuda0.npz")
for k in a.files:
    assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
print(f"gnnctl sample ({sys.argv[1].split('-')[-1]}): cpu and cuda:0 batches identical,",
      {k: a[k].shape for k in ("node_ids", "edge_src", "features", "e_id", "edge_weight", "edge_feat") if k in a.files})
PY
done
# 4. Typed: `gnnctl sample --device cuda:0` against `--device cpu` on the mag and igbh (float8) presets.
for preset in "mag --scale 0.01 --add-reverse --edge-attr --temporal" "igbh --scale 0.00002 --feature-dtype float8_e4m3fn --feature-dim 100"; do
  name=${preset%% *}
  gnnctl generate --preset $preset --seed 4 "$data/$name" >/dev/null 2>&1
  fields=""
  [ "$name" = mag ] && fields='weight_attr: "edge_weight"'  # typed and weighted
  [ "$name" = igbh ] && { cp -r "$data/mag" "$data/magt"; name=magt; fields='time_attr: "time" temporal_strategy: "last"'; }
  for device in cpu cuda:0; do
    gnnctl sample --dataset "$data/$name" --node-type paper --batch-size 512 --fanouts 10,5 --seed 5 --epoch 1 \
      --step 2 --device "$device" --open_fields="$fields" --out "$data/$name-${device/:/}.npz" || status=1
  done
  python3 - "$data/$name" <<'PY' || status=1
import sys, numpy as np
a, b = np.load(f"{sys.argv[1]}-cpu.npz"), np.load(f"{sys.argv[1]}-cuda0.npz")
assert sorted(a.files) == sorted(b.files), (a.files, b.files)
for k in a.files:
    assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
print(f"typed gnnctl sample ({sys.argv[1].split('/')[-1]}): cpu and cuda:0 identical,", len(a.files), "arrays,",
      sum(a[k].shape[0] for k in a.files if k.endswith(".edge_src")), "edges,",
      sum(a[k].shape[0] for k in a.files if k.endswith(".e_id")), "with edge data")
PY
done
# 5. GPU sessions end to end: gnnd serving a torch trainer through CUDA IPC, without and with MPS.
repo=$(cd "$(dirname "$0")/../.." && pwd)
gpu_sessions() {
  GNND=$(command -v gnnd) GNNCTL=$(command -v gnnctl) GNND_CLIENT_LIBRARY="$bundle/lib/libgnnd_client.so" \
    PYTHONPATH="$repo/client/python:$repo/tests/python:${PYTEST_PATH:-}" PYTHONUNBUFFERED=1 \
    timeout 240 python3 -m pytest -q -s -p no:cacheprovider "$repo/tests/python/test_gpu_session.py" \
    >"$out/gpu_session_$1.log" 2>&1
  local rc=$?
  pkill -x gnnd 2>/dev/null  # a crashed test leaves its daemon behind (and MPS would wait for it)
  echo "GPU sessions ($1): $(grep -E '[0-9]+ (passed|failed)' "$out/gpu_session_$1.log" | tail -1)"
  [ $rc -eq 0 ] || { grep -E "Error|error|level=warning|level=error" "$out/gpu_session_$1.log" | head -20; status=1; }
}
gpu_sessions no-mps
if command -v nvidia-cuda-mps-control >/dev/null && nvidia-cuda-mps-control -d; then
  gpu_sessions mps
  echo quit | timeout 30 nvidia-cuda-mps-control
fi
exit $status
