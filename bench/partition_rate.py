"""Batches per second from a part of a partitioned dataset, all parts on one host: one gnnd over the whole dataset
against part 0 of 2 and of 3 (each other part another gnnd on the same host; rows over UCX), the same session
(uniform [15,10,5], batch 1024) on DEVICE, rounds alternated. Prints one markdown row per case: parts, batches/s
(median of the rounds), the ratio to the whole dataset's, the share of a batch's rows fetched from peers and read
from the remote cache, and what gnnctl says the gathers waited for peers. Each round runs another epoch. With
--remote-cache SIZE the parts are measured again with their gnnd keeping fetched rows (--remote-cache=SIZE).

    /usr/bin/python3 bench/partition_rate.py --dataset DIR [--method random] [--parts 2 3] [--device cpu]
        [--remote-cache 512MiB]
"""
import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import tempfile
import time

import gnnd


def start(gnnd_path, tmp, name, args):
    socket = os.path.join(tmp, f"{name}.sock")
    log = open(os.path.join(tmp, f"{name}.log"), "w")
    proc = subprocess.Popen([gnnd_path, f"--listen=unix:{socket}", *args], stdout=log, stderr=log)
    deadline = time.time() + 600
    while " event=serving " not in open(os.path.join(tmp, f"{name}.log")).read():
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"{name}: {open(os.path.join(tmp, f'{name}.log')).read()[-2000:]}")
        time.sleep(0.1)
    return proc, f"unix:{socket}"


def rate(address, device, batches, epoch):
    with gnnd.Loader(address=address, dataset="d", batch_size=1024, fanouts=[15, 10, 5], seed=1, device=device,
                     epoch=epoch, output="numpy" if device == "cpu" else "torch") as loader:
        it = iter(loader)
        next(it)  # the session's start and first batch are not timed
        start = time.perf_counter()
        n = 0
        for _ in it:
            n += 1
            if n == batches:
                break
        if device != "cpu":
            import torch
            torch.cuda.synchronize()
        return n / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--gnnd", default=shutil.which("gnnd"))
    parser.add_argument("--gnnctl", default=shutil.which("gnnctl"))
    parser.add_argument("--method", default="random")
    parser.add_argument("--parts", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gnnd-args", default="--gpu-cache=none")
    parser.add_argument("--remote-cache", help="also measure the parts with --remote-cache=SIZE")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="partition-rate-")
    token = pathlib.Path(tmp) / "token"
    token.write_text("partition-rate-bench-token\n")
    token.chmod(0o600)
    extra = args.gnnd_args.split()
    whole, whole_address = start(args.gnnd, tmp, "whole", [f"--dataset=d={args.dataset}", *extra])
    cases = {}  # (parts, remote cache) -> (the gnnd processes, part 0's address)
    try:
        for parts in args.parts:
            out = pathlib.Path(tmp) / f"parts{parts}"
            subprocess.run([args.gnnctl, "partition", "--parts", str(parts), "--method", args.method, args.dataset,
                            str(out)], check=True, capture_output=True)
            for cache in [None] + ([args.remote_cache] if args.remote_cache else []):
                ports = [20000 + (os.getpid() * 7 + parts * 11 + r + (50 if cache else 0)) % 20000
                         for r in range(parts)]
                peers = ",".join(f"127.0.0.1:{p}" for p in ports)
                procs = [start(args.gnnd, tmp, f"p{parts}r{r}{'c' if cache else ''}",
                               [f"--dataset=d={out}/part-{r}", f"--peers={peers}", f"--peer-token-file={token}",
                                "--peer-shared-memory", *([f"--remote-cache={cache}"] if cache else []), *extra])
                         for r in range(parts)]
                cases[parts, cache] = procs
        for procs in cases.values():  # every peer connected (they retry each second) before the timed rounds
            rate(procs[0][1], args.device, 3, epoch=100)
        rates = {case: [] for case in [(1, None), *cases]}
        for r in range(args.rounds):
            rates[1, None].append(rate(whole_address, args.device, args.batches, epoch=r))
            for case, procs in cases.items():
                rates[case].append(rate(procs[0][1], args.device, args.batches, epoch=r))
        base = statistics.median(rates[1, None])
        print(f"| parts (part 0 of N, {args.method}) | remote cache | batches/s ({args.device}) | vs whole | "
              "rows fetched | rows from the remote cache | gathers waited for peers |")
        print("|---|---|---|---|---|---|---|")
        print(f"| 1 (whole) | - | {base:.1f} | 1.00 | 0 | 0 | - |")
        for (parts, cache), procs in cases.items():
            listing = subprocess.run([args.gnnctl, f"--address={procs[0][1]}", "datasets"], capture_output=True,
                                     text=True).stdout
            found = re.search(r"batch rows: (\d+) own, (\d+) fetched \(waited ([0-9.]+) s\), (\d+) from the remote",
                              listing)  # all rounds
            own, fetched, waited, cached = (int(found.group(1)), int(found.group(2)), float(found.group(3)),
                                            int(found.group(4)))
            rows = max(own + fetched + cached, 1)
            median = statistics.median(rates[parts, cache])
            print(f"| {parts} | {cache or 'none'} | {median:.1f} | {median / base:.2f} | {fetched / rows:.2f} | "
                  f"{cached / rows:.2f} | {waited:.2f} s over {args.rounds * (args.batches + 1) + 4} batches |")
    finally:
        for procs in cases.values():
            for proc, _ in procs:
                proc.terminate()
        whole.terminate()
        for procs in cases.values():
            for proc, _ in procs:
                proc.wait()
        whole.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
