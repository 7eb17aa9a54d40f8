"""Training on gnnd's batches learns what it should (CPU backend, Debian's torch, no PyG needed): a
GraphSAGE trained through gnnd.pyg.NeighborLoader reaches the validation accuracy of the same model and
seeds trained on an in-process Python neighbor sampler (within 1 point), clearly above a features-only MLP
(the generator plants homophilous classes, so neighborhoods carry signal). Also the PyG batch's shape,
DGL-style blocks, custom seed ids, and the epoch API that DDP loops use."""
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gnnd  # noqa: E402
import gnnd.dgl  # noqa: E402
from gnnd.pyg import NeighborLoader  # noqa: E402
from daemon_util import Daemon, generate  # noqa: E402
from training import MLP, SAGE, Dataset, ReferenceSampler, accuracy, train  # noqa: E402

FANOUTS, BATCH, EPOCHS, HIDDEN = [10, 5], 256, 4, 64


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("training")
    data = generate(root / "g", "--seed", 21, "--scale", 3)
    daemon = Daemon(root, f"--dataset=training={data}", name="training")
    yield daemon, Dataset(data)
    assert daemon.stop() == 0, daemon.output()


def loader(daemon, **kwargs):
    args = dict(num_neighbors=FANOUTS, batch_size=BATCH, input_nodes="train", shuffle=True, dataset="training",
                address=daemon.address, seed=5)
    return NeighborLoader(None, **{**args, **kwargs})


def test_gnnd_trains_as_well_as_a_reference_sampler_and_beats_an_mlp(served):
    daemon, dataset = served
    dim = dataset.features.shape[1]

    torch.manual_seed(0)
    with_gnnd = SAGE(dim, HIDDEN, dataset.num_classes, len(FANOUTS))
    start = time.time()
    with loader(daemon) as batches:
        def epoch(e):
            batches.set_epoch(e)
            return batches
        train(with_gnnd, epoch, EPOCHS)
    gnnd_seconds = time.time() - start

    torch.manual_seed(0)
    with_reference = SAGE(dim, HIDDEN, dataset.num_classes, len(FANOUTS))
    reference = ReferenceSampler(dataset, dataset.splits["train"], FANOUTS, BATCH, seed=5)
    start = time.time()
    train(with_reference, lambda e: reference, EPOCHS)
    reference_seconds = time.time() - start

    torch.manual_seed(0)
    mlp = MLP(dim, HIDDEN, dataset.num_classes, len(FANOUTS))
    features_only = ReferenceSampler(dataset, dataset.splits["train"], [], BATCH, seed=5)
    train(mlp, lambda e: features_only, EPOCHS)

    acc_gnnd, acc_reference, acc_mlp = (accuracy(m, dataset) for m in (with_gnnd, with_reference, mlp))
    print(f"validation accuracy: gnnd {acc_gnnd:.4f} ({gnnd_seconds:.1f} s), reference sampler "
          f"{acc_reference:.4f} ({reference_seconds:.1f} s), MLP {acc_mlp:.4f}")
    assert abs(acc_gnnd - acc_reference) <= 0.01
    assert acc_gnnd >= acc_mlp + 0.05


def test_labor_batches_train_as_well_as_uniform_ones(served):
    """The same model and seeds trained on LABOR batches (fewer nodes a batch, mean aggregation over the kept
    in-edges) reaches the uniform batches' validation accuracy within 1 point."""
    daemon, dataset = served
    dim = dataset.features.shape[1]
    accuracies, nodes = {}, {}
    for labor in (False, True):
        torch.manual_seed(0)
        model = SAGE(dim, HIDDEN, dataset.num_classes, len(FANOUTS))
        seen = []
        with loader(daemon, labor=labor) as batches:
            def epoch(e):
                batches.set_epoch(e)
                for batch in batches:
                    seen.append(len(batch.n_id))
                    yield batch
            train(model, epoch, EPOCHS)
        accuracies[labor], nodes[labor] = accuracy(model, dataset), sum(seen)
    print(f"validation accuracy: uniform {accuracies[False]:.4f}, LABOR {accuracies[True]:.4f}; nodes sampled "
          f"{nodes[False]} / {nodes[True]}")
    assert abs(accuracies[True] - accuracies[False]) <= 0.01
    assert nodes[True] < nodes[False]


def test_pyg_batch_shape(served):
    daemon, dataset = served
    with loader(daemon, batch_size=100, num_neighbors=[4, 3]) as batches:
        batch = next(iter(batches))
        assert batch.batch_size == 100 == batch.num_sampled_nodes[0]
        assert len(batch.num_sampled_nodes) == 3 and len(batch.num_sampled_edges) == 2
        assert batch.edge_index.dtype == torch.int64 and batch.edge_index.shape == (2, sum(batch.num_sampled_edges))
        assert batch.x.shape == (sum(batch.num_sampled_nodes), dataset.features.shape[1])
        n_id = batch.n_id
        assert torch.equal(batch.x, dataset.features[n_id])
        assert torch.equal(batch.y, dataset.labels[n_id[:100]])
        # Hop-ordered as trim_to_layer needs: the edges of hops 1..h run from nodes of hops 0..h to nodes of
        # hops 0..h-1, so dropping the last hops' nodes and edges leaves a consistent graph.
        for h in (1, 2):
            edges = sum(batch.num_sampled_edges[:h])
            assert int(batch.edge_index[0, :edges].max()) < sum(batch.num_sampled_nodes[:h + 1])
            assert int(batch.edge_index[1, :edges].max()) < sum(batch.num_sampled_nodes[:h])
        # Every edge is an in-edge of its destination.
        src, dst = n_id[batch.edge_index[0]].numpy(), n_id[batch.edge_index[1]].numpy()
        for s, d in zip(src[:200], dst[:200]):
            assert s in dataset.indices[dataset.indptr[d]:dataset.indptr[d + 1]]


def test_pyg_edge_index_is_both_edge_arrays_in_one_copy(served):
    daemon, _ = served
    def loader():
        return gnnd.Loader(address=daemon.address, dataset="training", batch_size=50, fanouts=[4, 3], seed=3,
                           output="torch", num_slots=2)
    with loader() as paired, loader() as plain:
        paired._edge_pairs = True  # as gnnd.pyg.NeighborLoader asks
        lengths = set()
        for _, batch, expected in zip(range(6), paired, plain):  # both slots, several edge counts
            assert batch._edge_pair is not None and "edge_src" not in batch.__dict__  # made only if asked for
            edge_index = gnnd.pyg.to_pyg(batch)["edge_index"]
            assert edge_index.is_contiguous() and edge_index.dtype == torch.int64
            assert torch.equal(edge_index, torch.stack((expected.edge_src, expected.edge_dst)).long())
            assert torch.equal(batch.edge_src, expected.edge_src) and torch.equal(batch.edge_dst, expected.edge_dst)
            lengths.add(len(expected.edge_src))
        assert len(lengths) > 1


def test_dgl_blocks_are_slices_outermost_first(served):
    daemon, _ = served
    with gnnd.Loader(address=daemon.address, dataset="training", batch_size=64, fanouts=[4, 3], output="torch") as batches:
        batch = next(iter(batches))
        first, last = gnnd.dgl.blocks(batch)
        nodes, edges = batch.nodes_per_hop, batch.edges_per_hop
        assert (first.num_src_nodes, first.num_dst_nodes, first.num_edges()) == (sum(nodes), nodes[0] + nodes[1],
                                                                                 sum(edges))
        assert (last.num_src_nodes, last.num_dst_nodes, last.num_edges()) == (nodes[0] + nodes[1], 64, edges[0])
        assert last.src.data_ptr() == batch.edge_src.data_ptr()  # a view of the slot, not a copy
        assert int(last.dst.max()) < last.num_dst_nodes and int(last.src.max()) < last.num_src_nodes
        assert int(first.dst.max()) < first.num_dst_nodes


def test_seed_ids_and_masks_as_input_nodes(served):
    daemon, dataset = served
    ids = torch.tensor([5, 17, 17, 3, 99])  # duplicates are kept, as PyG keeps them
    with loader(daemon, input_nodes=ids, batch_size=2, shuffle=False) as batches:
        assert len(batches) == 3
        seen = [int(v) for batch in batches for v in batch.n_id[:batch.batch_size]]
        assert seen == ids.tolist()
    mask = torch.zeros(dataset.num_nodes, dtype=torch.bool)
    mask[[7, 8, 9]] = True
    with loader(daemon, input_nodes=mask, batch_size=8, shuffle=False) as batches:
        assert [sorted(batch.n_id[:batch.batch_size].tolist()) for batch in batches] == [[7, 8, 9]]
    with pytest.raises(gnnd.GnndError, match=r"open.seed_ids\[1\] = -4 \(not a node of 'training'"):
        loader(daemon, input_nodes=torch.tensor([1, -4]))
    with loader(daemon, replace=True, batch_size=8) as batches:  # served: with replacement (test_replace.py)
        assert next(iter(batches)).edge_index.shape[1] > 0


def test_repeated_seed_ids_beyond_the_graph_size(served):
    """A seed list may repeat a node: a batch can hold more seed entries, and hop-1 edges, than the graph
    has; each entry is expanded, and the slot is sized for it."""
    daemon, dataset = served
    degrees = np.diff(dataset.indptr)
    hub, n = int(degrees.argmax()), dataset.num_nodes
    ids = torch.full((n + 10,), hub)
    with loader(daemon, input_nodes=ids, batch_size=n + 10, num_neighbors=[-1, 2], shuffle=False,
                num_slots=1) as batches:
        batch = next(iter(batches))
        assert batch.batch_size == n + 10 and bool((batch.n_id[:n + 10] == hub).all())
        assert batch.num_sampled_edges[0] == (n + 10) * int(degrees[hub])
        reached = batch.n_id[n + 10:].tolist()
        assert len(reached) == len(set(reached)) and hub not in reached and len(reached) > 0
        assert torch.equal(batch.x, dataset.features[batch.n_id])


def test_an_epoch_left_early_is_finished_before_the_next_one(served):
    """Breaking out of an epoch leaves batches in gnnd's slots; the next iteration releases and drains them,
    then runs its epoch whole (with 2 slots, a batch not released would stall it)."""
    daemon, _ = served
    with loader(daemon, num_slots=2) as batches:
        whole = [batch.n_id[:batch.batch_size].clone() for batch in batches]
        for _, _ in zip(range(2), batches):  # epoch 1, left after 2 batches
            pass
        batches.set_epoch(0)
        again = [batch.n_id[:batch.batch_size].clone() for batch in batches]
        assert len(again) == len(whole) > 2 and all(torch.equal(a, w) for a, w in zip(again, whole))
        assert batches.epoch == 1


def test_epoch_api(served):
    """len() is the steps per epoch; set_epoch picks the shuffle order; several epochs run on one session;
    a loader re-created after a failure carries on from the epoch it was at."""
    daemon, dataset = served
    with loader(daemon, world_size=2, rank=1) as batches:
        steps = len(batches)
        assert steps == -(-((len(dataset.splits["train"]) + 1) // 2) // BATCH)
        orders = {}
        for e in (0, 1, 0):
            batches.set_epoch(e)
            seeds = [batch.n_id[:batch.batch_size].clone() for batch in batches]
            assert len(seeds) == steps
            orders.setdefault(e, []).append(torch.cat(seeds))
        assert torch.equal(orders[0][0], orders[0][1])  # the same epoch, the same order
        assert not torch.equal(orders[0][0], orders[1][0])
    with loader(daemon, world_size=2, rank=1, epoch=1) as again:  # a new session picks up at epoch 1
        assert torch.equal(torch.cat([b.n_id[:b.batch_size].clone() for b in again]), orders[1][0])
