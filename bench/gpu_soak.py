#!/usr/bin/python3
"""A soak of GPU sessions: churners open and close GPU sessions as fast as they can beside steady trainers.

    /usr/bin/python3 bench/gpu_soak.py --dataset DIR [--seconds 300] [--churners 16]

One gnnd (gnnd on PATH) serves DIR. Two steady trainers read epochs on cuda:0 (a little GPU work per batch)
through three phases: alone (--baseline s), beside --churners processes that open and close GPU sessions of
varied shapes for --seconds (taking 0 to 3 batches each, a few of them SIGKILLed mid-session and restarted),
and alone again (--after s). A checker reads every GPU batch in lockstep with a CPU session of the same seed
and compares every array byte for byte. Then: the steady trainers lost no batch (whole epochs, steps in
order) and kept their rate; nothing leaked: gnnd's descriptors, threads and RSS, its slot bytes and the GPU's
used memory are what they were before the churn with the same sessions open. Prints a Markdown table; exits
1 on any failure. Needs torch and the Python client (PYTHONPATH=client/python).
"""
import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

DATASET = "soak"


def reserved_now():
    """(time, bytes torch's caching allocator holds on the GPU): part of the device's used memory that is the
    trainer's, and grows with the largest batch it has seen."""
    import torch
    return time.time(), torch.cuda.memory_reserved() if torch.cuda.is_available() else 0


def steady(args):
    """Reads epochs on the GPU until --until; prints the times its batches arrived and what went wrong."""
    import torch
    import gnnd
    weight = torch.randn(args.feature_dim, 256, device=args.device)
    total = torch.zeros((), device=args.device)
    stamps, errors, epochs, reserved = [], [], 0, []
    loader = gnnd.Loader(address=args.address, dataset=DATASET, batch_size=1024, fanouts=[15, 10, 5],
                         device=args.device, seed=args.rank)
    while time.time() < args.until:
        expected = 0
        for batch in loader:
            if batch.step != expected:
                errors.append(f"epoch {batch.epoch}: step {batch.step} after {expected - 1}")
            expected = batch.step + 1
            total += torch.relu(batch.features.float() @ weight).sum()  # the trainer's share of the GPU
            stamps.append(time.time())
        if expected != len(loader):
            errors.append(f"an epoch of {expected} batches, not {len(loader)}")
        epochs += 1
        reserved.append(reserved_now())
    total.item()
    loader.close()
    print(json.dumps({"stamps": stamps, "errors": errors, "epochs": epochs, "reserved": reserved}))


def check(args):
    """Every GPU batch against the CPU backend's batch of the same seed, epoch and step, byte for byte."""
    import numpy as np
    import gnnd
    options = dict(address=args.address, dataset=DATASET, batch_size=512, fanouts=[10, 5], seed=77)
    gpu = gnnd.Loader(device=args.device, output="torch", **options)
    cpu = gnnd.Loader(device="cpu", output="numpy", **options)
    compared, errors, reserved = 0, [], []
    while time.time() < args.until:
        reserved.append(reserved_now())
        cpu_batches = iter(cpu)
        for g in gpu:
            c = next(cpu_batches, None)
            if c is None:
                errors.append(f"epoch {g.epoch}: the CPU session's epoch ended at step {g.step}")
                break
            for name in ("node_ids", "num_nodes_per_hop", "edge_src", "edge_dst", "num_edges_per_hop", "features",
                         "labels"):
                a, b = getattr(g, name).cpu().numpy(), getattr(c, name)
                if a.dtype != b.dtype or not np.array_equal(a.view(np.uint8), b.view(np.uint8)):
                    errors.append(f"epoch {g.epoch} step {g.step}: {name} differs")
            compared += 1
        else:
            if next(cpu_batches, None) is not None:
                errors.append("the CPU session's epoch is longer")
            continue
        break  # a mismatch in length
    gpu.close()
    cpu.close()
    print(json.dumps({"compared": compared, "errors": errors, "reserved": reserved}))


def churn(args):
    """Opens and closes GPU sessions of varied shapes until --until; prints how many."""
    import gnnd
    rng = random.Random(args.rank)
    opened = 0
    while time.time() < args.until:
        try:
            shape = dict(batch_size=1, fanouts=[1], num_slots=1) if args.tiny else dict(
                batch_size=rng.choice([64, 256, 1024]), fanouts=rng.choice([[5, 5], [15, 10, 5]]),
                num_slots=rng.choice([1, 2, 4]))
            loader = gnnd.Loader(address=args.address, dataset=DATASET, **shape,
                                 device=args.device, output="torch", seed=rng.randrange(1 << 30))
            opened += 1
            batches = iter(loader)
            for _ in range(rng.randrange(4)):
                next(batches).features.sum()
            loader.close()
        except gnnd.GnndError as error:
            print(json.dumps({"opened": opened, "errors": [f"{error.code}: {error.message}"]}))
            sys.exit(1)
    print(json.dumps({"opened": opened, "errors": []}))


def footprint(pid):
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    with open(f"/proc/{pid}/stat") as stat:
        times = stat.read().rsplit(")", 1)[1].split()[11:13]  # utime, stime
    names = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as comm:
                name = re.sub(r"\d+$", "#", comm.read().strip())
            names[name] = names.get(name, 0) + 1
        except OSError:
            pass
    return {"fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": int(fields["Threads"]), "names": names,
            "rss_mib": int(fields["VmRSS"].split()[0]) / 1024,
            "cpu_s": sum(int(t) for t in times) / os.sysconf("SC_CLK_TCK"), "at": time.time()}


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        samples = {}
        for line in response.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
    produce = [(v, k) for k, v in samples.items() if k.startswith('gnnd_stage_seconds_') and 'stage="produce"' in k
               and 'device="cuda:0"' in k]
    return {"sessions": sum(v for k, v in samples.items() if k.startswith("gnnd_sessions{")),
            "produce_s": sum(v for v, k in produce if k.startswith("gnnd_stage_seconds_sum")),
            "produced": sum(v for v, k in produce if k.startswith("gnnd_stage_seconds_count")),
            "slot_mib": samples["gnnd_slot_bytes"] / 2**20,
            "gpu_used_mib": samples.get('gnnd_gpu_memory_used_bytes{gpu="0"}', 0) / 2**20}


def settle(port, sessions):
    """Until gnnd holds exactly `sessions` sessions (the killed churners' end once gnnd notices)."""
    deadline = time.time() + 60
    while scrape(port)["sessions"] != sessions:
        if time.time() > deadline:
            raise RuntimeError(f"gnnd holds {scrape(port)['sessions']} sessions, not {sessions}")
        time.sleep(0.5)
    time.sleep(2)  # the GPU's memory of the last closed ones
    return scrape(port)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--churners", type=int, default=16)
    parser.add_argument("--baseline", type=float, default=30)
    parser.add_argument("--after", type=float, default=40)
    parser.add_argument("--kills", type=int, default=6, help="churners SIGKILLed mid-run (and restarted)")
    parser.add_argument("--gnnd-args", default="")
    parser.add_argument("--device", default="cuda:0", help="of the trainers' sessions (cpu: a dry run of the script)")
    parser.add_argument("--churn-device", help="of the churners' sessions (default: --device)")
    parser.add_argument("--churn-nice", type=int, default=0, help="the churners' niceness (theirs, not gnnd's)")
    parser.add_argument("--tiny", action="store_true", help="churners' sessions of batch 1, fanout [1], 1 slot")
    parser.add_argument("--role", choices=["steady", "check", "churn"], help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--until", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--feature-dim", type=int, default=100, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        return {"steady": steady, "check": check, "churn": churn}[args.role](args)

    tmp = tempfile.mkdtemp(prefix="gnnd-soak-")
    log = open(os.path.join(tmp, "gnnd.log"), "w")
    gnnd = subprocess.Popen(["gnnd", f"--listen=unix:{tmp}/soak.sock", f"--dataset={DATASET}={args.dataset}",
                             "--metrics-address=127.0.0.1:0", *args.gnnd_args.split()], stdout=log, stderr=log)
    deadline = time.time() + 600
    while " event=serving " not in open(log.name).read():
        if gnnd.poll() is not None or time.time() > deadline:
            sys.exit(f"gnnd did not start: {open(log.name).read()}")
        time.sleep(0.2)
    port = int(re.search(r"/metrics \(port (\d+)\)", open(log.name).read()).group(1))
    address = f"unix:{tmp}/soak.sock"
    dim = int(re.search(r"features (\d+) x", open(log.name).read()).group(1))

    def worker(role, rank, until):
        device = args.churn_device or args.device if role == "churn" else args.device
        nice = ["nice", "-n", str(args.churn_nice)] if role == "churn" and args.churn_nice else []
        return subprocess.Popen([*nice, sys.executable, __file__, f"--role={role}", f"--address={address}", f"--rank={rank}",
                                 f"--until={until}", f"--feature-dim={dim}", f"--device={device}",
                                 *(["--tiny"] if args.tiny else [])], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    warm = 20  # processes start, CUDA initializes
    start = time.time() + warm
    churn_start, churn_end = start + args.baseline, start + args.baseline + args.seconds
    end = churn_end + args.after
    steadies = [worker("steady", rank, end) for rank in range(2)] + [worker("check", 0, end)]
    time.sleep(max(0.0, start - time.time()))
    first = footprint(gnnd.pid)
    time.sleep(max(0.0, churn_start - time.time()))
    before = {**footprint(gnnd.pid), **scrape(port)}
    churners = [worker("churn", rank, churn_end) for rank in range(args.churners)]
    rng = random.Random(5)
    kill_at = sorted(rng.uniform(churn_start + 10, churn_end - 20) for _ in range(args.kills))
    killed, mid_at, mid = 0, churn_start + args.seconds / 2, None
    for when in kill_at + [mid_at]:
        if mid is None and mid_at <= when:  # gRPC's and CUDA's thread pools have grown to the load by now
            time.sleep(max(0.0, mid_at - time.time()))
            mid = footprint(gnnd.pid)
        if when == mid_at:
            break
        time.sleep(max(0.0, when - time.time()))
        i = rng.randrange(args.churners)
        churners[i].send_signal(signal.SIGKILL)
        churners[i].communicate()
        churners[i] = worker("churn", 100 + killed, churn_end)
        killed += 1
    during = {**footprint(gnnd.pid), **scrape(port)}
    failures, opened = [], 0
    for proc in churners:
        out, err = proc.communicate(timeout=args.seconds + 300)
        result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {"opened": 0, "errors": [err[-500:]]}
        opened += result["opened"]
        failures += [f"churner: {e}" for e in result["errors"]]
    try:  # 2 steady trainers, the checker's GPU and CPU sessions
        after = {**footprint(gnnd.pid), **settle(port, 4)}
    except RuntimeError as error:
        failures.append(str(error))
        after = {**footprint(gnnd.pid), **scrape(port)}
    settled = time.time()
    time.sleep(10)
    later = scrape(port)
    results = []
    for proc in steadies:
        out, err = proc.communicate(timeout=args.after + 300)
        if proc.returncode != 0 or not out.strip():
            failures.append(f"a steady trainer failed: {err[-800:]}")
            continue
        results.append(json.loads(out.strip().splitlines()[-1]))
    last = {**footprint(gnnd.pid), **scrape(port)}
    gnnd_alive = gnnd.poll() is None
    gnnd.send_signal(signal.SIGTERM)
    gnnd_exit = gnnd.wait(timeout=60)
    failures += [e for r in results for e in r["errors"]]
    if not gnnd_alive or gnnd_exit != 0:
        failures.append(f"gnnd: alive {gnnd_alive}, exit {gnnd_exit}")

    def rate(stamps, begin, finish):
        inside = [t for t in stamps if begin + 2 <= t < finish - 2]
        return len(inside) / (finish - begin - 4) if finish - begin > 8 else float("nan")

    print("| phase | steady trainer 0 batches/s | steady trainer 1 batches/s | GPU batch, mean ms (all sessions) "
          "| gnnd CPU, cores |")
    print("|---|---|---|---|---|")
    first.update(produce_s=0, produced=0)
    produce = [(first, before), (before, during), (after, last)]
    rates = {}
    for (phase, (begin, finish)), (a, b) in zip({"alone, before": (start, churn_start),
                                                 f"beside {args.churners} churners": (churn_start, churn_end),
                                                 "alone, after": (settled, end)}.items(), produce):
        rates[phase] = [rate(r["stamps"], begin, finish) for r in results if "stamps" in r]
        batches = b["produced"] - a["produced"]
        mean = f"{1e3 * (b['produce_s'] - a['produce_s']) / batches:.3f}" if batches > 0 else "-"
        cores = (b["cpu_s"] - a["cpu_s"]) / (b["at"] - a["at"])
        print(f"| {phase} | " + " | ".join(f"{x:.1f}" for x in rates[phase]) + f" | {mean} | {cores:.2f} |")
    print()
    checked = [r for r in results if "compared" in r]
    print(f"- GPU sessions opened and closed by {args.churners} churners in {args.seconds:.0f} s: {opened} "
          f"({opened / args.seconds:.1f}/s), {killed} churners SIGKILLed mid-run and restarted")
    print(f"- steady trainers: {sum(r['epochs'] for r in results if 'epochs' in r)} whole epochs, "
          f"steps in order: {'yes' if not any(r['errors'] for r in results if 'epochs' in r) else 'NO'}")
    print(f"- checker: {checked[0]['compared'] if checked else 0} GPU batches byte-identical to the CPU backend's"
          f" ({len(checked[0]['errors']) if checked else '?'} differing)")
    print(f"- gnnd's threads: {before['threads']} before the churn, {mid['threads']} halfway, {during['threads']} at its "
          f"end, {after['threads']} after; by name, before -> after: " +
          ", ".join(f"{n} {before['names'].get(n, 0)} -> {after['names'].get(n, 0)}"
                    for n in sorted(set(before["names"]) | set(after["names"]))
                    if before["names"].get(n, 0) != after["names"].get(n, 0)))
    print(f"- the GPU's used memory 10 s after that: {later['gpu_used_mib']:.0f} MiB")
    print("- gnnd, steady sessions only, before -> after the churn: " +
          ", ".join(f"{k} {before[k]:.0f} -> {after[k]:.0f}" for k in ("fds", "threads", "rss_mib", "sessions",
                                                                          "slot_mib", "gpu_used_mib")))
    print(f"- gnnd exit status after SIGTERM: {gnnd_exit}")
    leaks = []
    if after["fds"] > before["fds"] + 8:
        leaks.append("descriptors")
    # Threads: gRPC's default executor grows with the load (to twice the cores at most, its own bound); any
    # other growth is a leak.
    def others(f):
        return f["threads"] - f["names"].get("default-executo", 0)
    if others(after) > others(before) + 2 or after["names"].get("default-executo", 0) > 2 * os.cpu_count():
        leaks.append(f"threads: {before['names']} -> {after['names']}")
    if after["slot_mib"] > before["slot_mib"] + 1:
        leaks.append("slot bytes")
    def trainers_mib(at):  # what the workers' torch allocators held at `at`
        held = 0
        for r in results:
            samples = [b for t, b in r.get("reserved", []) if t <= at] or [b for _, b in r.get("reserved", [])[:1]]
            held += samples[-1] if samples else 0
        return held / 2**20
    others_before = before["gpu_used_mib"] - trainers_mib(before["at"])
    others_after = after["gpu_used_mib"] - trainers_mib(after["at"])
    print(f"- the GPU's used memory less the trainers' torch allocators (gnnd, MPS, contexts): {others_before:.0f} -> "
          f"{others_after:.0f} MiB; the trainers' allocators: {trainers_mib(before['at']):.0f} -> "
          f"{trainers_mib(after['at']):.0f} MiB")
    if others_after > others_before + 256:
        leaks.append("GPU memory")
    if after["rss_mib"] > before["rss_mib"] + 256:
        leaks.append("RSS")
    failures += [f"leak: {what}" for what in leaks]
    if failures:
        print("FAILED:\n" + "\n".join(failures[:20]))
        sys.exit(1)


if __name__ == "__main__":
    main()
