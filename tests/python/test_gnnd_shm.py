"""gnnd loads datasets into shared memory, a second process attaches to the same bytes, and
shutdown removes the segments (or keeps them on request). Run by ctest with GNNCTL and GNND set."""
import os
import signal
import subprocess
import time
import zlib

import numpy as np
import pytest

GNNCTL = os.environ.get("GNNCTL", "gnnctl")
GNND = os.environ.get("GNND", "gnnd")
ARRAYS = ("indptr", "indices", "features", "labels", "train", "valid", "test")


def segments(name):
    return sorted(f for f in os.listdir("/dev/shm") if f.startswith(f"gnnd.{name}."))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("data") / "tiny"
    subprocess.run([GNNCTL, "generate", "--preset", "tiny", "--seed", "3", str(out)], check=True, capture_output=True)
    return out


def wait_ready(name, proc, timeout=30):
    """Until `proc` has made the set ready (a set kept from an earlier run reads ready before gnnd reloads it)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        listing = subprocess.run([GNNCTL, "shm", "list"], capture_output=True, text=True).stdout
        if f"{name}\tready\tloader pid {proc.pid}\t" in listing:
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} never became ready")


def test_serve_attach_and_clean_shutdown(dataset):
    name = f"pytest-{os.getpid()}"
    proc = subprocess.Popen([GNND, f"--dataset={name}={dataset}"], stderr=subprocess.PIPE, text=True)
    try:
        wait_ready(name, proc)
        attach = subprocess.run([GNNCTL, "shm", "attach", name], capture_output=True, text=True, check=True).stdout
        for array in ARRAYS:
            data = np.load(dataset / f"{array}.npy")
            crc = zlib.crc32(np.ascontiguousarray(data).tobytes())
            assert f"{array}\t{data.nbytes} bytes\tcrc32 {crc:08x}" in attach
        assert len(segments(name)) == len(ARRAYS) + 1
        assert all(os.stat(f"/dev/shm/{s}").st_mode & 0o777 == 0o600 for s in segments(name))
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "GB/s" in err and "shutting down" in err
    assert segments(name) == []


def test_keep_segments_then_remove(dataset):
    name = f"pytest-keep-{os.getpid()}"
    proc = subprocess.run([GNND, "--dataset", f"{name}={dataset}", "--keep_segments", "--exit_after_load"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(segments(name)) == len(ARRAYS) + 1
    # the set outlives the gnnd that loaded it, and the listing says so
    listing = subprocess.run([GNNCTL, "shm", "list"], capture_output=True, text=True, check=True).stdout
    assert f"{name}\tready\tloader pid " in listing
    line = next(line for line in listing.splitlines() if line.startswith(f"{name}\t"))
    assert line.split("\t")[2].endswith(" (exited)"), line
    subprocess.run([GNNCTL, "shm", "remove", name], check=True)
    assert segments(name) == []


def test_bad_dataset_is_named_and_leaves_nothing(dataset, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in dataset.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    indices = np.load(broken / "indices.npy")
    indices[5] = 10**6
    np.save(broken / "indices.npy", indices)
    name = f"pytest-bad-{os.getpid()}"
    proc = subprocess.run([GNND, "--dataset", f"{name}={broken}", "--exit_after_load"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "indices.npy: indices[5] = 1000000 is not a node id (num_nodes = 10000)" in proc.stderr
    assert segments(name) == []
    proc = subprocess.run([GNND, "--dataset", "no-equals-sign"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "expected NAME=DATASET_DIR" in proc.stderr


def test_a_poisoned_copy_left_in_shared_memory_is_validated_and_reloaded(dataset, tmp_path):
    name = f"pytest-poison-{os.getpid()}"
    proc = subprocess.run([GNND, "--dataset", f"{name}={dataset}", "--keep_segments", "--exit_after_load"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # Node ids far out of range in the copy a restarted gnnd would attach to (it once segfaulted on this).
    with open(f"/dev/shm/gnnd.{name}.indices", "r+b") as f:
        f.write(np.full(64, 2**30, dtype=np.int32).tobytes())
    # Attaching to a copy left in shared memory is asked for (keep_segments), by the same instance ("gnnd").
    proc = subprocess.Popen([GNND, f"--listen=unix:{tmp_path}/gnnd.sock", f"--dataset={name}={dataset}",
                             "--keep_segments"], stderr=subprocess.PIPE, text=True)
    try:
        wait_ready(name, proc)
        attach = subprocess.run([GNNCTL, "shm", "attach", name], capture_output=True, text=True, check=True).stdout
        indices = np.load(dataset / "indices.npy")
        assert f"indices\t{indices.nbytes} bytes\tcrc32 {zlib.crc32(indices.tobytes()):08x}" in attach
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "the copy in shared memory is not valid (indices.npy: indices[0] = 1073741824 is not a node id" in err
    subprocess.run([GNNCTL, "shm", "remove", name], check=True)
    assert segments(name) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second uid")
def test_another_users_copy_in_shared_memory_is_replaced(dataset, tmp_path):
    name = f"pytest-foreign-{os.getpid()}"
    proc = subprocess.run([GNND, "--dataset", f"{name}={dataset}", "--keep_segments", "--exit_after_load"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for s in segments(name):  # as if uid 65534 had made the set, marked ready, with poisoned ids
        os.chown(f"/dev/shm/{s}", 65534, 65534)
    os.chmod(f"/dev/shm/gnnd.{name}.indptr", 0o666)
    # gnnctl shows such a set (read-only), and says whose it is
    attach = subprocess.run([GNNCTL, "shm", "attach", name], capture_output=True, text=True, timeout=60)
    assert attach.returncode == 0, attach.stderr
    assert (f"gnnctl: warning: gnnd.{name}.meta: owned by uid 65534, not by uid 0 (shown as found: its contents may be anyone's") in attach.stderr, attach.stderr
    with open(f"/dev/shm/gnnd.{name}.indices", "r+b") as f:
        f.write(np.full(64, 2**30, dtype=np.int32).tobytes())
    proc = subprocess.run([GNND, "--dataset", f"{name}={dataset}", "--exit_after_load"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"replacing the shared-memory set '{name}': gnnd.{name}.meta: owned by uid 65534" in proc.stderr
    assert segments(name) == []  # loaded afresh as its own, then removed at exit
