#!/usr/bin/python3
"""An MLPerf-shaped run on one GPU: MLPerf Training's GNN benchmark (R-GAT, 3 layers, hidden 512, 4 heads,
batch 1024 of paper seeds, [15, 10, 5], Adam 0.001, bf16 here) trained on gnnd's typed batches
(gnnd.pyg.NeighborLoader: HeteroData where torch_geometric is installed), uniform against LABOR-0 sampling.

    /usr/bin/python3 bench/mlperf_rgat.py --dir DIR [--device cuda:0] [--gnnd-args=--gpu-cache=none]
        [--samplers uniform,labor] [--steps 100] [--eval-at 20,50,100] [--batch-size 1024] [--hidden 512]

DIR: `gnnctl generate --preset igbh --scale S --feature-dtype float8_e4m3fn --add-reverse DIR`. gnnd serves it
(started here); every sampler's run starts from the same initial model and takes the same seeds in the same order:
1. the batches' shape: distinct nodes per seed, edges and feature bytes per batch (medians of --shape-batches);
2. the ideal: --ideal-steps steps on --premade of those batches already in the trainer's GPU memory;
3. fed: --steps steps on the loader's batches as they come; seeds/s over the steps after 5 of warm-up
   (evaluation excluded); validation accuracy after each step count in --eval-at, on --eval-batches batches
   of the valid split sampled uniformly (the same batches for every sampler and every evaluation).
The model is bench/rgat.py (MLPerf's reference RGNN with its layers trimmed by hop, with a GAT convolution that
does not store every edge's message). Types without features (the preset's institute and fos; IGBH has features
there) enter through learned embeddings (--embedding-rows rows a type, ids modulo). Run it under MPS for the
producer and trainer to overlap (start the MPS control daemon first). Prints markdown tables.
"""
import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

from rgat import RGAT
from session_rate import producer_lines, serve


def parts(batch):
    """(inputs {type: x or None}, n_id {type}, edge_index {relation}, y, batch_size, per-hop counts) of a
    PyG-shaped batch; the counts: ({type: num_sampled_nodes}, {relation: num_sampled_edges})."""
    types, relations = batch.node_types, batch.edge_types
    x = {t: batch[t].x if "x" in batch[t] else None for t in types}
    n_id = {t: batch[t].n_id for t in types}
    hops = ({t: list(batch[t].num_sampled_nodes) for t in types},
            {et: list(batch[et].num_sampled_edges) for et in relations})
    return x, n_id, dict(batch.edge_index_dict), batch["paper"].y, batch["paper"].batch_size, hops


def copied(batch_parts):
    x, n_id, edges, y, size, hops = batch_parts
    clone = lambda d: {k: v.clone() if v is not None else None for k, v in d.items()}  # noqa: E731
    return clone(x), clone(n_id), clone(edges), y.clone(), size, hops


class Trainer:
    def __init__(self, edge_types, feature_dim, classes, args, device):
        torch.manual_seed(0)
        self.model = RGAT(edge_types, feature_dim, args.hidden, classes, layers=3, heads=args.heads).to(device)
        featureless = sorted({t for et in edge_types for t in (et[0], et[2])} - set(args.feature_types))
        self.embeddings = torch.nn.ModuleDict(
            {t: torch.nn.Embedding(args.embedding_rows, feature_dim) for t in featureless}).to(device)
        params = list(self.model.parameters()) + list(self.embeddings.parameters())
        self.optimizer = torch.optim.Adam(params, lr=1e-3)
        self.device, self.rows = device, args.embedding_rows
        self.autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")

    def inputs(self, x, n_id):
        return {t: v.to(torch.bfloat16 if self.device.type == "cuda" else torch.float32) if v is not None
                else self.embeddings[t](n_id[t] % self.rows) for t, v in x.items()}

    def step(self, batch_parts):
        x, n_id, edges, y, size, hops = batch_parts
        self.model.train()
        with self.autocast:
            out = self.model(self.inputs(x, n_id), edges, *hops)[:size]
        loss = F.cross_entropy(out.float(), y[:size].long())
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()

    @torch.no_grad()
    def correct(self, batch_parts):
        x, n_id, edges, y, size, hops = batch_parts
        self.model.eval()
        with self.autocast:
            out = self.model(self.inputs(x, n_id), edges, *hops)[:size]
        return int((out.argmax(-1) == y[:size].long()).sum()), size


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--gnnd", default=shutil.which("gnnd"))
    parser.add_argument("--gnnctl", default=shutil.which("gnnctl"))
    parser.add_argument("--gnnd-args", default="")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--samplers", default="uniform,labor")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--eval-at", default="20,50,100")
    parser.add_argument("--eval-batches", type=int, default=8)
    parser.add_argument("--ideal-steps", type=int, default=20)
    parser.add_argument("--premade", type=int, default=3)
    parser.add_argument("--shape-batches", type=int, default=16)
    parser.add_argument("--feature-types", default="paper,author", help="types whose batches carry features")
    parser.add_argument("--embedding-rows", type=int, default=32768)
    parser.add_argument("--classes", type=int, default=19, help="IGBH's (and the preset's) 19")
    args = parser.parse_args()
    args.feature_types = args.feature_types.split(",")
    fanouts = [int(f) for f in args.fanouts.split(",")]
    eval_at = sorted(int(s) for s in args.eval_at.split(",") if s)
    from gnnd.pyg import NeighborLoader
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.zeros(1, device=device)
    rows, shapes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        proc, address = serve(args.gnnd, args.dir, tmp, args.gnnd_args)
        try:
            subprocess.run([args.gnnctl, f"--address={address}", "--wait=600", "datasets"], check=True,
                           capture_output=True)

            def loader(split="train", labor=False, num_neighbors=fanouts):
                return NeighborLoader(None, num_neighbors=num_neighbors, batch_size=args.batch_size,
                                      input_nodes=("paper", split), shuffle=True, dataset="bench", address=address,
                                      device=args.device, seed=1, labor=labor)

            def evaluate(trainer):
                right = total = 0
                with loader("valid") as source:
                    for i, batch in enumerate(source):
                        r, n = trainer.correct(parts(batch))
                        right, total = right + r, total + n
                        if i + 1 == args.eval_batches:
                            break
                return right / total

            # Which end of the fanouts the seeds take: PyG's (and MLPerf's reference loader, GraphLearn-for-PyTorch's
            # NeighborLoader): the first; DGL's MultiLayerNeighborSampler: the last. The other order, for scale.
            with loader(num_neighbors=fanouts[::-1]) as source:
                counts = []
                for batch in source:
                    counts.append(sum(batch[t].num_nodes for t in batch.node_types) / batch["paper"].batch_size)
                    if len(counts) == args.shape_batches:
                        break
            shapes.append((f"uniform, {fanouts[::-1]} (the seeds take {fanouts[-1]})", statistics.median(counts)))

            for sampler in args.samplers.split(","):
                labor = sampler == "labor"
                premade, nodes, edges, feature_bytes = [], [], [], []
                with loader(labor=labor) as source:
                    for batch in source:
                        nodes.append(sum(batch[t].num_nodes for t in batch.node_types) / batch["paper"].batch_size)
                        edges.append(sum(e.shape[1] for e in batch.edge_index_dict.values()))
                        feature_bytes.append(sum(batch[t].x.numel() * batch[t].x.element_size()
                                                 for t in batch.node_types if "x" in batch[t]))
                        if len(premade) < args.premade:
                            premade.append(copied(parts(batch)))
                        if len(nodes) == args.shape_batches:
                            break
                shapes.append((f"{sampler}, {fanouts}", statistics.median(nodes)))
                edge_types = sorted(premade[0][2].keys())
                classes = args.classes
                feature_dim = next(v.shape[1] for v in premade[0][0].values() if v is not None)

                trainer = Trainer(edge_types, feature_dim, classes, args, device)  # the ideal: a throwaway model
                for i in range(5):
                    trainer.step(premade[i % len(premade)])
                sync(device)
                start = time.perf_counter()
                for i in range(args.ideal_steps):
                    trainer.step(premade[i % len(premade)])
                sync(device)
                ideal = args.ideal_steps * args.batch_size / (time.perf_counter() - start)
                del trainer, premade
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats(device)

                trainer = Trainer(edge_types, feature_dim, classes, args, device)  # the same initial model
                accuracy, timed, seconds, done = {}, 0, 0.0, 0
                stops = sorted({5, args.steps, *(s for s in eval_at if s < args.steps)})  # warm-up, evaluations
                with loader(labor=labor) as source:
                    batches = iter(source)
                    for stop in stops:
                        sync(device)
                        start, first = time.perf_counter(), done
                        for done in range(done + 1, stop + 1):
                            batch = next(batches, None)
                            if batch is None:  # an epoch ended: the next one
                                batches = iter(source)
                                batch = next(batches)
                            trainer.step(parts(batch))
                        sync(device)
                        if first >= 5:
                            seconds += time.perf_counter() - start
                            timed += done - first
                        if done in eval_at:
                            accuracy[done] = evaluate(trainer)
                fed = timed * args.batch_size / seconds
                peak = torch.cuda.max_memory_allocated(device) / (1 << 30) if device.type == "cuda" else 0
                rows.append([sampler, f"{statistics.median(nodes):.0f}", f"{statistics.median(edges) / 1e6:.2f}",
                             f"{statistics.median(feature_bytes) / 1e6:.0f}", f"{ideal:.0f}", f"{fed:.0f}",
                             f"{fed / ideal:.3f}", " / ".join(f"{accuracy[s]:.4f}" for s in sorted(accuracy)),
                             f"{peak:.1f}"])
                print("| " + " | ".join(rows[-1]) + " |", file=sys.stderr, flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            print(*producer_lines(f"{tmp}/gnnd.log"), sep="\n", file=sys.stderr)
    print(f"R-GAT 3 x {args.hidden} ({args.heads} heads), batch {args.batch_size}, {fanouts}, {args.steps} steps; "
          f"accuracy at steps {', '.join(map(str, eval_at))} on {args.eval_batches} valid batches\n")
    print("| sampler | nodes / seed | edges / batch (M) | feature MB / batch | ideal seeds/s | fed seeds/s "
          "| fed / ideal | valid accuracy | peak GiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print("\n| sampling, fanouts as given (the seeds take the first) | distinct nodes / seed (median) |\n|---|---|")
    for label, value in shapes:
        print(f"| {label} | {value:.0f} |")


if __name__ == "__main__":
    sys.exit(main())
