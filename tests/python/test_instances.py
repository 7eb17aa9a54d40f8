"""Several gnnd on one host: each instance (named by config `instance`, --instance, or after its socket) has
its own shared-memory names, so loading, unloading and stopping one never touches another's segments; a second
gnnd of a running instance refuses to start; an instance's default socket carries its name; `gnnctl shm`
lists and removes by instance."""
import os
import subprocess

import numpy as np
import pytest

import gnnd
from daemon_util import GNND, GNNCTL, Daemon, generate

PID = os.getpid()


def shm(prefix, dataset):
    return sorted(f for f in os.listdir("/dev/shm") if f.startswith(f"{prefix}.{dataset}."))


def epoch(daemon, dataset):
    with gnnd.Loader(address=daemon.address, dataset=dataset, batch_size=500, fanouts=[3], output="numpy",
                     copy=True) as loader:
        return [b.node_ids for b in loader]


def equal(batches, others):
    return len(batches) == len(others) and all(np.array_equal(x, y) for x, y in zip(batches, others))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("instances") / "tiny", "--seed", 8)


def test_two_instances_share_a_host_without_touching_each_other(tmp_path, data):
    a = Daemon(tmp_path, f"--dataset=shared={data}", name=f"a{PID}", config=f'dataset_roots: "{data.parent}"')
    b = Daemon(tmp_path, f"--dataset=shared={data}", name=f"b{PID}")
    try:
        assert a.shm_prefix == f"gnnd-a{PID}" and f"instance=a{PID}" in a.output()
        assert f"(instance b{PID}): SERVING" in b.gnnctl("status").stdout
        arrays = ("meta", "indptr", "indices", "features", "labels", "train", "valid", "test")
        for d in (a, b):
            assert shm(d.shm_prefix, "shared") == sorted(f"{d.shm_prefix}.shared.{x}" for x in arrays)
        listing = subprocess.run([GNNCTL, "shm", "list"], capture_output=True, text=True, check=True).stdout
        assert f"shared\tready\tloader pid {a.proc.pid}\towner uid {os.geteuid()}\tinstance a{PID}" in listing
        assert f"shared\tready\tloader pid {b.proc.pid}\towner uid {os.geteuid()}\tinstance b{PID}" in listing
        # The same batches from both, and each unloading or stopping leaves the other whole and serving.
        first = epoch(a, "shared")
        assert len(first) > 1 and equal(first, epoch(b, "shared"))
        a.gnnctl("unload", "shared")
        assert shm(a.shm_prefix, "shared") == [] and len(shm(b.shm_prefix, "shared")) == len(arrays)
        assert equal(first, epoch(b, "shared"))
        a.gnnctl("load", "shared", data)
        assert a.stop() == 0, a.output()
        assert shm(a.shm_prefix, "shared") == [] and len(shm(b.shm_prefix, "shared")) == len(arrays)
        assert equal(first, epoch(b, "shared"))
    finally:
        a.stop()
        assert b.stop() == 0, b.output()
    assert shm(b.shm_prefix, "shared") == []


def test_a_second_gnnd_of_a_running_instance_refuses_to_start(tmp_path, data):
    first = Daemon(tmp_path, name=f"c{PID}")
    try:
        # Another socket, the same instance by name: it would share every segment name, so it must not run.
        proc = subprocess.run([GNND, f"--listen=unix:{tmp_path}/other.sock", f"--instance=c{PID}",
                               f"--dataset=x={data}"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1
        assert (f"gnnd instance 'c{PID}' is already running on this host (pid {first.proc.pid}, uid {os.geteuid()})"
                in proc.stderr), proc.stderr
        assert shm(first.shm_prefix, "x") == [] and not os.path.exists(tmp_path / "other.sock")
        bad = subprocess.run([GNND, "--instance=a.b", "--exit_after_load"], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "instance = 'a.b' (an instance name" in bad.stderr
    finally:
        assert first.stop() == 0, first.output()
    # Once it is gone (however it ended), the instance starts again.
    again = Daemon(tmp_path, name=f"c{PID}")
    assert again.stop() == 0, again.output()


def test_an_instance_listens_on_its_own_default_socket(data):
    instance = f"d{PID}"
    proc = subprocess.Popen([GNND, f"--instance={instance}", f"--dataset=mine={data}"], stderr=subprocess.PIPE,
                            text=True)
    try:
        for line in proc.stderr:
            if "event=serving" in line:
                break
        assert f"listen=unix:/tmp/gnnd-{instance}.sock" in line and f"instance={instance}" in line, line
        datasets = subprocess.run([GNNCTL, f"--address=unix:/tmp/gnnd-{instance}.sock", "datasets"],
                                  capture_output=True, text=True, check=True).stdout
        assert "mine\t" in datasets
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0 and not os.path.exists(f"/tmp/gnnd-{instance}.sock")


def test_gnnctl_shm_removes_what_an_instance_left(tmp_path, data):
    instance = f"e{PID}"
    proc = subprocess.run([GNND, f"--instance={instance}", f"--dataset=left={data}", "--keep_segments",
                           "--exit_after_load"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(shm(f"gnnd-{instance}", "left")) == 8 and shm("gnnd", "left") == []
    missing = subprocess.run([GNNCTL, "shm", "remove", "left"], capture_output=True, text=True)
    assert missing.returncode != 0 and "no dataset 'left' in shared memory" in missing.stderr
    attach = subprocess.run([GNNCTL, "shm", "attach", "left", f"--instance={instance}"], capture_output=True,
                            text=True, check=True).stdout
    assert "indices\t" in attach
    subprocess.run([GNNCTL, "shm", "remove", "left", f"--instance={instance}"], check=True)
    assert shm(f"gnnd-{instance}", "left") == []
