"""Edge features through gnnd: a GINE layer (PyG's GINEConv when torch_geometric is importable, a plain-torch one
otherwise) trained on batches that carry each sampled edge's feature row (batch.edge_attr), against the same model
without them. The graph has a planted edge signal: a node's label says whether the first feature of its in-edges
sums above zero, and its own features are noise, so only a model that reads the edges can learn it.

    python3 examples/edge_features.py --make DIR          # write and import the graph (needs gnnctl on PATH)
    gnnctl load edgy DIR                                   # once, into the running gnnd
    python3 examples/edge_features.py --dataset edgy
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

from gnnd.pyg import NeighborLoader


def make_dataset(out, nodes=3000, degree=8, seed=0):
    """The planted-signal graph as a gnnd dataset at `out`: uniform random edges, 4 edge features (normal),
    8 node features (noise), label 1 where the first edge feature summed over the node's in-edges is positive."""
    rng = np.random.default_rng(seed)
    edges = nodes * degree
    src, dst = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    edge_attr = rng.standard_normal((edges, 4)).astype(np.float32)
    signal = np.zeros(nodes)
    np.add.at(signal, dst, edge_attr[:, 0])
    with tempfile.TemporaryDirectory() as raw:
        np.save(f"{raw}/edges.npy", np.stack([src, dst]))
        np.save(f"{raw}/edge_attr.npy", edge_attr)
        np.save(f"{raw}/x.npy", rng.standard_normal((nodes, 8)).astype(np.float32))
        np.save(f"{raw}/y.npy", (signal > 0).astype(np.int64))
        os.mkdir(f"{raw}/splits")
        order = rng.permutation(nodes)
        for name, ids in zip(("train", "valid", "test"), np.split(order, [nodes * 7 // 10, nodes * 85 // 100])):
            np.save(f"{raw}/splits/{name}.npy", np.sort(ids))
        subprocess.run([os.environ.get("GNNCTL", "gnnctl"), "import", "--format", "edgelist", f"{raw}/edges.npy", out,
                        "--features", f"{raw}/x.npy", "--labels", f"{raw}/y.npy", "--splits", f"{raw}/splits",
                        "--edge-attr", f"edge_attr={raw}/edge_attr.npy"], check=True, capture_output=True)


class PlainGINEConv(torch.nn.Module):
    """GINE (Hu et al., 2020): out_v = nn(x_v + sum over in-edges u -> v of relu(x_u + W e_uv)), as PyG's GINEConv."""

    def __init__(self, nn, in_dim, edge_dim):
        super().__init__()
        self.nn, self.edge = nn, torch.nn.Linear(edge_dim, in_dim)

    def forward(self, x, edge_index, edge_attr):
        messages = F.relu(x[edge_index[0]] + self.edge(edge_attr))
        return self.nn(x + torch.zeros_like(x).index_add_(0, edge_index[1], messages))


def gine(nn, in_dim, edge_dim):
    try:
        from torch_geometric.nn import GINEConv
        return GINEConv(nn, edge_dim=edge_dim)
    except ImportError:
        return PlainGINEConv(nn, in_dim, edge_dim)


class Model(torch.nn.Module):
    """One GINE layer and a linear head; without edge features each edge's row is zero (the layer is then GIN's)."""

    def __init__(self, in_dim, edge_dim, hidden, use_edges):
        super().__init__()
        self.use_edges = use_edges
        mlp = torch.nn.Sequential(torch.nn.Linear(in_dim, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden))
        self.conv, self.head = gine(mlp, in_dim, edge_dim), torch.nn.Linear(hidden, 2)

    def forward(self, batch):
        edge_attr = batch.edge_attr if self.use_edges else torch.zeros_like(batch.edge_attr)
        return self.head(F.relu(self.conv(batch.x, batch.edge_index, edge_attr)))


def accuracy(model, loader):
    model.eval()
    right = total = 0
    with torch.no_grad():
        for batch in loader:
            n = batch.batch_size
            right += int((model(batch)[:n].argmax(1) == batch.y[:n]).sum())
            total += n
    return right / total


def train(args, use_edges):
    torch.manual_seed(0)
    # Every in-edge of each seed (fanout -1): the label sums over all of them.
    common = dict(num_neighbors=[-1], batch_size=256, dataset=args.dataset, address=args.address, device=args.device)
    train_loader = NeighborLoader(None, input_nodes="train", shuffle=True, **common)
    valid_loader = NeighborLoader(None, input_nodes="valid", **common)
    model = Model(8, 4, 64, use_edges).to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for epoch in range(args.epochs):
        train_loader.set_epoch(epoch)
        model.train()
        for batch in train_loader:
            n = batch.batch_size
            loss = F.cross_entropy(model(batch)[:n], batch.y[:n])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    result = accuracy(model, valid_loader)
    train_loader.close()
    valid_loader.close()
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--make", metavar="DIR", help="write the planted-signal graph as a dataset at DIR and exit")
    parser.add_argument("--dataset", default="edgy")
    parser.add_argument("--address", default=None,
                        help="gnnd's address (default: $GNND_ADDRESS or unix:/tmp/gnnd.sock)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()
    if args.make:
        make_dataset(args.make)
        print(f"wrote {args.make}")
        return
    with_edges, without = train(args, True), train(args, False)
    print(f"validation accuracy with edge features {with_edges:.3f}, without {without:.3f}")


if __name__ == "__main__":
    main()
