"""The examples stay true: the gnnd GraphSAGE scripts (homogeneous and typed) differ from the PyG ones in
exactly two lines (docs/trainers.md shows that diff), every example compiles, and the DDP example trains two CPU ranks under torchrun
against a running gnnd."""
import difflib
import os
import pathlib
import py_compile
import subprocess
import sys

import pytest

from daemon_util import Daemon, free_port, generate

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def test_switching_from_pyg_is_a_two_line_change():
    pyg = (EXAMPLES / "sage_pyg.py").read_text().splitlines()
    ours = (EXAMPLES / "sage_gnnd.py").read_text().splitlines()
    changed = [line for line in difflib.unified_diff(pyg, ours, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == [
        "-from torch_geometric.loader import NeighborLoader",
        "+from gnnd.pyg import NeighborLoader",
        "-    loader_args = dict(num_neighbors=[15, 10, 5], batch_size=1024)",
        "+    loader_args = dict(num_neighbors=[15, 10, 5], batch_size=1024, dataset=args.dataset, device=args.device)",
    ], changed


def test_switching_a_typed_script_from_pyg_is_a_two_line_change():
    pyg = (EXAMPLES / "hetero_pyg.py").read_text().splitlines()
    ours = (EXAMPLES / "hetero_gnnd.py").read_text().splitlines()
    changed = [line for line in difflib.unified_diff(pyg, ours, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == [
        "-from torch_geometric.loader import NeighborLoader",
        "+from gnnd.pyg import NeighborLoader",
        "-    loader_args = dict(num_neighbors=[15, 10], batch_size=1024)",
        "+    loader_args = dict(num_neighbors=[15, 10], batch_size=1024, dataset=args.dataset, device=args.device)",
    ], changed


def test_examples_compile(tmp_path):
    for script in EXAMPLES.glob("*.py"):
        py_compile.compile(str(script), cfile=str(tmp_path / (script.name + "c")), doraise=True)


def test_ddp_example_in_torchruns_environment(tmp_path):
    """Two ranks started with the environment torchrun gives them (Debian's torchrun of torch 1.13 fails
    under Python 3.11 before starting any rank, so the test starts them itself)."""
    pytest.importorskip("torch")
    data = generate(tmp_path / "g", "--seed", 9)
    daemon = Daemon(tmp_path, f"--dataset=ddp-example={data}", name="ddp-example")
    try:
        port, ranks = free_port(), []
        for rank in range(2):
            env = {**os.environ, "OMP_NUM_THREADS": "1", "RANK": str(rank), "LOCAL_RANK": str(rank),
                   "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
            ranks.append(subprocess.Popen(
                [sys.executable, str(EXAMPLES / "ddp_sage.py"), "--dataset", "ddp-example", "--address",
                 daemon.address, "--in-dim", "32", "--classes", "8", "--epochs", "2"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        lines = []
        for proc in ranks:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-3000:] + "\ngnnd's log:\n" + daemon.output()[-3000:]
            lines += [line for line in out.splitlines() if line.startswith("rank ")]
        assert len(lines) == 4, lines
        steps = {line.split(": ")[1].split(",")[0] for line in lines}
        assert len(steps) == 1, lines  # the same steps on both ranks, both epochs
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_edge_feature_example_learns_what_only_the_edges_say(tmp_path):
    """examples/edge_features.py: the planted edge signal is learned with batch.edge_attr and not without it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(EXAMPLES / "edge_features.py"), "--make", str(tmp_path / "edgy")], env=env,
                   check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=edgy={tmp_path / 'edgy'}")
    try:
        proc = subprocess.run([sys.executable, str(EXAMPLES / "edge_features.py"), "--dataset", "edgy", "--address",
                               daemon.address, "--epochs", "15"], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        words = proc.stdout.split()
        with_edges, without = float(words[-3].rstrip(",")), float(words[-1])
        assert with_edges >= 0.85 and without <= 0.65, proc.stdout
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_temporal_example_measures_the_leak(tmp_path):
    """examples/temporal_leakage.py: with the temporal rule the model keeps its accuracy on the later test window;
    without it, it scores near 1.0 on validation by reading each user's future event and falls below the temporal
    model on the later window, where that event does not exist."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(EXAMPLES / "temporal_leakage.py"), "--make", str(tmp_path / "events")],
                   env=env, check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=events={tmp_path / 'events'}")
    try:
        proc = subprocess.run([sys.executable, str(EXAMPLES / "temporal_leakage.py"), "--dataset", "events",
                               "--address", daemon.address], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        (valid_t, test_t), (valid_s, test_s) = [
            [float(w.rstrip(",")) for w in line.split() if w[0].isdigit()] for line in proc.stdout.splitlines()]
        assert test_t >= 0.8 and valid_s >= 0.97, proc.stdout
        assert test_s <= test_t - 0.05 and test_s <= valid_s - 0.15, proc.stdout
    finally:
        assert daemon.stop() == 0, daemon.output()
