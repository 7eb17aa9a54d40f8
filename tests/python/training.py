"""What the convergence tests and the GPU training check share: a plain-torch GraphSAGE (mean aggregation,
PyG's edge_index convention), a straightforward in-process neighbor sampler to compare gnnd against, a
training loop over PyG-shaped batches, and a sampling-free evaluation on the whole graph."""
import json
import pathlib
import types

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


class TypedDataset:
    """A typed gnnd dataset directory (format_version 2) read with numpy: per relation its CSC, per node type
    its features (float32; types without get none), labels and splits where it has them."""

    def __init__(self, path):
        path = pathlib.Path(path)
        text = (path / "manifest.textproto").read_text()
        self.relations = [tuple(f.stem.split(".")[0].split("___")) for f in sorted(path.glob("*___*.indptr.npy"))]
        self.csc = {r: (np.load(path / f"{'___'.join(r)}.indptr.npy").astype(np.int64),
                        np.load(path / f"{'___'.join(r)}.indices.npy").astype(np.int64)) for r in self.relations}
        self.num_nodes = {}
        for block in text.split("node_types {")[1:]:
            name = block.split('name: "')[1].split('"')[0]
            self.num_nodes[name] = int(block.split("num_nodes: ")[1].split()[0])
        self.features = {t: torch.from_numpy(np.load(path / f"{t}.features.npy").astype(np.float32))
                         for t in self.num_nodes if (path / f"{t}.features.npy").exists()}
        self.labels = {t: torch.from_numpy(np.load(path / f"{t}.labels.npy").astype(np.int64))
                       for t in self.num_nodes if (path / f"{t}.labels.npy").exists()}
        self.splits = {(t, s): np.load(path / f"{t}.{s}.npy").astype(np.int64)
                       for t in self.labels for s in ("train", "valid", "test")}

    def num_classes(self, node_type):
        return int(self.labels[node_type].max()) + 1


class HeteroSAGE(torch.nn.Module):
    """GraphSAGE per relation (PyG's to_hetero of SAGEConv, mean aggregation, sum over relations): per layer
    and node type, a linear of the node's own state plus, per relation into the type, a linear of the mean of
    its sampled in-neighbors' states. Types without features start at zero."""

    def __init__(self, relations, dims, hidden, out_dim, layers):
        super().__init__()
        self.relations, self.layers = relations, layers
        types = sorted(set(dims) | {t for r in relations for t in (r[0], r[2])})
        sizes = lambda i, t: (dims.get(t, hidden) if i == 0 else hidden, out_dim if i == layers - 1 else hidden)  # noqa
        self.own = torch.nn.ModuleList(
            torch.nn.ModuleDict({t: torch.nn.Linear(*sizes(i, t)) for t in types}) for i in range(layers))
        self.neighbors = torch.nn.ModuleList(
            torch.nn.ModuleDict({"___".join(r): torch.nn.Linear(sizes(i, r[0])[0], sizes(i, r[2])[1], bias=False)
                                 for r in relations}) for i in range(layers))
        self.dims, self.hidden = dims, hidden

    def forward(self, x_dict, edge_index_dict, num_nodes, target, size=None):
        """The last layer's output for the first `size` nodes (all if None) of type `target`: the only ones
        computed there (the loss reads no others; the reference BLAS of Debian's torch makes that matter)."""
        # Featureless types are zeros at the first layer: their own linear gives its bias, they send nothing.
        h = {t: x_dict[t] for t in x_dict if t in self.own[0]}
        scale = {}  # per relation: 1 / in-degree of each destination, the same at every layer
        for i in range(self.layers):
            last = i == self.layers - 1
            rows = {t: size if last and size is not None else n for t, n in num_nodes.items()}
            out = {t: self.own[i][t](h[t][:rows[t]]) if t in h else self.own[i][t].bias.expand(rows[t], -1)
                   for t in num_nodes if t in self.own[i] and (not last or t == target)}
            for r, (src, dst) in edge_index_dict.items():
                key = "___".join(r)
                if key not in self.neighbors[i] or r[0] not in h or r[2] not in out:
                    continue  # a relation the model does not use, from zeros, or into an unused output
                if rows[r[2]] < num_nodes[r[2]]:
                    keep = dst < rows[r[2]]
                    src, dst = src[keep], dst[keep]
                if key not in scale:
                    degree = torch.zeros(num_nodes[r[2]]).index_add_(0, dst, torch.ones(len(dst)))
                    scale[key] = 1 / degree.clamp(min=1).unsqueeze(1)
                x = h[r[0]]
                mean = torch.zeros(rows[r[2]], x.shape[1]).index_add_(0, dst, x[src]) * scale[key][:rows[r[2]]]
                out[r[2]] = out[r[2]] + self.neighbors[i][key](mean)
            h = {t: F.relu(v) if i < self.layers - 1 else v for t, v in out.items()}
        return h[target]


class TypedReferenceSampler(ReferenceSampler):
    """PyG's typed neighbor sampling, straightforwardly: per hop, per relation, up to `fanout` distinct
    in-neighbors (random keys, the smallest per node) of each node of the relation's destination type that
    was new at the previous hop; new nodes numbered per type after that type's earlier ones. Yields
    PyG-shaped typed batches (dicts of x_dict, edge_index_dict, num_nodes, y, batch_size). Seeds, epochs and
    their order as ReferenceSampler's (CPU)."""

    def __init__(self, dataset, node_type, seeds, fanouts, batch_size, seed, shuffle=True):
        self.dataset, self.node_type, self.fanouts = dataset, node_type, fanouts
        self.batch_size, self.shuffle, self.device = batch_size, shuffle, "cpu"
        self.seeds = torch.as_tensor(seeds, dtype=torch.int64)
        self.local = {t: torch.full((n,), -1, dtype=torch.int64) for t, n in dataset.num_nodes.items()}
        self.generator = torch.Generator()
        self.generator.manual_seed(seed)

    def sample(self, batch):
        d = self.dataset
        empty = torch.empty(0, dtype=torch.int64)
        nodes = {t: empty for t in d.num_nodes}
        nodes[self.node_type] = batch
        self.local[self.node_type][batch] = torch.arange(len(batch))
        frontier = dict(nodes)
        edges = {r: ([], []) for r in d.relations}
        for hop in range(len(next(iter(self.fanouts.values())))):
            drawn = {t: [] for t in d.num_nodes}
            for r in d.relations:
                indptr, indices = (torch.from_numpy(a) for a in d.csc[r])
                dst_nodes = frontier[r[2]]
                starts, degrees = indptr[dst_nodes], indptr[dst_nodes + 1] - indptr[dst_nodes]
                segment = torch.repeat_interleave(torch.arange(len(dst_nodes)), degrees)
                first = torch.cumsum(degrees, 0) - degrees
                candidates = indices[starts[segment] + torch.arange(len(segment)) - first[segment]]
                fanout = self.fanouts[r][hop]
                if fanout >= 0:
                    keys = torch.rand(len(segment), generator=self.generator)
                    order = torch.argsort(segment.double() + keys * 0.5)
                    keep = order[(torch.arange(len(order)) - first[segment[order]]) < fanout]
                    candidates, segment = candidates[keep], segment[keep]
                edges[r][0].append(candidates)
                edges[r][1].append(self.local[r[2]][dst_nodes[segment]])
                drawn[r[0]].append(candidates)
            for t, parts in drawn.items():
                if not parts:
                    frontier[t] = empty
                    continue
                candidates = torch.cat(parts)
                new = torch.unique(candidates[self.local[t][candidates] < 0])
                self.local[t][new] = torch.arange(len(nodes[t]), len(nodes[t]) + len(new))
                nodes[t] = torch.cat((nodes[t], new))
                frontier[t] = new
        edge_index = {r: torch.stack((self.local[r[0]][torch.cat(src)], torch.cat(dst)))
                      for r, (src, dst) in edges.items() if src}
        for t in nodes:
            self.local[t][nodes[t]] = -1
        return dict(x_dict={t: d.features[t][n] for t, n in nodes.items() if t in d.features},
                    edge_index_dict=edge_index, num_nodes={t: len(n) for t, n in nodes.items()},
                    y=d.labels[self.node_type][batch], batch_size=len(batch))


def train_typed(model, node_type, batches_per_epoch, epochs, lr=0.01):
    """Adam on the seeds' cross-entropy over typed batches: gnnd.pyg HeteroData-shaped ones or the reference
    sampler's dicts."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for epoch in range(epochs):
        for batch in batches_per_epoch(epoch):
            if isinstance(batch, dict):
                x, edges, num_nodes, y, size = (batch[k] for k in ("x_dict", "edge_index_dict", "num_nodes", "y",
                                                                   "batch_size"))
            else:
                x, edges = {t: v.float() for t, v in batch.x_dict.items()}, batch.edge_index_dict
                num_nodes = {t: batch[t].num_nodes for t in batch.node_types}
                y, size = batch[node_type].y, batch[node_type].batch_size
            out = model(x, edges, num_nodes, node_type, size)
            loss = F.cross_entropy(out, y[:size].long(), ignore_index=-1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


@torch.no_grad()
def typed_accuracy(model, dataset, node_type, split="valid"):
    """Accuracy on a split with every in-neighbor of every relation on the whole graph (no sampling)."""
    model.eval()
    edges = {}
    for r, (indptr, indices) in dataset.csc.items():
        dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        edges[r] = torch.stack((torch.from_numpy(indices), torch.from_numpy(dst)))
    prediction = model(dataset.features, edges, dataset.num_nodes, node_type).argmax(1)
    ids = torch.from_numpy(dataset.splits[(node_type, split)])
    return float((prediction[ids] == dataset.labels[node_type][ids]).float().mean())


def planted_link_graph(path, nodes=1200, communities=6, degree=8, dim=16, seed=0):
    """A graph with planted communities for link prediction, as files `gnnctl import --format edgelist` reads:
    each node links to `degree` others, 90 % inside its community; features are a weak community signal in
    noise (so neighborhoods matter). The undirected edges split 80 / 10 / 10 into train / valid / test
    (SPLIT.npy, (2, E)); the graph holds the train edges both ways. Returns (graph edges, splits, features)."""
    rng = np.random.default_rng(seed)
    community = np.arange(nodes) % communities
    src = np.repeat(np.arange(nodes), degree)
    inside = rng.random(len(src)) < 0.9
    dst = np.where(inside, rng.integers(0, nodes // communities, len(src)) * communities + community[src],
                   rng.integers(0, nodes, len(src)))
    keep = src != dst
    pairs = np.unique(np.sort(np.stack((src[keep], dst[keep])), axis=0), axis=1)  # undirected, once each
    pairs = pairs[:, rng.permutation(pairs.shape[1])]
    cut = [int(pairs.shape[1] * 0.8), int(pairs.shape[1] * 0.9)]
    splits = dict(train=pairs[:, :cut[0]], valid=pairs[:, cut[0]:cut[1]], test=pairs[:, cut[1]:])
    graph = np.concatenate((splits["train"], splits["train"][::-1]), axis=1)
    features = (0.7 * np.eye(dim)[community % dim] + rng.standard_normal((nodes, dim))).astype(np.float32)
    path = pathlib.Path(path)
    (path / "splits").mkdir(parents=True)
    np.save(path / "graph.npy", graph)
    np.save(path / "features.npy", features)
    for name, edges in splits.items():
        np.save(path / "splits" / f"{name}.npy", edges)
    return graph, splits, features


class ReferenceLinkSampler:
    """Link batches the plain way, to compare gnnd against: shuffled positive pairs of a split, one uniform
    negative pair per positive (source and destination drawn over all nodes), the neighborhoods of their
    unique endpoints sampled by ReferenceSampler (no seed-edge exclusion, as PyG's LinkNeighborLoader).
    Yields dicts with x, edge_index, edge_label_index (local) and edge_label."""

    def __init__(self, graph_edges, features, pairs, fanouts, batch_size, seed):
        num_nodes = len(features)
        order = np.argsort(graph_edges[1], kind="stable")
        dataset = types.SimpleNamespace(  # what ReferenceSampler reads of a Dataset: the CSC of in-edges
            indptr=np.concatenate(([0], np.cumsum(np.bincount(graph_edges[1], minlength=num_nodes)))),
            indices=graph_edges[0][order].astype(np.int64), features=torch.from_numpy(features),
            labels=torch.zeros(num_nodes, dtype=torch.int64), num_nodes=num_nodes)
        self.nodes = ReferenceSampler(dataset, [], fanouts, batch_size, seed, shuffle=False)
        self.pairs, self.batch_size, self.num_nodes = torch.from_numpy(pairs), batch_size, num_nodes
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self):
        return (self.pairs.shape[1] + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = torch.randperm(self.pairs.shape[1], generator=self.generator)
        for start in range(0, len(order), self.batch_size):
            positives = self.pairs[:, order[start:start + self.batch_size]]
            negatives = torch.randint(0, self.num_nodes, positives.shape, generator=self.generator)
            pairs = torch.cat((positives, negatives), 1)
            endpoints, local = torch.unique(pairs, return_inverse=True)
            batch = self.nodes.sample(endpoints)
            yield dict(x=batch["x"], edge_index=batch["edge_index"], edge_label_index=local,
                       edge_label=torch.cat((torch.ones(positives.shape[1]), torch.zeros(negatives.shape[1]))))


def train_links(model, batches_per_epoch, epochs, lr=0.01):
    """Adam on binary cross-entropy of dot products of the pairs' embeddings; `batches_per_epoch(epoch)`
    yields objects or dicts with x, edge_index, edge_label_index and edge_label. Returns the last epoch's
    training AUC (over its batches' pairs, as the model saw them: with their sampled neighborhoods)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for epoch in range(epochs):
        scores, labels = [], []
        for batch in batches_per_epoch(epoch):
            get = batch.__getitem__ if isinstance(batch, dict) else lambda k: getattr(batch, k)
            z = model(get("x").float(), get("edge_index"))
            pairs, label = get("edge_label_index"), get("edge_label").float()
            score = (z[pairs[0]] * z[pairs[1]]).sum(1)
            loss = F.binary_cross_entropy_with_logits(score, label)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scores.append(score.detach())
            labels.append(label)
    return auc(torch.cat(scores), torch.cat(labels))


def auc(scores, labels):
    """The probability that a positive outscores a negative (ties count half)."""
    scores, labels = scores.cpu(), labels.cpu()  # a GPU trainer's too
    ranks = torch.from_numpy(np.argsort(np.argsort(scores.numpy(), kind="stable"), kind="stable") + 1.0)
    positives = labels > 0
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@torch.no_grad()
def link_metrics(model, graph_edges, features, pairs, negatives=50, seed=1):
    """Test AUC and MRR with every in-neighbor of the graph (no sampling: the same for every model): AUC of
    the pairs against as many uniform pairs; MRR of each pair's destination among `negatives` uniform
    destinations for its source."""
    model.eval()
    z = model(torch.from_numpy(features), torch.from_numpy(graph_edges))
    pairs = torch.from_numpy(pairs)
    generator = torch.Generator().manual_seed(seed)
    fake = torch.randint(0, len(features), pairs.shape, generator=generator)
    score = lambda a, b: (z[a] * z[b]).sum(-1)  # noqa: E731
    both = torch.cat((score(pairs[0], pairs[1]), score(fake[0], fake[1])))
    area = auc(both, torch.cat((torch.ones(pairs.shape[1]), torch.zeros(pairs.shape[1]))))
    candidates = torch.randint(0, len(features), (pairs.shape[1], negatives), generator=generator)
    true = score(pairs[0], pairs[1]).unsqueeze(1)
    rank = 1 + (score(pairs[0].unsqueeze(1), candidates) > true).sum(1)
    return area, float((1.0 / rank).mean())
