"""One uid cannot stall another's trainers: with the CPU producers' threads all busy with one uid's heavy
batches (sessions it opened and never reads, more batches queued behind them), another uid's new session
gets its first batch without waiting for them. Needs root to act as the second uid (65534)."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from daemon_util import NOBODY, Daemon, as_nobody, generate

pytest.importorskip("numpy")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second uid")

HEAVY = dict(batch_size=4096, fanouts=[-1, -1], num_slots=4)


@pytest.fixture(scope="module")
def served():
    root = pathlib.Path(tempfile.mkdtemp(prefix="gnnd-fair-"))
    os.chmod(root, 0o755)
    data = generate(root / "g", "--preset", "products", "--scale", "0.03", "--hot-order=false")
    daemon = Daemon(root, f"--dataset=g={data}", config="producer_threads: 2\nsocket_mode: 0666",
                    name=f"fair{os.getpid()}")
    yield daemon
    assert daemon.stop() == 0, daemon.output()
    shutil.rmtree(root)


def first_batch_seconds(daemon, uid=None, **options):
    """Seconds from opening a session to holding its first batch, in a trainer process of `uid`."""
    code = f"""
import time, gnnd
loader = gnnd.Loader(address={daemon.address!r}, dataset="g", output="numpy", **{options!r})
start = time.monotonic()
next(iter(loader))
print(time.monotonic() - start)
loader.close()
"""
    env = {k: v for k, v in os.environ.items() if k != "GNND_ADDRESS"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env,
                          preexec_fn=as_nobody if uid == NOBODY else None)
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout)


def test_a_uid_holding_every_producer_thread_does_not_delay_another_uids_first_batch(served):
    import gnnd
    heavy_alone = first_batch_seconds(served, **HEAVY)
    light_alone = first_batch_seconds(served, uid=NOBODY, batch_size=64, fanouts=[5, 5])
    assert heavy_alone > 5 * light_alone, (heavy_alone, light_alone)  # else the check below says nothing
    heavy = [gnnd.Loader(address=served.address, dataset="g", output="numpy", seed=s, **HEAVY) for s in range(3)]
    try:
        time.sleep(0.2)  # every producer thread on a heavy batch, nine more queued
        light = first_batch_seconds(served, uid=NOBODY, batch_size=64, fanouts=[5, 5])
    finally:
        for loader in heavy:
            loader.close()
    # FIFO threads would have made it wait for whole heavy batches (several heavy_alone)
    print("first batch seconds", light, light_alone, heavy_alone)
    assert light < heavy_alone / 2, (light, light_alone, heavy_alone)
