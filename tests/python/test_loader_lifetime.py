"""A trainer's views of gnnd's slots outlive what made them, never a crash: a script that leaves a loop early
(PyG's NeighborLoader in a `with`, or close() mid-epoch) exits 0 at interpreter shutdown, and a batch kept
past close() still reads the values it had. Each pattern runs in its own interpreter, as a user's script
does (in sanitizer builds with the runtime preloaded, as ctest sets it), on the CPU and, where there is one,
on a GPU."""
import os
import subprocess
import sys

import pytest

from daemon_util import Daemon, generate

pytest.importorskip("torch")


def gpu_count():
    import torch
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


DEVICES = ["cpu", pytest.param("cuda:0", marks=pytest.mark.skipif(gpu_count() == 0, reason="no GPU here"))]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("lifetime")
    d = Daemon(root, f"--dataset=tiny={generate(root / 'tiny', '--seed', 3)}", name=f"lifetime{os.getpid()}")
    yield d
    assert d.stop() == 0, d.output()


def run_script(code, daemon):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GNND_ADDRESS": daemon.address})
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("device", DEVICES)
def test_a_pyg_loop_left_early_exits_cleanly(daemon, device):
    out = run_script(f"""
from gnnd.pyg import NeighborLoader
with NeighborLoader(None, num_neighbors=[5, 5], batch_size=16, input_nodes="train", dataset="tiny",
                    device="{device}") as loader:
    for batch in loader:
        edges = batch.edge_index
        break
print("left", edges.shape[0])
""", daemon)
    assert out.strip() == "left 2"


@pytest.mark.parametrize("device", DEVICES)
def test_close_mid_epoch_then_exit_is_clean(daemon, device):
    run_script(f"""
import gnnd
loader = gnnd.Loader(dataset="tiny", batch_size=16, fanouts=[5, 5], device="{device}")
it = iter(loader)
batch = next(it)
batch = next(it)
loader.close()
""", daemon)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pyg", [False, True])
def test_a_batch_kept_past_close_reads_what_it_held(daemon, device, pyg):
    make = ('from gnnd.pyg import NeighborLoader\n'
            f'loader = NeighborLoader(None, num_neighbors=[5, 5], batch_size=16, dataset="tiny", device="{device}")'
            if pyg else
            f'import gnnd\nloader = gnnd.Loader(dataset="tiny", batch_size=16, fanouts=[5, 5], device="{device}")')
    names = ("x", "edge_index", "n_id") if pyg else ("features", "edge_src", "edge_dst", "node_ids")
    out = run_script(f"""
import torch
{make}
batch = next(iter(loader))
names = {names!r}
before = {{name: getattr(batch, name).clone() for name in names}}
loader.close()
del loader
import gc; gc.collect()
for name in names:
    assert torch.equal(getattr(batch, name), before[name]), name
    assert getattr(batch, name).sum() == before[name].sum(), name
print("same", sum(before[name].numel() for name in names) > 0)
""", daemon)
    assert out.strip() == "same True"


def test_numpy_views_kept_past_close_read_what_they_held(daemon):
    out = run_script("""
import gnnd
loader = gnnd.Loader(dataset="tiny", batch_size=16, fanouts=[5, 5], output="numpy")
it = iter(loader)
batch = next(it)
features, ids = batch.features, batch.node_ids
before = features.copy(), ids.copy()
loader.close()
del loader, it, batch
import gc; gc.collect()
assert (features == before[0]).all() and (ids == before[1]).all()
print("same", len(ids))
""", daemon)
    assert out.startswith("same ") and int(out.split()[1]) > 16


def test_a_closed_session_gives_no_batches_and_frees_its_share_at_once(daemon):
    """Views kept past close hold the mapping only: gnnd has ended the session (CPU) when close returns."""
    out = run_script("""
import gnnd
loader = gnnd.Loader(dataset="tiny", batch_size=16, fanouts=[5, 5])
batch = next(iter(loader))
loader.close()
try:
    next(iter(loader))
except RuntimeError as e:
    print("closed:", e)
""", daemon)
    assert "closed: the loader is closed" in out
    stats = daemon.gnnctl("stats").stdout
    assert "in use: 0 of max_sessions" in stats, stats


def test_an_iteration_left_early_is_followed_by_the_next_epoch(daemon):
    """Each iteration runs the epoch after the last, whole or broken off: a new `for` after a `break` gets a new
    order (PyG's loaders reshuffle on every iter), where it repeated the same one; set_epoch still picks one."""
    import gnnd

    def first_seeds(iterator):
        batch = next(iterator)
        return batch.epoch, batch.node_ids[:16].tolist()

    loader = gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=16, fanouts=[2], output="numpy",
                         copy=True)
    try:
        epoch0, order0 = first_seeds(iter(loader))
        epoch1, order1 = first_seeds(iter(loader))  # the first iteration was left after one batch
        assert (epoch0, epoch1) == (0, 1) and order0 != order1
        whole = list(loader)  # epoch 2, whole
        assert {b.epoch for b in whole} == {2} and len(whole) == len(loader)
        epoch3, _ = first_seeds(iter(loader))
        assert epoch3 == 3
        loader.set_epoch(0)
        assert first_seeds(iter(loader)) == (0, order0)  # the same epoch, the same order
    finally:
        loader.close()
