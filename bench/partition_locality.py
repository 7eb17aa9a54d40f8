#!/usr/bin/python3
"""The share of a batch's feature rows owned by other parts (what a part's gnnd would fetch from its peers), for
gnnctl partition's methods: random (MLPerf's), range and metis. Batches are sampled by one gnnd over the whole
dataset, as a trainer on part 0 would get them: its seeds are either the train nodes part 0 owns (a locality-aware
shard) or a 1/N share of every train node (a DDP shard that ignores ownership).

    /usr/bin/python3 bench/partition_locality.py --preset products --scale 0.1 --parts 2 4 8 [--batches 20]

Needs gnnd and gnnctl (GNND, GNNCTL or PATH) and the Python client (PYTHONPATH=client/python). Prints a markdown
table: method, parts, seed shard, median share of rows owned elsewhere (over every featured type's rows).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import gnnd


def tool(name):
    return os.environ.get(name.upper()) or shutil.which(name) or sys.exit(f"{name}: not found (set {name.upper()})")


def serve(directory, tmp):
    socket = os.path.join(tmp, "locality.sock")
    log = open(os.path.join(tmp, "gnnd.log"), "w")
    proc = subprocess.Popen([tool("gnnd"), f"--listen=unix:{socket}", f"--dataset=whole={directory}"],
                            stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 600
    while not os.path.exists(socket):
        if proc.poll() is not None or time.time() > deadline:
            sys.exit(f"gnnd did not start: {open(log.name).read()}")
        time.sleep(0.1)
    return proc, f"unix:{socket}"


def owners(part_dir):
    """{node type or None: owner map} of a part's featured types."""
    found = {}
    for name in os.listdir(part_dir):
        if name == "owner.npy":
            found[None] = np.load(os.path.join(part_dir, name))
        elif name.endswith(".owner.npy"):
            found[name[:-len(".owner.npy")]] = np.load(os.path.join(part_dir, name))
    return found


def remote_share(batch, maps):
    """Rows of the batch's featured types owned by parts other than 0, over all of them."""
    elsewhere = total = 0
    for node_type, owner in maps.items():
        ids = batch.node_ids if node_type is None else batch[f"{node_type}.node_ids"]
        elsewhere += int((owner[ids] != 0).sum())
        total += len(ids)
    return elsewhere / max(total, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="products")
    parser.add_argument("--scale", default="0.1")
    parser.add_argument("--parts", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--methods", nargs="+", default=["random", "range", "metis"])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=int, nargs="+", default=[15, 10, 5])
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="gnnd-locality-")
    whole = os.path.join(tmp, "whole")
    subprocess.run([tool("gnnctl"), "generate", "--preset", args.preset, "--scale", args.scale, "--seed", "1",
                    "--hot-order=false", whole], check=True, capture_output=True)
    typed = not os.path.exists(os.path.join(whole, "train.npy"))
    seed_type = "paper" if typed else None
    train = np.load(os.path.join(whole, f"{seed_type}.train.npy" if typed else "train.npy"))
    proc, address = serve(whole, tmp)
    rows = []
    try:
        for parts in args.parts:
            for method in args.methods:
                out = os.path.join(tmp, f"{method}-{parts}")
                start = time.time()
                subprocess.run([tool("gnnctl"), "partition", "--parts", str(parts), "--method", method, "--seed",
                                "1", whole, out], check=True, capture_output=True)
                seconds = time.time() - start
                maps = owners(os.path.join(out, "part-0"))
                seed_owner = maps[seed_type] if seed_type in maps else next(iter(maps.values()))
                shards = {"owned by part 0": train[seed_owner[train] == 0],
                          "1/N of all (DDP)": np.random.default_rng(0).permutation(train)[:len(train) // parts]}
                for shard, seeds in shards.items():
                    shares = []
                    with gnnd.Loader(address=address, dataset="whole", seed_ids=seeds, node_type=seed_type,
                                     batch_size=args.batch_size, fanouts=args.fanouts, output="numpy",
                                     copy=True) as loader:
                        for step, batch in enumerate(loader):
                            if step == args.batches:
                                break
                            shares.append(remote_share(batch, maps))
                    rows.append((method, parts, shard, statistics.median(shares), len(shares), seconds))
                    print(rows[-1], flush=True)
                shutil.rmtree(out)  # each part holds its rows: N partitions kept would hold N copies
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{args.preset} x{args.scale}, batch {args.batch_size}, fanouts {args.fanouts}\n")
    print("| method | parts | part 0's seeds | rows owned elsewhere (median) | batches | partition s |")
    print("|---|---|---|---|---|---|")
    for method, parts, shard, share, batches, seconds in rows:
        print(f"| {method} | {parts} | {shard} | {share:.3f} | {batches} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
