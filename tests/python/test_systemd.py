"""gnnd as a systemd service: the units pass `systemd-analyze verify`; the readiness notification (Type=notify)
comes only once the configured datasets are in memory and served; SIGHUP (`systemctl reload`) re-reads the
dataset list, loading new datasets, unloading removed ones once no session uses them, replacing those whose
path changed only once the new copy is whole, and leaving the sessions of datasets that stay undisturbed."""
import datetime
import os
import re
import pathlib
import shutil
import signal
import socket
import subprocess
import time

import pytest

import gnnd
from daemon_util import GNND, Daemon, generate

REPO = pathlib.Path(__file__).resolve().parents[2]


class NotifySocket:
    """What systemd listens on for sd_notify: a Unix datagram socket named by $NOTIFY_SOCKET."""

    def __init__(self, path):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def receive(self, timeout=30):
        self.sock.settimeout(timeout)
        return self.sock.recv(4096).decode()

    def until(self, word, timeout=30):
        deadline = time.time() + timeout
        while True:
            message = self.receive(max(deadline - time.time(), 0.01))
            if word in message.split("\n"):
                return message


def datasets(daemon):
    return sorted(line.split("\t")[0] for line in daemon.gnnctl("datasets").stdout.splitlines() if line.strip())


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_units_pass_systemd_analyze_verify(tmp_path):
    units = tmp_path / "units"
    units.mkdir()
    for name in ("gnnd.service", "gnnd-mps.service"):  # the programs as they are here, not installed
        text = (REPO / "deploy/systemd" / name).read_text()
        text = text.replace("/usr/local/bin/gnnd", str(pathlib.Path(GNND).resolve()))
        text = text.replace("/usr/bin/nvidia-cuda-mps-control", "/bin/true")
        (units / name).write_text(text)
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no", *sorted(str(p) for p in units.iterdir())],
                          capture_output=True, text=True, env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"})
    problems = [line for line in proc.stderr.splitlines() if "gnnd" in line]
    assert proc.returncode == 0 and not problems, proc.stderr


def test_ready_only_once_the_datasets_are_served(tmp_path):
    data = generate(tmp_path / "g", "--seed", 2, "--scale", 10)
    notify = NotifySocket(tmp_path / "notify")
    daemon = Daemon(tmp_path, f"--dataset=ready={data}", name="ready", env={"NOTIFY_SOCKET": notify.path})
    try:
        message = notify.until("READY=1")
        received = datetime.datetime.now(datetime.timezone.utc)
        # The load had ended (its log line's time, to the millisecond) when the notification arrived.
        loaded = re.search(r"time=(\S+) level=info event=dataset_loaded dataset=ready", daemon.output())
        assert loaded, daemon.output()
        loaded_at = datetime.datetime.strptime(loaded.group(1), "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc)
        assert received >= loaded_at, (received, loaded_at)
        assert datasets(daemon) == ["ready"]
        assert "STATUS=serving 1 dataset(s)" in message
        daemon.proc.send_signal(signal.SIGTERM)
        assert "STOPPING=1" in notify.receive()
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_sighup_reloads_the_dataset_list_without_dropping_sessions(tmp_path):
    a, b = generate(tmp_path / "a", "--seed", 3), generate(tmp_path / "b", "--seed", 4)
    config = tmp_path / "gnnd.textproto"
    config.write_text(f'datasets {{ name: "keep" path: "{a}" }}\n')
    notify = NotifySocket(tmp_path / "notify")
    daemon = Daemon(tmp_path, f"--config={config}", name="reload", env={"NOTIFY_SOCKET": notify.path})
    try:
        notify.until("READY=1")
        loader = gnnd.Loader(address=daemon.address, dataset="keep", batch_size=100, fanouts=[3], output="numpy")
        batches = iter(loader)
        next(batches)  # a session in the middle of an epoch

        def reload(text):
            config.write_text(text)
            daemon.proc.send_signal(signal.SIGHUP)
            notify.until("RELOADING=1")
            notify.until("READY=1")

        reload(f'datasets {{ name: "keep" path: "{a}" }}\ndatasets {{ name: "new" path: "{b}" }}\n')
        assert datasets(daemon) == ["keep", "new"]
        reload(f'datasets {{ name: "new" path: "{b}" }}\n')  # "keep" is in use: it stays, and the log says why
        assert datasets(daemon) == ["keep", "new"]
        assert "reload: dataset 'keep' not unloaded" in daemon.output()
        assert 1 + sum(1 for _ in batches) == len(loader)  # the session finished its epoch undisturbed
        loader.close()
        time.sleep(0.2)
        reload(f'datasets {{ name: "new" path: "{b}" }}\n')
        assert datasets(daemon) == ["new"]
        reload('datasets { name: "new" path: "/nonexistent" }\n')  # a bad entry leaves the rest in place
        assert f"reload: dataset 'new' not replaced by /nonexistent (the copy from {b} serves on)" in daemon.output()
        assert datasets(daemon) == ["new"]
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_a_reload_that_cannot_load_the_new_path_keeps_the_dataset_serving(tmp_path):
    import numpy as np
    a, b = generate(tmp_path / "a", "--seed", 3), generate(tmp_path / "b", "--seed", 4)
    (tmp_path / "empty").mkdir()
    corrupt = generate(tmp_path / "corrupt", "--seed", 5)  # fails only once copied: an index out of range
    indices = np.load(corrupt / "indices.npy")
    indices[len(indices) // 2] = 10 ** 9
    np.save(corrupt / "indices.npy", indices)
    config = tmp_path / "gnnd.textproto"
    config.write_text(f'datasets {{ name: "d" path: "{a}" }}\n')
    notify = NotifySocket(tmp_path / "notify")
    daemon = Daemon(tmp_path, f"--config={config}", name="replace", env={"NOTIFY_SOCKET": notify.path})

    def reload(path):
        config.write_text(f'datasets {{ name: "d" path: "{path}" }}\n')
        daemon.proc.send_signal(signal.SIGHUP)
        notify.until("RELOADING=1")
        notify.until("READY=1")

    def serves(path):
        assert daemon.gnnctl("datasets").stdout.split("\t")[-1].strip() == str(path)
        with gnnd.Loader(address=daemon.address, dataset="d", batch_size=500, fanouts=[3], output="numpy") as loader:
            assert sum(1 for _ in loader) == len(loader)
        assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.d.staged.")]

    try:
        notify.until("READY=1")
        for bad in (tmp_path / "missing", tmp_path / "empty", corrupt):
            reload(bad)
            assert f"reload: dataset 'd' not replaced by {bad} (the copy from {a} serves on)" in daemon.output()
            serves(a)
        reload(b)  # a good path replaces it
        serves(b)
        assert "event=dataset_replaced dataset=d" in daemon.output()
        assert sorted(f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.d.")) == \
            sorted(f"{daemon.shm_prefix}.d.{array}" for array in ("meta", "indptr", "indices", "features", "labels", "train",
                                                    "valid", "test"))
    finally:
        assert daemon.stop() == 0, daemon.output()
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.d.")]
