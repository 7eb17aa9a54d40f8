"""An in-process torch reference of temporal sampling on a GPU, the baseline for `gpu_bench temporal --dataset DIR`
on the same dataset: PyG's semantics (disjoint subgraphs, in-edges no newer than the seed's time, "uniform" by
random keys or "last" by time) written vectorized in torch, as a trainer without gnnd would: each hop expands every
frontier node's in-edges, keeps the eligible ones, ranks them per node by key, keeps the first `fanout`, and
deduplicates the sources within each subgraph (torch.unique over subgraph * N + id). Seeds: the train split's ids
shuffled, in batches, each at its own node time; with --seeds, gpu_bench's very batches (`gpu_bench temporal
--seeds_out FILE`: its 5 warm-up batches, then the timed ones), else a shuffle of its own. Edge times: the dataset's
edge attribute `time` (CSC order); "last" breaks ties between equal times by the larger edge id (`e_id.npy`, else
the CSC position), as gnnd does, so its batches are gnnd's exactly. Prints the median ms per batch (sampling alone, synchronized) of --batches timed batches after 5 warm-up
ones, with the nodes and edges per batch.

    python3 bench/torch_temporal_reference.py --dataset DIR --seeds SEEDS.npy --device cuda:0
"""
import argparse
import pathlib
import time

import numpy as np
import torch


def sample(indptr, indices, edge_time, edge_id, seeds, seed_time, fanouts, strategy, generator):
    """One batch: (nodes, edges) of the disjoint temporal subgraphs around `seeds`."""
    n = len(indptr) - 1
    device = seeds.device
    subgraph = torch.arange(len(seeds), device=device)
    frontier, frontier_subgraph = seeds, subgraph
    seen = torch.sort(subgraph * n + seeds).values
    nodes, edges = len(seeds), 0
    for fanout in fanouts:
        start, degree = indptr[frontier], indptr[frontier + 1] - indptr[frontier]
        owner = torch.repeat_interleave(torch.arange(len(frontier), device=device), degree)
        first = torch.cumsum(degree, 0) - degree
        position = torch.arange(len(owner), device=device) - first[owner] + start[owner]
        times = edge_time[position]
        eligible = times <= seed_time[frontier_subgraph[owner]]
        owner, position, times = owner[eligible], position[eligible], times[eligible]
        if strategy == "uniform":
            order = torch.sort(torch.rand(len(owner), device=device, generator=generator)).indices
        else:  # the most recent first, ties by the larger edge id (gnnd's definition of "last")
            order = torch.sort(edge_id[position], descending=True, stable=True).indices
            order = order[torch.sort(times[order], descending=True, stable=True).indices]
        order = order[torch.sort(owner[order], stable=True).indices]
        owner, position = owner[order], position[order]
        counts = torch.bincount(owner, minlength=len(frontier))
        rank = torch.arange(len(owner), device=device) - (torch.cumsum(counts, 0) - counts)[owner]
        keep = rank < fanout
        source, source_subgraph = indices[position[keep]], frontier_subgraph[owner[keep]]
        edges += int(keep.sum())
        keys = torch.unique(source_subgraph * n + source)
        found = torch.searchsorted(seen, keys)
        fresh = keys[(found >= len(seen)) | (seen[found.clamp(max=len(seen) - 1)] != keys)]
        seen = torch.sort(torch.cat([seen, fresh])).values
        frontier, frontier_subgraph = fresh % n, fresh // n
        nodes += len(fresh)
    return nodes, edges


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--seeds", help="gpu_bench temporal --seeds_out's file: sample these batches")
    args = parser.parse_args()
    root = pathlib.Path(args.dataset)
    device = torch.device(args.device)
    indptr = torch.from_numpy(np.load(root / "indptr.npy")).to(device)
    indices = torch.from_numpy(np.load(root / "indices.npy").astype(np.int64)).to(device)
    edge_time = torch.from_numpy(np.load(root / "edge.time.npy")).to(device)
    node_time = torch.from_numpy(np.load(root / "node_time.npy")).to(device)
    # Each edge's original id, where stored; else its CSC position, as gnnd breaks ties between equal times.
    edge_id = (torch.from_numpy(np.load(root / "e_id.npy")).to(device) if (root / "e_id.npy").exists() else
               torch.arange(len(indices), device=device))
    if args.seeds:
        batches = torch.from_numpy(np.load(args.seeds)).to(device)
        if batches.shape[0] < args.batches + 5 or batches.shape[1] != args.batch_size:
            raise SystemExit(f"--seeds: {args.seeds} holds {tuple(batches.shape)} seeds, not "
                             f"({args.batches + 5}, {args.batch_size}): give gpu_bench the same --batches and "
                             "--batch_size")
    else:
        train = torch.from_numpy(np.random.default_rng(1).permutation(np.load(root / "train.npy"))).to(device)
        batches = [train[(step * args.batch_size) % len(train):][:args.batch_size] for step in range(args.batches + 5)]
    fanouts = [int(f) for f in args.fanouts.split(",")]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    generator = torch.Generator(device=device).manual_seed(3)
    print("| fanouts | rule | torch ms | nodes/batch | edges/batch |\n|---|---|---|---|---|")
    for strategy in ("uniform", "last"):
        times, sizes = [], []
        for step in range(args.batches + 5):
            seeds = batches[step]
            sync()
            start = time.perf_counter()
            sizes.append(sample(indptr, indices, edge_time, edge_id, seeds, node_time[seeds], fanouts, strategy, generator))
            sync()
            if step >= 5:
                times.append((time.perf_counter() - start) * 1e3)
        nodes = np.mean([s[0] for s in sizes[5:]])
        edges = np.mean([s[1] for s in sizes[5:]])
        print(f"| [{args.fanouts}] | temporal {strategy} (edge times) | {np.median(times):.3f} | {nodes:.0f} | "
              f"{edges:.0f} |", flush=True)


if __name__ == "__main__":
    main()
