"""Session churn: GNND_CHURN_TRAINERS (default 16) trainers open and close sessions as fast as they can
(closing right after opening, after a batch, with a batch held, after an epoch; some SIGKILLed and
restarted) for GNND_CHURN_SECONDS (default 20). gnnd stays up, no trainer is ever refused for sessions it closed, and afterwards /dev/shm,
gnnd's descriptors, threads and memory are where they were before. Runs in every build of tests/run_all.sh
(plain, ASan, TSan). Run by ctest."""
import collections
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from daemon_util import Daemon, generate

TRAINERS = int(os.environ.get("GNND_CHURN_TRAINERS", "16"))
KILLED = 3  # per churn: their sessions end once gnnd notices, so the uid's share leaves room for them
SECONDS = float(os.environ.get("GNND_CHURN_SECONDS", "20"))
WORKER = os.path.join(os.path.dirname(__file__), "churn_worker.py")


def footprint(pid):
    """gnnd's open descriptors, threads and resident memory (KiB). The kernel's io_uring workers (iou-wrk-*,
    one pool per thread that submitted reads, kept while that thread lives) are not gnnd's threads: the
    storage tier's reads are punted to them where the file system cannot read without blocking."""
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    threads = sum(n for name, n in thread_names(pid).items() if not name.startswith("iou-"))
    return (len(os.listdir(f"/proc/{pid}/fd")), threads, int(fields["VmRSS"].split()[0]))


def thread_names(pid):
    """gnnd's threads by name, counted (what a failed thread check shows)."""
    names = collections.Counter()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as comm:
                names[comm.read().strip()] += 1
        except FileNotFoundError:  # it ended meanwhile
            pass
    return dict(names)


def shm_of(daemon):
    pid = daemon.proc.pid
    return sorted(f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.churn.") or f".{pid}." in f)


def churn(daemon, seconds, seed):
    """Runs the trainers for `seconds`, killing and restarting a few; returns the sessions the survivors opened."""
    rng = random.Random(seed)

    def start(i):
        return subprocess.Popen([sys.executable, WORKER, daemon.address, "churn", str(seconds), str(seed * 100 + i)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    trainers = [start(i) for i in range(TRAINERS)]
    for i in rng.sample(range(TRAINERS), KILLED):  # killed mid-churn: gnnd sees their sessions break off
        time.sleep(rng.uniform(0, seconds / 6))
        trainers[i].kill()
        trainers[i].communicate()
        trainers[i] = start(TRAINERS + i)
    opened = 0
    for trainer in trainers:
        out, err = trainer.communicate(timeout=seconds + 120)
        assert trainer.returncode == 0, f"a trainer failed: {out} {err}"
        opened += int(out.split()[-1])
    return opened


def wait_idle(daemon):
    """Until gnnd holds no session (the killed trainers' sessions end once gnnd sees them gone)."""
    deadline = time.time() + 30
    while "in use: 0 of" not in daemon.gnnctl("stats").stdout:
        assert time.time() < deadline, daemon.gnnctl("stats").stdout
        time.sleep(0.1)


def settled(pid, before):
    """gnnd's footprint once gRPC's extra workers are gone: its sync server adds a thread per RPC in flight
    beyond its pollers and lets each go after 10 s idle, so a slow build may still hold a burst's threads."""
    deadline = time.time() + 30
    after = footprint(pid)
    while after[1] > before[1] + 8 and time.time() < deadline:
        time.sleep(0.5)
        after = footprint(pid)
    return after


@pytest.mark.parametrize("features", ["memory", "storage"])
def test_session_churn_leaves_gnnd_up_admitting_and_flat(tmp_path, features):
    """With the features on storage too (a cache of 4096 rows, two batches' worth: gathers wait for room),
    where sessions end with batches sampled ahead, rows being read ahead and gathers waiting."""
    data = generate(tmp_path / "tiny", "--seed", 21)
    seconds = SECONDS if features == "memory" else SECONDS / 2
    storage = ["--feature-cache=churn=512KiB"] if features == "storage" else []
    # A tight share per uid: sessions still counted after their trainers closed them are refused at once.
    daemon = Daemon(tmp_path, f"--dataset=churn={data}", *storage, "--threads=2", name="churn",
                    env={"ASAN_OPTIONS": "detect_leaks=1"},
                    config=f"max_sessions: {2 * (TRAINERS + KILLED)}\nuid_share_percent: 50")
    pid = daemon.proc.pid
    try:
        churn(daemon, 2, seed=1)  # warms gRPC's and gnnd's pools up to their working size
        wait_idle(daemon)
        before, shm_before, names_before = footprint(pid), shm_of(daemon), thread_names(pid)
        opened = churn(daemon, seconds, seed=2)
        assert daemon.proc.poll() is None, daemon.output()
        assert opened >= TRAINERS, opened
        wait_idle(daemon)
        after = settled(pid, before)
        assert shm_of(daemon) == shm_before, "segments left in /dev/shm"
        assert after[0] <= before[0] + 4, f"descriptors {before[0]} -> {after[0]}"
        # gnnd's own threads (named after it) stay where they were; gRPC's pools (executors, timers) may keep a
        # few more of their bounded threads after a burst, the more so on a loaded machine.
        names_after = thread_names(pid)
        assert names_after.get("gnnd", 0) <= names_before.get("gnnd", 0), f"threads {names_before} -> {names_after}"
        assert after[1] <= before[1] + 8, f"threads {before[1]} -> {after[1]}: {names_before} -> {names_after}"
        # ASan keeps freed memory in quarantine: RSS is not a leak measure there (LeakSanitizer is).
        if os.environ.get("GNND_SANITIZE") != "address":
            assert after[2] <= before[2] + 64 * 1024, f"RSS {before[2]} -> {after[2]} KiB"
        # No trainer is refused for sessions it closed; a killed trainer's open may be refused (CANCELLED:
        # it went away while its first batches were sampled), which is the trainer leaving, not a refusal.
        refused = [line for line in daemon.output().splitlines()
                   if "refused" in line and "code=CANCELLED" not in line]
        assert not refused, refused
        print(f"{opened} sessions in {seconds:.0f} s; fds, threads, RSS KiB: {before} -> {after}; threads "
              f"{names_before} -> {thread_names(pid)}")
        if features == "storage":
            assert "features on storage" in daemon.gnnctl("datasets").stdout
            assert "0 batches announced" in daemon.gnnctl("datasets").stdout, "tickets of ended sessions left"
    finally:
        assert daemon.stop() == 0, daemon.output()
        assert daemon.proc.returncode == 0
