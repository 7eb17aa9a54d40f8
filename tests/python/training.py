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
    without replacement (random keys, the smallest `fanout` per node); new nodes numbered in id order
    after the seeds. Vectorized torch on `device` (the dataset's arrays are copied there once). Yields
    PyG-shaped dicts."""

    def __init__(self, dataset, seeds, fanouts, batch_size, seed, device="cpu", shuffle=True):
        self.fanouts, self.batch_size, self.device, self.shuffle = fanouts, batch_size, device, shuffle
        self.indptr = torch.from_numpy(dataset.indptr).to(device)
        self.indices = torch.from_numpy(dataset.indices).to(device)
        self.features = dataset.features.to(device)
        self.labels = dataset.labels.to(device)
        self.seeds = torch.as_tensor(seeds, dtype=torch.int64, device=device)
        self.local = torch.full((dataset.num_nodes,), -1, dtype=torch.int64, device=device)
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)

    def __len__(self):
        return (len(self.seeds) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = self.seeds
        if self.shuffle:
            order = order[torch.randperm(len(order), generator=self.generator, device=self.device)]
        for start in range(0, len(order), self.batch_size):
            yield self.sample(order[start:start + self.batch_size])

    def sample(self, batch):
        arange = lambda *a: torch.arange(*a, device=self.device)  # noqa: E731
        nodes = batch  # a split: no duplicates
        self.local[nodes] = arange(len(nodes))
        empty = torch.empty(0, dtype=torch.int64, device=self.device)
        frontier, srcs, dsts, count = nodes, [empty], [empty], len(nodes)
        for fanout in self.fanouts:
            starts = self.indptr[frontier]
            degrees = self.indptr[frontier + 1] - starts
            segment = torch.repeat_interleave(arange(len(frontier)), degrees)
            first = torch.cumsum(degrees, 0) - degrees
            position = arange(len(segment)) - first[segment]
            candidates = self.indices[starts[segment] + position]
            if fanout >= 0:
                keys = torch.rand(len(segment), generator=self.generator, device=self.device)
                order = torch.argsort(segment.double() + keys * 0.5)  # by node, then by key
                keep = order[(arange(len(order)) - first[segment[order]]) < fanout]
                candidates, segment = candidates[keep], segment[keep]
            new = torch.unique(candidates[self.local[candidates] < 0])
            self.local[new] = arange(count, count + len(new))
            count += len(new)
            srcs.append(self.local[candidates])
            dsts.append(self.local[frontier[segment]])
            nodes = torch.cat((nodes, new))
            frontier = new
        self.local[nodes] = -1
        return dict(x=self.features[nodes], edge_index=torch.stack((torch.cat(srcs), torch.cat(dsts))),
                    y=self.labels[nodes[:len(batch)]], batch_size=len(batch))


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
def accuracy(model, dataset, split="valid", sampler=None):
    """Accuracy on a split: with every in-neighbor on the whole graph (no sampling: the same for every
    model), or over `sampler`'s batches of the split (large graphs: seed it the same for every model)."""
    model.eval()
    if sampler is not None:
        right = total = 0
        for batch in sampler:
            size = batch["batch_size"]
            prediction = model(batch["x"].float(), batch["edge_index"])[:size].argmax(1)
            right += int((prediction == batch["y"][:size]).sum())
            total += size
        return right / total
    counts = np.diff(dataset.indptr)
    dst = torch.from_numpy(np.repeat(np.arange(dataset.num_nodes), counts))
    edge_index = torch.stack((torch.from_numpy(dataset.indices), dst))
    prediction = model(dataset.features, edge_index).argmax(1)
    ids = torch.from_numpy(dataset.splits[split])
    return float((prediction[ids] == dataset.labels[ids]).float().mean())


def report(path, **figures):
    pathlib.Path(path).write_text(json.dumps(figures, indent=1))
