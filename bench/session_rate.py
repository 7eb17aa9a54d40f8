#!/usr/bin/python3
"""Batches per second that a trainer receives through gnnd: the whole path (sampling, gather, the session
protocol, the client library), with a trainer that only takes each batch and releases it.

    /usr/bin/python3 bench/session_rate.py --dataset DIR --device cuda:0 [--gnnd A --gnnd B ...]

Each daemon given with --gnnd (default: gnnd on PATH) serves DIR in turn; rounds alternate between them,
so a drift of the machine's speed hits all alike. Prints one line per measurement and a median table; for
features on storage (--gnnd-args "--feature-cache=bench=SIZE") also the host cache's hit rate and the rows it
read from storage a batch. --labor [--batch-dependency K]: LABOR-0 batches. Needs the Python client
(PYTHONPATH=client/python) and, for CUDA devices, torch.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def serve(gnnd, dataset, tmp, extra):
    socket = os.path.join(tmp, "bench.sock")
    proc = subprocess.Popen([gnnd, f"--listen=unix:{socket}", f"--dataset=bench={dataset}", *extra.split()],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "gnnd.log"), "w"))
    deadline = time.time() + 300
    while not os.path.exists(socket):
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"{gnnd} did not start: {open(os.path.join(tmp, 'gnnd.log')).read()}")
        time.sleep(0.1)
    return proc, f"unix:{socket}"


def producer_lines(log_path):
    """The lines of gnnd's log at LOG_PATH that say where its GPU producers ran (the slice of SMs, its moves),
    and its errors."""
    with open(log_path) as log:
        return [line.rstrip() for line in log
                if any(word in line for word in ("producer_sms", "producer slice", "green context", "level=error"))]


def gnnctl_stats(address, gnnctl=None):
    """`gnnctl stats` of the daemon at ADDRESS (gnnctl on PATH or $GNNCTL by default), or "" without gnnctl."""
    gnnctl = gnnctl or shutil.which("gnnctl") or os.environ.get("GNNCTL")
    if not gnnctl:
        return ""
    return subprocess.run([gnnctl, f"--address={address}", "stats"], capture_output=True, text=True).stdout


def cache_counts(address, gnnctl=None):
    """The host feature cache's (hits, misses, prefetched) rows so far (gnnctl stats), None where the features are in
    memory. A row read ahead of its gather counts as a hit there, so what storage served is misses + prefetched."""
    found = re.search(r"hits (\d+) misses (\d+).*prefetched (\d+)", gnnctl_stats(address, gnnctl))
    return tuple(int(found.group(i)) for i in (1, 2, 3)) if found else None


def print_stages(address, gnnctl=None, pid=None):
    """gnnd's per-stage times and session lines (gnnctl stats: sample, gather, produce, ...) and, given the daemon's
    PID, its resident memory (/proc: peak, now, anonymous, shared), to stderr."""
    lines = [line for line in gnnctl_stats(address, gnnctl).splitlines() if line.startswith(("stage ", "session "))]
    if pid is not None:
        with open(f"/proc/{pid}/status") as status:
            lines.append(" ".join(" ".join(line.split()) for line in status
                                  if line.startswith(("VmHWM", "VmRSS", "RssAnon", "RssShmem"))))
    print(*lines, sep="\n", file=sys.stderr)


def measure(address, args):
    """(batches/s after the warm-up, seconds from opening the session to its first batch, of which opening,
    the host feature cache's (hit rate, rows storage served a batch) over the timed batches or None)"""
    import gnnd
    opened = time.perf_counter()
    loader = gnnd.Loader(address=address, dataset="bench", batch_size=args.batch_size, fanouts=args.fanouts,
                         num_slots=args.slots, device=args.device, output="torch" if args.device != "cpu" else "numpy",
                         labor=args.labor, batch_dependency=args.batch_dependency)
    open_seconds = time.perf_counter() - opened
    sync = (lambda: None)
    if args.device.startswith("cuda"):
        import torch
        sync = torch.cuda.synchronize
    try:
        done, start = 0, None
        while done < args.warmup + args.batches:
            for _ in loader:
                done += 1
                if done == 1:
                    sync()
                    first = time.perf_counter() - opened
                if done == args.warmup:
                    sync()
                    counts = cache_counts(address)
                    start = time.perf_counter()
                if done == args.warmup + args.batches:
                    break
        sync()
        rate = args.batches / (time.perf_counter() - start)
        after = cache_counts(address)
        if args.stats:
            print_stages(address, pid=args.pid)
        cache = None
        if counts and after:  # the timed batches' lookups (and those of the batches sampled ahead of them)
            hits, misses, prefetched = (a - b for a, b in zip(after, counts))
            cache = (hits / max(hits + misses, 1), (misses + prefetched) / args.batches)
        return rate, first, open_seconds, cache
    finally:
        loader.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--gnnd", action="append", help="a gnnd binary (repeatable; default: gnnd on PATH)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=lambda s: [int(x) for x in s.split(",")], default=[15, 10, 5])
    parser.add_argument("--slots", type=int, nargs="+", default=[2])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gnnd-args", default="", help="extra gnnd flags, e.g. --prepare-gpus=none")
    parser.add_argument("--labor", action="store_true", help="LABOR-0 batches instead of uniform ones (gnnd.Loader's)")
    parser.add_argument("--batch-dependency", type=int, default=0, help="with --labor: GraphBolt's batch_dependency")
    parser.add_argument("--stats", action="store_true",
                        help="after each measurement, gnnd's stage times and resident memory to stderr")
    args = parser.parse_args()
    daemons = args.gnnd or [shutil.which("gnnd")]
    if args.device.startswith("cuda"):  # a trainer's CUDA context is up before it opens its loader
        import torch
        torch.zeros(1, device=args.device)
        torch.cuda.synchronize()
    rates, firsts, hits = {}, {}, {}
    for round_ in range(args.rounds):
        for gnnd in daemons:
            with tempfile.TemporaryDirectory() as tmp:
                proc, address = serve(gnnd, args.dataset, tmp, args.gnnd_args)
                try:
                    for slots in args.slots:
                        run = argparse.Namespace(**{**vars(args), "slots": slots, "pid": proc.pid})
                        rate, first, open_seconds, cache = measure(address, run)
                        rates.setdefault((gnnd, slots), []).append(rate)
                        firsts.setdefault((gnnd, slots), []).append(first)
                        hits.setdefault((gnnd, slots), []).append(cache)
                        print(f"round {round_ + 1} {gnnd} slots {slots}: {rate:.1f} batches/s, first batch "
                              f"{first:.3f} s after opening (the open itself {open_seconds:.3f} s)"
                              + (f", host cache hit rate {cache[0]:.3f}, {cache[1]:.0f} rows read from storage a batch"
                                 if cache else ""), flush=True)
                finally:
                    proc.terminate()
                    proc.wait(timeout=60)
    print(f"\n{args.device}, batch {args.batch_size}, fanouts {args.fanouts}, {args.batches} batches per "
          f"measurement, median of {args.rounds}")
    print("| gnnd | slots | batches/s (median) | all | first batch, s (median) | host cache hit rate "
          "| rows read from storage a batch |\n|---|---|---|---|---|---|---|")
    for (gnnd, slots), values in rates.items():
        caches = [c for c in hits[(gnnd, slots)] if c is not None]
        print(f"| {gnnd} | {slots} | {statistics.median(values):.1f} | "
              f"{' / '.join(f'{v:.1f}' for v in values)} | {statistics.median(firsts[(gnnd, slots)]):.3f} | "
              + (f"{statistics.median(c[0] for c in caches):.3f} | {statistics.median(c[1] for c in caches):.0f} |"
                 if caches else "- | - |"))


if __name__ == "__main__":
    sys.exit(main())
