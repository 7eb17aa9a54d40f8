"""PyG's spellings on gnnd's loaders: input_nodes="paper" and ("paper", None) iterate every node of the type;
a triplet batch's dst_neg_index is (P,) when the amount is 1; worker arguments are ignored with one warning;
PyG's sampling arguments are taken at their defaults and refused otherwise with the reason that fits; a
transform runs on every batch; without PyG the batches answer to(), num_nodes, keys(), metadata() and
input_id; errors about the arguments are ValueErrors; num_neighbors=[] and 0 fanouts give the seeds alone;
(src, dst) edge types name the one relation between them; loader(index) gives the batch of those inputs;
negative weights draw endpoints in proportion and fractional amounts PyG's ceil(P x amount). Run by ctest with GNND and GNNCTL set (PyG itself is not
needed)."""
import enum
import math
import re
import subprocess
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gnnd.pyg  # noqa: E402
from daemon_util import GNNCTL, Daemon, generate  # noqa: E402

WRITES = ("author", "writes", "paper")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("spellings")
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.001", "--seed=2", "--link-relation",
                    "author___writes___paper", str(root / "mag")], check=True, capture_output=True)
    d = Daemon(root, f"--dataset=mag={root / 'mag'}", f"--dataset=tiny={generate(root / 'tiny', '--seed', 2)}")
    d.data, d.tiny = root / "mag", root / "tiny"
    yield d
    assert d.stop() == 0, d.output()


def node_count(daemon, node_type):
    block = (daemon.data / "manifest.textproto").read_text().split(f'name: "{node_type}"')[1]
    return int(block.split("num_nodes:")[1].split()[0])


def seeds_of_an_epoch(loader, node_type):
    seeds = []
    for batch in loader:
        seeds += batch[node_type].n_id[:batch[node_type].batch_size].tolist()
    return seeds


@pytest.mark.parametrize("input_nodes", ["paper", ("paper", None), ("author", None)])
def test_a_node_type_alone_is_every_node_of_it(daemon, input_nodes):
    node_type = input_nodes if isinstance(input_nodes, str) else input_nodes[0]
    n = node_count(daemon, node_type)
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2, 2], input_nodes=input_nodes, batch_size=64, shuffle=True,
                                 dataset="mag", address=daemon.address) as loader:
        assert len(loader) == (n + 63) // 64
        seeds = seeds_of_an_epoch(loader, node_type)
    assert sorted(seeds) == list(range(n))  # each node once, shuffled
    assert seeds != sorted(seeds)


def test_all_is_every_node_of_a_homogeneous_graph(daemon):
    n = int((daemon.tiny / "manifest.textproto").read_text().split("num_nodes:")[1].split()[0])
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes="all", batch_size=128, dataset="tiny",
                                 address=daemon.address) as loader:
        seeds = [i for batch in loader for i in batch.n_id[:batch.batch_size].tolist()]
    assert sorted(seeds) == list(range(n))


def test_a_split_name_still_names_a_split(daemon):
    train = np.load(daemon.data / "paper.train.npy")
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes=("paper", "train"), batch_size=64,
                                 dataset="mag", address=daemon.address) as loader:
        assert sorted(seeds_of_an_epoch(loader, "paper")) == sorted(train.tolist())


@pytest.mark.parametrize("amount, shape", [(1, lambda p: (p,)), (3, lambda p: (p, 3))])
def test_triplet_negatives_are_shaped_as_pygs(daemon, amount, shape):
    with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=(WRITES, "train"), batch_size=16,
                                     neg_sampling=dict(mode="triplet", amount=amount), dataset="mag",
                                     address=daemon.address) as loader:
        batch = next(iter(loader))
        p = len(batch["author"].src_index)
        assert tuple(batch["paper"].dst_neg_index.shape) == shape(p)


def test_worker_arguments_are_ignored_with_one_warning(daemon):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = gnnd.pyg.NeighborLoader(None, num_neighbors=[2], batch_size=50, dataset="tiny", num_workers=8,
                                         persistent_workers=True, pin_memory=True, prefetch_factor=4,
                                         address=daemon.address)
    assert len(caught) == 1, [str(w.message) for w in caught]
    said = str(caught[0].message)
    assert "num_workers, persistent_workers, pin_memory, prefetch_factor ignored: gnnd samples" in said
    assert next(iter(loader)).x.shape[0] > 0
    loader.close()


def test_pyg_defaults_are_taken_and_other_values_refused_saying_why(daemon):
    base = dict(num_neighbors=[2], batch_size=50, dataset="tiny", address=daemon.address)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defaults pass silently
        gnnd.pyg.NeighborLoader(None, replace=False, directed=True, disjoint=False, subgraph_type="directional",
                                weight_attr=None, time_attr=None, temporal_strategy="uniform", is_sorted=True,
                                **base).close()
    class SubgraphType(enum.Enum):  # PyG's torch_geometric.typing.SubgraphType
        directional = "directional"
        bidirectional = "bidirectional"
        induced = "induced"

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyG's default as its enum, as PyG's own tests pass it
        with gnnd.pyg.NeighborLoader(None, subgraph_type=SubgraphType.directional, **base) as taken:
            assert repr(taken) == "NeighborLoader()"  # as PyG's
        with gnnd.pyg.NeighborLoader(None, subgraph_type=SubgraphType.induced, **base) as taken:
            assert "num_sampled_nodes" not in next(iter(taken))  # PyG's induced batches have no per-hop counts
    with pytest.warns(UserWarning, match="'directed' argument in 'NeighborSampler' is deprecated. Use "
                                         "`subgraph_type='induced'` instead"):  # PyG's words
        with gnnd.pyg.NeighborLoader(None, directed=False, **base) as taken:
            assert "num_sampled_nodes" not in next(iter(taken))
    cases = [(dict(transform_sampler_output=len), "(gnnd makes the batch: pass transform= to change it)"),
             (dict(replace=True, time_attr="time"), "replace=True with time_attr")]
    for arguments, reason in cases:
        with pytest.raises(ValueError) as error:
            gnnd.pyg.NeighborLoader(None, **arguments, **base)
        assert reason in str(error.value), error.value
    # Link loaders take PyG's time arguments too (test_temporal_link.py): their defaults silently.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=(WRITES, "train"), dataset="mag",
                                    address=daemon.address, time_attr=None, edge_label_time=None,
                                    temporal_strategy="uniform", disjoint=False).close()
    with pytest.raises(TypeError, match="unexpected argument 'fanout'"):
        gnnd.pyg.NeighborLoader(None, fanout=3, **base)
    gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=(WRITES, "train"), dataset="mag",
                                address=daemon.address, replace=True).close()  # served (test_replace.py)


def test_transform_runs_on_every_batch(daemon):
    seen = []

    def transform(batch):
        seen.append(batch.batch_size)
        batch.marked = True
        return batch

    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], batch_size=50, dataset="tiny", transform=transform,
                                 address=daemon.address) as loader:
        batches = [batch.marked for batch in loader]
        assert len(batches) == len(seen) == len(loader) and all(batches)


def test_batches_answer_pygs_methods_without_pyg(daemon):
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], batch_size=50, dataset="tiny",
                                 address=daemon.address) as loader:
        batch = next(iter(loader))
        assert batch.to("cpu") is batch and batch.num_nodes == len(batch.n_id)
        assert {"x", "edge_index", "y", "n_id", "batch_size"} <= set(batch.keys())
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes=("paper", "train"), batch_size=32,
                                 dataset="mag", address=daemon.address) as loader:
        batch = next(iter(loader))
        node_types, edge_types = batch.metadata()
        assert "paper" in node_types and WRITES in edge_types
        assert batch.num_nodes == sum(len(batch[t].n_id) for t in node_types)
        assert batch.to("cpu") is batch and "edge_index" in batch.keys()
    with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=(WRITES, "train"), batch_size=16,
                                     dataset="mag", address=daemon.address) as loader:
        batch = next(iter(loader))
        assert batch[WRITES].input_id.shape == (16,)


def test_input_id_is_each_seeds_position_in_its_input(daemon):
    train = np.load(daemon.tiny / "train.npy")
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes="train", batch_size=64, shuffle=True,
                                 dataset="tiny", address=daemon.address) as loader:
        positions = []
        for batch in loader:
            assert np.array_equal(train[batch.input_id.numpy()], batch.n_id[:batch.batch_size].numpy())
            positions += batch.input_id.tolist()
    assert sorted(positions) == list(range(len(train)))  # each position once in an epoch
    ids = torch.tensor([9, 3, 3, 40, 7, 1])
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes=ids, batch_size=4, dataset="tiny",
                                 address=daemon.address) as loader:
        for batch in loader:
            assert torch.equal(ids[batch.input_id], batch.n_id[:batch.batch_size].long())
    papers = np.load(daemon.data / "paper.valid.npy")
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes=("paper", "valid"), batch_size=16,
                                 dataset="mag", address=daemon.address) as loader:
        batch = next(iter(loader))
        seeds = batch["paper"]
        assert np.array_equal(papers[seeds.input_id.numpy()], seeds.n_id[:seeds.batch_size].numpy())
    with gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=64, fanouts=[2], output="numpy",
                     copy=True) as loader:  # copied batches carry theirs
        batches = list(loader)
    assert sorted(i for b in batches for i in b.input_id.tolist()) == list(range(len(train)))


def test_errors_about_the_arguments_are_value_errors_as_pygs(daemon):
    with pytest.raises(ValueError) as error:  # gnnd found it: a GnndError too, code kept
        gnnd.pyg.NeighborLoader(None, num_neighbors=[2], batch_size=8, dataset="nosuch", address=daemon.address)
    assert isinstance(error.value, gnnd.GnndError) and error.value.code == "NOT_FOUND"
    with pytest.raises(ValueError, match="fanouts\\[1\\] = -3"):
        gnnd.pyg.NeighborLoader(None, num_neighbors=[2, -3], batch_size=8, dataset="tiny", address=daemon.address)
    with pytest.raises(gnnd.GnndError) as error:  # not the arguments' fault: no ValueError
        gnnd.pyg.NeighborLoader(None, num_neighbors=[2], batch_size=8, dataset="tiny", address="unix:/nonexistent",
                                timeout_ms=200)
    assert error.value.code == "UNAVAILABLE" and not isinstance(error.value, ValueError)


def test_no_hops_or_zero_fanouts_give_the_seeds_alone(daemon):
    base = dict(batch_size=16, dataset="tiny", address=daemon.address)
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[], **base) as loader:  # PyG: no hops
        for batch in loader:
            assert batch.num_sampled_nodes == [batch.batch_size] and batch.num_sampled_edges == []
            assert len(batch.n_id) == batch.batch_size and batch.edge_index.shape == (2, 0)
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[0], **base) as loader:
        batch = next(iter(loader))
        assert batch.num_sampled_nodes == [16, 0] and batch.num_sampled_edges == [0]
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[3, 0], **base) as loader:
        batch = next(iter(loader))
        assert batch.num_sampled_edges[0] > 0 and batch.num_sampled_edges[1] == 0
        assert batch.num_sampled_nodes[2] == 0 and batch.edge_index.shape[1] == batch.num_sampled_edges[0]
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[], input_nodes=("paper", "train"), batch_size=16,
                                 dataset="mag", address=daemon.address) as loader:
        batch = next(iter(loader))
        assert batch["paper"].num_sampled_nodes == [16] and len(batch["paper"].n_id) == 16
        assert all(batch[t].num_sampled_edges == [] and batch[t].edge_index.shape == (2, 0)
                   for t in batch.edge_types)
    with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[], edge_label_index=(WRITES, "train"), batch_size=8,
                                     dataset="mag", address=daemon.address) as loader:
        batch = next(iter(loader))
        assert batch[WRITES].edge_label_index.shape == (2, 8) and batch[WRITES].num_sampled_edges == []


def test_two_part_edge_types_name_the_one_relation_between_them(daemon):
    with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=(("author", "paper"), "train"),
                                     batch_size=8, dataset="mag", address=daemon.address) as loader:
        assert loader.edge_type == WRITES
        assert batch_pairs_shape(next(iter(loader))) == (2, 8)
    with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=("author", "paper"), batch_size=8,
                                     dataset="mag", address=daemon.address) as loader:
        assert loader.edge_type == WRITES  # an edge type alone: its train split
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[1], batch_size=8, input_nodes=("paper", "train"),
                                 dataset="mag", address=daemon.address) as loader:
        edge_types = next(iter(loader)).edge_types
    cites = ("paper", "cites", "paper")
    fanouts = {et[::2] if et == cites else et: [3 if et == cites else 0] for et in edge_types}
    assert ("paper", "paper") in fanouts
    with gnnd.pyg.NeighborLoader(None, num_neighbors=fanouts, batch_size=8, input_nodes=("paper", "train"),
                                 dataset="mag", address=daemon.address) as loader:
        batch = next(iter(loader))
        assert batch[WRITES].edge_index.shape == (2, 0)
        assert batch[cites].edge_index.shape[1] > 0  # the one relation paper -> paper
    with pytest.raises(ValueError, match="or src___dst where one relation links them"):
        gnnd.pyg.NeighborLoader(None, num_neighbors={("paper", "author"): [3]}, batch_size=8,
                                input_nodes=("paper", "train"), dataset="mag", address=daemon.address)


def batch_pairs_shape(batch):
    return tuple(batch[WRITES].edge_label_index.shape)


def test_calling_a_loader_gives_the_batch_of_those_inputs_as_pygs(daemon):
    ids = torch.tensor([9, 3, 40, 7, 1, 22])
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes=ids, batch_size=4, dataset="tiny",
                                 address=daemon.address, transform=lambda b: b) as loader:
        batch = loader([4, 0])
        assert batch.n_id[:2].tolist() == [1, 9] and batch.input_id.tolist() == [4, 0] and batch.batch_size == 2
        edges = batch.edge_index.clone()
        for _ in loader:  # the called batch owns its tensors: the loader's own batches leave it as it was
            pass
        assert batch.n_id[:2].tolist() == [1, 9] and torch.equal(batch.edge_index, edges)
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes="all", batch_size=4, dataset="tiny",
                                 address=daemon.address) as loader:
        assert loader([0]).n_id[:1].tolist() == [0]  # every node: positions are ids (PyG's loader([0]))
    n = int((daemon.tiny / "manifest.textproto").read_text().split("num_nodes:")[1].split()[0])
    mask = torch.zeros(n, dtype=torch.bool)
    mask[[5, 17, 30]] = True
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes=mask, batch_size=4, dataset="tiny",
                                 address=daemon.address) as loader:
        batch = loader([2, 1])  # a mask's input_id is the node (PyG's)
        assert batch.n_id[:2].tolist() == [30, 17] and batch.input_id.tolist() == [30, 17]
    with pytest.raises(ValueError, match="the split 'train', whose ids gnnd holds"):
        gnnd.pyg.NeighborLoader(None, num_neighbors=[2], batch_size=4, dataset="tiny", address=daemon.address)([0])
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes=("paper", None), batch_size=4, dataset="mag",
                                 address=daemon.address) as loader:
        batch = loader([3, 8])
        assert batch["paper"].n_id[:2].tolist() == [3, 8] and batch["paper"].input_id.tolist() == [3, 8]
    pairs = torch.tensor([[0, 1, 2], [4, 5, 6]])
    with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=(WRITES, pairs), batch_size=2,
                                     dataset="mag", address=daemon.address) as loader:
        batch = loader([2])
        label = batch[WRITES].edge_label_index
        assert batch["author"].n_id[label[0]].tolist() == [2] and batch["paper"].n_id[label[1]].tolist() == [6]
        assert batch[WRITES].input_id.tolist() == [2]


class NegativeSampling:  # PyG's torch_geometric.sampler.NegativeSampling
    def __init__(self, mode, amount=1, src_weight=None, dst_weight=None):
        self.mode, self.amount, self.src_weight, self.dst_weight = mode, amount, src_weight, dst_weight


def test_weighted_negatives_draw_each_endpoint_in_proportion_as_pygs(daemon):
    """PyG's src_weight / dst_weight: each negative endpoint drawn in proportion (weight 0 never); a triplet's
    src_weight unused (its source is its positive's), as PyG's."""
    authors, papers = node_count(daemon, "author"), node_count(daemon, "paper")
    src_weight, dst_weight = torch.zeros(authors), torch.zeros(papers)
    src_weight[[5, 9]] = torch.tensor([1.0, 3.0])
    dst_weight[[3, 7, 11]] = torch.tensor([0.5, 0.25, 2.0])
    base = dict(num_neighbors=[2], edge_label_index=(WRITES, "train"), batch_size=16, dataset="mag",
                address=daemon.address)
    given = dict(mode="binary", amount=2, src_weight=src_weight, dst_weight=dst_weight)
    for disjoint in (False, True):
        with gnnd.pyg.LinkNeighborLoader(None, neg_sampling=given, disjoint=disjoint, **base) as loader:
            for batch, _ in zip(loader, range(3)):
                store, positives = batch[WRITES], len(batch[WRITES].input_id)
                negatives = store.edge_label_index[:, positives:]
                assert negatives.shape[1] == 2 * positives
                assert set(batch["author"].n_id[negatives[0]].tolist()) <= {5, 9}
                assert set(batch["paper"].n_id[negatives[1]].tolist()) <= {3, 7, 11}
    assert given["src_weight"] is src_weight  # the caller's dict as given
    triplet = NegativeSampling("triplet", 3, src_weight=src_weight, dst_weight=dst_weight)
    with gnnd.pyg.LinkNeighborLoader(None, neg_sampling=triplet, **base) as loader:
        batch = next(iter(loader))
        assert set(batch["paper"].n_id[batch["paper"].dst_neg_index.reshape(-1)].tolist()) <= {3, 7, 11}


def test_bad_negative_weights_and_amounts_are_refused_saying_why(daemon):
    base = dict(num_neighbors=[2], edge_label_index=(WRITES, "train"), batch_size=8, dataset="mag",
                address=daemon.address)
    papers = node_count(daemon, "paper")
    cases = [(NegativeSampling("binary", dst_weight=torch.ones(10)),
              f"The 'dst_weight' attribute needs to match the number of destination nodes {papers} (got 10)"),
             (dict(mode="binary", dst_weight=-torch.ones(papers)),
              "open.neg_dst_weight[0] = -1 (weights are finite and at least 0)"),
             (dict(mode="triplet", amount=0.5), "The attribute 'amount' needs to be an integer for "
                                                "'NegativeSampling' with 'triplet' negative sampling (got 0.5)."),
             (dict(mode="binary", amount=0), "The attribute 'amount' needs to be positive for 'NegativeSampling' "
                                             "(got 0)")]
    for neg_sampling, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            gnnd.pyg.LinkNeighborLoader(None, neg_sampling=neg_sampling, **base)
    with gnnd.pyg.LinkNeighborLoader(None, neg_sampling=NegativeSampling("binary", 2), **base) as loader:
        assert next(iter(loader))[WRITES].edge_label_index.shape == (2, 24)


def test_fractional_amounts_draw_the_ceiling_of_their_share_as_pygs(daemon):
    """PyG's binary negatives of a fractional amount: math.ceil(P x amount) a batch of P positives."""
    pairs = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
    base = dict(num_neighbors=[2], edge_label_index=(WRITES, pairs), batch_size=4, dataset="mag",
                address=daemon.address)

    def check(batch, amount, disjoint):
        store = batch[WRITES]
        positives = len(store.input_id)
        negatives = math.ceil(positives * amount)
        assert store.edge_label_index.shape == (2, positives + negatives)
        assert store.edge_label.tolist() == [1.0] * positives + [0.0] * negatives
        sources = batch["author"].n_id[store.edge_label_index[0, :positives]]
        assert sources.tolist() == pairs[0, store.input_id].tolist()
        if disjoint:  # negative k is positive k % P's subgraph (PyG's batch % num_pos)
            subgraphs = batch["author"].batch[store.edge_label_index[0]]
            assert subgraphs.tolist() == [k % positives for k in range(positives + negatives)]
        return positives

    binary = dict(mode="binary", amount=1.5)
    for arguments, amount in [(dict(neg_sampling_ratio=0.5), 0.5), (dict(neg_sampling=binary), 1.5)]:
        for disjoint in (False, True):
            with gnnd.pyg.LinkNeighborLoader(None, disjoint=disjoint, **arguments, **base) as loader:
                # Checked batch by batch: a batch's views are valid until the next one.
                assert [check(batch, amount, disjoint) for batch in loader] == [4, 4, 3]


def test_given_pairs_take_their_labels_as_pygs(daemon):
    pairs = torch.tensor([[0, 1, 2, 3, 4, 5], [4, 5, 6, 7, 8, 9]])
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    base = dict(num_neighbors=[2], edge_label_index=(WRITES, pairs), batch_size=6, dataset="mag",
                address=daemon.address)
    with gnnd.pyg.LinkNeighborLoader(None, edge_label=labels, **base) as loader:
        batch = next(iter(loader))[WRITES]  # no negatives: the labels as given
        assert batch.edge_label.tolist() == labels[batch.input_id].tolist()
    with gnnd.pyg.LinkNeighborLoader(None, edge_label=labels, neg_sampling="binary", **base) as loader:
        batch = next(iter(loader))[WRITES]  # binary: least label 0, so + 1; the negatives 0
        assert batch.edge_label.tolist() == (labels[batch.input_id] + 1).tolist() + [0] * 6
        called = loader([4, 0])[WRITES]  # loader(index): those pairs' labels among all of them
        assert called.edge_label.tolist() == [2, 1, 0, 0]
    with gnnd.pyg.LinkNeighborLoader(None, edge_label=labels + 1, neg_sampling="binary", **base) as loader:
        assert next(iter(loader))[WRITES].edge_label[:6].min() == 1  # least 1: as given
    with gnnd.pyg.LinkNeighborLoader(None, **base) as loader:
        assert "edge_label" not in next(iter(loader))[WRITES]  # as PyG: no labels, no negatives
    with pytest.raises(ValueError, match="'edge_label' needs to be undefined for 'triplet'"):
        gnnd.pyg.LinkNeighborLoader(None, edge_label=labels, neg_sampling="triplet", **base)
    with pytest.raises(ValueError, match=r"edge_label: shape \(5,\), expected one label per pair"):
        gnnd.pyg.LinkNeighborLoader(None, edge_label=labels[:5], **base)
    with pytest.raises(ValueError, match="gnnd reads the labels of the edge split"):
        gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=(WRITES, "train"), edge_label=labels,
                                    dataset="mag", address=daemon.address)


def test_positional_arguments_are_in_pygs_order():
    import inspect
    node = list(inspect.signature(gnnd.pyg.NeighborLoader).parameters)
    link = list(inspect.signature(gnnd.pyg.LinkNeighborLoader).parameters)
    assert node[:4] == ["data", "num_neighbors", "input_nodes", "input_time"]  # PyG's; the rest by keyword
    assert link[:5] == ["data", "num_neighbors", "edge_label_index", "edge_label", "edge_label_time"]
    for signature in (gnnd.pyg.NeighborLoader, gnnd.pyg.LinkNeighborLoader):
        parameters = list(inspect.signature(signature).parameters.values())
        positional = [p for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD]
        assert len(positional) == (4 if signature is gnnd.pyg.NeighborLoader else 5)


def test_fanouts_of_different_lengths_are_refused_in_pygs_words(daemon):
    with pytest.raises(ValueError, match="Number of hops must be the same across all edge types"):
        gnnd.pyg.NeighborLoader(None, num_neighbors={WRITES: [2, 2], ("paper", "cites", "paper"): [2]},
                                input_nodes=("paper", "train"), dataset="mag", address=daemon.address)
