#!/usr/bin/env python3
"""Reads one epoch from a running gnnd and reports batches/s: the smallest trainer loop.

    read_epoch.py --address unix:/tmp/gnnd.sock --dataset tiny [--batch-size 1024] [--fanouts 15,10,5]
"""
import argparse
import time

import gnnd


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default=None, help="gnnd's address (default: $GNND_ADDRESS or unix:/tmp/gnnd.sock)")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default=None, help="train (default), valid or test")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=0)
    parser.add_argument("--output", default="auto", choices=["auto", "torch", "numpy"])
    args = parser.parse_args()

    with gnnd.Loader(address=args.address, dataset=args.dataset, split=args.split, batch_size=args.batch_size,
                     fanouts=[int(f) for f in args.fanouts.split(",")], seed=args.seed, epoch=args.epoch,
                     output=args.output) as loader:
        start = time.perf_counter()
        batches = nodes = edges = 0
        for batch in loader:
            # A stand-in for the model: touch every feature once.
            checksum = float(batch.features.sum())
            batches += 1
            nodes += len(batch.node_ids)
            edges += len(batch.edge_src)
        seconds = time.perf_counter() - start
    print(f"epoch {args.epoch} of '{args.dataset}' ({loader.output}): {batches} batches in {seconds:.2f} s = "
          f"{batches / seconds:.1f} batches/s; {nodes / max(batches, 1):.0f} nodes and {edges / max(batches, 1):.0f} "
          f"edges per batch (last checksum {checksum:.3g})")


if __name__ == "__main__":
    main()
