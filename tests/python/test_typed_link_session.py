"""Typed link sessions end to end: the mag preset with author-writes-paper edge splits (and rev_ relations)
served to gnnd.Loader and gnnd.pyg.LinkNeighborLoader, every batch equal to `gnnctl sample --edge-split`'s of
the same request, HeteroData as PyG's typed LinkNeighborLoader gives it (positives through n_id are the split's
edges, an epoch's input_id cover the split once), given pairs of the relation equal to its split, no excluded
edge in any relation, and clear refusals."""
import os
import subprocess

import numpy as np
import pytest
import torch

import gnnd
import gnnd.dgl
import gnnd.pyg
from daemon_util import GNNCTL, Daemon

NAME = f"maglink{os.getpid()}"  # shared-memory names are host-wide
WRITES, REV_WRITES = ("author", "writes", "paper"), ("paper", "rev_writes", "author")
KEY = "author___writes___paper"
BATCH = 200


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("typed_link")
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.002", "--seed=3", "--add-reverse",
                    f"--link-relation={KEY}", root / "mag"], check=True, capture_output=True)
    daemon = Daemon(root, f"--dataset={NAME}={root / 'mag'}", name="maglink")
    yield daemon, root / "mag"
    assert daemon.stop() == 0, daemon.output()


def reference(data, tmp_path, step, flags):
    out = tmp_path / f"ref{step}.npz"
    subprocess.run([GNNCTL, "sample", f"--dataset={data}", f"--batch-size={BATCH}", "--seed=5", f"--step={step}",
                    "--fanouts=3,2", *flags, f"--out={out}"], check=True, capture_output=True)
    return np.load(out)


@pytest.mark.parametrize("mode,exclude", [("binary", "reverse"), ("triplet", "self")])
def test_session_batches_equal_gnnctl_sample(served, tmp_path, mode, exclude):
    daemon, data = served
    loader = gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[3, 2], seed=5,
                         output="numpy", edge_split="train", neg_sampling=mode, neg_amount=2, strict_negatives=True,
                         exclude=exclude, edge_type=WRITES)
    flags = ["--edge-split=train", f"--neg-sampling={mode}", "--neg-amount=2", "--strict-negatives",
             f"--exclude={exclude}", f"--edge-type={KEY}"]
    steps = len(loader)
    for batch in loader:
        assert isinstance(batch, gnnd.TypedBatch) and batch.seed_type is None and batch.link_type == WRITES
        if batch.step not in (0, 1, steps - 1):
            continue
        ref = reference(data, tmp_path, batch.step, flags)
        assert set(ref.files) == set(batch.arrays)
        for name in ref.files:
            got = batch[name].T if name.endswith("edge_label_index") else batch[name]
            np.testing.assert_array_equal(got, ref[name], err_msg=name)
    assert batch.step == steps - 1
    loader.close()


def test_open_fields_carry_the_request_as_text(served, tmp_path):
    """open_fields (the C ABI's, gnnd.Loader's, gnnctl sample's): OpenSession fields in text format, each
    replacing what the arguments set for it, give the batches those arguments give; a field no OpenSession has is refused naming it."""
    daemon, data = served
    loader = gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[], seed=5, output="numpy",
                         edge_split="train", edge_type=WRITES,
                         open_fields='fanouts: 3 fanouts: 2 neg_sampling: "binary" neg_amount: 2 exclude: "self"')
    batch = next(iter(loader))
    ref = reference(data, tmp_path, 0, ["--edge-split=train", "--neg-sampling=binary", "--neg-amount=2",
                                        "--exclude=self", f"--edge-type={KEY}"])
    text = reference(data, tmp_path, 0, [f"--edge-type={KEY}", "--edge-split=train", "--fanouts=9",
                                         '--open_fields=fanouts: 3 fanouts: 2 neg_sampling: "binary" '
                                         'neg_amount: 2 exclude: "self"'])
    assert set(ref.files) == set(batch.arrays) == set(text.files)
    for name in ref.files:
        got = batch[name].T if name.endswith("edge_label_index") else batch[name]
        np.testing.assert_array_equal(got, ref[name], err_msg=name)
        np.testing.assert_array_equal(text[name], ref[name], err_msg=name)
    loader.close()
    with pytest.raises(gnnd.GnndError, match=r"options.open_fields: line 1, column \d+: .*fanoutz"):
        gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[3, 2], edge_split="train",
                    edge_type=WRITES, open_fields="fanoutz: 3")
    bad = subprocess.run([GNNCTL, "sample", f"--dataset={data}", "--edge-split=train", f"--edge-type={KEY}",
                          "--open_fields=fanouts: x", f"--out={tmp_path / 'bad.npz'}"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--open_fields: line 1" in bad.stderr, bad.stderr


def pyg_loader(daemon, edge_label_index, **options):
    return gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[3, 2], edge_label_index=edge_label_index,
                                       batch_size=BATCH, dataset=NAME, address=daemon.address, seed=5,
                                       **{"neg_sampling": dict(mode="binary", amount=2, strict=True), **options})


def test_link_neighbor_loader_gives_heterodata_of_the_split(served):
    daemon, data = served
    split = np.load(data / f"{KEY}.train_edges.npy")
    seen = []
    for batch in pyg_loader(daemon, (WRITES, "train"), exclude="reverse"):
        store = batch[WRITES]
        pairs, labels = store.edge_label_index, store.edge_label
        assert pairs.dtype == torch.int64 and pairs.shape[0] == 2 and labels.dtype == torch.float32
        positives = int(labels.sum())
        assert positives == len(store.input_id) and pairs.shape[1] == 3 * positives
        assert torch.all(labels[:positives] == 1) and torch.all(labels[positives:] == 0)
        src = batch["author"].n_id[pairs[0]].numpy()
        dst = batch["paper"].n_id[pairs[1]].numpy()
        ids = store.input_id.numpy()
        np.testing.assert_array_equal(src[:positives], split[0, ids])
        np.testing.assert_array_equal(dst[:positives], split[1, ids])
        # exclude="reverse": no positive pair is a sampled writes edge, nor its reverse a rev_writes edge.
        sampled = batch[WRITES].edge_index
        got = set(zip(batch["author"].n_id[sampled[0]].tolist(), batch["paper"].n_id[sampled[1]].tolist()))
        reverse = batch[REV_WRITES].edge_index
        got_reverse = set(zip(batch["author"].n_id[reverse[1]].tolist(), batch["paper"].n_id[reverse[0]].tolist()))
        positive_pairs = set(zip(src[:positives].tolist(), dst[:positives].tolist()))
        assert not positive_pairs & got and not positive_pairs & got_reverse
        assert batch["paper"].x.shape[1] == 128 and batch["paper"].num_sampled_nodes[0] > 0
        seen.extend(ids.tolist())
    assert sorted(seen) == list(range(split.shape[1]))


def test_given_pairs_of_the_relation_equal_its_split(served):
    daemon, data = served
    split = torch.from_numpy(np.load(data / f"{KEY}.train_edges.npy"))
    loaders = [pyg_loader(daemon, edge_label_index, neg_sampling="triplet")
               for edge_label_index in ((WRITES, "train"), (WRITES, split))]
    a, b = (next(iter(loader)) for loader in loaders)  # views of each session's slot: compared before closing
    for t in a.node_types:
        assert torch.equal(a[t].n_id, b[t].n_id), t
    assert torch.equal(a[WRITES].edge_index, b[WRITES].edge_index)
    for t, name in (("author", "src_index"), ("paper", "dst_pos_index"), ("paper", "dst_neg_index")):
        assert torch.equal(a[t][name], b[t][name]), name
    assert torch.equal(a[WRITES].input_id, b[WRITES].input_id)
    for loader in loaders:
        loader.close()


def test_bad_typed_link_requests_are_refused_naming_the_field(served):
    daemon, _ = served
    base = dict(address=daemon.address, dataset=NAME, batch_size=8, fanouts=[2], output="numpy")
    cases = [
        (dict(edge_split="train", edge_type="paper___writes___author"), "open.edge_type = 'paper___writes___author' "
         "(the relations are author___affiliated_with___institution, author___writes___paper"),
        (dict(edge_split="train", edge_type="paper___cites___paper"),
         "open.edge_split = 'train' (paper___cites___paper has no such edge split)"),
        (dict(edge_split="train", node_type="paper"), "open.node_type = 'paper' (a link session's hop 0"),
        (dict(seed_edges=np.array([[0], [0]])), "open.edge_type is empty: name the seed_edges' relation"),
        (dict(seed_edges=np.array([[0, 1], [1, 5000]]), edge_type=WRITES),
         "open.seed_edges[1][1] = 5000 ('paper' node ids are 0 to 1472)"),
    ]
    for options, message in cases:
        with pytest.raises(gnnd.GnndError) as error:
            gnnd.Loader(**{**base, **options})
        assert error.value.code == "INVALID_ARGUMENT" and message in error.value.message, (options, error.value)
    assert daemon.proc.poll() is None


def test_reverse_exclusion_needs_a_reverse_relation(tmp_path):
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.002", "--seed=3", f"--link-relation={KEY}",
                    tmp_path / "mag"], check=True, capture_output=True)
    sample = subprocess.run([GNNCTL, "sample", f"--dataset={tmp_path / 'mag'}", "--edge-split=train",
                             "--exclude=reverse", "--fanouts=2", f"--out={tmp_path / 'x.npz'}"], capture_output=True,
                            text=True)
    assert sample.returncode != 0
    assert ("open.exclude = 'reverse': author___writes___paper has no reverse relation "
            "(paper___rev_writes___author") in sample.stderr, sample.stderr
    assert subprocess.run([GNNCTL, "sample", f"--dataset={tmp_path / 'mag'}", "--edge-split=train", "--exclude=self",
                           "--fanouts=2", f"--out={tmp_path / 'x.npz'}"], capture_output=True).returncode == 0


def test_dgl_style_link_blocks_of_a_typed_batch(served):
    """gnnd.dgl.link_blocks of a typed link batch: input nodes per type, pair graphs of the seed relation over
    each type's hop-0 nodes (positives, then negatives), and the typed blocks whose last destinations are hop 0."""
    daemon, _ = served
    with gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[3, 2], seed=5,
                     output="numpy", edge_split="train", neg_sampling="binary", edge_type=WRITES) as loader:
        batch = next(iter(loader))
        input_nodes, pairs, negatives, blocks = gnnd.dgl.link_blocks(batch)
        rows = batch[f"{KEY}.edge_label_index"]
        hop0 = {t: batch.nodes_per_hop(t)[0] for t in batch.node_types}
        for graph, part in ((pairs, rows[:batch.batch_size]), (negatives, rows[batch.batch_size:])):
            if isinstance(graph, gnnd.dgl.HeteroGraph):  # without DGL
                src, dst = graph.edges[WRITES]
                assert graph.num_nodes == hop0
            else:
                src, dst = (np.asarray(e) for e in graph.edges(etype=WRITES))
                assert {t: graph.num_nodes(t) for t in hop0} == hop0
            assert np.array_equal(src, part[:, 0]) and np.array_equal(dst, part[:, 1])
            assert len(src) == batch.batch_size  # binary 1:1: as many negatives as positives
        assert all(np.array_equal(input_nodes[t], batch[f"{t}.node_ids"]) for t in batch.node_types)
        last = blocks[-1]
        if isinstance(last, gnnd.dgl.HeteroBlock):
            assert len(blocks) == 2 and last.num_dst_nodes == hop0
    with gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=BATCH, fanouts=[3, 2], output="numpy",
                     edge_split="train", neg_sampling="triplet", edge_type=WRITES) as loader:
        with pytest.raises(ValueError, match="no pairs"):
            gnnd.dgl.link_blocks(next(iter(loader)))
