"""Link prediction with gnnd: a GraphSAGE encoder and a dot-product decoder trained on a dataset's "train" edge
split through gnnd.pyg.LinkNeighborLoader (one uniform negative pair per positive), scored each epoch by AUC on
the "valid" split's edges against as many negatives. With --exclude reverse, each batch's seed edges (both ways)
are never message-passing edges of that batch, so the model cannot learn to find the edge it is asked about.
Needs torch and the gnnd package; PyG's SAGEConv when torch_geometric is importable, ddp_sage.py's
plain-torch mean-aggregation layer otherwise.

    gnnctl import --format edgelist EDGES.npy DIR --edge-splits SPLITS --features FEATURES.npy
    gnnctl load links DIR               # once, into the running gnnd
    python3 examples/link_sage.py --dataset links --exclude reverse
"""
import argparse
import time

import torch
import torch.nn.functional as F

from ddp_sage import SAGEConv  # PyG's, or its plain-torch stand-in (this folder is on sys.path)
from gnnd.pyg import LinkNeighborLoader


class Encoder(torch.nn.Module):
    def __init__(self, in_dim, hidden):
        super().__init__()
        self.conv1, self.conv2 = SAGEConv(in_dim, hidden), SAGEConv(hidden, hidden)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


def scores(model, batch):
    z = model(batch.x.float(), batch.edge_index)
    return (z[batch.edge_label_index[0]] * z[batch.edge_label_index[1]]).sum(1)


def auc(score, label):
    """The probability that a positive outscores a negative."""
    rank = torch.empty_like(score).scatter_(0, score.argsort(), torch.arange(1, len(score) + 1, dtype=score.dtype))
    positives = label > 0
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    return float((rank[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="links")
    parser.add_argument("--address", default=None,
                        help="gnnd's address (default: $GNND_ADDRESS or unix:/tmp/gnnd.sock)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--exclude", default=None, choices=[None, "self", "reverse"])
    args = parser.parse_args()
    torch.manual_seed(0)
    common = dict(num_neighbors=[10, 5], neg_sampling="binary", batch_size=512, dataset=args.dataset,
                  address=args.address, device=args.device)
    train_loader = LinkNeighborLoader(None, edge_label_index="train", shuffle=True, exclude=args.exclude, **common)
    valid_loader = LinkNeighborLoader(None, edge_label_index="valid", **common)
    model = None
    for epoch in range(args.epochs):
        train_loader.set_epoch(epoch)
        start = time.time()
        for batch in train_loader:
            if model is None:  # the feature width from the first batch
                model = Encoder(batch.x.shape[1], 64).to(args.device)
                optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
            model.train()
            loss = F.binary_cross_entropy_with_logits(scores(model, batch), batch.edge_label.float())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds = time.time() - start
        model.eval()
        with torch.no_grad():
            batches = [(scores(model, b), b.edge_label) for b in valid_loader]
        valid = auc(torch.cat([s for s, _ in batches]), torch.cat([label for _, label in batches]))
        print(f"epoch {epoch}: loss {loss.item():.4f}, valid AUC {valid:.4f}, "
              f"{len(train_loader) / seconds:.1f} steps/s", flush=True)
    train_loader.close()
    valid_loader.close()


if __name__ == "__main__":
    main()
