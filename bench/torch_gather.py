#!/usr/bin/python3
"""The torch way to move a sampled batch's feature rows to the GPU, on the ids of real batches: what gnnd's
zero-copy gather is compared with (gpu_bench gather, same dataset, row size and kind of ids).

    /usr/bin/python3 bench/torch_gather.py --dataset DIR [--gnnctl BIN] [--device cuda:0]

1. features.index_select(0, ids).pin_memory().cuda() — the plain way;
2. index_select into a reused pinned buffer, then one non-blocking copy into a reused GPU buffer.
The ids are the node ids of batches from `gnnctl sample` (batch 1024, fanouts [15, 10, 5]). Prints a
markdown table of GB/s of rows delivered (median over batches and repetitions).
"""
import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--gnnctl", default=shutil.which("gnnctl"))
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--batches", type=int, default=4)
    args = parser.parse_args()
    device = torch.device(args.device)
    features = torch.from_numpy(np.load(f"{args.dataset}/features.npy"))
    ids = []
    with tempfile.TemporaryDirectory() as tmp:
        for step in range(args.batches):
            out = f"{tmp}/b{step}.npz"
            subprocess.run([args.gnnctl, "sample", f"--dataset={args.dataset}", "--batch-size=1024",
                            "--fanouts=15,10,5", "--seed=1", f"--step={step}", f"--out={out}"], check=True,
                           capture_output=True)
            ids.append(torch.from_numpy(np.load(out)["node_ids"]))
    most = max(len(i) for i in ids)
    pinned = torch.empty((most, features.shape[1]), dtype=features.dtype).pin_memory()
    on_gpu = torch.empty((most, features.shape[1]), dtype=features.dtype, device=device)

    def plain(i):
        return features.index_select(0, i).pin_memory().to(device)

    def reused(i):
        n = len(i)
        torch.index_select(features, 0, i, out=pinned[:n])
        on_gpu[:n].copy_(pinned[:n], non_blocking=True)

    row = features.shape[1] * features.element_size()
    print(f"{len(ids)} batches of {statistics.mean(len(i) for i in ids):.0f} nodes, {row} B rows, "
          f"{torch.get_num_threads()} torch threads\n")
    print("| method | GB/s |\n|---|---|")
    for name, fn in (("index_select + pin_memory() + .cuda()", plain),
                     ("index_select into a reused pinned buffer + non-blocking copy", reused)):
        rates = []
        for rep in range(4):
            for i in ids:
                torch.cuda.synchronize(device)
                start = time.perf_counter()
                fn(i)
                torch.cuda.synchronize(device)
                if rep:
                    rates.append(len(i) * row / (time.perf_counter() - start) / 1e9)
        print(f"| {name} | {statistics.median(rates):.1f} |")


if __name__ == "__main__":
    sys.exit(main())
