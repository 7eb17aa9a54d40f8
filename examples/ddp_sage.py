"""GraphSAGE with DistributedDataParallel across the GPUs of a node, all ranks fed by one gnnd: each rank
asks gnnd for its own GPU (cuda:LOCAL_RANK) and its shard of the training split (rank and world size come
from torch.distributed), so every training node is seen once per epoch across ranks (the shards are padded
with a few repeated nodes to equal size, as torch's DistributedSampler does) and every rank runs the same
number of steps. Needs torch and the gnnd package; PyG's SAGEConv when torch_geometric is importable, a
plain-torch mean-aggregation layer otherwise.

    gnnctl load products DIR            # once, into the running gnnd
    torchrun --nproc-per-node 2 examples/ddp_sage.py --dataset products --in-dim 100 --classes 47

If a rank dies, torchrun stops the others and names the rank that failed; a collective waiting on a dead
peer fails after --timeout seconds instead of hanging (NCCL's async error handling is turned on below).
"""
import argparse
import datetime
import os
import time

os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
os.environ.setdefault("NCCL_ASYNC_ERROR_HANDLING", "1")  # the same, for torch before 2.2

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from gnnd.pyg import NeighborLoader  # noqa: E402

try:
    from torch_geometric.nn import SAGEConv
except ImportError:
    class SAGEConv(torch.nn.Module):
        """Mean aggregation over edge_index (src -> dst), as PyG's SAGEConv."""

        def __init__(self, in_dim, out_dim):
            super().__init__()
            self.own, self.neighbors = torch.nn.Linear(in_dim, out_dim), torch.nn.Linear(in_dim, out_dim, bias=False)

        def forward(self, x, edge_index):
            src, dst = edge_index
            total = torch.zeros_like(x).index_add_(0, dst, x[src])
            degree = torch.zeros(len(x), device=x.device).index_add_(0, dst, torch.ones(len(dst), device=x.device))
            return self.own(x) + self.neighbors(total / degree.clamp(min=1).unsqueeze(1))


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
    parser.add_argument("--dataset", default="products")
    parser.add_argument("--address", default=None, help="gnnd's address (default: $GNND_ADDRESS or unix:/tmp/gnnd.sock)")
    parser.add_argument("--in-dim", type=int, default=100)
    parser.add_argument("--classes", type=int, default=47)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=120, help="seconds a collective waits for a peer")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, local_rank = dist.get_rank(), int(os.environ.get("LOCAL_RANK", 0))
    device = f"cuda:{local_rank}" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(local_rank)
    torch.manual_seed(0)
    model = DistributedDataParallel(SAGE(args.in_dim, 256, args.classes).to(device),
                                    device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    loader = NeighborLoader(None, num_neighbors=[15, 10, 5], batch_size=1024, input_nodes="train", shuffle=True,
                            dataset=args.dataset, address=args.address, device=device)
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        start = time.time()
        for batch in loader:
            out = model(batch.x.float(), batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size].long())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"rank {rank} epoch {epoch}: {len(loader)} steps, loss {float(loss):.4f}, "
              f"{len(loader) / (time.time() - start):.1f} steps/s", flush=True)
    loader.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
