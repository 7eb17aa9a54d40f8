#!/usr/bin/python3
"""Does the trainer notice gnnd? The step rate of a PyG SAGEConv 3 x 256 trainer (examples/sage_pyg.py's
model; a plain-torch mean SAGE without PyG) fed by gnnd through CUDA IPC, against the same loop on the same
kind of batches already in the trainer's GPU memory (the ideal), rounds alternated; and the trainer's host
time of one next() of gnnd.pyg.NeighborLoader between real steps (the caches as a trainer leaves them), in
80 more steps of the fed loop that each wait for the GPU and then 5 ms for gnnd to refill the slots (in the
timed loop the host runs ahead of its queued steps, and its next() waits there until the GPU has consumed a
slot it released and gnnd has refilled it); every other one of them times first, in the same place, a
stand-in of next()'s torch and PyG work without gnnd (slices, the int64 edge_index, the Data).

    /usr/bin/python3 bench/coschedule.py --dataset DIR --device cuda:0 [--gnnd-args "--producer-sms=16"]
        [--labor [--batch-dependency K]] [--num-slots N] [--premade N] [--next-steps N]

--labor draws LABOR-0 batches (--batch-dependency K: GraphBolt's batch_dependency) for the ideal and the fed
loop alike. Where the features are on storage (--gnnd-args "--feature-cache=bench=8GiB"), the row ends with the
host cache's hit rate over the timed steps (gnnctl stats before and after: rows a gather found cached or being
read ahead) and the rows storage served a step (read by a gather or ahead of it).

The ideal runs with gnnd's session closed (no producer work). Run it under MPS by starting the MPS control
daemon first (bench/run_gpu.sh does). Prints one markdown row: label, ideal and fed steps/s (medians), ratio,
next() µs (median and quartiles), the stand-in's µs (median). --beside adds, after the ratio, the ideal loop's rate
with a gnnd batch fetched (and dropped) each step over its ideal: the producer and next() beside the trainer
without its reading the slots; --stand-in then the ideal loop's rate with the stand-in of next() run each step
(no gnnd) over its ideal: what next()'s torch and PyG work costs the trainer by itself. The row's last
column is the CPU cores gnnd used over the timed fed steps (its CPU seconds over their wall time: the host's
producer threads with --gnnd-args "--producer=host").
"""
import argparse
import cProfile
import os
import pathlib
import pstats
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

try:
    from torch_geometric.data import Data as make_data
except ImportError:
    from gnnd.pyg import Batch as make_data

from session_rate import cache_counts, print_stages, producer_lines, serve

ROOT = pathlib.Path(__file__).resolve().parents[1]


def cpu_seconds(pid):
    """User and system CPU seconds of process PID so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()  # from field 3 (state) on
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def make_model(dim, classes):
    try:
        sys.path.insert(0, str(ROOT / "examples"))
        from sage_pyg import SAGE
        return SAGE(dim, 256, classes, 3), "PyG SAGEConv"
    except ImportError:
        sys.path.insert(0, str(ROOT / "tests" / "python"))
        from training import SAGE
        return SAGE(dim, 256, classes, 3), "mean SAGE (plain torch)"


def step(model, optimizer, x, edge_index, y, batch_size):
    optimizer.zero_grad(set_to_none=True)
    out = model(x, edge_index)[:batch_size]
    loss = F.cross_entropy(out, y[:batch_size].clamp(min=0))
    loss.backward()
    optimizer.step()


def endless(source):
    """The loader's batches, epoch after epoch."""
    while True:
        yield from source


def stand_in(batch, pair32):
    """next()'s torch and PyG work without gnnd: slices of three arrays (y's again standing in for n_id) and of
    an int32 (2, E) edge pair, its int64 copy, and the PyG Data of it all."""
    x, _, y, batch_size = batch
    nodes, edges = x.shape[0] - 1, pair32.shape[1] - 1
    edge_index = pair32[:, :edges].to(torch.int64, memory_format=torch.contiguous_format)
    return make_data(x=x[:nodes], edge_index=edge_index, y=y[:batch_size], n_id=y[:batch_size - 1],
                     batch_size=batch_size, num_sampled_nodes=[batch_size, nodes - batch_size],
                     num_sampled_edges=[edges])


def time_next_between_steps(batches, train, premade, pairs32, profiler, device, steps=80):
    """Seconds of next() (wall, and the thread's CPU) and of the stand-in, each after a real step, with the GPU
    caught up and gnnd's slots refilled; next() and the stand-in take turns in that place."""
    wall, cpu, stand_ins = [], [], []
    for i in range(steps):
        torch.cuda.synchronize(device)
        time.sleep(0.005)  # gnnd looks at released slots at least every ms; a fill takes < 1 ms
        if i % 2:
            start = time.perf_counter()
            stand_in(premade[i % len(premade)], pairs32[i % len(pairs32)])
            stand_ins.append(time.perf_counter() - start)
            batch = next(batches)
        else:
            if profiler:
                profiler.enable()
            start, start_cpu = time.perf_counter(), time.thread_time()
            batch = next(batches)
            wall.append(time.perf_counter() - start)
            cpu.append(time.thread_time() - start_cpu)
            if profiler:
                profiler.disable()
        train(batch)
    return wall, cpu, stand_ins


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--gnnd", default=shutil.which("gnnd"))
    parser.add_argument("--gnnd-args", default="")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--label", default="")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed next() calls (top 15 by own time)")
    parser.add_argument("--labor", action="store_true", help="LABOR-0 batches instead of uniform ones")
    parser.add_argument("--batch-dependency", type=int, default=0, help="with --labor: GraphBolt's batch_dependency")
    parser.add_argument("--beside", action="store_true",
                        help="also time the ideal loop fetching (and dropping) a gnnd batch each step: the producer "
                        "and next() beside the trainer, the slots never read")
    parser.add_argument("--stand-in", action="store_true",
                        help="also time the ideal loop running the stand-in of next() each step (no gnnd): the cost "
                        "of next()'s torch and PyG work alone")
    parser.add_argument("--num-slots", type=int, default=0, help="the loader's num_slots (0: gnnd's default_slots)")
    parser.add_argument("--premade", type=int, default=40, help="batches the ideal loop cycles through")
    parser.add_argument("--next-steps", type=int, default=80, help="steps that time next() between real steps")
    parser.add_argument("--gnnctl", default=shutil.which("gnnctl"))
    args = parser.parse_args()
    from gnnd.pyg import NeighborLoader
    device = torch.device(args.device)
    torch.zeros(1, device=device)
    with tempfile.TemporaryDirectory() as tmp:
        proc, address = serve(args.gnnd, args.dataset, tmp, args.gnnd_args)
        try:
            def loader():
                return NeighborLoader(None, num_neighbors=[15, 10, 5], batch_size=1024, input_nodes="train",
                                      shuffle=True, dataset="bench", address=address, device=args.device, seed=5,
                                      labor=args.labor, batch_dependency=args.batch_dependency,
                                      num_slots=args.num_slots)

            # The ideal's batches: the same kind, copied into the trainer's memory once.
            premade = []
            with loader() as source:
                for batch in source:
                    premade.append((batch.x.clone(), batch.edge_index.clone(), batch.y.clone(), batch.batch_size))
                    if len(premade) == args.premade:
                        break
            dim = premade[0][0].shape[1]
            classes = int(max(int(b[2].max()) for b in premade)) + 1
            torch.manual_seed(0)
            model, conv = make_model(dim, classes)
            model = model.to(device)
            optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
            for i in range(20):  # warm-up: kernels, allocator
                step(model, optimizer, *premade[i % len(premade)])
            torch.cuda.synchronize(device)

            ideal, fed, beside, with_stand_in, cache, cores = [], [], [], [], None, []
            next_seconds, next_cpu, stand_in_seconds = [], [], []
            pairs32 = [b[1].int() for b in premade[:4]]  # the stand-in's int32 edge pairs
            profiler = cProfile.Profile() if args.profile else None
            for _ in range(args.rounds):
                start = time.perf_counter()
                for i in range(args.steps):
                    step(model, optimizer, *premade[i % len(premade)])
                torch.cuda.synchronize(device)
                ideal.append(args.steps / (time.perf_counter() - start))

                if args.stand_in:
                    start = time.perf_counter()
                    for i in range(args.steps):
                        stand_in(premade[i % len(premade)], pairs32[i % len(pairs32)])
                        step(model, optimizer, *premade[i % len(premade)])
                    torch.cuda.synchronize(device)
                    with_stand_in.append(args.steps / (time.perf_counter() - start))

                if args.beside:
                    with loader() as source:
                        batches = endless(source)
                        for _ in range(10):
                            next(batches)
                            step(model, optimizer, *premade[0])
                        torch.cuda.synchronize(device)
                        start = time.perf_counter()
                        for i in range(args.steps):
                            next(batches)
                            step(model, optimizer, *premade[i % len(premade)])
                        torch.cuda.synchronize(device)
                        beside.append(args.steps / (time.perf_counter() - start))

                with loader() as source:
                    batches = endless(source)
                    train = lambda b: step(model, optimizer, b.x, b.edge_index, b.y, b.batch_size)  # noqa: E731
                    for _ in range(10):  # the session's warm-up: slots filled, pipeline running
                        train(next(batches))
                    torch.cuda.synchronize(device)
                    before = cache_counts(address, args.gnnctl)
                    start, gnnd_cpu = time.perf_counter(), cpu_seconds(proc.pid)
                    for _ in range(args.steps):
                        train(next(batches))
                    torch.cuda.synchronize(device)
                    fed.append(args.steps / (time.perf_counter() - start))
                    cores.append((cpu_seconds(proc.pid) - gnnd_cpu) / (time.perf_counter() - start))
                    after = cache_counts(address, args.gnnctl)
                    print_stages(address, args.gnnctl)
                    if before and after:  # the timed steps' lookups (and the batches sampled ahead of them)
                        hits, misses, prefetched = (a - b for a, b in zip(after, before))
                        cache = (hits / max(hits + misses, 1), (misses + prefetched) / args.steps)
                    wall, cpu, stand_ins = time_next_between_steps(batches, train, premade, pairs32, profiler, device,
                                                                   args.next_steps)
                    next_seconds += wall
                    next_cpu += cpu
                    stand_in_seconds += stand_ins
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            print(*producer_lines(os.path.join(tmp, "gnnd.log")), sep="\n", file=sys.stderr)
            with open(os.path.join(tmp, "gnnd.log")) as log:
                lines = log.read().splitlines()
            print(f"gnnd exited with {proc.returncode}; its last lines:", *lines[-3:], sep="\n", file=sys.stderr)
    i, f = statistics.median(ideal), statistics.median(fed)
    print(f"{conv}; ideal {' / '.join(f'{v:.1f}' for v in ideal)}, fed {' / '.join(f'{v:.1f}' for v in fed)} "
          "steps/s" + (f"; beside {' / '.join(f'{v:.1f}' for v in beside)}" if beside else "")
          + (f"; ideal with the stand-in {' / '.join(f'{v:.1f}' for v in with_stand_in)}" if with_stand_in else "")
          + (f"; next() median {statistics.median(next_seconds) * 1e6:.0f} us, the thread's CPU "
                       f"{statistics.median(next_cpu) * 1e6:.0f} us; the stand-in "
                       f"{statistics.median(stand_in_seconds) * 1e6:.0f} us" if next_seconds else ""), file=sys.stderr)
    if profiler:
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(15)
    row = [args.label or args.gnnd_args or "default", f"{i:.1f}", f"{f:.1f}", f"{f / i:.3f}"]
    if beside:
        row += [f"{statistics.median(beside) / i:.3f}"]
    if with_stand_in:
        row += [f"{statistics.median(with_stand_in) / i:.3f}"]
    if next_seconds:
        q = [v * 1e6 for v in statistics.quantiles(next_seconds, n=4)]
        row += [f"{q[1]:.0f} ({q[0]:.0f} / {q[2]:.0f})", f"{statistics.median(stand_in_seconds) * 1e6:.0f}"]
    if cache is not None:
        row += [f"{cache[0]:.3f}", f"{cache[1]:.0f}"]
    row += [f"{statistics.median(cores):.1f}"]
    print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main())
