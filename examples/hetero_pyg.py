"""GraphSAGE made typed by PyG's to_hetero (2 layers x 128, mean aggregation, summed over relations) on a
typed gnnd dataset directory (`gnnctl generate --preset mag --add-reverse DIR`, or ogbn-mag imported with
`gnnctl import --format ogb --add-reverse`), fed by a NeighborLoader: PyG's own in hetero_pyg.py, gnnd's in
hetero_gnnd.py. The two files differ in two lines, the import and the loader's arguments (docs/trainers.md, "Typed
graphs"). Node types without features (ogbn-mag's authors, institutions, fields) get a learned embedding
per node. Needs torch and torch_geometric; hetero_gnnd.py also a running gnnd serving the directory
(gnnctl load mag DIR) and the gnnd package.

    python3 examples/hetero_pyg.py --dir DIR --device cuda:0
    python3 examples/hetero_gnnd.py --dir DIR --dataset mag
"""
import argparse
import pathlib
import re
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import HeteroData
from torch_geometric.nn import SAGEConv, to_hetero
from torch_geometric.loader import NeighborLoader


def load(path):
    """The typed dataset directory (gnnd's layout: per relation a CSC of in-edges, per node type float32 or
    float16 features, labels and splits where it has them) as a PyG HeteroData."""
    path = pathlib.Path(path)
    data = HeteroData()
    manifest = (path / "manifest.textproto").read_text()
    for name, count in re.findall(r'node_types \{\s*name: "([^"]+)"\s*num_nodes: (\d+)', manifest):
        data[name].num_nodes = int(count)
        if (path / f"{name}.features.npy").exists():
            data[name].x = torch.from_numpy(np.load(path / f"{name}.features.npy")).float()
        if (path / f"{name}.labels.npy").exists():
            data[name].y = torch.from_numpy(np.load(path / f"{name}.labels.npy")).long()
            for split in ("train", "valid"):
                mask = torch.zeros(int(count), dtype=torch.bool)
                mask[torch.from_numpy(np.load(path / f"{name}.{split}.npy"))] = True
                data[name][f"{split}_mask"] = mask
    for file in sorted(path.glob("*___*___*.indptr.npy")):
        relation = file.name[:-len(".indptr.npy")]
        indptr, indices = np.load(file), np.load(path / f"{relation}.indices.npy").astype(np.int64)
        dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        data[tuple(relation.split("___"))].edge_index = torch.from_numpy(np.stack((indices, dst)))
    return data


class SAGE(torch.nn.Module):
    def __init__(self, hidden, out_dim):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden)
        self.conv2 = SAGEConv((-1, -1), out_dim)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


class Model(torch.nn.Module):
    """to_hetero's GraphSAGE over every relation; nodes of a type without features start from an embedding."""

    def __init__(self, data, hidden, out_dim):
        super().__init__()
        self.embeddings = torch.nn.ModuleDict({t: torch.nn.Embedding(data[t].num_nodes, hidden)
                                               for t in data.node_types if "x" not in data[t]})
        self.gnn = to_hetero(SAGE(hidden, out_dim), data.metadata(), aggr="sum")

    def forward(self, batch):
        x = {t: self.embeddings[t](batch[t].n_id) if t in self.embeddings else batch[t].x.float()
             for t in batch.node_types}
        return self.gnn(x, batch.edge_index_dict)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True, help="the typed dataset directory")
    parser.add_argument("--dataset", default="mag", help="the name gnnd serves it under")
    parser.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = load(args.dir)
    target = next(t for t in data.node_types if "y" in data[t])  # the labeled type (ogbn-mag: paper)
    device = torch.device(args.device)
    model = Model(data, 128, int(data[target].y.max()) + 1).to(device)
    loader_args = dict(num_neighbors=[15, 10], batch_size=1024)
    train_loader = NeighborLoader(data, input_nodes=(target, data[target].train_mask), shuffle=True, **loader_args)
    valid_loader = NeighborLoader(data, input_nodes=(target, data[target].valid_mask), **loader_args)
    with torch.no_grad():  # the lazy layers take their sizes from a first batch
        model(next(iter(valid_loader)).to(device))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    for epoch in range(args.epochs):
        model.train()
        start = time.time()
        for batch in train_loader:
            batch = batch.to(device)
            size = batch[target].batch_size
            out = model(batch)[target][:size]
            loss = F.cross_entropy(out, batch[target].y[:size].long())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds = time.time() - start
        model.eval()
        right = total = 0
        with torch.no_grad():
            for batch in valid_loader:
                batch = batch.to(device)
                size = batch[target].batch_size
                out = model(batch)[target][:size]
                right += int((out.argmax(1) == batch[target].y[:size]).sum())
                total += size
        print(f"epoch {epoch}: loss {loss.item():.4f}, valid accuracy {right / total:.4f}, "
              f"{len(train_loader) / seconds:.1f} steps/s", flush=True)


if __name__ == "__main__":
    main()
