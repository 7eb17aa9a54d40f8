"""A bounded load test: GNND_LOAD_TRAINERS (default 32) checking trainers at once on one gnnd, some SIGKILLed at random moments, then
gnnd itself SIGKILLed mid-epoch and restarted. Nothing is lost: every surviving trainer reads whole epochs,
each batch byte for byte equal to the reference sampler (trainer_check); trainers cut off by the killed
daemon fail with an error instead of hanging; and /dev/shm holds nothing of gnnd's at the end. Run by ctest."""
import os
import random
import signal
import subprocess
import time

import pytest

from daemon_util import Daemon, generate

TRAINER_CHECK = os.environ.get("TRAINER_CHECK", "trainer_check")
TRAINERS = int(os.environ.get("GNND_LOAD_TRAINERS", "32"))


def gnnd_segments(prefix, name, pids):
    return [f for f in os.listdir("/dev/shm") if f.startswith(f"{prefix}.{name}.") or
            any(f.startswith(f"{prefix}.slots.{pid}.") for pid in pids)]


def start_trainer(daemon, data, seed, epochs=2):
    return subprocess.Popen([TRAINER_CHECK, f"--address={daemon.address}", "--dataset=load", f"--dir={data}",
                             "--batch-size=400", "--fanouts=4,2", f"--seed={seed}", f"--epochs={epochs}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_many_trainers_killed_trainers_and_a_killed_daemon(tmp_path):
    rng = random.Random(7)
    data = generate(tmp_path / "tiny", "--seed", 10)
    daemon = Daemon(tmp_path, f"--dataset=load={data}", "--threads=1", name="load")
    pids = [daemon.proc.pid]
    trainers = [start_trainer(daemon, data, seed) for seed in range(TRAINERS)]
    doomed = set(rng.sample(range(TRAINERS), TRAINERS // 4))
    deadline = time.time() + 5
    for i in sorted(doomed, key=lambda _: rng.random()):
        time.sleep(rng.uniform(0, max(0.0, min(0.3, deadline - time.time()))))
        trainers[i].kill()
    for i, trainer in enumerate(trainers):
        out, err = trainer.communicate(timeout=180)
        if i in doomed and trainer.returncode == -signal.SIGKILL:
            continue
        assert trainer.returncode == 0, f"trainer {i}: {err}"
        assert "checked" in out and "batches" in out, out

    # gnnd killed while trainers read: they end with an error, not a hang; a new gnnd serves the dataset.
    cut_off = [start_trainer(daemon, data, 100 + seed, epochs=50) for seed in range(4)]
    deadline = time.time() + 120  # every one reading (a sanitizer build starts trainers slowly)
    while sum(line.startswith("session ") for line in daemon.gnnctl("stats").stdout.splitlines()) < 4:
        assert time.time() < deadline and all(t.poll() is None for t in cut_off), daemon.output()
        time.sleep(0.1)
    daemon.proc.kill()
    daemon.proc.wait()
    for trainer in cut_off:
        _, err = trainer.communicate(timeout=30)
        assert trainer.returncode == 2 and ("unavailable" in err.lower() or "ended the session" in err), err
    daemon = Daemon(tmp_path, f"--dataset=load={data}", name="load")  # the same instance: it cleans up after the dead one
    pids.append(daemon.proc.pid)
    survivors = [start_trainer(daemon, data, 200 + seed) for seed in range(8)]
    for trainer in survivors:
        out, err = trainer.communicate(timeout=180)
        assert trainer.returncode == 0, err
    assert daemon.stop() == 0, daemon.output()
    assert gnnd_segments(daemon.shm_prefix, "load", pids) == []


def test_idle_sessions_hold_no_threads(tmp_path):
    """A session whose trainer holds every slot costs no thread: its stream is a gRPC callback reactor and its
    steps run on shared pools (it cost gRPC's thread for the stream and a producer thread, 2, before; 2 + the
    producer threads when each session had its own workers)."""
    import gnnd
    data = generate(tmp_path / "tiny", "--seed", 11)
    daemon = Daemon(tmp_path, f"--dataset=idle={data}", "--threads=2", name="idle")

    def threads():
        return len(os.listdir(f"/proc/{daemon.proc.pid}/task"))

    def filled():
        stats = daemon.gnnctl("stats").stdout.splitlines()
        return sum(1 for line in stats if line.startswith("session ") and "\t1 batches\t" in line)

    try:
        warm = gnnd.Loader(address=daemon.address, dataset="idle", batch_size=500, fanouts=[3], num_slots=1,
                           output="numpy")  # gRPC's own threads start with the first session
        time.sleep(0.5)
        before = threads()
        loaders = [gnnd.Loader(address=daemon.address, dataset="idle", batch_size=500, fanouts=[3], num_slots=1,
                               output="numpy") for _ in range(16)]
        deadline = time.time() + 30
        while filled() < 17:  # every session has filled its one slot and waits for the trainer
            assert time.time() < deadline, daemon.gnnctl("stats").stdout
            time.sleep(0.05)
        per_session = (threads() - before) / len(loaders)
        print(f"threads per idle session: {per_session:.2f}")  # pytest -s shows the figure
        assert per_session < 0.2, f"{per_session} threads per idle session"
        for loader in loaders + [warm]:
            loader.close()
    finally:
        assert daemon.stop() == 0, daemon.output()
