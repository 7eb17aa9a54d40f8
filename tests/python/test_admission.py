"""Daemon-wide limits: sessions and slot bytes in all and per uid, answered with RESOURCE_EXHAUSTED naming
the limit, given back when sessions end, and shown by `gnnctl stats`. Run by ctest."""
import time

import pytest

import gnnd
from daemon_util import Daemon, generate


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("admission") / "tiny", "--seed", 9)


def open_loader(daemon, **kwargs):
    options = dict(address=daemon.address, dataset="tiny", batch_size=100, fanouts=[2], output="numpy")
    options.update(kwargs)
    return gnnd.Loader(**options)


def wait_in_use(daemon, sessions):
    """Closing a session is asynchronous: gnnd gives its share back once it sees the stream end."""
    deadline = time.time() + 10
    while f"in use: {sessions} of" not in daemon.gnnctl("stats").stdout:
        assert time.time() < deadline, daemon.gnnctl("stats").stdout
        time.sleep(0.02)


def test_session_count_in_all_and_per_uid(tmp_path, data):
    daemon = Daemon(tmp_path, f"--dataset=tiny={data}", config="max_sessions: 4\nuid_share_percent: 50")
    try:
        first, second = open_loader(daemon), open_loader(daemon)
        assert "in use: 2 of max_sessions 4" in daemon.gnnctl("stats").stdout
        with pytest.raises(gnnd.GnndError) as error:
            open_loader(daemon)
        assert error.value.code == "RESOURCE_EXHAUSTED"
        assert "has its share of sessions open (2) (uid_share_percent = 50)" in error.value.message
        first.close()  # its share comes back
        wait_in_use(daemon, 1)
        third = open_loader(daemon)
        assert sum(1 for _ in third) == len(third)
        second.close()
        third.close()
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_limits_on_sessions_and_slot_bytes(tmp_path, data):
    daemon = Daemon(tmp_path, f"--dataset=tiny={data}",
                    config="max_sessions: 2\nuid_share_percent: 100\nmax_total_slot_bytes: 4000000")
    try:
        small = [open_loader(daemon, batch_size=10, fanouts=[1]) for _ in range(2)]
        with pytest.raises(gnnd.GnndError) as error:
            open_loader(daemon, batch_size=10, fanouts=[1])
        assert error.value.code == "RESOURCE_EXHAUSTED" and "(max_sessions = 2)" in error.value.message
        for loader in small:
            loader.close()
        wait_in_use(daemon, 0)
        with pytest.raises(gnnd.GnndError) as error:
            open_loader(daemon, batch_size=2000, fanouts=[10, 10])
        assert error.value.code == "RESOURCE_EXHAUSTED"
        assert "would exceed what gnnd allows, with 0 in use (max_total_slot_bytes = 4000000)" in error.value.message
        assert "in use: 0 of max_sessions 2" in daemon.gnnctl("stats").stdout
    finally:
        assert daemon.stop() == 0, daemon.output()
