"""What the convergence tests and the GPU training check share: a plain-torch GraphSAGE (mean aggregation,
PyG's edge_index convention), a straightforward in-process neighbor sampler to compare gnnd against, a
training loop over PyG-shaped batches, and a sampling-free evaluation on the whole graph."""
import json
import pathlib

import numpy as np
import torch
import torch.nn.functional as F


class Dataset:
    """A gnnd dataset directory read with numpy: the CSC (in-neighbors), features, labels and splits."""

    def __init__(self, path):
        path = pathlib.Path(path)
        self.indptr = np.load(path / "indptr.npy").astype(np.int64)
        self.indices = np.load(path / "indices.npy").astype(np.int64)
        self.features = torch.from_numpy(np.load(path / "features.npy").astype(np.float32))
        self.labels = torch.from_numpy(np.load(path / "labels.npy").astype(np.int64))
        self.splits = {name: np.load(path / f"{name}.npy").astype(np.int64) for name in ("train", "valid", "test")}
        self.num_nodes = len(self.indptr) - 1
        self.num_classes = int(self.labels.max()) + 1


class SAGE(torch.nn.Module):
    """GraphSAGE with mean aggregation over edge_index (src -> dst), every layer over every edge."""

    def __init__(self, in_dim, hidden, out_dim, layers):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.self_linears = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.neighbor_linears = torch.nn.ModuleList(torch.nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:]))

    def forward(self, x, edge_index):
        src, dst = edge_index
        degree = torch.zeros(x.shape[0], device=x.device).index_add_(0, dst, torch.ones_like(dst, dtype=torch.float))
        for i, (own, neighbors) in enumerate(zip(self.self_linears, self.neighbor_linears)):
            mean = torch.zeros_like(x).index_add_(0, dst, x[src]) / degree.clamp(min=1).unsqueeze(1)
            x = own(x) + neighbors(mean)
            if i < len(self.self_linears) - 1:
                x = F.relu(x)
        return x


class MLP(torch.nn.Module):
    """Features only: what the graph must beat."""

    def __init__(self, in_dim, hidden, out_dim, layers):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.linears = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))

    def forward(self, x, edge_index=None):
        for i, linear in enumerate(self.linears):
            x = linear(x)
            if i < len(self.linears) - 1:
                x = F.relu(x)
        return x


class ReferenceSampler:
    """Hop by hop, up to `fanout` distinct in-neighbors of each node new at the previous hop, uniformly
    without replacement; nodes numbered seeds first, then in order of discovery. Yields PyG-shaped dicts."""

    def __init__(self, dataset, seeds, fanouts, batch_size, seed):
        self.dataset, self.seeds, self.fanouts, self.batch_size = dataset, np.asarray(seeds), fanouts, batch_size
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return (len(self.seeds) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = self.rng.permutation(self.seeds)
        for start in range(0, len(order), self.batch_size):
            yield self.sample(order[start:start + self.batch_size])

    def sample(self, batch):
        d = self.dataset
        local = {int(v): i for i, v in enumerate(batch)}
        nodes, frontier, src, dst = list(batch), list(batch), [], []
        for fanout in self.fanouts:
            new = []
            for v in frontier:
                neighbors = d.indices[d.indptr[v]:d.indptr[v + 1]]
                if fanout >= 0 and len(neighbors) > fanout:
                    neighbors = self.rng.choice(neighbors, fanout, replace=False)
                for u in neighbors:
                    u = int(u)
                    if u not in local:
                        local[u] = len(nodes)
                        nodes.append(u)
                        new.append(u)
                    src.append(local[u])
                    dst.append(local[v])
            frontier = new
        n_id = torch.tensor(nodes, dtype=torch.int64)
        return dict(x=d.features[n_id], edge_index=torch.tensor([src, dst], dtype=torch.int64),
                    y=d.labels[n_id[:len(batch)]], batch_size=len(batch))


def train(model, batches_per_epoch, epochs, lr=0.01):
    """Adam on the seeds' cross-entropy; `batches_per_epoch(epoch)` yields objects or dicts with x,
    edge_index, y and batch_size."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for epoch in range(epochs):
        for batch in batches_per_epoch(epoch):
            get = batch.__getitem__ if isinstance(batch, dict) else lambda k: getattr(batch, k)
            size = get("batch_size")
            x = get("x").float()
            out = model(x, get("edge_index"))[:size]
            loss = F.cross_entropy(out, get("y")[:size].long(), ignore_index=-1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


@torch.no_grad()
def accuracy(model, dataset, split="valid"):
    """Accuracy on a split with every in-neighbor (no sampling: the same for every model)."""
    model.eval()
    counts = np.diff(dataset.indptr)
    dst = torch.from_numpy(np.repeat(np.arange(dataset.num_nodes), counts))
    edge_index = torch.stack((torch.from_numpy(dataset.indices), dst))
    prediction = model(dataset.features, edge_index).argmax(1)
    ids = torch.from_numpy(dataset.splits[split])
    return float((prediction[ids] == dataset.labels[ids]).float().mean())


def report(path, **figures):
    pathlib.Path(path).write_text(json.dumps(figures, indent=1))
