"""PyG's input_nodes as PyG reads them, refused where PyG would not make sense of them: a boolean mask must have
one entry per node of the seed type (gnnd checks, knowing the count), ids must be one dimension."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gnnd  # noqa: E402
import gnnd.pyg  # noqa: E402
from daemon_util import Daemon, generate  # noqa: E402

NODES = 10000  # the tiny preset's


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("pyg_inputs")
    d = Daemon(root, f"--dataset=tiny={generate(root / 'tiny', '--seed', 4)}", name=f"pyginputs{os.getpid()}")
    yield d
    assert d.stop() == 0, d.output()


def loader(daemon, input_nodes):
    return gnnd.pyg.NeighborLoader(None, num_neighbors=[3], batch_size=64, input_nodes=input_nodes, dataset="tiny",
                                   address=daemon.address)


def test_a_mask_over_every_node_gives_its_nodes(daemon):
    mask = torch.zeros(NODES, dtype=torch.bool)
    mask[torch.arange(0, NODES, 7)] = True
    with loader(daemon, mask) as L:
        batches = [(batch.n_id[:batch.batch_size].clone(), batch.input_id.clone()) for batch in L]  # views
    seeds = torch.cat([n_id for n_id, _ in batches])
    assert sorted(seeds.tolist()) == list(range(0, NODES, 7))
    for n_id, input_id in batches:  # PyG's input_id of a mask: each seed's index in it, its node id
        assert torch.equal(input_id, n_id)


@pytest.mark.parametrize("length", [NODES - 1, NODES + 5])
def test_a_mask_of_another_length_is_refused(daemon, length):
    mask = torch.ones(length, dtype=torch.bool)
    with pytest.raises(gnnd.GnndError) as error:
        loader(daemon, mask)
    assert error.value.code == "INVALID_ARGUMENT"
    assert f"open.seed_mask_length = {length} (a mask over the seeds' type has one entry per node: {NODES}" \
        in error.value.message


def test_ids_of_two_dimensions_are_refused(daemon):
    with pytest.raises(ValueError, match=r"one dimension, expected; got shape \(2, 3\)"):
        loader(daemon, torch.arange(6).view(2, 3))
    with pytest.raises(ValueError, match=r"one dimension, expected; got shape \(2, 3\)"):
        gnnd.Loader(address=daemon.address, dataset="tiny", fanouts=[2], seed_ids=np.arange(6).reshape(2, 3))
