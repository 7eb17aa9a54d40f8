"""A job across two "nodes" on one machine: one gnnd per node (two instances), one `torchrun --nnodes 2`
per node meeting through a c10d rendezvous, gloo between the ranks. The global rank picks each rank's shard
(every training node seen once per epoch across the nodes, apart from the documented padding; equal steps),
GNND_ADDRESS the node's gnnd; a rank that dies on one node, or one node's gnnd, ends the job on both nodes
without a hang; each gnnd serves only its own node's ranks and its instance's segments. Where the machine has
two GPUs, the same job runs with one GPU per node (each node's gnnd and rank see only theirs), NCCL between
the ranks."""
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("torch")

from daemon_util import GNNCTL, Daemon, free_port, generate  # noqa: E402

WORKER = pathlib.Path(__file__).with_name("ddp_worker.py")
NODES = [f"node{n}-{os.getpid()}" for n in range(2)]


def gpus():
    import torch
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.fixture(params=["cpu", "gpu"])
def nodes(tmp_path, request):
    """Two nodes' gnnd instances; with "gpu", node N's gnnd sees only GPU N (skipped under two GPUs)."""
    if request.param == "gpu" and gpus() < 2:
        pytest.skip(f"needs two GPUs, one per node ({gpus()} here)")
    data = generate(tmp_path / "g", "--seed", 8)
    daemons = [Daemon(tmp_path, f"--dataset=ddp={data}", name=name,
                      env={"CUDA_VISIBLE_DEVICES": str(n)} if request.param == "gpu" else None)
               for n, name in enumerate(NODES)]
    for daemon in daemons:
        daemon.gpu = request.param == "gpu"
    yield daemons, data
    for daemon in daemons:
        daemon.stop()


def torchrun(daemons, out, epochs, die_at=None):
    """One `torchrun --nnodes 2 --node-rank N` per node, each with its node's gnnd in GNND_ADDRESS."""
    port, jobs = free_port(), []
    out.mkdir(exist_ok=True)
    for node, daemon in enumerate(daemons):
        command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "1",
                   "--node_rank", str(node), "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}",
                   "--rdzv_id", "nodes", "--max_restarts", "0",
                   # the workers' stderr also into log files: torch 1.13 on Python 3.11 cannot take the "0" defaults
                   "--redirects", "2", "--tee", "2", "--log_dir", str(out / f"logs{node}"),
                   str(WORKER), str(out), str(epochs)]
        if die_at is not None:
            command.append(str(die_at))
        env = {**os.environ, "GNND_ADDRESS": daemon.address, "OMP_NUM_THREADS": "1"}
        if daemon.gpu:  # the node's one GPU, as its gnnd sees it; NCCL between the ranks
            env.update(CUDA_VISIBLE_DEVICES=str(node), GNND_WORKER_DEVICE="cuda")
        jobs.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    return jobs


def finish(jobs, timeout=180):
    """(return code, stderr) of each node's torchrun; a hang fails the test."""
    results = []
    for job in jobs:
        try:
            _, err = job.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for j in jobs:
                j.kill()
            pytest.fail("a node's torchrun hung")
        results.append((job.returncode, err))
    return results


def sessions(daemon):
    return [line for line in daemon.gnnctl("stats").stdout.splitlines() if line.startswith("session ")]


def test_two_nodes_cover_the_split_with_equal_steps(nodes, tmp_path):
    daemons, data = nodes
    for code, err in finish(torchrun(daemons, tmp_path / "out", epochs=2)):
        assert code == 0, err[-3000:]
    reports = [json.loads((tmp_path / "out" / f"rank{r}.json").read_text()) for r in range(2)]
    assert {r["gnnd"] for r in reports} == {d.address for d in daemons}  # each rank asked its own node's gnnd
    if daemons[0].gpu:  # each rank fed on its own GPU
        assert [r["device"] for r in reports] == ["cuda:0", "cuda:0"] and reports[0]["gpu"] != reports[1]["gpu"]
    train = np.load(data / "train.npy")
    per_rank = -(-len(train) // 2)
    for epoch in range(2):
        assert reports[0]["steps"][epoch] == reports[1]["steps"][epoch] == reports[0]["len"] == -(-per_rank // 200)
        seen = reports[0]["seeds"][epoch] + reports[1]["seeds"][epoch]
        assert len(seen) == 2 * per_rank and set(seen) == set(train.tolist())
    for daemon in daemons:
        assert len([f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.ddp.")]) == 8
        assert "session_opened" in daemon.output() and not sessions(daemon)


def test_a_rank_dying_on_one_node_ends_the_job_on_both(nodes, tmp_path):
    daemons, _ = nodes
    results = finish(torchrun(daemons, tmp_path / "out", epochs=2, die_at=2))
    assert all(code != 0 for code, _ in results), [code for code, _ in results]
    for daemon in daemons:  # gnnd ended the sessions of the job and still serves
        deadline = time.time() + 10
        while sessions(daemon) and time.time() < deadline:
            time.sleep(0.1)
        assert not sessions(daemon) and daemon.proc.poll() is None


def test_one_nodes_gnnd_dying_ends_the_job_on_both(nodes, tmp_path):
    daemons, _ = nodes
    out = tmp_path / "out"
    jobs = torchrun(daemons, out, epochs=1000)
    deadline = time.time() + 120
    while len(list(out.glob("started-*"))) < 2:
        assert time.time() < deadline and all(j.poll() is None for j in jobs), "the job did not start"
        time.sleep(0.1)
    daemons[1].proc.kill()
    daemons[1].proc.wait()
    results = finish(jobs)
    assert all(code != 0 for code, _ in results), [code for code, _ in results]
    assert "UNAVAILABLE" in results[1][1], results[1][1][-3000:]  # the node whose gnnd died says why
    assert daemons[0].proc.poll() is None and not sessions(daemons[0])
    # What the killed gnnd left is its instance's alone, and gnnctl removes it by instance.
    left = [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemons[1].shm_prefix}.ddp.")]
    assert len(left) == 8
    subprocess.run([GNNCTL, "shm", "remove", "ddp", f"--instance={daemons[1].instance}"], check=True)
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemons[1].shm_prefix}.ddp.")]
    assert len([f for f in os.listdir("/dev/shm") if f.startswith(f"{daemons[0].shm_prefix}.ddp.")]) == 8
