"""Who may do what, tried with a second uid (65534, as root can switch to it): any peer may open sessions,
only administrators (gnnd's uid, root, admin_uids/admin_gids) load and unload, loads come only from
dataset_roots and only from directories the requesting peer could read itself. Run by ctest."""
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from daemon_util import GNNCTL, Daemon, generate

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second uid")


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@pytest.fixture(scope="module")
def shared():
    """A directory every uid can traverse: the socket and the datasets live under it."""
    try:
        subprocess.run([GNNCTL, "--help"], capture_output=True, preexec_fn=as_nobody, timeout=30)
    except OSError as e:
        pytest.skip(f"uid 65534 cannot run gnnctl from this checkout: {e}")
    root = tempfile.mkdtemp(prefix="gnnd-access-")
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root)


def gnnctl(daemon, *args, uid=None):
    proc = subprocess.run([GNNCTL, f"--address={daemon.address}", *map(str, args)], capture_output=True, text=True,
                          preexec_fn=as_nobody if uid == NOBODY else None, timeout=60)
    return proc.returncode, proc.stdout + proc.stderr


def start(shared, name, extra=""):
    roots = os.path.join(shared, "roots")
    return Daemon(pathlib.Path(shared), config=f"""
        dataset_roots: "{roots}"
        socket_mode: 0666
        {extra}
    """, name=name)


@pytest.fixture(scope="module")
def data(shared):
    roots = os.path.join(shared, "roots")
    os.makedirs(roots)
    os.chmod(roots, 0o755)
    readable = generate(os.path.join(roots, "readable"), "--seed", 8)
    private = os.path.join(roots, "private")
    shutil.copytree(readable, private)
    os.chmod(private, 0o700)
    outside = generate(os.path.join(shared, "outside"), "--seed", 8)
    os.symlink(outside, os.path.join(roots, "link-out"))
    for path in (readable, outside):
        os.chmod(path, 0o755)
    return {"readable": readable, "private": private, "outside": outside, "link": os.path.join(roots, "link-out")}


def test_only_administrators_load_and_unload(shared, data):
    daemon = start(shared, "admins")
    try:
        code, out = gnnctl(daemon, "load", "mine", data["readable"], uid=NOBODY)
        assert code != 0 and "uid 65534 may not load or unload datasets (administrators: gnnd's own uid 0, root" in out
        code, out = gnnctl(daemon, "load", "ours", data["readable"])  # gnnd's own uid
        assert code == 0, out
        code, out = gnnctl(daemon, "unload", "ours", uid=NOBODY)
        assert code != 0 and "may not load or unload datasets" in out
        code, out = gnnctl(daemon, "datasets", uid=NOBODY)  # trainers still see and use datasets
        assert code == 0 and "ours\t" in out, out
        code, out = gnnctl(daemon, "unload", "ours")
        assert code == 0, out
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_loads_come_only_from_dataset_roots_and_what_the_peer_may_read(shared, data):
    daemon = start(shared, "roots", extra=f"admin_uids: {NOBODY}")
    try:
        code, out = gnnctl(daemon, "load", "out", data["outside"])
        assert code != 0 and "is not under any of dataset_roots" in out, out
        code, out = gnnctl(daemon, "load", "link", data["link"])  # a link inside a root that leads out of it
        assert code != 0 and f"({data['outside']}) is not under any of dataset_roots" in out, out
        code, out = gnnctl(daemon, "load", "secret", "/etc")
        assert code != 0 and "is not under any of dataset_roots" in out, out
        # An administrator by admin_uids may load what it can read, not what only gnnd can.
        code, out = gnnctl(daemon, "load", "private", data["private"], uid=NOBODY)
        assert code != 0 and f"uid 65534 may not read {data['private']}" in out, out
        code, out = gnnctl(daemon, "load", "readable", data["readable"], uid=NOBODY)
        assert code == 0, out
        code, out = gnnctl(daemon, "load", "private", data["private"])  # root may
        assert code == 0, out
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_a_socket_the_peer_may_not_open_says_so_and_shm_list_shows_what_it_cannot_read(shared, data):
    daemon = Daemon(pathlib.Path(shared), f"--dataset=seen={data['readable']}", config="socket_mode: 0600",
                    name="closed")
    try:
        code, out = gnnctl(daemon, "status", uid=NOBODY)
        assert code != 0 and f"permission denied on the socket {daemon.socket}" in out, out
        listing = subprocess.run([GNNCTL, "shm", "list"], capture_output=True, text=True, preexec_fn=as_nobody,
                                 timeout=60).stdout
        assert "seen\tunreadable\towned by uid 0" in listing, listing
    finally:
        assert daemon.stop() == 0, daemon.output()
