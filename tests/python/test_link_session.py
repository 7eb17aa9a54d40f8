"""Link sessions end to end: gnnd serving link batches (edge splits as seeds, negatives, exclusion) to
gnnd.Loader and gnnd.pyg.LinkNeighborLoader, every batch equal to `gnnctl sample --edge-split`'s for the same
request (the one check both run), PyG's shapes and dtypes, and clear refusals."""
import os
import subprocess

import numpy as np
import pytest
import torch

import gnnd
import gnnd.dgl
import gnnd.pyg
from daemon_util import GNNCTL, Daemon

NAME = f"linkses{os.getpid()}"  # shared-memory names are host-wide
NODES, EDGES, TRAIN, BATCH = 150, 1800, 1000, 100


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("link_session")
    rng = np.random.default_rng(8)
    edges = rng.integers(0, NODES, size=(2, EDGES))
    (root / "splits").mkdir()
    np.save(root / "edges.npy", edges)
    np.save(root / "splits" / "train.npy", edges[:, :TRAIN])
    np.save(root / "splits" / "test.npy", edges[:, TRAIN:TRAIN + 40])
    np.save(root / "splits" / "test_label.npy", rng.integers(0, 2, size=40))
    np.save(root / "features.npy", rng.standard_normal((NODES, 3)).astype(np.float32))
    subprocess.run([GNNCTL, "import", "--format=edgelist", root / "edges.npy", root / "data",
                    f"--edge-splits={root / 'splits'}", f"--features={root / 'features.npy'}"], check=True,
                   capture_output=True)
    daemon = Daemon(root, f"--dataset={NAME}={root / 'data'}", name="linkses")
    yield daemon, root / "data", edges
    assert daemon.stop() == 0, daemon.output()


def reference(data, tmp_path, step, flags):
    out = tmp_path / f"ref{step}.npz"
    subprocess.run([GNNCTL, "sample", f"--dataset={data}", f"--batch-size={BATCH}", "--seed=5", f"--step={step}",
                    *flags, f"--out={out}"], check=True, capture_output=True)
    return np.load(out)


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_session_batches_equal_gnnctl_sample(served, tmp_path, mode):
    daemon, data, edges = served
    options = dict(edge_split="train", neg_sampling=mode, neg_amount=2, strict_negatives=True, exclude="reverse")
    flags = ["--edge-split=train", f"--neg-sampling={mode}", "--neg-amount=2", "--strict-negatives",
             "--exclude=reverse", "--fanouts=3,2"]
    loader = gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[3, 2], seed=5,
                         output="numpy", **options)
    steps = 0
    seen = []
    for batch in loader:
        ref = reference(data, tmp_path, batch.step, flags)
        for name in ("node_ids", "edge_src", "edge_dst", "features", "input_id", "num_nodes_per_hop",
                     "num_edges_per_hop"):
            np.testing.assert_array_equal(getattr(batch, name), ref[name], err_msg=name)
        if mode == "binary":
            np.testing.assert_array_equal(batch.edge_label_index.T, ref["edge_label_index"])
            np.testing.assert_array_equal(batch.edge_label, ref["edge_label"])
        else:
            for name in ("src_index", "dst_pos_index", "dst_neg_index"):
                np.testing.assert_array_equal(getattr(batch, name), ref[name], err_msg=name)
        seen.extend(batch.input_id)
        steps += 1
    assert steps == len(loader) == TRAIN // BATCH
    assert sorted(seen) == list(range(TRAIN))
    assert "seed_edges=" in repr(batch)
    loader.close()


def test_link_neighbor_loader_gives_pyg_shapes(served):
    daemon, data, edges = served
    loader = gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[3, 2], edge_label_index="train", batch_size=BATCH,
                                         shuffle=True, neg_sampling=dict(mode="binary", amount=1),
                                         exclude="self", dataset=NAME, address=daemon.address, seed=5)
    batch = next(iter(loader))
    p = len(batch.input_id)
    assert batch.edge_label_index.shape == (2, 2 * p) and batch.edge_label_index.dtype == torch.int64
    assert batch.edge_index.dtype == torch.int64 and batch.edge_index.shape[0] == 2
    assert batch.edge_label.dtype == torch.float32 and batch.edge_label[:p].eq(1).all() and batch.edge_label[p:].eq(0).all()
    pairs = batch.n_id[batch.edge_label_index[:, :p]]
    np.testing.assert_array_equal(pairs.numpy(), edges[:, batch.input_id.numpy()])  # the positives: split edges
    assert batch.x.shape == (len(batch.n_id), 3)
    assert batch.num_sampled_nodes[0] == len(set(batch.n_id[batch.edge_label_index].view(-1).tolist()))
    assert "y" not in batch and "batch_size" not in batch
    loader.close()

    labeled = gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index="test", batch_size=16,
                                          neg_sampling="binary", dataset=NAME, address=daemon.address)
    batch = next(iter(labeled))
    p = len(batch.input_id)
    assert batch.edge_label.dtype == torch.int64
    test_labels = np.load(data / "test_edge_label.npy")
    np.testing.assert_array_equal(batch.edge_label[:p].numpy(), test_labels[batch.input_id.numpy()] + 1)
    labeled.close()

    triplets = gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], batch_size=16, neg_sampling="triplet",
                                           dataset=NAME, address=daemon.address)
    batch = next(iter(triplets))
    assert batch.dst_neg_index.shape == (16,) and batch.src_index.dtype == torch.int64  # amount 1: (P,), as PyG
    assert "edge_label_index" not in batch
    triplets.close()


def test_dgl_style_link_blocks_are_the_pairs_over_hop_0(served):
    daemon, _, edges = served
    loader = gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[3, 2], seed=5,
                         output="numpy", edge_split="train", neg_sampling="binary", neg_amount=2, exclude="self")
    batch = next(iter(loader))
    input_nodes, pair_graph, neg_pair_graph, blocks = gnnd.dgl.link_blocks(batch)
    p = len(batch.input_id)
    assert input_nodes is batch.node_ids and [b.num_edges() for b in blocks] == \
        [b.num_edges() for b in gnnd.dgl.blocks(batch)]
    assert pair_graph.num_nodes == neg_pair_graph.num_nodes == batch.nodes_per_hop[0] == blocks[-1].num_dst_nodes
    assert pair_graph.num_edges() == p and neg_pair_graph.num_edges() == 2 * p
    ids = batch.node_ids
    np.testing.assert_array_equal(np.stack((ids[pair_graph.src], ids[pair_graph.dst])), edges[:, batch.input_id])
    negatives = batch.edge_label_index[p:]
    np.testing.assert_array_equal(neg_pair_graph.src, negatives[:, 0])
    np.testing.assert_array_equal(neg_pair_graph.dst, negatives[:, 1])
    loader.close()
    triplets = gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[2], output="numpy",
                           edge_split="train", neg_sampling="triplet")
    with pytest.raises(ValueError, match="triplet"):
        gnnd.dgl.link_blocks(next(iter(triplets)))
    triplets.close()


def test_bad_link_requests_are_refused_naming_the_field(served):
    daemon, _, _ = served
    cases = [
        (dict(edge_split="dev"), "INVALID_ARGUMENT", "open.edge_split = 'dev' (must be train, valid or test)"),
        (dict(edge_split="valid"), "INVALID_ARGUMENT", "open.edge_split = 'valid' (the graph has no such edge split)"),
        (dict(edge_split="train", neg_sampling="both"), "INVALID_ARGUMENT", "open.neg_sampling = 'both'"),
        (dict(edge_split="train", exclude="all"), "INVALID_ARGUMENT", "open.exclude = 'all'"),
        (dict(edge_split="test", neg_sampling="triplet"), "INVALID_ARGUMENT", "triplets carry no labels"),
        (dict(edge_split="train", neg_sampling="binary", neg_amount=5000), "INVALID_ARGUMENT",
         "open.neg_amount = 5000 (must be 1 to 1024)"),
        (dict(edge_split="train", neg_sampling="triplet", neg_amount=0.5), "INVALID_ARGUMENT",
         "open.neg_ratio = 0.5 is binary negatives'"),
        (dict(edge_split="train", neg_sampling="binary", neg_amount=2000.5), "INVALID_ARGUMENT",
         "open.neg_ratio = 2000.5 (must be above 0 and at most 1024)"),
    ]
    for options, code, message in cases:
        with pytest.raises(gnnd.GnndError) as error:
            gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=8, fanouts=[2], **{"output": "numpy", **options})
        assert error.value.code == code and message in error.value.message, (options, error.value)
    with pytest.raises(ValueError):
        gnnd.Loader(address=daemon.address, dataset=NAME, split="train", edge_split="train", fanouts=[2])
    with pytest.raises(gnnd.GnndError) as error:  # a node session with a link session's options
        gnnd.Loader(address=daemon.address, dataset=NAME, fanouts=[2], exclude="self", output="numpy")
    assert error.value.code == "INVALID_ARGUMENT" and "set open.edge_split" in error.value.message, error.value
    with pytest.raises(ValueError):
        gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], neg_sampling=dict(mode="binary", amount=0),
                                    dataset=NAME, address=daemon.address)
    with pytest.raises(gnnd.GnndError) as error:  # an edge type names a typed dataset's relation
        gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=(("n", "to", "n"), "train"),
                                    dataset=NAME, address=daemon.address)
    assert error.value.code == "INVALID_ARGUMENT" and "open.edge_type = 'n___to___n'" in error.value.message
    # Given pairs: node ids checked by gnnd, naming the first bad one as PyG's (2, E) index; shapes by the client.
    bad = np.array([[0, 1, 2], [3, NODES, 5]])
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(address=daemon.address, dataset=NAME, fanouts=[2], seed_edges=bad, output="numpy")
    assert error.value.code == "INVALID_ARGUMENT", error.value
    assert f"open.seed_edges[1][1] = {NODES} (node ids are 0 to {NODES - 1})" in error.value.message, error.value
    for shape in ((3, 4), (2, 0), (6,)):
        with pytest.raises(ValueError, match="seed_edges"):
            gnnd.Loader(address=daemon.address, dataset=NAME, fanouts=[2], seed_edges=np.zeros(shape, np.int64))
    with pytest.raises(ValueError, match="edge_split and seed_edges"):
        gnnd.Loader(address=daemon.address, dataset=NAME, fanouts=[2], edge_split="train", seed_edges=bad[:, :1])
    assert daemon.proc.poll() is None


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_given_pairs_equal_to_a_splits_edges_give_its_batches(served, mode):
    """Seed edges given as a (2, E) tensor are served as an edge split's: the train split's edges as pairs give
    the train split's batches byte for byte (same seed, shuffle, negatives, exclusion); input_id are the
    pairs' positions."""
    daemon, _, edges = served
    options = dict(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[3, 2], seed=5, output="numpy",
                   neg_sampling=mode, neg_amount=2, strict_negatives=True, exclude="reverse")
    names = ["node_ids", "num_nodes_per_hop", "edge_src", "edge_dst", "num_edges_per_hop", "features", "input_id"]
    names += ["edge_label_index", "edge_label"] if mode == "binary" else ["src_index", "dst_pos_index", "dst_neg_index"]
    with gnnd.Loader(edge_split="train", copy=True, **options) as split:
        expected = [{name: getattr(batch, name) for name in names} for batch in split]
    pairs = torch.from_numpy(edges[:, :TRAIN])
    with gnnd.Loader(seed_edges=pairs, copy=True, **options) as given:
        got = [{name: getattr(batch, name) for name in names} for batch in given]
    assert len(got) == len(expected) == TRAIN // BATCH
    for step, (a, b) in enumerate(zip(got, expected)):
        for name in names:
            np.testing.assert_array_equal(a[name], b[name], err_msg=f"step {step} {name}")
    # PyG's loader takes the tensor as edge_label_index.
    loader = gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[3, 2], edge_label_index=pairs, batch_size=BATCH,
                                         neg_sampling=mode, dataset=NAME, address=daemon.address)
    batch = next(iter(loader))
    if mode == "binary":
        positives = batch.edge_label_index[:, batch.edge_label == 1]
        src, dst = batch.n_id[positives[0]], batch.n_id[positives[1]]
    else:
        src, dst = batch.n_id[batch.src_index], batch.n_id[batch.dst_pos_index]
    assert torch.equal(torch.stack([src, dst]), pairs[:, batch.input_id])
    loader.close()


def test_fixed_negatives_of_an_edge_split_are_served_as_triplets(tmp_path):
    """neg_sampling="fixed": each positive of the split comes with its own K fixed negative destinations
    (SPLIT_neg.npy, OGB's evaluation layout), as triplets: src_index, dst_pos_index and dst_neg_index (P, K)
    over hop 0 name exactly the split's source, destination and negatives of each input_id; batches equal
    gnnctl sample's; a split without negatives, a neg_amount other than K, strict draws and given pairs are
    refused naming why."""
    rng = np.random.default_rng(4)
    edges = rng.integers(0, NODES, size=(2, 900))
    negatives = rng.integers(0, NODES, size=(300, 6))
    (tmp_path / "splits").mkdir()
    np.save(tmp_path / "edges.npy", edges)
    np.save(tmp_path / "splits" / "train.npy", edges[:, :600])
    np.save(tmp_path / "splits" / "valid.npy", edges[:, 600:])
    np.save(tmp_path / "splits" / "valid_neg.npy", negatives)
    subprocess.run([GNNCTL, "import", "--format=edgelist", tmp_path / "edges.npy", tmp_path / "data",
                    f"--edge-splits={tmp_path / 'splits'}"], check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=fixed={tmp_path / 'data'}", name="fixedneg")
    options = dict(address=daemon.address, dataset="fixed", batch_size=BATCH, fanouts=[3, 2], seed=5,
                   output="numpy")
    try:
        seen = []
        with gnnd.Loader(edge_split="valid", neg_sampling="fixed", exclude="self", **options) as loader:
            for batch in loader:
                ids, input_id = batch.node_ids, batch.input_id
                assert batch.dst_neg_index.shape == (len(input_id), 6)
                np.testing.assert_array_equal(ids[batch.src_index], edges[0, 600 + input_id])
                np.testing.assert_array_equal(ids[batch.dst_pos_index], edges[1, 600 + input_id])
                np.testing.assert_array_equal(ids[batch.dst_neg_index], negatives[input_id])
                if batch.step == 1:
                    ref = reference(tmp_path / "data", tmp_path, 1, ["--edge-split=valid", "--neg-sampling=fixed",
                                                                      "--exclude=self", "--fanouts=3,2"])
                    for name in ref.files:
                        np.testing.assert_array_equal(getattr(batch, name), ref[name], err_msg=name)
                seen.extend(input_id)
        assert sorted(seen) == list(range(300))
        batch = next(iter(gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[3, 2], edge_label_index="valid",
                                                      neg_sampling="fixed", batch_size=BATCH, dataset="fixed",
                                                      address=daemon.address)))
        assert batch.dst_neg_index.dtype == torch.int64 and batch.dst_neg_index.shape == (BATCH, 6)
        cases = [
            (dict(edge_split="train", neg_sampling="fixed"), "edge split 'train' has no fixed negatives (train_neg.npy)"),
            (dict(edge_split="valid", neg_sampling="fixed", neg_amount=3), "the split's 6 negatives per edge"),
            (dict(edge_split="valid", neg_sampling="fixed", strict_negatives=True), "strict_negatives must be off"),
            (dict(seed_edges=edges[:, :5], neg_sampling="fixed"), "given seed_edges have no fixed negatives"),
        ]
        for case, message in cases:
            with pytest.raises(gnnd.GnndError) as error:
                gnnd.Loader(**options, **case)
            assert error.value.code == "INVALID_ARGUMENT" and message in error.value.message, (case, error.value)
    finally:
        assert daemon.stop() == 0, daemon.output()
