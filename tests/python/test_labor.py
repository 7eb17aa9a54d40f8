"""LABOR sessions end to end (labor, layer_dependency, batch_dependency): every sampled edge is an in-edge of its
destination carrying edge_weight = in-degree / fanout (1 where all are kept), a node keeps fanout in-edges on
average, the batches hold fewer nodes than the uniform rule's, gnnd.pyg puts edge_weight on Data and HeteroData,
link sessions sample by it too, storage = memory, gnnctl sample = the session, and bad requests are refused
naming what is wrong. Run by ctest with GNNCTL, GNND and GNND_CLIENT_LIBRARY set."""
import numpy as np
import pytest

import gnnd
import gnnd.dgl
import gnnd.pyg
from daemon_util import Daemon, generate, run_gnnctl

# prod's attributes but its own edge_weight, which a LABOR session refuses to carry (the batch's is LABOR's).
OTHER_ATTRS = dict(edge_attrs=["edge_feat"])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A generated products-like graph (with edge attributes: one is named edge_weight) with link splits, and a
    typed one; served by one gnnd (CPU)."""
    tmp = tmp_path_factory.mktemp("labor")
    generate(tmp / "prod", "--preset", "products", "--scale", "0.002", "--seed", "3", "--edge-attr")
    generate(tmp / "mag", "--preset", "mag", "--scale", "0.002", "--seed", "5", "--add-reverse", "--link-relation",
             "author___writes___paper")
    daemon = Daemon(tmp, f"--dataset=prod={tmp / 'prod'}", f"--dataset=mag={tmp / 'mag'}")
    yield daemon, tmp
    assert daemon.stop() == 0, daemon.output()


def in_degrees(path, prefix=""):
    indptr = np.load(path / f"{prefix}indptr.npy")
    return indptr, np.load(path / f"{prefix}indices.npy"), np.diff(indptr)


def check_homogeneous(batch, indptr, indices, degree, fanouts):
    """Every edge an in-edge of its destination, weighted degree / fanout, each hop's kept in-edges no more than
    a destination's degree; returns the mean edges per destination whose degree exceeds its fanout (per hop)."""
    u, v = batch.node_ids[batch.edge_src], batch.node_ids[batch.edge_dst]
    edges = set(zip(indices.tolist(), np.repeat(np.arange(len(degree)), degree).tolist()))
    assert all((a, b) in edges for a, b in zip(u.tolist(), v.tolist())), "an edge not in the graph"
    means, begin = [], 0
    for hop, fanout in enumerate(fanouts):
        hop_edges = slice(begin, begin + batch.edges_per_hop[hop])
        d = degree[v[hop_edges]]
        np.testing.assert_array_equal(batch.edge_weight[hop_edges],
                                      np.where(d > fanout, d.astype(np.float64) / fanout, 1.0).astype(np.float32))
        dst, kept = np.unique(batch.edge_dst[hop_edges], return_counts=True)
        big = degree[batch.node_ids[dst]] > fanout
        means.append(kept[big].mean() if big.any() else fanout)
        begin = hop_edges.stop
    return means


def test_node_batches_keep_fanout_in_edges_on_average_and_fewer_nodes(served):
    daemon, tmp = served
    indptr, indices, degree = in_degrees(tmp / "prod")
    fanouts = [10, 5]
    nodes, means = {}, []
    for labor in (False, True):
        loader = gnnd.Loader(address=daemon.address, dataset="prod", batch_size=128, fanouts=fanouts, seed=4,
                             output="numpy", copy=True, labor=labor, **OTHER_ATTRS)
        batches = list(loader)
        loader.close()
        nodes[labor] = sum(len(b.node_ids) for b in batches)
        if labor:
            for batch in batches:
                means.append(check_homogeneous(batch, indptr, indices, degree, fanouts))
    means = np.array(means).mean(axis=0)
    np.testing.assert_allclose(means, fanouts, rtol=0.1)  # fanout in expectation where a node has more
    assert nodes[True] < 0.95 * nodes[False], nodes


def test_the_datasets_own_edge_weight_is_never_silently_replaced(served):
    """A dataset's attribute named edge_weight and LABOR's array of that name: carried by default, it is refused
    saying why (and naming it too); with the attributes named, LABOR's edge_weight comes beside the others."""
    daemon, tmp = served
    for options, message in ((dict(), "has an edge attribute \"edge_weight\", and a LABOR batch's edge_weight is its own"),
                             (dict(edge_attrs=["edge_weight"]), "is a LABOR batch's own array")):
        with pytest.raises(gnnd.GnndError, match=message) as error:
            gnnd.Loader(address=daemon.address, dataset="prod", batch_size=64, fanouts=[4], labor=True, **options)
        assert isinstance(error.value, ValueError)  # a bad argument, as PyG raises
    with pytest.raises(ValueError, match="name the attributes to carry without it"):
        gnnd.pyg.NeighborLoader(None, num_neighbors=[4], batch_size=64, dataset="prod", address=daemon.address,
                                labor=True)
    loader = gnnd.Loader(address=daemon.address, dataset="prod", batch_size=64, fanouts=[4], seed=2, output="numpy",
                         copy=True, labor=True, **OTHER_ATTRS)
    batch = next(iter(loader))
    loader.close()
    indptr, _, degree = in_degrees(tmp / "prod")
    d = degree[batch.node_ids[batch.edge_dst]]
    np.testing.assert_array_equal(batch.edge_weight, np.where(d > 4, d / 4, 1).astype(np.float32))
    assert hasattr(batch, "e_id") and batch.edge_feat.shape == (len(batch.edge_src), 4)  # the other edge data


def inconsistent_sources(batch, indptr, indices, fanouts, hops):
    """Sources whose keep decisions at `hops` no one random number explains: each in-edge (t -> s) of a frontier
    node s of d in-edges is kept iff r_t < fanout / d, so for one r_t every edge kept must have a larger
    fanout / d than every edge not kept."""
    kept_ratio, dropped_ratio = {}, {}
    first, begin = 0, 0
    for hop, fanout in enumerate(fanouts):
        frontier = batch.node_ids[first:first + batch.nodes_per_hop[hop]]
        edges = slice(begin, begin + batch.edges_per_hop[hop])
        kept = set(zip(batch.node_ids[batch.edge_src[edges]].tolist(), batch.node_ids[batch.edge_dst[edges]].tolist()))
        if hop in hops:
            for s in frontier.tolist():
                sources = indices[indptr[s]:indptr[s + 1]].tolist()
                ratio = fanout / max(len(sources), 1)
                for t in sources:
                    into = kept_ratio if (t, s) in kept else dropped_ratio
                    into[t] = min(into.get(t, np.inf), ratio) if into is kept_ratio else max(into.get(t, 0), ratio)
        first += batch.nodes_per_hop[hop]
        begin = edges.stop
    return [t for t in kept_ratio if t in dropped_ratio and not dropped_ratio[t] < kept_ratio[t]]


def test_dependencies_change_the_batches_as_defined(served):
    """One random number per source shared by every destination of a hop (and, with layer_dependency, of every
    hop: without it the two hops disagree for some sources); batch_dependency: consecutive batches of the same
    seeds share more of their sampled nodes than independent ones."""
    daemon, tmp = served
    indptr, indices, _ = in_degrees(tmp / "prod")
    fanouts = [6, 3]

    def batches(**kw):
        loader = gnnd.Loader(address=daemon.address, dataset="prod", seed_ids=np.tile(np.arange(0, 256), 8),
                             batch_size=256, fanouts=fanouts, seed=5, shuffle=False, output="numpy", copy=True,
                             labor=True, **OTHER_ATTRS, **kw)
        out = list(loader)
        loader.close()
        return out

    for batch in batches()[:2]:
        for hop in (0, 1):
            assert inconsistent_sources(batch, indptr, indices, fanouts, {hop}) == [], hop
        assert inconsistent_sources(batch, indptr, indices, fanouts, {0, 1}) != []
    for batch in batches(layer_dependency=True)[:2]:
        assert inconsistent_sources(batch, indptr, indices, fanouts, {0, 1}) == []

    def overlap(seq):
        shared = [len(set(a.node_ids) & set(b.node_ids)) / len(set(a.node_ids)) for a, b in zip(seq, seq[1:])]
        return float(np.mean(shared))
    assert overlap(batches(batch_dependency=8)) > overlap(batches()) + 0.05


def test_pyg_loaders_carry_edge_weight(served):
    daemon, tmp = served
    loader = gnnd.pyg.NeighborLoader(num_neighbors=[5, 3], batch_size=32, dataset="prod", address=daemon.address,
                                     labor=True, **OTHER_ATTRS)
    data = next(iter(loader))
    loader.close()
    indptr, _, degree = in_degrees(tmp / "prod")
    d = degree[data.n_id[data.edge_index[1]].numpy()]
    assert data.edge_weight.shape == (data.edge_index.shape[1],)
    assert bool((data.edge_weight.numpy() >= 1).all()) and bool((data.edge_weight.numpy() <= np.maximum(d, 1)).all())
    typed = gnnd.pyg.NeighborLoader(num_neighbors=[4, 2], batch_size=32, dataset="mag", address=daemon.address,
                                    input_nodes=("paper", "train"), labor=True, layer_dependency=True)
    data = next(iter(typed))
    typed.close()
    for edge_type in data.edge_types:
        store = data[edge_type]
        assert store.edge_weight.shape == (store.edge_index.shape[1],), edge_type
        assert bool((store.edge_weight >= 1).all()), edge_type
    link = gnnd.pyg.LinkNeighborLoader(num_neighbors=[4, 2], batch_size=16, dataset="mag", address=daemon.address,
                                       edge_label_index=("author", "writes", "paper"), neg_sampling="binary",
                                       labor=True, exclude="self")
    data = next(iter(link))
    link.close()
    assert data["author", "writes", "paper"].edge_label_index.shape[1] == 32
    for edge_type in data.edge_types:
        assert data[edge_type].edge_weight.shape == (data[edge_type].edge_index.shape[1],), edge_type


def test_dgl_blocks_carry_edge_weight(served):
    """gnnd.dgl's blocks put edge_weight in edata beside the edge ids, each block's a prefix of the batch's."""
    daemon, _ = served
    loader = gnnd.Loader(address=daemon.address, dataset="prod", batch_size=32, fanouts=[4, 2], seed=1, labor=True,
                         **OTHER_ATTRS)
    batch = next(iter(loader))
    blocks = gnnd.dgl.blocks(batch)
    assert len(blocks) == 2
    for block in blocks:
        count = block.num_edges()
        np.testing.assert_array_equal(np.asarray(block.edata["edge_weight"]), np.asarray(batch.edge_weight[:count]))
    loader.close()


def test_features_on_storage_give_the_same_labor_batches(served, tmp_path):
    _, tmp = served
    config = "\n".join([f'datasets {{ name: "mem" path: "{tmp / "prod"}" }}',
                        f'datasets {{ name: "disk" path: "{tmp / "prod"}" feature_cache: "1MiB" look_ahead: 2 }}'])
    daemon = Daemon(tmp_path, "--threads=2", config=config)
    try:
        names = ("node_ids", "edge_src", "edge_dst", "features", "e_id", "edge_weight")
        got = {}
        for dataset in ("mem", "disk"):
            loader = gnnd.Loader(address=daemon.address, dataset=dataset, batch_size=128, fanouts=[6, 3], seed=3,
                                 output="numpy", copy=True, labor=True, batch_dependency=4, **OTHER_ATTRS)
            got[dataset] = [[getattr(b, k) for k in names] for b in loader]
            loader.close()
        assert len(got["mem"]) == len(got["disk"]) > 0
        for a, b in zip(got["mem"], got["disk"]):
            for name, x, y in zip(names, a, b):
                np.testing.assert_array_equal(x, y, err_msg=name)
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_gnnctl_sample_gives_the_sessions_labor_batch(served, tmp_path):
    daemon, tmp = served
    run_gnnctl("sample", f"--dataset={tmp / 'prod'}", "--batch-size=100", "--fanouts=5,3", "--seed=8", "--step=2",
               "--labor", "--batch-dependency=3", "--open_fields=edge_attrs { names: 'edge_feat' }",
               f"--out={tmp_path / 'b.npz'}")
    want = np.load(tmp_path / "b.npz")
    loader = gnnd.Loader(address=daemon.address, dataset="prod", batch_size=100, fanouts=[5, 3], seed=8,
                         output="numpy", copy=True, labor=True, batch_dependency=3, **OTHER_ATTRS)
    batch = [b for _, b in zip(range(3), loader)][2]
    loader.close()
    assert "edge_weight" in want.files
    for name in want.files:
        np.testing.assert_array_equal(getattr(batch, name), want[name], err_msg=name)


def test_bad_labor_requests_are_refused_naming_what_is_wrong(served):
    daemon, _ = served
    open_ = lambda **kw: gnnd.Loader(address=daemon.address, dataset="prod", batch_size=8, fanouts=[2],  # noqa: E731
                                     **kw)
    cases = [
        (dict(layer_dependency=True), "layer_dependency and batch_dependency are LABOR sampling's"),
        (dict(labor=True, batch_dependency=-1), "batch_dependency: -1"),
        (dict(labor=True, weight_attr="edge_weight", **OTHER_ATTRS), "weight_attr and labor: two draw policies"),
        (dict(labor=True, disjoint=True, **OTHER_ATTRS), "LABOR sampling with disjoint subgraphs is not built"),
        (dict(open_fields="batch_dependency: 4"), "open.batch_dependency is LABOR's: set open.labor"),
        (dict(open_fields="labor: true batch_dependency: 4000000000 edge_attrs { names: 'edge_feat' }"),
         "batch_dependency = 4000000000"),
    ]
    for options, message in cases:
        with pytest.raises((gnnd.GnndError, ValueError)) as error:
            open_(**options)
        assert message in str(error.value), (options, str(error.value))


def test_the_draw_message_and_its_api_1_aliases_give_the_same_batches(served):
    """Each policy by the loader's argument (sent as OpenSession.draw), by open.draw in open_fields, and by the API 1.x
    fields that alias it: the same batches; a policy given twice is refused naming both spellings."""
    daemon, _ = served

    def batches(**kw):
        loader = gnnd.Loader(address=daemon.address, dataset="prod", batch_size=64, fanouts=[4, 3], seed=2,
                             output="numpy", copy=True, **OTHER_ATTRS, **kw)
        got = [(b.node_ids, b.edge_src, b.edge_dst) for _, b in zip(range(2), loader)]
        loader.close()
        return got

    for argument, draw, aliases in (
            (dict(labor=True, batch_dependency=2), "labor { batch_dependency: 2 }", "labor: true batch_dependency: 2"),
            (dict(weight_attr="edge_weight"), 'weighted { attr: "edge_weight" }', 'weight_attr: "edge_weight"'),
            (dict(), "uniform {}", "")):
        want = batches(**argument)
        for other in (batches(open_fields=f"draw {{ {draw} }}"), batches(open_fields=aliases)):
            for a, b in zip(want, other):
                for x, y in zip(a, b):
                    np.testing.assert_array_equal(x, y)
    # edge_feat is 4 floats an edge: refused by either spelling, naming it as given
    for kw, words in ((dict(weight_attr="edge_feat"), "open.draw.weighted.attr = 'edge_feat'"),
                      (dict(open_fields='weight_attr: "edge_feat"'), "open.weight_attr = 'edge_feat'")):
        with pytest.raises(gnnd.GnndError, match=words):
            batches(**kw)
    uniform = batches()
    for policy in (dict(labor=True), dict(weight_attr="edge_weight")):  # the policies differ
        assert any(not np.array_equal(a[0], b[0]) for a, b in zip(uniform, batches(**policy))), policy
    with pytest.raises(gnnd.GnndError, match="open.draw and open.labor: give the draw policy once"):
        batches(open_fields="draw { labor {} } labor: true")
