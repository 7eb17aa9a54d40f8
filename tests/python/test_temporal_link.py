"""Temporal and disjoint link sessions end to end: hop 0 is every endpoint in pair order, each its own subgraph,
the pairs index it as PyG's arange does; every sampled edge of a subgraph is no newer than its pair, each node
gets exactly min(fanout, candidates); pair times come from the split (SPLIT_edge_time.npy) or edge_label_time;
with node times every negative is no newer than its pair; gnnd.pyg puts batch, edge_label_time and seed_time
where PyG does; bad requests are refused naming what is wrong. Run by ctest with GNNCTL, GNND and
GNND_CLIENT_LIBRARY set."""
import numpy as np
import pytest

import gnnd
import gnnd.pyg
from daemon_util import Daemon, generate, run_gnnctl
from temporal_util import Csc

N, E = 300, 2400


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """An edge list with node times and an int64 edge attribute time, edge splits with times (train without);
    a generated typed graph with node times; served by one gnnd (CPU)."""
    tmp = tmp_path_factory.mktemp("temporal_link")
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, N, E), rng.integers(0, N, E)
    np.save(tmp / "edges.npy", np.stack([src, dst]))
    np.save(tmp / "time.npy", rng.integers(0, 1000, E))
    np.save(tmp / "node_time.npy", rng.integers(100, 1000, N))  # pairs older than 100: no eligible negative
    np.save(tmp / "x.npy", rng.standard_normal((N, 8)).astype(np.float32))
    (tmp / "splits").mkdir()
    for name, count in (("train", 200), ("valid", 60)):
        np.save(tmp / "splits" / f"{name}.npy", rng.integers(0, N, (2, count)))
    np.save(tmp / "splits" / "valid_time.npy", rng.integers(0, 1000, 60))
    run_gnnctl("import", "--format", "edgelist", "--node-time", tmp / "node_time.npy", "--features", tmp / "x.npy",
               f"--edge-attr=time={tmp / 'time.npy'}", f"--edge-splits={tmp / 'splits'}", tmp / "edges.npy",
               tmp / "homo")
    generate(tmp / "mag", "--preset", "mag", "--scale", "0.002", "--seed", "5", "--add-reverse", "--temporal",
             "--link-relation=author___writes___paper")
    daemon = Daemon(tmp, f"--dataset=homo={tmp / 'homo'}", f"--dataset=mag={tmp / 'mag'}")
    yield daemon, tmp
    assert daemon.stop() == 0, daemon.output()


def check_graph(batch, csc, fanouts, edge_level, subgraph_time, window=None):
    """The sampled graph of one homogeneous disjoint batch: subgraphs closed, each node once in its subgraph,
    every node's draws exactly min(fanout, candidates) of its candidates for its subgraph's time."""
    assert np.all(batch.batch[batch.edge_src] == batch.batch[batch.edge_dst]), "an edge between subgraphs"
    assert len(set(zip(batch.batch.tolist(), batch.node_ids.tolist()))) == len(batch.node_ids)
    begin, first = 0, 0
    for hop, fanout in enumerate(fanouts):
        edges = slice(begin, begin + batch.edges_per_hop[hop])
        drawn = {}
        for k, v in zip(range(edges.start, edges.stop), batch.edge_dst[edges]):
            drawn.setdefault(int(v), set()).add(int(batch.e_id[k]))
        for v in range(first, first + batch.nodes_per_hop[hop]):
            candidates = {i for _, i in csc.candidates(batch.node_ids[v], subgraph_time[batch.batch[v]], edge_level,
                                                       window)}
            got = drawn.get(v, set())
            assert len(got) == min(fanout, len(candidates)) and got <= candidates, (v, got, candidates)
        begin, first = edges.stop, first + batch.nodes_per_hop[hop]


def test_split_pairs_with_their_times(served):
    daemon, tmp = served
    csc = Csc(tmp / "homo")
    pairs, times = np.load(tmp / "homo" / "valid_edges.npy"), np.load(tmp / "homo" / "valid_edge_time.npy")
    loader = gnnd.Loader(address=daemon.address, dataset="homo", edge_split="valid", batch_size=16, fanouts=[4, 3],
                         seed=3, output="numpy", copy=True, time_attr="time", neg_sampling="binary", neg_amount=2)
    seen = 0
    for batch in loader:
        p = len(batch.input_id)
        pair_time = np.concatenate([times[batch.input_id], np.tile(times[batch.input_id], 2)])
        np.testing.assert_array_equal(batch.edge_label_time, pair_time)
        n = len(pair_time)  # sources in pair order, then destinations: each entry its own subgraph
        np.testing.assert_array_equal(batch.edge_label_index, np.stack([np.arange(n), n + np.arange(n)], axis=1))
        np.testing.assert_array_equal(batch.node_ids[:p], pairs[0][batch.input_id])
        np.testing.assert_array_equal(batch.node_ids[n:n + p], pairs[1][batch.input_id])
        assert batch.nodes_per_hop[0] == 2 * n
        np.testing.assert_array_equal(batch.batch[:2 * n], np.arange(2 * n))
        check_graph(batch, csc, [4, 3], True, np.concatenate([pair_time, pair_time]))
        seen += p
    loader.close()
    assert seen == 60


@pytest.mark.parametrize("time_attr", ["time", "node_time"])
def test_a_time_window_in_link_batches(served, time_attr):
    """time_window in a link session: each subgraph's candidates are the in-edges from its pair's time less the
    window to its time."""
    daemon, tmp = served
    csc = Csc(tmp / "homo")
    times = np.load(tmp / "homo" / "valid_edge_time.npy")
    loader = gnnd.Loader(address=daemon.address, dataset="homo", edge_split="valid", batch_size=16, fanouts=[4, 3],
                         seed=3, output="numpy", copy=True, time_attr=time_attr, time_window=120,
                         neg_sampling="binary")
    seen = 0
    for batch in loader:
        pair_time = np.concatenate([times[batch.input_id], times[batch.input_id]])
        np.testing.assert_array_equal(batch.edge_label_time, pair_time)
        check_graph(batch, csc, [4, 3], time_attr == "time", np.concatenate([pair_time, pair_time]), 120)
        seen += len(batch.input_id)
    loader.close()
    assert seen == 60


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_node_times_keep_negatives_no_newer_than_their_pair(served, mode):
    daemon, tmp = served
    csc = Csc(tmp / "homo")
    rng = np.random.default_rng(5)
    pairs, times = rng.integers(0, N, (2, 120)), rng.integers(0, 1000, 120)
    loader = gnnd.Loader(address=daemon.address, dataset="homo", seed_edges=pairs, edge_label_time=times,
                         batch_size=40, fanouts=[3, 2], seed=1, output="numpy", copy=True, time_attr="node_time",
                         neg_sampling=mode, neg_amount=3, temporal_strategy="last")
    earliest = int(np.argmin(csc.node_time))  # PyG's stand-in where no node is old enough
    checked = 0
    for batch in loader:
        p, t = len(batch.input_id), times[batch.input_id]
        if mode == "binary":
            n = 4 * p
            src, dst = batch.node_ids[:n], batch.node_ids[n:2 * n]
            neg_time = np.tile(t, 3)  # negatives by round, as PyG's: negative j is positive j % p's
            negatives = [src[p:], dst[p:]]
            subgraph_time = np.concatenate([batch.edge_label_time, batch.edge_label_time])
        else:
            src, dst = batch.node_ids[:p], batch.node_ids[p:5 * p]
            assert batch.nodes_per_hop[0] == 5 * p
            neg_time = np.tile(t, 3)  # negatives by round, as PyG's: negative j is positive j % p's
            negatives = [dst[p:]]
            by_round = 2 * p + np.arange(3)[None, :] * p + np.arange(p)[:, None]  # PyG's arange().view(-1, p).t()
            np.testing.assert_array_equal(batch.dst_neg_index, by_round)
            subgraph_time = np.concatenate([t, t, neg_time])
        np.testing.assert_array_equal(batch.edge_label_time[:p], t)
        for ids in negatives:
            ok = (csc.node_time[ids] <= neg_time) | ((ids == earliest) & (neg_time < csc.node_time.min()))
            assert ok.all(), (ids[~ok], neg_time[~ok])
            checked += len(ids)
        check_graph(batch, csc, [3, 2], False, subgraph_time)
    loader.close()
    assert checked >= 360


def test_pyg_link_loader_puts_batch_and_times_where_pyg_does(served):
    daemon, tmp = served
    rng = np.random.default_rng(8)
    pairs, times = rng.integers(0, N, (2, 50)), rng.integers(0, 1000, 50)
    loader = gnnd.pyg.LinkNeighborLoader(num_neighbors=[3, 2], edge_label_index=pairs, edge_label_time=times,
                                         batch_size=20, neg_sampling=dict(mode="binary", amount=2),
                                         dataset="homo", address=daemon.address, time_attr="time")
    batch = next(iter(loader))
    p = len(batch.input_id)
    np.testing.assert_array_equal(batch.edge_label_time.numpy()[:p], times[batch.input_id.numpy()])
    n = batch.edge_label_index.shape[1]
    assert n == 3 * p
    # PyG's batch: each node's positive (batch % num_pos: negatives by round).
    positive = np.concatenate([np.arange(p), np.tile(np.arange(p), 2)])
    np.testing.assert_array_equal(batch.batch.numpy()[:2 * n], np.concatenate([positive, positive]))
    assert bool((batch.batch[batch.edge_index[0]] == batch.batch[batch.edge_index[1]]).all())
    assert bool((batch.time <= torch_times(times, batch)).all())
    loader.close()
    triplets = gnnd.pyg.LinkNeighborLoader(num_neighbors=[2], edge_label_index=pairs, edge_label_time=times,
                                           batch_size=20, neg_sampling="triplet", dataset="homo",
                                           address=daemon.address, time_attr="node_time")
    batch = next(iter(triplets))
    np.testing.assert_array_equal(batch.seed_time.numpy(), times[batch.input_id.numpy()])
    assert not hasattr(batch, "edge_label_time") or batch.edge_label_time is None
    triplets.close()


def torch_times(times, batch):
    """Each sampled edge's pair time, through its destination's positive."""
    import torch
    return torch.from_numpy(times)[batch.input_id][batch.batch[batch.edge_index[1]]]


def test_typed_link_subgraphs_share_a_pair(served):
    daemon, tmp = served
    node_time = {t: np.load(tmp / "mag" / f"{t}.node_time.npy") for t in ("paper", "author", "field_of_study",
                                                                        "institution")}
    rng = np.random.default_rng(2)
    edge_type = ("author", "writes", "paper")
    pairs = np.stack([rng.integers(0, len(node_time["author"]), 30), rng.integers(0, len(node_time["paper"]), 30)])
    times = rng.integers(0, len(node_time["paper"]), 30)
    loader = gnnd.pyg.LinkNeighborLoader(num_neighbors=[3, 2], edge_label_index=(edge_type, pairs),
                                         edge_label_time=times, batch_size=10, neg_sampling="binary",
                                         dataset="mag", address=daemon.address, time_attr="node_time")
    batch = next(iter(loader))
    store = batch[edge_type]
    p = len(store.input_id)
    np.testing.assert_array_equal(store.edge_label_time.numpy()[:p], times[store.input_id.numpy()])
    n = store.edge_label_index.shape[1]
    np.testing.assert_array_equal(store.edge_label_index.numpy(), np.stack([np.arange(n), np.arange(n)]))
    pair_time = store.edge_label_time.numpy()
    for et in batch.edge_types:
        src, _, dst = et
        index = batch[et].edge_index
        s, d = batch[src].batch[index[0]], batch[dst].batch[index[1]]
        assert bool((s == d).all()), et
        src_times = node_time[src][batch[src].n_id[index[0]].numpy()]
        assert np.all(src_times <= times[store.input_id.numpy()][s.numpy()]), et
    negatives = {"author": batch["author"].n_id[p:n].numpy(), "paper": batch["paper"].n_id[p:n].numpy()}
    for t, ids in negatives.items():  # node times are the ids: node 0 is no newer than any pair
        assert np.all(node_time[t][ids] <= pair_time[p:]), t
    loader.close()
    with gnnd.pyg.LinkNeighborLoader(num_neighbors=[2], edge_label_index=(edge_type, pairs), edge_label_time=times,
                                     batch_size=10, neg_sampling="triplet", dataset="mag", address=daemon.address,
                                     time_attr="node_time") as triplets:
        batch = next(iter(triplets))
        want = times[batch[edge_type].input_id.numpy()]
        for t in ("author", "paper"):  # each positive's time on both endpoint types' stores, as PyG's
            np.testing.assert_array_equal(batch[t].seed_time.numpy(), want, err_msg=t)
        assert "seed_time" not in batch[edge_type] and "edge_label_time" not in batch[edge_type]


def test_features_on_storage_give_the_same_temporal_link_batches(served, tmp_path):
    """A disjoint batch repeats nodes across subgraphs: on storage each row is read once and copied to every
    entry, the batches equal the in-memory ones."""
    _, tmp = served
    config = "\n".join([f'datasets {{ name: "mem" path: "{tmp / "homo"}" }}',
                        f'datasets {{ name: "disk" path: "{tmp / "homo"}" feature_cache: "1MiB" look_ahead: 2 }}'])
    daemon = Daemon(tmp_path, "--threads=2", config=config)
    names = ("node_ids", "edge_src", "edge_dst", "features", "e_id", "batch", "edge_label_index", "edge_label",
             "edge_label_time", "input_id")
    try:
        got = {}
        for dataset in ("mem", "disk"):
            loader = gnnd.Loader(address=daemon.address, dataset=dataset, edge_split="valid", batch_size=16,
                                 fanouts=[4, 2], seed=3, output="numpy", copy=True, time_attr="node_time",
                                 neg_sampling="binary")
            got[dataset] = [{k: getattr(b, k) for k in names} for b in loader]
            loader.close()
        assert len(got["mem"]) == len(got["disk"]) > 0
        for a, b in zip(got["mem"], got["disk"]):
            for name in names:
                np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_gnnctl_sample_gives_the_sessions_temporal_link_batch(served, tmp_path):
    daemon, tmp = served
    pairs, times = np.array([[4, 90, 90, 17], [5, 6, 6, 250]]), np.array([500, 20, 900, 999])
    fields = (f'seed_edges: [{",".join(map(str, pairs.reshape(-1)))}] '
              f'edge_label_time: [{",".join(map(str, times))}] time_attr: "node_time" neg_sampling: "triplet"')
    run_gnnctl("sample", f"--dataset={tmp / 'homo'}", "--split=", "--batch-size=4", "--fanouts=4,3", "--seed=8",
               "--step=0", f"--open_fields={fields}", f"--out={tmp_path / 'b.npz'}")
    want = np.load(tmp_path / "b.npz")
    loader = gnnd.Loader(address=daemon.address, dataset="homo", seed_edges=pairs, edge_label_time=times,
                         batch_size=4, fanouts=[4, 3], seed=8, output="numpy", copy=True, time_attr="node_time",
                         neg_sampling="triplet")
    batch = next(iter(loader))
    loader.close()
    assert "edge_label_time" in want.files and "batch" in want.files
    for name in want.files:
        np.testing.assert_array_equal(getattr(batch, name), want[name], err_msg=name)


def test_generated_link_splits_carry_their_edges_times(served):
    """`gnnctl generate --temporal --link-relation`: each split pair's time is its edge's (the later endpoint's
    id, as node times are the ids), and a session over the split takes them."""
    daemon, tmp = served
    key = "author___writes___paper"
    pairs, times = np.load(tmp / "mag" / f"{key}.valid_edges.npy"), np.load(tmp / "mag" / f"{key}.valid_edge_time.npy")
    np.testing.assert_array_equal(times, np.maximum(pairs[0], pairs[1]))
    loader = gnnd.pyg.LinkNeighborLoader(num_neighbors=[3, 2], edge_label_index=(("author", "writes", "paper"),
                                         "valid"), batch_size=32, dataset="mag", address=daemon.address,
                                         time_attr="node_time")
    batch = next(iter(loader))
    store = batch[("author", "writes", "paper")]
    np.testing.assert_array_equal(store.edge_label_time.numpy(), times[store.input_id.numpy()])
    loader.close()


def test_bad_temporal_link_requests_are_refused_naming_what_is_wrong(served):
    daemon, _ = served
    pairs = np.array([[1, 2], [3, 4]])

    def open_(**kw):
        return gnnd.Loader(address=daemon.address, dataset="homo", batch_size=8, fanouts=[2], **kw)

    cases = [
        (dict(edge_split="train", time_attr="time"), "the pairs have no times"),
        (dict(seed_edges=pairs, time_attr="time"), "give open.edge_label_time with seed_edges"),
        (dict(seed_edges=pairs, time_attr="time", open_fields="edge_label_time: [1]"),
         "1 times for 2 seed_edges pairs"),
        (dict(seed_edges=pairs, open_fields="edge_label_time: [1, 2]"), "edge_label_time is temporal sampling's"),
        (dict(seed_edges=pairs, time_attr="time", open_fields="seed_times: [1, 2]"),
         "seed_times are a node session's"),
        (dict(seed_edges=pairs, time_attr="node_time", edge_label_time=np.array([5, 6]), neg_sampling="binary",
              neg_dst_weight=np.ones(N)), "with time_attr \"node_time\": temporal negatives are drawn"),
    ]
    for options, message in cases:
        with pytest.raises((gnnd.GnndError, ValueError)) as error:
            open_(**options)
        assert message in str(error.value), (options, str(error.value))
    with pytest.raises(gnnd.GnndError, match="edge_label_time are a link session's"):
        gnnd.Loader(address=daemon.address, dataset="mag", node_type="paper", seed_ids=np.array([1]), batch_size=8,
                    fanouts=[2], time_attr="node_time", open_fields="edge_label_time: [1]")
    with pytest.raises(ValueError, match="edge_label_time: 1 times for 2 seed pairs"):
        open_(seed_edges=pairs, time_attr="time", edge_label_time=np.array([5]))
    with pytest.raises(ValueError, match="'edge_label_time' is set while 'time_attr' is not set"):  # PyG's words
        gnnd.pyg.LinkNeighborLoader(num_neighbors=[2], edge_label_index=pairs, edge_label_time=np.array([1, 2]),
                                    dataset="homo", address=daemon.address)
    with pytest.raises(ValueError, match="'edge_label_time' is not set while 'time_attr' is set"):
        gnnd.pyg.LinkNeighborLoader(num_neighbors=[2], edge_label_index=pairs, time_attr="time", dataset="homo",
                                    address=daemon.address)
