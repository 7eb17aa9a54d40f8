#!/usr/bin/python3
"""Does a typed trainer notice gnnd? The step rate of examples/hetero_pyg.py's model (PyG's to_hetero of a
2-layer GraphSAGE, 128 wide, learned embeddings for types without features) trained on typed batches that
gnnd samples on the GPU and hands over through CUDA IPC (gnnd.pyg.NeighborLoader, HeteroData), against the
same loop on batches of the same kind already in the trainer's GPU memory (the ideal), in blocks taken in turn.
Needs torch_geometric. Run it under MPS by starting the MPS control daemon first.

    python3 bench/coschedule_typed.py --dir DIR --device cuda:0 [--gnnd-args "--producer-sms=16"]

DIR is a typed dataset with reverse relations (gnnctl generate --preset mag --add-reverse). Ideal and fed
steps run in blocks taken in turn (--blocks of --steps each) on one open session. Prints one markdown row:
label, ideal and fed steps/s (medians over blocks), their ratio, the ratio of each fed block to the ideal block
before it (median and quartiles), and next()'s host time between real steps (µs, median and quartiles; the
GPU caught up and the slots refilled first).
"""
import argparse
import cProfile
import pathlib
import pstats
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

from session_rate import producer_lines, serve

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from hetero_pyg import Model, load  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--gnnd", default=shutil.which("gnnd"))
    parser.add_argument("--gnnd-args", default="")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--fanouts", default="15,10")
    parser.add_argument("--steps", type=int, default=100, help="steps per block")
    parser.add_argument("--blocks", type=int, default=10, help="blocks of ideal and of fed steps, taken in turn")
    parser.add_argument("--slots", type=int, default=0, help="the session's slots (0: gnnd's default)")
    parser.add_argument("--label", default="")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed next() calls (top 20 by own and by cumulative time)")
    args = parser.parse_args()
    profiler = cProfile.Profile() if args.profile else None
    from gnnd.pyg import NeighborLoader
    device = torch.device(args.device)
    data = load(args.dir)
    target = next(t for t in data.node_types if "y" in data[t])
    fanouts = [int(f) for f in args.fanouts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        proc, address = serve(args.gnnd, args.dir, tmp, args.gnnd_args)
        try:
            def loader():
                return NeighborLoader(None, num_neighbors=fanouts, batch_size=1024, input_nodes=(target, "train"),
                                      shuffle=True, dataset="bench", address=address, device=args.device, seed=5,
                                      num_slots=args.slots)

            premade = []  # the ideal's batches: the same kind, copied into the trainer's memory once
            with loader() as source:
                for batch in source:
                    premade.append(batch.clone())
                    if len(premade) == 30:
                        break
            torch.manual_seed(0)
            model = Model(data, 128, int(data[target].y.max()) + 1).to(device)
            with torch.no_grad():
                model(premade[0])  # the lazy layers take their sizes
            optimizer = torch.optim.Adam(model.parameters(), lr=0.003)

            def step(batch):
                size = batch[target].batch_size
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(batch)[target][:size], batch[target].y[:size].long().clamp(min=0))
                loss.backward()
                optimizer.step()

            for i in range(10):  # warm-up: kernels, allocator
                step(premade[i % len(premade)])
            torch.cuda.synchronize(device)
            ideal, fed, next_seconds = [], [], []

            def timed(take):  # steps/s of one block of steps
                torch.cuda.synchronize(device)
                start = time.perf_counter()
                for i in range(args.steps):
                    step(take(i))
                torch.cuda.synchronize(device)
                return args.steps / (time.perf_counter() - start)

            with loader() as source:
                def endless():
                    while True:
                        yield from source
                batches = endless()
                for _ in range(10):  # the session's warm-up
                    step(next(batches))
                # Blocks of ideal and fed steps taken in turn: a host-bound trainer's rate drifts by several
                # percent over seconds, as much as the effect measured. During an ideal block gnnd's slots are
                # full and its producer idle.
                for _ in range(args.blocks):
                    ideal.append(timed(lambda i: premade[i % len(premade)]))
                    fed.append(timed(lambda i: next(batches)))
                for _ in range(40):  # next()'s host time between real steps, the GPU caught up and slots refilled
                    torch.cuda.synchronize(device)
                    time.sleep(0.005)
                    if profiler:
                        profiler.enable()
                    start = time.perf_counter()
                    batch = next(batches)
                    next_seconds.append(time.perf_counter() - start)
                    if profiler:
                        profiler.disable()
                    step(batch)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            print(*producer_lines(pathlib.Path(tmp) / "gnnd.log"), sep="\n", file=sys.stderr)
    i, f = statistics.median(ideal), statistics.median(fed)
    print(f"ideal {' / '.join(f'{v:.1f}' for v in ideal)}, fed {' / '.join(f'{v:.1f}' for v in fed)} steps/s",
          file=sys.stderr)
    if profiler:
        for order in ("tottime", "cumulative"):
            pstats.Stats(profiler, stream=sys.stderr).sort_stats(order).print_stats(20)
    q = [v * 1e6 for v in statistics.quantiles(next_seconds, n=4)]
    pairs = statistics.quantiles([b / a for a, b in zip(ideal, fed)], n=4)  # each fed block over the ideal before it
    print(f"| {args.label or args.gnnd_args or 'default'} | {i:.1f} | {f:.1f} | {f / i:.3f} | "
          f"{pairs[1]:.3f} ({pairs[0]:.3f} / {pairs[2]:.3f}) | {q[1]:.0f} ({q[0]:.0f} / {q[2]:.0f}) |")


if __name__ == "__main__":
    sys.exit(main())
