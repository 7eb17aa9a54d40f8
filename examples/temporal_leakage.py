"""Leakage, measured: the same model trained on batches sampled with the temporal rule (time_attr) and without it,
on an event graph where each user's label depends on its past and a planted later event reveals it.

The graph: users receive timed events from other nodes; a user u has a prediction time t_u (its split's time) and a
label drawn from the events before t_u (the sign of their sources' first feature, plus noise: about 80 % is
predictable). For the users of the training period one more event comes just after t_u, from one of two "reveal"
nodes whose second feature is the label itself. The test users come from a later window, where that event has not
happened yet. Sampled without the rule, a user's batch holds its future event: the model reads it, scores near 1.0
on validation (same period as training) and falls on the later test window. Sampled with time_attr="time", no event
after t_u is ever in t_u's batch: the model learns the past signal and keeps it on the test window.

    python3 examples/temporal_leakage.py --make DIR      # write and import the graph (needs gnnctl on PATH)
    gnnctl load events DIR                                # once, into the running gnnd
    python3 examples/temporal_leakage.py --dataset events
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

from gnnd.pyg import NeighborLoader


def make_dataset(out, nodes=6000, events=16, horizon=1000, seed=0):
    """The event graph as a gnnd dataset at `out`: events (edges) with an int64 attribute "time"; features
    (first: the event signal, second: the reveal); labels; train/valid users before 0.7 * horizon, test users
    after, each split with its users' prediction times (SPLIT_time.npy)."""
    rng = np.random.default_rng(seed)
    reveal = [nodes - 2, nodes - 1]  # their second feature: -1 for label 0, +1 for label 1
    x = np.zeros((nodes, 2), np.float32)
    x[:-2, 0] = rng.standard_normal(nodes - 2)
    x[reveal[0], 1], x[reveal[1], 1] = -1, 1
    users = rng.permutation(nodes - 2)[: nodes // 2]
    when = np.zeros(nodes, np.int64)
    when[users] = rng.integers(horizon // 10, horizon, len(users))
    src = rng.integers(0, nodes - 2, nodes * events)
    dst = rng.integers(0, nodes - 2, nodes * events)
    time = rng.integers(0, horizon, nodes * events)
    # Labels from the past: the sign of the sources' first feature summed over events before t_u, with noise.
    past = time <= when[dst]
    signal = np.zeros(nodes)
    np.add.at(signal, dst[past], x[src[past], 0])
    y = ((signal + rng.normal(0, 1.5, nodes)) > 0).astype(np.int64)
    later = users[when[users] >= 0.7 * horizon]
    earlier = users[when[users] < 0.7 * horizon]
    # The reveal: one event just after t_u, for the users of the training period only (the later window's has
    # not happened by the time the graph is taken).
    src = np.concatenate([src, np.array(reveal)[y[earlier]]])
    dst = np.concatenate([dst, earlier])
    time = np.concatenate([time, when[earlier] + 1])
    earlier = rng.permutation(earlier)
    splits = {"train": earlier[: len(earlier) * 4 // 5], "valid": earlier[len(earlier) * 4 // 5:], "test": later}
    with tempfile.TemporaryDirectory() as raw:
        np.save(f"{raw}/edges.npy", np.stack([src, dst]))
        np.save(f"{raw}/time.npy", time)
        np.save(f"{raw}/x.npy", x)
        np.save(f"{raw}/y.npy", y)
        os.mkdir(f"{raw}/splits")
        os.mkdir(f"{raw}/times")
        for name, ids in splits.items():
            np.save(f"{raw}/splits/{name}.npy", ids)
            np.save(f"{raw}/times/{name}.npy", when[ids])
        subprocess.run([os.environ.get("GNNCTL", "gnnctl"), "import", "--format", "edgelist", "--num-nodes",
                        str(nodes), f"{raw}/edges.npy", out, "--features", f"{raw}/x.npy", "--labels", f"{raw}/y.npy",
                        "--splits", f"{raw}/splits", "--split-time", f"{raw}/times", "--edge-attr",
                        f"time={raw}/time.npy"], check=True, capture_output=True)


class Model(torch.nn.Module):
    """One sum-aggregating layer over the in-neighbors (as GIN's) and a small head."""

    def __init__(self, hidden=32):
        super().__init__()
        self.message = torch.nn.Linear(2, hidden)
        self.head = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(hidden, 2))

    def forward(self, batch):
        src, dst = batch.edge_index
        summed = torch.zeros(batch.x.size(0), 2).index_add_(0, dst, batch.x[src])
        return self.head(self.message(summed))


def accuracy(model, loader):
    model.eval()
    right = total = 0
    with torch.no_grad():
        for batch in loader:
            n = batch.batch_size
            right += int((model(batch)[:n].argmax(1) == batch.y[:n]).sum())
            total += n
    return right / total


def run(args, temporal):
    """Trains with (or without) the temporal rule; validation and later-window test accuracy, each sampled the
    same way as training."""
    torch.manual_seed(0)
    time = dict(time_attr="time") if temporal else {}
    common = dict(num_neighbors=[-1], batch_size=256, dataset=args.dataset, address=args.address, **time)
    loaders = {name: NeighborLoader(None, input_nodes=name, shuffle=name == "train", **common)
               for name in ("train", "valid", "test")}
    model = Model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(args.epochs):
        loaders["train"].set_epoch(epoch)
        model.train()
        for batch in loaders["train"]:
            n = batch.batch_size
            loss = F.cross_entropy(model(batch)[:n], batch.y[:n])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    result = accuracy(model, loaders["valid"]), accuracy(model, loaders["test"])
    for loader in loaders.values():
        loader.close()
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--make", metavar="DIR", help="write the event graph as a dataset at DIR and exit")
    parser.add_argument("--dataset", default="events")
    parser.add_argument("--address", default=None,
                        help="gnnd's address (default: $GNND_ADDRESS or unix:/tmp/gnnd.sock)")
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    if args.make:
        make_dataset(args.make)
        print(f"wrote {args.make}")
        return
    for temporal in (True, False):
        valid, test = run(args, temporal)
        print(f"{'with' if temporal else 'without'} the temporal rule: validation {valid:.3f}, later test window "
              f"{test:.3f}")


if __name__ == "__main__":
    main()
