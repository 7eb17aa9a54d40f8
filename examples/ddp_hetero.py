"""hetero_gnnd.py's typed GraphSAGE with DistributedDataParallel across the GPUs of a node, all ranks fed by one
gnnd: each rank asks gnnd for its own GPU (cuda:LOCAL_RANK) and its shard of the labeled type's training split
(rank and world size from torch.distributed), so every training node is seen once per epoch across ranks.
Validation accuracy is summed over the ranks' shards. Needs torch, torch_geometric and the gnnd package.

    gnnctl load mag DIR                 # once, into the running gnnd
    torchrun --nproc-per-node 2 examples/ddp_hetero.py --dir DIR --dataset mag
"""
import argparse
import datetime
import os
import time

os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from gnnd.pyg import NeighborLoader  # noqa: E402
from hetero_gnnd import Model, load  # noqa: E402  (this folder is on sys.path when run as a script)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True, help="the typed dataset directory")
    parser.add_argument("--dataset", default="mag", help="the name gnnd serves it under")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=120, help="seconds a collective waits for a peer")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, local_rank = dist.get_rank(), int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    data = load(args.dir)
    target = next(t for t in data.node_types if "y" in data[t])
    model = Model(data, 128, int(data[target].y.max()) + 1).to(device)
    loader_args = dict(num_neighbors=[15, 10], batch_size=1024, dataset=args.dataset, device=str(device))
    train_loader = NeighborLoader(data, input_nodes=(target, data[target].train_mask), shuffle=True, **loader_args)
    valid_loader = NeighborLoader(data, input_nodes=(target, data[target].valid_mask), **loader_args)
    with torch.no_grad():  # the lazy layers take their sizes from a first batch, before DDP reads them
        model(next(iter(valid_loader)).to(device))
    # A batch may lack a relation's edges (a small shard): its layers then get no gradient this step.
    model = DistributedDataParallel(model, device_ids=[local_rank] if cuda else None, find_unused_parameters=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    for epoch in range(args.epochs):
        train_loader.set_epoch(epoch)
        model.train()
        start = time.time()
        for batch in train_loader:
            size = batch[target].batch_size
            out = model(batch)[target][:size]
            loss = F.cross_entropy(out, batch[target].y[:size].long())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds = time.time() - start
        model.eval()
        counts = torch.zeros(2, device=device)  # right, total
        with torch.no_grad():
            for batch in valid_loader:
                size = batch[target].batch_size
                out = model(batch)[target][:size]
                counts += torch.tensor([int((out.argmax(1) == batch[target].y[:size]).sum()), size], device=device)
        dist.all_reduce(counts)
        print(f"rank {rank} epoch {epoch}: {len(train_loader)} steps, loss {loss.item():.4f}, valid accuracy "
              f"{float(counts[0] / counts[1]):.4f}, {len(train_loader) / seconds:.1f} steps/s", flush=True)
    train_loader.close()
    valid_loader.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
