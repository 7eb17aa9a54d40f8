"""One DDP rank for test_ddp.py and test_nodes.py (gloo, CPU): trains a small SAGE on gnnd.pyg batches and
writes what it saw. Arguments: RANK WORLD PORT ADDRESS OUT [DIE_AT_STEP]; or, launched by torchrun (RANK,
WORLD_SIZE and the rendezvous in its environment, gnnd's address in GNND_ADDRESS): OUT_DIR EPOCHS [DIE_AT_STEP],
rank 1 dying at that step; every rank touches OUT_DIR/started-RANK after its first step. With
GNND_WORKER_DEVICE=cuda (torchrun only) the rank trains on cuda:LOCAL_RANK, fed there by gnnd, over NCCL."""
import datetime
import json
import os
import pathlib
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from gnnd.pyg import NeighborLoader
from training import SAGE

timeout = datetime.timedelta(seconds=30)
device = torch.device("cpu")
if "RANK" in os.environ:  # torchrun: the global rank picks the shard, GNND_ADDRESS the node's gnnd
    out_dir, epochs = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    rank, address = int(os.environ["RANK"]), None
    die_at = int(sys.argv[3]) if len(sys.argv) > 3 and rank == 1 else None
    out_path = out_dir / f"rank{rank}.json"
    if os.environ.get("GNND_WORKER_DEVICE") == "cuda":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", timeout=timeout)
else:
    rank, world, port, address, out_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    die_at, out_dir, epochs = (int(sys.argv[6]) if len(sys.argv) > 6 else None), None, 2
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
torch.manual_seed(0)
loader = NeighborLoader(None, num_neighbors=[5, 3], batch_size=200, input_nodes="train", shuffle=True, dataset="ddp",
                        address=address, seed=1, device=str(device))  # rank and world size from torch.distributed
first = next(iter(loader))
model = DistributedDataParallel(SAGE(first.x.shape[1], 32, 8, 2).to(device),
                                device_ids=[device.index] if device.type == "cuda" else None)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
report = {"len": len(loader), "steps": [], "seeds": [], "gnnd": os.environ.get("GNND_ADDRESS"),
          "device": str(first.x.device), "gpu": str(torch.cuda.get_device_properties(device).uuid)
          if device.type == "cuda" else None}
for epoch in range(epochs):
    loader.set_epoch(epoch)
    steps, seeds = 0, []
    for batch in loader:
        if die_at is not None and steps == die_at:
            os._exit(3)  # a rank that dies mid-epoch
        seeds += batch.n_id[:batch.batch_size].tolist()
        out = model(batch.x.float(), batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size].long())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps += 1
        if out_dir is not None and epoch == 0 and steps == 1:
            (out_dir / f"started-{rank}").touch()
    report["steps"].append(steps)
    report["seeds"].append(seeds)
loader.close()
dist.destroy_process_group()
with open(out_path, "w") as f:
    json.dump(report, f)
