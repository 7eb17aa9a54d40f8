#!/usr/bin/env bash
# Generation, import and shared-memory load of the products-sized synthetic graph: wall time, peak
# resident memory and load throughput. Usage: bash bench/shm_load.sh [BUILD_DIR] [WORK_DIR]
# Prints a markdown table row set for bench/history.md.
set -euo pipefail
build=$(realpath "${1:-build}")
work=${2:-$(mktemp -d)}
gnnctl="$build/tools/gnnctl"
gnnd="$build/server/gnnd"
mkdir -p "$work"
measure() {  # label, command...: runs it under /usr/bin/time -v, prints "label | wall s | peak MiB"
  local label=$1; shift
  /usr/bin/time -v "$@" >"$work/$label.out" 2>"$work/$label.err"
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$work/$label.err" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$work/$label.err" | awk '{print $NF}')
  echo "| $label | \`${*/#$build\//}\` | $wall | $((rss / 1024)) |"
}
rm -rf "$work/products" "$work/products-bin" "$work/imported"
echo "| step | command | wall (m:ss) | peak RSS (MiB) |"
echo "|---|---|---|---|"
measure generate "$gnnctl" generate --preset products --seed 0 "$work/products"
# The same graph as an OGB binary dataset (numpy savez, stored), then imported back.
/usr/bin/python3 - "$work/products" "$work/products-bin" <<'PY'
import sys, pathlib, gzip, numpy as np
src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
(out / "raw").mkdir(parents=True)
indptr, indices = np.load(src / "indptr.npy"), np.load(src / "indices.npy", mmap_mode="r")
dst = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
np.savez(out / "raw" / "data.npz", edge_index=np.stack([indices.astype(np.int64), dst]),
         node_feat=np.load(src / "features.npy", mmap_mode="r"), num_nodes_list=np.array([len(indptr) - 1]))
labels = np.load(src / "labels.npy").astype(np.float64)
labels[labels < 0] = np.nan
np.savez(out / "raw" / "node-label.npz", node_label=labels.reshape(-1, 1))
for split in ("train", "valid", "test"):
    (out / "split" / "synthetic").mkdir(parents=True, exist_ok=True)
    with gzip.open(out / "split" / "synthetic" / f"{split}.csv.gz", "wt", compresslevel=1) as f:
        np.savetxt(f, np.load(src / f"{split}.npy"), fmt="%d")
PY
measure import-ogb-bin "$gnnctl" import --format ogb-bin "$work/products-bin" "$work/imported"
cmp "$work/products/indices.npy" "$work/imported/indices.npy" && echo "<!-- imported indices identical to generated -->"
name="bench-$$"
for run in 1 2 3; do
  measure "load-$run" "$gnnd" --dataset "$name=$work/products" --exit_after_load
  grep -o "copied in .*" "$work/load-$run.err" | sed "s/^/<!-- load $run: /; s/$/ -->/"
done
for run in 1 2 3; do
  measure "load-huge-pages-$run" "$gnnd" --dataset "$name=$work/products" --exit_after_load --huge_pages
  grep -o "copied in .*\|huge pages requested.*" "$work/load-huge-pages-$run.err" | sed "s/^/<!-- load --huge_pages $run: /; s/$/ -->/"
done
