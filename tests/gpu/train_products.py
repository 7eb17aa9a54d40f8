"""Convergence at products scale on a GPU: the same 3 x 256 GraphSAGE (PyG's SAGEConv when torch_geometric
is importable, tests/python/training.py's mean-aggregation layer otherwise) and seeds trained through
gnnd.pyg.NeighborLoader (gnnd sampling on the GPU) and through the reference sampler (tests/python/training.py,
torch on the same GPU, graph and features in its memory), and a features-only MLP; validation accuracy of
each on the same sampled validation batches. Run by tests/gpu/run_on_gpu.sh's caller:

    python3 tests/gpu/train_products.py --dir DIR --address unix:... --dataset products --device cuda:0
"""
import argparse
import json
import pathlib
import sys
import time

import torch

from gnnd.pyg import NeighborLoader
from training import MLP, SAGE, Dataset, ReferenceSampler, accuracy, train

FANOUTS, BATCH = [15, 10, 5], 1024


def pyg_sage(in_dim, hidden, out_dim, layers):
    """examples/sage_pyg.py's model (PyG's SAGEConv); ImportError without torch_geometric."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    from sage_pyg import SAGE as PygSage
    return PygSage(in_dim, hidden, out_dim, layers)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--dataset", default="products")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    dataset = Dataset(args.dir)
    dim, classes = dataset.features.shape[1], dataset.num_classes
    try:
        make, conv = (lambda: pyg_sage(dim, 256, classes, 3)), "PyG SAGEConv"
        make()
    except ImportError:
        make, conv = (lambda: SAGE(dim, 256, classes, 3)), "plain-torch mean SAGE (no torch_geometric here)"
    device = torch.device(args.device)
    figures = {"conv": conv, "epochs": args.epochs}

    def valid():
        return ReferenceSampler(dataset, dataset.splits["valid"], FANOUTS, 4096, seed=99, device=device,
                                shuffle=False)

    torch.manual_seed(0)
    model = make().to(device)
    loader = NeighborLoader(None, num_neighbors=FANOUTS, batch_size=BATCH, input_nodes="train", shuffle=True,
                            dataset=args.dataset, address=args.address, device=args.device, seed=5)
    start = time.time()

    def epoch(e):
        loader.set_epoch(e)
        return loader
    train(model, epoch, args.epochs, lr=0.003)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    figures["gnnd_steps_per_s"] = args.epochs * len(loader) / (time.time() - start)
    loader.close()
    figures["gnnd_accuracy"] = accuracy(model, dataset, sampler=valid())

    torch.manual_seed(0)
    model = make().to(device)
    reference = ReferenceSampler(dataset, dataset.splits["train"], FANOUTS, BATCH, seed=5, device=device)
    start = time.time()
    train(model, lambda e: reference, args.epochs, lr=0.003)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    figures["reference_steps_per_s"] = args.epochs * len(reference) / (time.time() - start)
    figures["reference_accuracy"] = accuracy(model, dataset, sampler=valid())

    torch.manual_seed(0)
    mlp = MLP(dim, 256, classes, 3).to(device)
    features_only = ReferenceSampler(dataset, dataset.splits["train"], [], BATCH, seed=5, device=device)
    train(mlp, lambda e: features_only, args.epochs, lr=0.003)
    figures["mlp_accuracy"] = accuracy(mlp, dataset, sampler=valid())

    print(json.dumps(figures, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f)
    ok = abs(figures["gnnd_accuracy"] - figures["reference_accuracy"]) <= 0.01 and \
        figures["gnnd_accuracy"] >= figures["mlp_accuracy"] + 0.05
    print("convergence:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
