#!/usr/bin/python3
"""OGB's link-property layout (ogbl-citation2, ogbl-collab, ...) as the .npy files that
`gnnctl import --format edgelist` reads:

    ogb_link_to_npy.py OGB_DIR OUT_DIR [--split-scheme NAME]

OGB_DIR holds raw/edge.csv.gz (one "src,dst" per line), raw/num-node-list.csv.gz, optionally
raw/node-feat.csv.gz, and split/<scheme>/{train,valid,test}.pt: torch pickles of dicts with
source_node/target_node (ogbl-citation2, with target_node_neg (E, K) for valid and test) or edge (E, 2).
OUT_DIR gets edges.npy (2, E), features.npy (if OGB_DIR has them) and splits/ with SPLIT.npy (2, E) and
SPLIT_neg.npy (E, K); then it prints the `gnnctl import` line. A split's edge_neg (a set of negative
pairs shared by all its edges, as ogbl-collab's) is not a per-edge negative: it is saved as
SPLIT_neg_pairs.npy (2, N) for the trainer's own evaluation, and not imported. Needs numpy and torch.
"""
import argparse
import gzip
import pathlib
import sys

import numpy as np
import torch


def read_csv(path, dtype):
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=2)


def pairs(split, name):
    """A split's (2, E) int64 pairs from either OGB spelling, or None."""
    if "source_node" in split and "target_node" in split:
        return np.stack([np.asarray(split["source_node"]), np.asarray(split["target_node"])]).astype(np.int64)
    if name in split:
        return np.asarray(split[name]).T.astype(np.int64)
    return None


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ogb_dir", type=pathlib.Path)
    parser.add_argument("out_dir", type=pathlib.Path)
    parser.add_argument("--split-scheme", default="", help="the folder under split/ (default: the only one)")
    args = parser.parse_args(argv)
    raw, out = args.ogb_dir / "raw", args.out_dir
    schemes = sorted(p.name for p in (args.ogb_dir / "split").iterdir() if p.is_dir())
    scheme = args.split_scheme or (schemes[0] if len(schemes) == 1 else "")
    if scheme not in schemes:
        sys.exit(f"{args.ogb_dir}/split: choose --split-scheme from {', '.join(schemes)}")
    (out / "splits").mkdir(parents=True, exist_ok=True)

    num_nodes = int(read_csv(raw / "num-node-list.csv.gz", np.int64)[0, 0])
    np.save(out / "edges.npy", read_csv(raw / "edge.csv.gz", np.int64).T.copy())
    flags = [f"--num-nodes={num_nodes}", f"--edge-splits={out / 'splits'}"]
    if (raw / "node-feat.csv.gz").exists():
        np.save(out / "features.npy", read_csv(raw / "node-feat.csv.gz", np.float32))
        flags.insert(0, f"--features={out / 'features.npy'}")
    for name in ("train", "valid", "test"):
        path = args.ogb_dir / "split" / scheme / f"{name}.pt"
        if not path.exists():
            continue
        split = torch.load(path, weights_only=False)
        edges = pairs(split, "edge")
        if edges is None:
            sys.exit(f"{path}: neither source_node/target_node nor edge")
        np.save(out / "splits" / f"{name}.npy", edges)
        if "target_node_neg" in split:
            np.save(out / "splits" / f"{name}_neg.npy", np.asarray(split["target_node_neg"]).astype(np.int64))
        if "edge_neg" in split:
            np.save(out / "splits" / f"{name}_neg_pairs.npy", np.asarray(split["edge_neg"]).T.astype(np.int64))
    print(f"gnnctl import --format edgelist {out / 'edges.npy'} DATASET_DIR {' '.join(flags)}")


if __name__ == "__main__":
    main(sys.argv[1:])
