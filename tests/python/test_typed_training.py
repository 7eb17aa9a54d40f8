"""Typed training on gnnd's batches (CPU backend, Debian's torch, no PyG needed): a typed GraphSAGE (PyG's
to_hetero of SAGEConv, written in plain torch) trained through gnnd.pyg.NeighborLoader on the `mag` preset
reaches the validation accuracy of the same model and seeds trained on an in-process typed neighbor sampler
(within 1 point), clearly above the same model without relations. Also the HeteroData-shaped batch (every
edge an edge of its relation, PyG's attribute names), typed DGL blocks and PyG's input_nodes forms."""
import os
import subprocess
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gnnd.dgl  # noqa: E402
from gnnd.pyg import HeteroBatch, NeighborLoader  # noqa: E402
from daemon_util import GNNCTL, Daemon  # noqa: E402
from training import HeteroSAGE, TypedDataset, TypedReferenceSampler, train_typed, typed_accuracy  # noqa: E402

FANOUTS, BATCH, EPOCHS, HIDDEN = [6, 4], 256, 4, 32
NAME = f"typed-training-{os.getpid()}"  # shared-memory names are host-wide


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("typed-training")
    data = root / "mag"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.02", "--seed=21", "--feature-dim=8",
                    "--add-reverse", str(data)],
                   check=True, capture_output=True)
    daemon = Daemon(root, f"--dataset={NAME}={data}", name="typed-training")
    yield daemon, TypedDataset(data)
    assert daemon.stop() == 0, daemon.output()


def loader(daemon, **kwargs):
    args = dict(num_neighbors=FANOUTS, batch_size=BATCH, input_nodes=("paper", "train"), shuffle=True,
                dataset=NAME, address=daemon.address, seed=5)
    return NeighborLoader(None, **{**args, **kwargs})


def test_gnnd_trains_a_typed_model_as_well_as_a_reference_sampler(served):
    daemon, dataset = served
    dims = {t: x.shape[1] for t, x in dataset.features.items()}
    classes = dataset.num_classes("paper")
    fanouts = {r: FANOUTS for r in dataset.relations}

    torch.manual_seed(0)
    with_gnnd = HeteroSAGE(dataset.relations, dims, HIDDEN, classes, len(FANOUTS))
    start = time.time()
    with loader(daemon, num_neighbors=fanouts) as batches:  # per relation, as a dict
        def epoch(e):
            batches.set_epoch(e)
            return batches
        train_typed(with_gnnd, "paper", epoch, EPOCHS)
    gnnd_seconds = time.time() - start

    torch.manual_seed(0)
    with_reference = HeteroSAGE(dataset.relations, dims, HIDDEN, classes, len(FANOUTS))
    reference = TypedReferenceSampler(dataset, "paper", dataset.splits[("paper", "train")], fanouts, BATCH, seed=5)
    start = time.time()
    train_typed(with_reference, "paper", lambda e: reference, EPOCHS)
    reference_seconds = time.time() - start

    torch.manual_seed(0)
    alone = HeteroSAGE([], dims, HIDDEN, classes, len(FANOUTS))
    no_edges = TypedReferenceSampler(dataset, "paper", dataset.splits[("paper", "train")],
                                     {r: [0] * len(FANOUTS) for r in dataset.relations}, BATCH, seed=5)
    train_typed(alone, "paper", lambda e: no_edges, EPOCHS)

    acc_gnnd, acc_reference, acc_alone = (typed_accuracy(m, dataset, "paper")
                                          for m in (with_gnnd, with_reference, alone))
    print(f"validation accuracy: gnnd {acc_gnnd:.4f} ({gnnd_seconds:.1f} s), reference sampler "
          f"{acc_reference:.4f} ({reference_seconds:.1f} s), without relations {acc_alone:.4f}")
    assert abs(acc_gnnd - acc_reference) <= 0.01
    assert acc_gnnd >= acc_alone + 0.05


def test_hetero_batch_holds_edges_of_each_relation_under_pygs_names(served):
    daemon, dataset = served
    pairs = {}
    for r, (indptr, indices) in dataset.csc.items():
        dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        pairs[r] = set((indices * (1 << 32) + dst).tolist())
    with loader(daemon, shuffle=False) as batches:
        batch = next(iter(batches))
        assert isinstance(batch, HeteroBatch) or type(batch).__name__ == "HeteroData"  # PyG's, where installed
        assert set(batch.node_types) == set(dataset.num_nodes) and set(batch.edge_types) == set(dataset.relations)
        paper = batch["paper"]
        assert paper.batch_size == BATCH and torch.equal(paper.n_id[:BATCH],
                                                          torch.from_numpy(dataset.splits[("paper", "train")][:BATCH]))
        assert torch.equal(paper.y, dataset.labels["paper"][paper.n_id[:BATCH]])
        assert torch.equal(batch.x_dict["paper"], dataset.features["paper"][paper.n_id])
        assert "x" not in batch["author"] and set(batch.x_dict) == {"paper"}
        sampled = 0
        for et, edge_index in batch.edge_index_dict.items():
            assert edge_index.dtype == torch.int64 and edge_index.shape[0] == 2
            src, dst = batch[et[0]].n_id[edge_index[0]], batch[et[2]].n_id[edge_index[1]]
            assert set((src * (1 << 32) + dst).tolist()) <= pairs[et], et
            assert sum(batch[et].num_sampled_edges) == edge_index.shape[1]
            sampled += edge_index.shape[1]
        assert sampled > 0
        for t in batch.node_types:
            assert sum(batch[t].num_sampled_nodes) == batch[t].num_nodes == len(batch[t].n_id)


def test_typed_dgl_blocks_are_slices_outermost_first(served):
    daemon, _ = served
    with gnnd.Loader(address=daemon.address, dataset=NAME, node_type="paper", batch_size=BATCH, fanouts=FANOUTS,
                     output="numpy") as batches:
        batch = next(iter(batches))
        outer, inner = gnnd.dgl.blocks(batch)
        for t in batch.node_types:
            hops = batch.nodes_per_hop(t)
            assert outer.num_src_nodes[t] == sum(hops) and outer.num_dst_nodes[t] == hops[0] + hops[1]
            assert inner.num_src_nodes[t] == hops[0] + hops[1] and inner.num_dst_nodes[t] == hops[0]
        for et in batch.edge_types:
            key = "___".join(et)
            assert outer.num_edges(et) == len(batch[f"{key}.edge_src"])
            assert inner.num_edges(et) == batch.edges_per_hop(et)[0]
            src, dst = inner.edges[et]
            assert (src < inner.num_src_nodes[et[0]]).all() and (dst < inner.num_dst_nodes[et[2]]).all()


def test_input_nodes_of_a_typed_graph(served):
    daemon, dataset = served
    valid = dataset.splits[("paper", "valid")]
    mask = torch.zeros(dataset.num_nodes["paper"], dtype=torch.bool)
    mask[torch.from_numpy(valid)] = True
    for input_nodes in (("paper", "valid"), ("paper", mask), ("paper", torch.from_numpy(valid))):
        with loader(daemon, input_nodes=input_nodes, shuffle=False) as batches:
            seeds = torch.cat([b["paper"].n_id[:b["paper"].batch_size].clone() for b in batches])  # views of slots
            assert sorted(seeds.tolist()) == sorted(valid.tolist()), input_nodes
    with pytest.raises(gnnd.GnndError, match="open.split = 'train' \\(node type 'author' has no such split\\)"):
        loader(daemon, input_nodes=("author", "train"))
