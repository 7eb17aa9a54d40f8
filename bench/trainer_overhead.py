#!/usr/bin/python3
"""What gnnd costs besides batches: the threads idle sessions hold in gnnd, and the trainer-side time of
one next() when the batch is already made.

    /usr/bin/python3 bench/trainer_overhead.py --dataset DIR [--gnnd BIN] [--idle 200] [--device cpu|cuda:N]

Idle sessions: opens --idle sessions with one slot each whose trainer never releases, and counts gnnd's
threads (/proc/PID/task) before and after (the daemon runs with uid_share_percent 100 and max_sessions
above --idle, so admission does not refuse them). next(): lets the producer fill every slot, then times
single next() calls (wall time, and the calling thread's CPU time: on a machine with few cores a CPU
producer refilling slots meanwhile competes with the trainer for them). Needs the Python client (PYTHONPATH=client/python).
"""
import argparse
import cProfile
import importlib.util
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time

from session_rate import serve


def wait_for_slots(busy):
    """Waits until every slot is filled: asleep, or busy as a trainer's thread is between batches (on the
    H100 machine busy waiting made next() slower, not faster: RESULTS.md)."""
    if not busy:
        time.sleep(0.2)
        return
    deadline = time.perf_counter() + 0.2
    while time.perf_counter() < deadline:
        pass


def time_next(loader, busy, rounds=20, profiler=None):
    """Wall and thread CPU seconds of next() calls made when every slot holds a finished batch (`profiler`,
    a cProfile.Profile, runs only during those calls)."""
    costs, cpu = [], []
    with loader:
        for _ in range(rounds):
            batches = iter(loader)
            next(batches)
            wait_for_slots(busy)
            for _ in range(6):
                if profiler:
                    profiler.enable()
                start, start_cpu = time.perf_counter(), time.thread_time()
                next(batches)
                cpu.append(time.thread_time() - start_cpu)
                costs.append(time.perf_counter() - start)
                if profiler:
                    profiler.disable()
            for _ in batches:
                pass
    return costs, cpu


def native_split(address, device, busy):
    """Host µs of the client library's one call inside next(): releasing the last batch (on a GPU, recording
    the stream's progress) and taking a ready one (ordering the trainer's stream after it)."""
    import ctypes
    import gnnd
    from gnnd import _native
    with gnnd.Loader(address=address, dataset="bench", batch_size=64, fanouts=[2], num_slots=8, device=device,
                     output="torch") as loader:
        lib, stream = loader._native.lib, loader._stream()
        release = next(iter(loader))._give_up_slot()  # the epoch runs; that batch is released by the first call
        counts, calls = _native.BatchCounts(), []
        for _ in range(20):
            wait_for_slots(busy)
            for _ in range(6):
                start = time.perf_counter()
                lib.gnnd_next_batch_counts(loader._session, release, stream, ctypes.byref(counts))
                calls.append(time.perf_counter() - start)
                release = counts.slot
        print(f"  of which the client library's call (release the last batch, take the next): median "
              f"{statistics.median(calls) * 1e6:.1f} us")


def pyg_split(address, device):
    """Host µs of what gnnd.pyg adds to a gnnd.Loader's next(): to_pyg (edge_index) and the Data object."""
    import gnnd
    from gnnd.pyg import NeighborLoader, to_pyg
    make = NeighborLoader(None, num_neighbors=[2], dataset="bench", address=address, device=device)._make
    with gnnd.Loader(address=address, dataset="bench", batch_size=64, fanouts=[2], device=device,
                     output="torch") as loader:
        loader._edge_pairs = True
        batch = next(iter(loader))
        parts = {"to_pyg": lambda: to_pyg(batch), f"{make.__module__}.{make.__name__}(**)": lambda: make(**attributes)}
        attributes = to_pyg(batch)
        for name, part in parts.items():
            costs = []
            for _ in range(300):
                start = time.perf_counter()
                part()
                costs.append(time.perf_counter() - start)
            print(f"  of which {name}: median {statistics.median(costs[50:]) * 1e6:.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--gnnd", default=shutil.which("gnnd"))
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--wait", choices=["busy", "sleep"], default="sleep",
                        help="how the trainer waits for the slots to fill between rounds of timed calls")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed next() calls (top 12 by own time)")
    args = parser.parse_args()
    import gnnd
    output = "torch" if args.device != "cpu" or importlib.util.find_spec("torch") else "numpy"
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "gnnd.textproto")
        with open(config, "w") as f:
            f.write(f"uid_share_percent: 100\nmax_sessions: {args.idle + 16}\n")
        proc, address = serve(args.gnnd, args.dataset, tmp, f"--config={config}")
        try:
            threads = lambda: len(os.listdir(f"/proc/{proc.pid}/task"))  # noqa: E731
            before = threads()
            idle = [gnnd.Loader(address=address, dataset="bench", batch_size=500, fanouts=[3], num_slots=1,
                                device=args.device, output=output) for _ in range(args.idle)]
            for loader in idle:
                next(iter(loader))  # the one slot, held from now on
            time.sleep(1)
            print(f"gnnd threads: {before} before, {threads()} with {args.idle} idle sessions")
            for loader in idle:
                loader.close()

            make = {"gnnd.Loader": lambda: gnnd.Loader(address=address, dataset="bench", batch_size=64, fanouts=[2],
                                                       num_slots=8, device=args.device, output=output)}
            if output == "torch":
                from gnnd.pyg import NeighborLoader
                make["gnnd.pyg.NeighborLoader"] = lambda: NeighborLoader(
                    None, num_neighbors=[2], batch_size=64, shuffle=True, dataset="bench", address=address,
                    device=args.device, num_slots=8)
            for name, factory in make.items():
                profiler = cProfile.Profile() if args.profile else None
                costs, cpu = time_next(factory(), args.wait == "busy", profiler=profiler)
                quartiles = statistics.quantiles(costs, n=4)
                print(f"{name} next() with the batch already made ({args.device}, {args.wait} wait): median "
                      f"{statistics.median(costs) * 1e6:.0f} us (quartiles {quartiles[0] * 1e6:.0f} / "
                      f"{quartiles[2] * 1e6:.0f} us) over {len(costs)} calls; the trainer thread's CPU time: "
                      f"median {statistics.median(cpu) * 1e6:.0f} us")
                if profiler:
                    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(12)
                if output == "torch":
                    if name == "gnnd.Loader":
                        native_split(address, args.device, args.wait == "busy")
                    else:
                        pyg_split(address, args.device)
        finally:
            proc.terminate()
            proc.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
