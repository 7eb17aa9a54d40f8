"""What a session holds is counted and given back: seed_ids beyond the documented 8 M are refused; a session's
memory (slots, seed lists, a storage dataset's look-ahead ring) shows in `gnnctl stats`, is checked against
max_session_bytes naming its parts, counts against the limits; and gnnd's resident memory comes back down
after storage sessions with a deep look-ahead close. Run by ctest."""
import os
import re
import time

import numpy as np
import pytest

import gnnd
from daemon_util import Daemon, generate

LOOK_AHEAD = 256


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory")
    data = generate(root / "g", "--preset", "products", "--scale", "0.01", "--hot-order=false")
    config = "\n".join([f'datasets {{ name: "mem" path: "{data}" }}',
                        f'datasets {{ name: "store" path: "{data}" feature_cache: "32MiB" look_ahead: {LOOK_AHEAD} }}',
                        "max_session_bytes: 400000000"])
    daemon = Daemon(root, config=config)
    yield daemon
    assert daemon.stop() == 0, daemon.output()


def rss_bytes(pid):
    text = open(f"/proc/{pid}/status").read()
    return int(re.search(r"VmRSS:\s+(\d+) kB", text).group(1)) * 1024


def session_memory(daemon):
    stats = daemon.gnnctl("stats").stdout
    return [float(m) for m in re.findall(r"memory ([0-9.]+) MiB", stats)]


def wait_no_sessions(daemon):
    deadline = time.time() + 10
    while "in use: 0 of" not in daemon.gnnctl("stats").stdout:
        assert time.time() < deadline
        time.sleep(0.02)


def test_seed_ids_beyond_the_documented_cap_are_refused(served):
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(address=served.address, dataset="mem", seed_ids=np.zeros((8 << 20) + 1, np.int64), fanouts=[2])
    assert error.value.code == "INVALID_ARGUMENT"
    assert "num_seed_ids = 8388609 (at most 8388608)" in error.value.message
    loader = gnnd.Loader(address=served.address, dataset="mem", seed_ids=np.arange(1000), fanouts=[2])
    assert len(loader) == 1
    loader.close()


def test_the_look_ahead_ring_counts_shows_and_is_checked_against_max_session_bytes(served):
    small = gnnd.Loader(address=served.address, dataset="mem", batch_size=256, fanouts=[5, 5], output="numpy")
    deep = gnnd.Loader(address=served.address, dataset="store", batch_size=256, fanouts=[5, 5], output="numpy")
    try:
        mem, store = sorted(session_memory(served))
        # the same slots, plus LOOK_AHEAD ring entries of the batch's ids and edges (over 100 KiB each)
        assert store - mem > LOOK_AHEAD * 0.1, (mem, store)
    finally:
        small.close()
        deep.close()
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(address=served.address, dataset="store", batch_size=20000, fanouts=[10, 10], output="numpy")
    assert error.value.code == "INVALID_ARGUMENT"
    assert re.search(r"look-ahead and staging \d+\), over the limit of 400000000 \(max_session_bytes\)",
                     error.value.message), error.value.message


@pytest.mark.skipif(os.environ.get("GNND_SANITIZE", "") != "",
                    reason="a sanitizer's allocator keeps freed memory (quarantine): RSS says nothing there")
def test_memory_comes_back_after_deep_storage_sessions_close(served):
    pid = served.proc.pid
    wait_no_sessions(served)
    before = rss_bytes(pid)
    for cycle in range(2):
        loaders = [gnnd.Loader(address=served.address, dataset="store", batch_size=1024, fanouts=[10, 10], seed=s,
                               output="numpy") for s in range(4)]
        for loader in loaders:
            next(iter(loader))
        held = sum(session_memory(served)) * 2**20
        during = rss_bytes(pid)
        for loader in loaders:
            loader.close()
        wait_no_sessions(served)
    after = rss_bytes(pid)
    assert held > 100 * 2**20, held  # the sessions did hold their rings
    # what they held went back: at most a tenth of it stays
    assert after - before < held / 10, (before, during, after, held)
