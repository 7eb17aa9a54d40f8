"""Link prediction trained on gnnd's link batches against the same model on an in-process reference sampler,
larger than the CI test (tests/python/test_link_training.py): a planted-community graph of --nodes nodes,
GraphSAGE encoder (2 x --hidden) with a dot-product decoder, binary negatives 1:1, fanouts [10, 5], batch
1024, --epochs epochs. gnnd serves the batches on --device (the model trains there); the reference sampler
(torch, vectorized, no seed-edge exclusion, as PyG's loader) feeds the same model on the CPU. Prints test AUC
and MRR (full-graph embeddings, 50 uniform candidates per pair), training-pair AUC (leakage: train minus test),
and seconds per epoch, as JSON. Needs gnnd and gnnctl on PATH (or $GNND, $GNNCTL) and torch.

    python3 bench/link_training.py --nodes 100000 --device cuda:0
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from daemon_util import GNNCTL, Daemon  # noqa: E402
from training import SAGE, ReferenceLinkSampler, link_metrics, planted_link_graph, train_links  # noqa: E402
from gnnd.pyg import LinkNeighborLoader  # noqa: E402

FANOUTS, BATCH = [10, 5], 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=100000)
    parser.add_argument("--communities", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    root = pathlib.Path(tempfile.mkdtemp(prefix="link_training"))
    graph, splits, features = planted_link_graph(root, nodes=args.nodes, communities=args.communities, seed=3)
    subprocess.run([GNNCTL, "import", "--format=edgelist", root / "graph.npy", root / "data",
                    f"--edge-splits={root / 'splits'}", f"--features={root / 'features.npy'}"], check=True,
                   capture_output=True)
    figures = dict(nodes=args.nodes, graph_edges=int(graph.shape[1]), train_pairs=int(splits["train"].shape[1]),
                   device=args.device, epochs=args.epochs)
    daemon = Daemon(root, f"--dataset=links={root / 'data'}", name="linkbench")
    try:
        for exclude in (None, "reverse"):
            torch.manual_seed(0)
            model = SAGE(features.shape[1], args.hidden, args.hidden, len(FANOUTS)).to(args.device)
            with LinkNeighborLoader(None, num_neighbors=FANOUTS, edge_label_index="train", neg_sampling="binary",
                                    batch_size=BATCH, shuffle=True, dataset="links", address=daemon.address, seed=5,
                                    exclude=exclude, device=args.device) as batches:
                def epoch(e):
                    batches.set_epoch(e)
                    return batches
                start = time.perf_counter()
                train_auc = train_links(model, epoch, args.epochs)
                seconds = (time.perf_counter() - start) / args.epochs
            test_auc, mrr = link_metrics(model.cpu(), graph, features, splits["test"])
            figures[f"gnnd exclude={exclude}"] = dict(train_auc=train_auc, test_auc=test_auc, test_mrr=mrr,
                                                      leakage=train_auc - test_auc, seconds_per_epoch=seconds)
            print(json.dumps(figures), flush=True)
    finally:
        daemon.stop()
    torch.manual_seed(0)
    model = SAGE(features.shape[1], args.hidden, args.hidden, len(FANOUTS))
    sampler = ReferenceLinkSampler(graph, features, splits["train"], FANOUTS, BATCH, seed=5)
    start = time.perf_counter()
    train_auc = train_links(model, lambda e: sampler, args.epochs)
    seconds = (time.perf_counter() - start) / args.epochs
    test_auc, mrr = link_metrics(model, graph, features, splits["test"])
    figures["reference sampler (cpu)"] = dict(train_auc=train_auc, test_auc=test_auc, test_mrr=mrr,
                                              leakage=train_auc - test_auc, seconds_per_epoch=seconds)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
