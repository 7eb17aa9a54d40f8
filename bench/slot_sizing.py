#!/usr/bin/python3
"""Slots sized by the batches (OpenSession.slots_may_grow, what gnnd's loaders ask for): per session, one slot's
bytes against the largest batch it delivered and against the bound (a slot holding every feature row a batch
could reach: what a session without slots_may_grow takes), and how often slots were added. With --rgat, an
R-GAT (PyG's to_hetero of GATConv, 3 layers, hidden 512 = 4 heads x 128, as MLPerf's reference) trains on the
typed batches beside the slots on the same GPU: steps/s and the GPU memory PyTorch holds at its peak.

    python3 bench/slot_sizing.py --dir DIR --kind node|typed|link [--device cuda:0] [--steps N] [--rgat]

Starts gnnd on DIR (default limits). Batches of 1024 seeds, [15, 10, 5], every relation; --steps 0: a whole
epoch. Prints one markdown row: dataset, kind, steps, slot MiB, largest batch MiB, slot / largest, bound MiB,
bound / slot, slots added, open s (and with --rgat: steps/s, peak GPU GiB).
"""
import argparse
import ctypes
import pathlib
import re
import shutil
import sys
import subprocess
import tempfile
import time

from session_rate import serve

MIB = 1 << 20
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "int64": 8, "int32": 4}


def stats_row(gnnctl, address):
    """(slot MiB, largest batch MiB, times added) of the one open session, from gnnctl stats."""
    out = subprocess.run([gnnctl, f"--address={address}", "stats"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"slot ([\d.]+ \w+) \(largest batch ([\d.]+ \w+), (\d+) times added\)", out)
    if not found:
        raise RuntimeError(out)
    unit = {"B": 1 / MIB, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "TiB": 1 << 20}
    mib = lambda text: float(text.split()[0]) * unit[text.split()[1]]  # noqa: E731
    return mib(found.group(1)), mib(found.group(2)), int(found.group(3))


def bound_mib(loader, slot_mib):
    """The slot at the bound: each features array at its node count's capacity instead of its own rows."""
    import gnnd._native as native
    lib, session = loader._native.lib, loader._session
    views = loader._views
    extra = 0
    array = native.Array()
    for index, name in enumerate(views.names):
        if not name.endswith("features"):
            continue
        ids = views.names.index(name[:-len("features")] + "node_ids")
        native.check(lib.gnnd_slot_array(session, 0, ids, ctypes.byref(array)))
        bound = array.shape[0]
        native.check(lib.gnnd_slot_array(session, 0, index, ctypes.byref(array)))
        rows, width = array.shape[0], max(array.shape[1], 1)
        info = native.ArrayInfo()
        native.check(lib.gnnd_session_array_info(session, index, ctypes.byref(info)))
        dtype = lib.gnnd_dtype_name(info.dtype).decode()
        extra += (bound - rows) * width * DTYPE_BYTES[dtype]
    return slot_mib + extra / MIB


def rgat(metadata, out_dim, hidden):
    import torch
    from torch_geometric.nn import GATConv, to_hetero

    class GAT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList(
                [GATConv((-1, -1), hidden // 4, heads=4, add_self_loops=False) for _ in range(2)])
            self.out = GATConv((-1, -1), out_dim, heads=1, add_self_loops=False)

        def forward(self, x, edge_index):
            for conv in self.convs:
                x = torch.nn.functional.elu(conv(x, edge_index))
            return self.out(x, edge_index)

    return to_hetero(GAT(), metadata, aggr="sum")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--kind", choices=["node", "typed", "link"], required=True)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--rgat", action="store_true")
    parser.add_argument("--hidden", type=int, default=512, help="R-GAT width (4 heads)")
    parser.add_argument("--gnnd", default=shutil.which("gnnd"))
    parser.add_argument("--gnnctl", default=shutil.which("gnnctl"))
    parser.add_argument("--gnnd-args", default="")
    args = parser.parse_args()
    import gnnd
    import gnnd.pyg
    output = "torch" if args.device != "cpu" else "numpy"
    with tempfile.TemporaryDirectory() as tmp:
        proc, address = serve(args.gnnd, args.dir, tmp, args.gnnd_args)
        try:
            subprocess.run([args.gnnctl, f"--address={address}", "--wait=600", "datasets"], check=True,
                           capture_output=True)
            opened = time.perf_counter()
            options = dict(address=address, dataset="bench", batch_size=1024, fanouts=[15, 10, 5], seed=1,
                           device=args.device, output=output)
            if args.kind == "typed":
                options["node_type"] = "paper"
            if args.kind == "link":
                options["edge_split"] = "train"
            if args.rgat:  # PyG's HeteroData of every batch, as a trainer gets it
                loader = gnnd.pyg.NeighborLoader(None, num_neighbors=[15, 10, 5], batch_size=1024,
                                                 input_nodes=("paper", "train"), shuffle=True, dataset="bench",
                                                 address=address, device=args.device, seed=1)
                native_loader = loader._loader
            else:
                loader = native_loader = gnnd.Loader(**options)
            open_seconds = time.perf_counter() - opened
            steps, model, optimizer, start = 0, None, None, None
            if args.rgat:
                import torch
                import torch.nn.functional as F
                torch.cuda.reset_peak_memory_stats()
            for batch in loader:
                if args.rgat:
                    # Types without features (the preset's smaller ones) start from zeros.
                    x = {t: batch[t].x.to(torch.bfloat16) if "x" in batch[t]
                         else torch.zeros(batch[t].num_nodes, 8, device=args.device, dtype=torch.bfloat16)
                         for t in batch.node_types}
                    if model is None:
                        model = rgat(batch.metadata(), 64, args.hidden).to(args.device)
                        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):  # lazy sizes
                            model(x, batch.edge_index_dict)
                        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
                    size = batch["paper"].batch_size
                    with torch.autocast("cuda", dtype=torch.bfloat16):  # mixed precision, as MLPerf's runs
                        out = model(x, batch.edge_index_dict)["paper"][:size]
                        loss = F.cross_entropy(out.float(), batch["paper"].y[:size].long() % 64)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                steps += 1
                if steps == 5:
                    if args.rgat:
                        torch.cuda.synchronize()
                    start = time.perf_counter()
                if args.steps and steps >= args.steps:
                    break
            rate = peak = None
            if args.rgat:
                torch.cuda.synchronize()
                rate = (steps - 5) / (time.perf_counter() - start)
                peak = torch.cuda.max_memory_allocated() / (1 << 30)
            slot, largest, added = stats_row(args.gnnctl, address)
            gpu = re.search(r"^cuda:0\t.*$", subprocess.run([args.gnnctl, f"--address={address}", "stats"],
                                                             capture_output=True, text=True).stdout, re.M)
            print(gpu.group(0) if gpu else "no GPU line in gnnctl stats", file=sys.stderr)
            bound = bound_mib(native_loader, slot)
            native_loader.close()
            row = [pathlib.Path(args.dir).name, args.kind, steps, f"{slot:.1f}", f"{largest:.1f}",
                   f"{slot / largest:.2f}", f"{bound:.1f}", f"{bound / slot:.1f}", added, f"{open_seconds:.2f}"]
            row += [f"{rate:.2f} (hidden {args.hidden})", f"{peak:.1f}"] if args.rgat else ["-", "-"]
            print("| " + " | ".join(map(str, row)) + " |", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
