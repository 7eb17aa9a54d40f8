"""An in-process torch reference of link batches on a GPU, the baseline for `gpu_bench link` on the same
dataset: tests/python/training.py's ReferenceSampler (vectorized torch on the GPU: uniform without replacement
by random keys, new nodes numbered in id order) around the batch's unique endpoints, negatives by torch.randint
(binary 1:1, as PyG's loader draws them), hop 0 and local pairs by torch.unique, features gathered. No seed-edge
exclusion. Positives: graph edges, drawn as gpu_bench draws them (uniform destinations, a uniform in-neighbor).
Feature rows (--features): "host", the usual torch pipeline (rows indexed on the CPU, copied to the GPU), as
gnnd keeps them in host memory (read zero-copy); "gpu", every row in GPU memory (what gnnd's hot tier gives
when it holds them all); "none", sampling alone. Prints the median ms per batch of --batches timed batches
(after 5 warm-up ones) for each.

    python3 bench/torch_link_reference.py --dataset DIR --device cuda:0
"""
import argparse
import pathlib
import sys
import time
import types

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from training import ReferenceSampler  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--features", default="host,gpu,none")
    args = parser.parse_args()
    root = pathlib.Path(args.dataset)
    indptr, indices = np.load(root / "indptr.npy"), np.load(root / "indices.npy").astype(np.int64)
    num_nodes = len(indptr) - 1
    features = torch.from_numpy(np.load(root / "features.npy"))
    # The sampler's "features" are the node ids (float64 holds them exactly): its x names the batch's nodes,
    # whose rows are then gathered as --features says.
    dataset = types.SimpleNamespace(indptr=indptr, indices=indices,
                                    features=torch.arange(num_nodes, dtype=torch.float64).unsqueeze(1),
                                    labels=torch.zeros(num_nodes, dtype=torch.int64), num_nodes=num_nodes)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    sampler = ReferenceSampler(dataset, [], fanouts, args.batch_size, seed=1, device=args.device, shuffle=False)
    rng = np.random.default_rng(17)
    generator = torch.Generator(device=args.device).manual_seed(3)
    device_indptr, device_indices = sampler.indptr, sampler.indices
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    on_device = features.to(args.device)
    for placement in args.features.split(","):
        times = []
        for step in range(args.batches + 5):
            dst = torch.from_numpy(rng.integers(0, num_nodes, 4 * args.batch_size)).to(args.device)
            degree = device_indptr[dst + 1] - device_indptr[dst]
            dst = dst[degree > 0][:args.batch_size]
            degree = degree[degree > 0][:args.batch_size]
            sync()
            start = time.perf_counter()
            offset = (torch.rand(len(dst), device=args.device, generator=generator) * degree).long()
            src = device_indices[device_indptr[dst] + offset]
            negatives = torch.randint(0, num_nodes, (2, len(dst)), device=args.device, generator=generator)
            pairs = torch.cat((torch.stack((src, dst)), negatives), 1)
            endpoints, local = torch.unique(pairs, return_inverse=True)
            batch = sampler.sample(endpoints)
            nodes = batch["x"].squeeze(1).long()
            if placement == "gpu":
                x = on_device[nodes]
            elif placement == "host":
                x = features[nodes.cpu()].to(args.device)
            sync()
            if step >= 5:
                times.append(1000 * (time.perf_counter() - start))
            del batch, local, nodes
        print(f"torch reference link batch (binary 1:1, no exclusion), {args.batch_size} positives, fanouts "
              f"{fanouts}, features {placement}: median {np.median(times):.3f} ms over {len(times)} batches")


if __name__ == "__main__":
    main()
