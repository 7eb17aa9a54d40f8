"""DDP across ranks fed by one gnnd (gloo on CPU here; examples/ddp_sage.py on GPUs): every training node is
seen once per epoch across the ranks apart from the documented padding, every rank runs the same number of
steps, nothing hangs at an epoch's end, and a rank that dies leaves the other with an error, not a hang."""
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("torch")

from daemon_util import Daemon, free_port, generate  # noqa: E402

WORKER = pathlib.Path(__file__).with_name("ddp_worker.py")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp")
    data = generate(root / "g", "--seed", 8)
    daemon = Daemon(root, f"--dataset=ddp={data}", name="ddp")
    yield daemon, data, root
    assert daemon.stop() == 0, daemon.output()


def no_sessions_left(daemon):
    deadline = time.time() + 10
    while any(line.startswith("session ") for line in daemon.gnnctl("stats").stdout.splitlines()):
        if time.time() > deadline:
            return False
        time.sleep(0.1)
    return True


def start_ranks(daemon, root, world, die_at=None):
    port = free_port()
    ranks = []
    for rank in range(world):
        command = [sys.executable, str(WORKER), str(rank), str(world), port, daemon.address, str(root / f"rank{rank}.json")]
        if die_at is not None and rank == 1:
            command.append(str(die_at))
        ranks.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env={**os.environ, "OMP_NUM_THREADS": "1"}))
    return ranks


def test_two_ranks_cover_the_split_with_equal_steps(served):
    daemon, data, root = served
    ranks = start_ranks(daemon, root, 2)
    for proc in ranks:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    reports = [json.loads((root / f"rank{r}.json").read_text()) for r in range(2)]
    train = np.load(data / "train.npy")
    per_rank = -(-len(train) // 2)  # padded to equal shards
    for epoch in range(2):
        steps = [r["steps"][epoch] for r in reports]
        assert steps[0] == steps[1] == reports[0]["len"] == -(-per_rank // 200)
        seen = reports[0]["seeds"][epoch] + reports[1]["seeds"][epoch]
        assert len(seen) == 2 * per_rank
        assert set(seen) == set(train.tolist())  # every training node, the padding repeats a few
    assert reports[0]["seeds"][0] != reports[0]["seeds"][1]  # set_epoch reshuffles
    assert no_sessions_left(daemon)


def test_a_rank_that_dies_fails_the_other_instead_of_hanging(served):
    daemon, _, root = served
    ranks = start_ranks(daemon, root, 2, die_at=2)
    _, err1 = ranks[1].communicate(timeout=120)
    assert ranks[1].returncode == 3
    try:
        _, err0 = ranks[0].communicate(timeout=120)  # gloo reports the lost peer; the timeout is 30 s at most
    except subprocess.TimeoutExpired:
        ranks[0].kill()
        pytest.fail("rank 0 hung after rank 1 died")
    assert ranks[0].returncode != 0
    assert "Error" in err0, err0[-2000:]
    assert no_sessions_left(daemon)  # gnnd ended both sessions and still serves
