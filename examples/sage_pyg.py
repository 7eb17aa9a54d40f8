"""GraphSAGE (PyG's SAGEConv, 3 x 256) on a gnnd dataset directory, fed by a NeighborLoader: PyG's own in
sage_pyg.py, gnnd's in sage_gnnd.py. The two files differ in two lines, the import and the loader's
arguments (docs/trainers.md, "PyG"). Needs torch and torch_geometric; sage_gnnd.py also a running gnnd
serving the directory (gnnctl load products DIR) and the gnnd package.

    python3 examples/sage_pyg.py --dir DIR --device cuda:0
    python3 examples/sage_gnnd.py --dir DIR --dataset products --device cuda:0
"""
import argparse
import pathlib
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import SAGEConv
from torch_geometric.loader import NeighborLoader


def load(path):
    """The dataset directory (gnnd's layout: CSC of in-edges, features, labels, splits) as a PyG Data."""
    path = pathlib.Path(path)
    indptr, indices = np.load(path / "indptr.npy"), np.load(path / "indices.npy").astype(np.int64)
    dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    data = Data(x=torch.from_numpy(np.load(path / "features.npy")).float(),
                edge_index=torch.from_numpy(np.stack((indices, dst))),
                y=torch.from_numpy(np.load(path / "labels.npy")).long())
    for split in ("train", "valid"):
        mask = torch.zeros(data.num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(np.load(path / f"{split}.npy"))] = True
        data[f"{split}_mask"] = mask
    return data


class SAGE(torch.nn.Module):
    def __init__(self, in_dim, hidden, out_dim, layers=3):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims, dims[1:]))

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.relu(x)
        return x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True, help="the dataset directory")
    parser.add_argument("--dataset", default="products", help="the name gnnd serves it under")
    parser.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = load(args.dir)
    device = torch.device(args.device)
    model = SAGE(data.num_features, 256, int(data.y.max()) + 1).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    loader_args = dict(num_neighbors=[15, 10, 5], batch_size=1024)
    train_loader = NeighborLoader(data, input_nodes=data.train_mask, shuffle=True, **loader_args)
    valid_loader = NeighborLoader(data, input_nodes=data.valid_mask, **loader_args)
    for epoch in range(args.epochs):
        model.train()
        start = time.time()
        for batch in train_loader:
            batch = batch.to(device)
            out = model(batch.x.float(), batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size].long())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds = time.time() - start
        model.eval()
        right = total = 0
        with torch.no_grad():
            for batch in valid_loader:
                batch = batch.to(device)
                out = model(batch.x.float(), batch.edge_index)[:batch.batch_size]
                right += int((out.argmax(1) == batch.y[:batch.batch_size]).sum())
                total += batch.batch_size
        print(f"epoch {epoch}: loss {float(loss):.4f}, valid accuracy {right / total:.4f}, "
              f"{len(train_loader) / seconds:.1f} steps/s", flush=True)


if __name__ == "__main__":
    main()
