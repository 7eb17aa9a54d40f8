"""Temporal sessions end to end (time_attr, temporal_strategy, seed times, disjoint batches): every sampled edge
of every seed's subgraph is no newer than that seed, each node gets exactly min(fanout, candidates), "last"
takes the most recent, seed times come from seed_times, the split's times or the seed's own; gnnd.pyg puts
batch and seed_time where PyG does; bad requests are refused naming what is wrong. Run by ctest with GNNCTL,
GNND and GNND_CLIENT_LIBRARY set."""
import re

import numpy as np
import pytest

import gnnd
import gnnd.pyg
from daemon_util import Daemon, generate, run_gnnctl
from temporal_util import Csc, timed_edge_list

N, E = 400, 3200


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """An edge list with random node times, an int64 edge attribute time and a float one, splits with times;
    and a generated typed graph with times; served by one gnnd (CPU)."""
    tmp = tmp_path_factory.mktemp("temporal")
    timed_edge_list(tmp, tmp / "homo", N, E)
    generate(tmp / "mag", "--preset", "mag", "--scale", "0.002", "--seed", "5", "--add-reverse", "--temporal")
    daemon = Daemon(tmp, f"--dataset=homo={tmp / 'homo'}", f"--dataset=mag={tmp / 'mag'}")
    yield daemon, tmp
    assert daemon.stop() == 0, daemon.output()


def check(batch, csc, fanouts, edge_level, strategy, seed_times, window=None):
    """Every rule of one homogeneous temporal batch against the CSC."""
    n_seeds = batch.nodes_per_hop[0]
    assert np.array_equal(batch.batch[:n_seeds], np.arange(n_seeds))
    np.testing.assert_array_equal(batch.seed_time, seed_times)
    assert np.all(batch.batch[batch.edge_src] == batch.batch[batch.edge_dst]), "an edge between subgraphs"
    pairs = set(zip(batch.batch.tolist(), batch.node_ids.tolist()))
    assert len(pairs) == len(batch.node_ids), "a node twice in its subgraph"
    begin, first = 0, 0
    for hop, fanout in enumerate(fanouts):
        frontier = range(first, first + batch.nodes_per_hop[hop])
        edges = slice(begin, begin + batch.edges_per_hop[hop])
        drawn = {}
        for k, v in zip(range(edges.start, edges.stop), batch.edge_dst[edges]):
            drawn.setdefault(int(v), set()).add(int(batch.e_id[k]))
        for v in frontier:
            t = int(batch.seed_time[batch.batch[v]])
            candidates = csc.candidates(batch.node_ids[v], t, edge_level, window)
            got = drawn.get(v, set())
            assert len(got) == min(fanout, len(candidates)), (v, len(got), len(candidates))
            assert got <= {i for _, i in candidates}, "an edge newer than its seed"
            if strategy == "last":
                assert got == {i for _, i in sorted(candidates, reverse=True)[:len(got)]}
        begin, first = edges.stop, first + batch.nodes_per_hop[hop]


@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("time_attr", ["node_time", "time"])
def test_seed_ids_with_times(served, strategy, time_attr):
    daemon, tmp = served
    csc = Csc(tmp / "homo")
    seeds = np.array([5, 17, 17, 230, 399, 0, 64, 128, 256, 311])
    times = np.array([900, 10, 500, 700, 999, 300, 0, 650, 800, 450])
    loader = gnnd.Loader(address=daemon.address, dataset="homo", seed_ids=seeds, seed_times=times, batch_size=4,
                         fanouts=[4, 3], seed=2, output="numpy", copy=True, time_attr=time_attr,
                         temporal_strategy=strategy)
    seen = 0
    for batch in loader:
        seed_times = times[batch.input_id]
        check(batch, csc, [4, 3], time_attr == "time", strategy, seed_times)
        seen += batch.nodes_per_hop[0]
    loader.close()
    assert seen == len(seeds)


@pytest.mark.parametrize("window", [0, 150])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("time_attr", ["node_time", "time"])
def test_a_time_window_keeps_only_in_edges_from_seed_time_less_it(served, strategy, time_attr, window):
    """time_window=W: a node's candidates are its in-edges (node times: neighbors) of time t - W to t; each draws
    min(fanout, candidates) of them, "last" the most recent; fewer edges than without a window."""
    daemon, tmp = served
    csc = Csc(tmp / "homo")
    seeds = np.array([5, 17, 17, 230, 399, 0, 64, 128, 256, 311])
    times = np.array([900, 10, 500, 700, 999, 300, 0, 650, 800, 450])
    edges = {}
    for w in (window, None):
        loader = gnnd.Loader(address=daemon.address, dataset="homo", seed_ids=seeds, seed_times=times, batch_size=4,
                             fanouts=[6, 4], seed=2, output="numpy", copy=True, time_attr=time_attr,
                             temporal_strategy=strategy, time_window=w)
        edges[w] = 0
        for batch in loader:
            check(batch, csc, [6, 4], time_attr == "time", strategy, times[batch.input_id], w)
            edges[w] += len(batch.edge_src)
        loader.close()
    assert edges[window] < edges[None], edges


def test_pyg_loaders_take_time_window(served):
    """gnnd.pyg's NeighborLoader and LinkNeighborLoader take time_window and give the batches gnnd.Loader gives."""
    daemon, tmp = served
    seeds, times = np.array([5, 17, 230, 399]), np.array([900, 10, 700, 999])
    loader = gnnd.pyg.NeighborLoader(None, [4, 3], input_nodes=seeds, input_time=times, batch_size=4,
                                     dataset="homo", address=daemon.address, time_attr="time", time_window=100)
    data = next(iter(loader))
    plain = gnnd.Loader(address=daemon.address, dataset="homo", seed_ids=seeds, seed_times=times, batch_size=4,
                        fanouts=[4, 3], output="numpy", copy=True, time_attr="time", time_window=100, shuffle=False)
    batch = next(iter(plain))
    plain.close()
    np.testing.assert_array_equal(data.n_id.numpy(), batch.node_ids)
    np.testing.assert_array_equal(data.e_id.numpy(), batch.e_id)
    with pytest.raises(ValueError, match="time_window is temporal sampling's: set time_attr"):
        gnnd.pyg.NeighborLoader(None, [4], input_nodes=seeds, dataset="homo", address=daemon.address, time_window=5)
    with pytest.raises(ValueError, match="time_window: -1"):
        gnnd.pyg.NeighborLoader(None, [4], input_nodes=seeds, input_time=times, dataset="homo",
                                address=daemon.address, time_attr="time", time_window=-1)
    # On the wire too: draw.temporal.time_window and the top-level alias, each checked by gnnd.
    for fields, words in (('draw { temporal { attr: "time" time_window: -3 } }', "open.draw.temporal.time_window = -3"),
                          ('time_attr: "time" time_window: -3', "open.time_window = -3"),
                          ("time_window: 3", "open.time_window is temporal sampling's")):
        with pytest.raises(gnnd.GnndError, match=words):
            gnnd.Loader(address=daemon.address, dataset="homo", batch_size=4, fanouts=[2], open_fields=fields)


def test_seed_times_come_from_the_split_else_the_nodes_own(served):
    daemon, tmp = served
    csc = Csc(tmp / "homo")
    split_times = np.load(tmp / "homo" / "train_time.npy")
    loader = gnnd.Loader(address=daemon.address, dataset="homo", split="train", batch_size=64, fanouts=[3, 2],
                         seed=4, output="numpy", copy=True, time_attr="time")
    for batch in loader:
        check(batch, csc, [3, 2], True, "uniform", split_times[batch.input_id])
    loader.close()
    ids = np.array([3, 40, 77])  # seed ids without times: each one's own node time
    loader = gnnd.Loader(address=daemon.address, dataset="homo", seed_ids=ids, batch_size=8, fanouts=[5],
                         output="numpy", copy=True, time_attr="node_time", temporal_strategy="last")
    batch = next(iter(loader))
    check(batch, csc, [5], False, "last", csc.node_time[ids[batch.input_id]])
    loader.close()


def test_disjoint_without_time(served):
    daemon, tmp = served
    loader = gnnd.Loader(address=daemon.address, dataset="homo", seed_ids=np.array([7, 7, 9]), batch_size=3,
                         fanouts=[3, 2], output="numpy", copy=True, disjoint=True)
    batch = next(iter(loader))
    assert not hasattr(batch, "seed_time")
    np.testing.assert_array_equal(batch.node_ids[:3], [7, 7, 9])
    np.testing.assert_array_equal(batch.batch[:3], [0, 1, 2])
    assert np.all(batch.batch[batch.edge_src] == batch.batch[batch.edge_dst])
    # Seed 7 twice: two subgraphs, each with node 7's in-neighbors drawn on its own.
    assert len(set(zip(batch.batch.tolist(), batch.node_ids.tolist()))) == len(batch.node_ids)
    loader.close()


def test_pyg_loaders_put_batch_and_seed_time_where_pyg_does(served):
    daemon, tmp = served
    seeds, times = np.arange(0, 40), np.arange(0, 40) * 20
    loader = gnnd.pyg.NeighborLoader(num_neighbors=[3, 2], batch_size=16, dataset="homo", address=daemon.address,
                                     input_nodes=seeds, input_time=times, time_attr="time",
                                     temporal_strategy="last")
    batch = next(iter(loader))
    assert batch.batch.shape == batch.n_id.shape and batch.seed_time.shape == (batch.batch_size,)
    np.testing.assert_array_equal(batch.seed_time.numpy(), times[batch.input_id.numpy()])
    src_subgraph = batch.batch[batch.edge_index[0]]
    assert bool((src_subgraph == batch.batch[batch.edge_index[1]]).all())
    assert bool((batch.time <= batch.seed_time[batch.batch[batch.edge_index[1]]]).all())  # the edge attribute
    loader.close()
    typed = gnnd.pyg.NeighborLoader(num_neighbors=[3, 2], batch_size=16, dataset="mag", address=daemon.address,
                                    input_nodes=("paper", "train"), time_attr="node_time")
    node_time = {t: np.load(tmp / "mag" / f"{t}.node_time.npy") for t in ("paper", "author", "field_of_study",
                                                                        "institution")}
    batch = next(iter(typed))
    paper = batch["paper"]
    np.testing.assert_array_equal(paper.seed_time.numpy(), node_time["paper"][paper.n_id[:paper.batch_size].numpy()])
    for edge_type in batch.edge_types:
        src, _, dst = edge_type
        index = batch[edge_type].edge_index
        s, d = batch[src].batch[index[0]], batch[dst].batch[index[1]]
        assert bool((s == d).all()), edge_type
        src_times = node_time[src][batch[src].n_id[index[0]].numpy()]
        assert np.all(src_times <= paper.seed_time.numpy()[s.numpy()]), edge_type
    typed.close()


def test_bad_temporal_requests_are_refused_naming_what_is_wrong(served):
    daemon, _ = served
    open_ = lambda **kw: gnnd.Loader(address=daemon.address, dataset="homo", batch_size=8, fanouts=[2],  # noqa: E731
                                     **kw)
    cases = [
        (dict(time_attr="when"), "open.draw.temporal.attr = 'when': the dataset has no such edge attribute"),
        (dict(time_attr="w"), "open.draw.temporal.attr = 'w': times are one int64 an edge; the dataset's is float32"),
        (dict(time_attr="time", temporal_strategy="first"), "temporal_strategy"),
        (dict(seed_ids=np.array([1, 2]), seed_times=np.array([5]), time_attr="time"), "1 times for 2 seed ids"),
        (dict(time_attr="time", weight_attr="w"), "weight_attr and time_attr: two draw policies"),
        (dict(split="train", open_fields="seed_times: [1]"), "seed_times is temporal sampling's"),
    ]
    for options, message in cases:
        with pytest.raises((gnnd.GnndError, ValueError)) as error:
            open_(**options)
        assert message in str(error.value), (options, str(error.value))
    with pytest.raises(ValueError, match="input_time with input_nodes='train'"):
        gnnd.pyg.NeighborLoader(num_neighbors=[2], batch_size=4, dataset="homo", address=daemon.address,
                                input_nodes="train", input_time=np.arange(300), time_attr="time")
    with pytest.raises(ValueError, match="'input_time' is set while 'time_attr' is not set"):  # PyG's words
        gnnd.pyg.NeighborLoader(num_neighbors=[2], batch_size=4, dataset="homo", address=daemon.address,
                                input_nodes=np.arange(3), input_time=np.arange(3))


def test_every_node_with_a_time_each_is_pygs_input_time(served):
    """input_nodes="all" (PyG's None) with input_time: node v is a seed at time input_time[v], as PyG's."""
    daemon, _ = served
    times = np.arange(40) * 3
    with gnnd.pyg.NeighborLoader(num_neighbors=[2], batch_size=8, dataset="homo", address=daemon.address,
                                 input_nodes="all", input_time=times, time_attr="time") as loader:
        assert len(loader) == 5  # 40 seeds: one per time given
        for batch in loader:
            seeds = batch.n_id[:batch.batch_size].numpy()
            assert np.array_equal(batch.seed_time.numpy(), times[seeds])


def test_time_orders_are_built_once_per_relation_and_time_source(served, tmp_path):
    """A dataset's time orders (4 bytes an edge) are built by its first temporal session through each time
    source and kept: two sessions by edge times and one by node times hold two orders."""
    _, tmp = served
    daemon = Daemon(tmp_path, f"--dataset=h={tmp / 'homo'}", name="orders")
    try:
        edges = len(np.load(tmp / "homo" / "indices.npy"))
        assert "time orders" not in daemon.gnnctl("datasets").stdout
        for attr in ("time", "time", "node_time"):
            with gnnd.Loader(address=daemon.address, dataset="h", split="train", batch_size=64, fanouts=[3],
                             output="numpy", time_attr=attr) as loader:
                next(iter(loader))
        assert f"time orders: {8 * edges} bytes" in daemon.gnnctl("datasets").stdout
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_features_on_storage_give_the_same_temporal_batches(served, tmp_path):
    _, tmp = served
    config = "\n".join([f'datasets {{ name: "mem" path: "{tmp / "homo"}" }}',
                        f'datasets {{ name: "disk" path: "{tmp / "homo"}" feature_cache: "1MiB" look_ahead: 2 }}'])
    daemon = Daemon(tmp_path, "--threads=2", config=config)
    try:
        names = ("node_ids", "edge_src", "edge_dst", "features", "e_id", "time", "batch", "seed_time")
        got = {}
        for window in (None, 200):
            for dataset in ("mem", "disk"):
                loader = gnnd.Loader(address=daemon.address, dataset=dataset, batch_size=32, fanouts=[4, 2], seed=3,
                                     output="numpy", copy=True, time_attr="time", temporal_strategy="uniform",
                                     time_window=window)
                got[dataset] = [[getattr(b, k) for k in names] for b in loader]
                loader.close()
            assert len(got["mem"]) == len(got["disk"]) > 0
            for a, b in zip(got["mem"], got["disk"]):
                for name, x, y in zip(names, a, b):
                    np.testing.assert_array_equal(x, y, err_msg=name)
    finally:
        assert daemon.stop() == 0, daemon.output()


@pytest.mark.parametrize("draw,window", [('time_attr: "time" temporal_strategy: "last"', None),
                                         ('draw { temporal { attr: "time" strategy: "last" time_window: 300 } }', 300)])
def test_gnnctl_sample_gives_the_sessions_temporal_batch(served, tmp_path, draw, window):
    """`gnnctl sample` with the open request's temporal fields (seed ids and their times; the draw by its API 1.x
    fields or as OpenSession.draw with a window) writes the batch a session of the same request gets."""
    daemon, tmp = served
    seeds, times = np.array([4, 90, 90, 301, 17]), np.array([500, 20, 900, 999, 0])
    fields = f'seed_ids: [{",".join(map(str, seeds))}] seed_times: [{",".join(map(str, times))}] {draw}'
    run_gnnctl("sample", f"--dataset={tmp / 'homo'}", "--split=", "--batch-size=5", "--fanouts=4,3", "--seed=8", "--step=0",
               f"--open_fields={fields}", f"--out={tmp_path / 'b.npz'}")
    want = np.load(tmp_path / "b.npz")
    loader = gnnd.Loader(address=daemon.address, dataset="homo", seed_ids=seeds, seed_times=times, batch_size=5,
                         fanouts=[4, 3], seed=8, output="numpy", copy=True, time_attr="time",
                         temporal_strategy="last", time_window=window)
    batch = next(iter(loader))
    loader.close()
    assert "seed_time" in want.files and "batch" in want.files
    for name in want.files:
        np.testing.assert_array_equal(getattr(batch, name), want[name], err_msg=name)


def test_time_orders_count_against_the_limits_before_they_are_built(served, tmp_path):
    """A dataset's time order (4 bytes an edge, kept for its life) is built for the first session that draws
    through it: that session counts it and is refused before it is built where it does not fit."""
    _, tmp = served
    small = Daemon(tmp_path, f"--dataset=homo={tmp / 'homo'}", config="max_session_bytes: 2000")
    try:
        edges = int(re.search(r"\t(\d+) edges\t", small.gnnctl("datasets").stdout).group(1))
        with pytest.raises(gnnd.GnndError) as error:
            gnnd.Loader(address=small.address, dataset="homo", batch_size=4, fanouts=[2], time_attr="time")
        assert f", time orders to build {4 * edges}, " in error.value.message, error.value.message
        assert "time orders:" not in small.gnnctl("datasets").stdout  # nothing was built
        with pytest.raises(gnnd.GnndError) as error:  # no temporal rule: nothing to build, nothing said
            gnnd.Loader(address=small.address, dataset="homo", batch_size=4, fanouts=[2])
        assert "time orders" not in error.value.message, error.value.message
    finally:
        assert small.stop() == 0, small.output()
