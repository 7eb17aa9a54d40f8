"""Sampling with replacement end to end (replace=True, PyG's; OpenSession.draw uniform/weighted replace): every
frontier node with an in-edge it may draw gets exactly fanout edges, each a real in-edge (weighted: of positive
weight), some drawn twice; homogeneous, typed and link seeds; gnnd.pyg's loaders take it as PyG spells it; storage
gives the memory's batches; combinations it has no meaning in are refused. Run by ctest with GNNCTL, GNND and
GNND_CLIENT_LIBRARY set."""
import collections

import numpy as np
import pytest

import gnnd
import gnnd.pyg
from daemon_util import Daemon, generate


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A products-like graph with edge attributes (edge_weight among them) and a typed one with a link split,
    served by one gnnd (CPU), the first also with its features on storage."""
    tmp = tmp_path_factory.mktemp("replace")
    generate(tmp / "prod", "--preset", "products", "--scale", "0.002", "--seed", "3", "--edge-attr")
    generate(tmp / "mag", "--preset", "mag", "--scale", "0.002", "--seed", "5", "--add-reverse", "--link-relation",
             "author___writes___paper")
    config = "\n".join([f'datasets {{ name: "prod" path: "{tmp / "prod"}" }}',
                        f'datasets {{ name: "disk" path: "{tmp / "prod"}" feature_cache: "1MiB" look_ahead: 2 }}',
                        f'datasets {{ name: "mag" path: "{tmp / "mag"}" }}'])
    daemon = Daemon(tmp, "--threads=2", config=config)
    yield daemon, tmp
    assert daemon.stop() == 0, daemon.output()


def check_counts(batch, csc_folder, fanouts, weighted):
    """Every hop: each frontier node exactly fanout edges if it has an in-edge it may draw, else none; each edge an
    in-edge of its destination. Returns how many (source, destination) pairs came more than once."""
    indptr, indices = np.load(csc_folder / "indptr.npy"), np.load(csc_folder / "indices.npy")
    weight = np.load(csc_folder / "edge.edge_weight.npy") if weighted else None
    first, begin, repeated = 0, 0, 0
    for hop, fanout in enumerate(fanouts):
        edges = slice(begin, begin + batch.edges_per_hop[hop])
        per_node = collections.Counter(batch.edge_dst[edges].tolist())
        pairs = collections.Counter(zip(batch.edge_src[edges].tolist(), batch.edge_dst[edges].tolist()))
        repeated += sum(n > 1 for n in pairs.values())
        for v in range(first, first + batch.nodes_per_hop[hop]):
            node = batch.node_ids[v]
            span = slice(indptr[node], indptr[node + 1])
            drawable = (weight[span] > 0).any() if weighted else indptr[node + 1] > indptr[node]
            assert per_node.get(v, 0) == (fanout if drawable else 0), (hop, node, per_node.get(v, 0))
        for (u, v), _ in pairs.items():
            span = slice(indptr[batch.node_ids[v]], indptr[batch.node_ids[v] + 1])
            assert batch.node_ids[u] in indices[span], "not an in-edge"
        first, begin = first + batch.nodes_per_hop[hop], edges.stop
    return repeated


@pytest.mark.parametrize("weighted", [False, True])
def test_every_node_draws_exactly_fanout_with_replacement(served, weighted):
    daemon, tmp = served
    loader = gnnd.Loader(address=daemon.address, dataset="prod", batch_size=64, fanouts=[6, 4], seed=2,
                         output="numpy", copy=True, replace=True, weight_attr="edge_weight" if weighted else None)
    repeated = 0
    for _, batch in zip(range(4), loader):
        repeated += check_counts(batch, tmp / "prod", [6, 4], weighted)
    loader.close()
    assert repeated > 0, "no edge drawn twice"


def test_pyg_loaders_take_replace_as_pyg_spells_it(served):
    daemon, tmp = served
    pyg = gnnd.pyg.NeighborLoader(None, [5, 3], input_nodes="train", batch_size=32, dataset="prod",
                                  address=daemon.address, replace=True)
    data = next(iter(pyg))
    plain = gnnd.Loader(address=daemon.address, dataset="prod", split="train", batch_size=32, fanouts=[5, 3],
                        output="numpy", copy=True, replace=True, shuffle=False)
    batch = next(iter(plain))
    plain.close()
    np.testing.assert_array_equal(data.n_id.numpy(), batch.node_ids)
    np.testing.assert_array_equal(data.e_id.numpy(), batch.e_id)
    indptr = np.load(tmp / "prod" / "indptr.npy")
    seeds = data.n_id[:32].numpy()
    assert int(data.num_sampled_edges[0]) == 5 * int((indptr[seeds + 1] > indptr[seeds]).sum())
    # Typed and link seeds.
    typed = next(iter(gnnd.pyg.NeighborLoader(None, [4, 2], input_nodes=("paper", "train"), batch_size=16,
                                              dataset="mag", address=daemon.address, replace=True)))
    assert sum(typed[t].num_nodes for t in typed.node_types) > 16
    link = gnnd.pyg.LinkNeighborLoader(None, [3, 2], edge_label_index="train", batch_size=16, dataset="mag",
                                       address=daemon.address, replace=True, neg_sampling="binary")
    assert next(iter(link))[link.edge_type].edge_label_index.shape[1] == 32


def test_typed_sessions_draw_exactly_fanout_per_relation(served):
    daemon, tmp = served
    data = next(iter(gnnd.pyg.NeighborLoader(None, [4, 2], input_nodes=("paper", "train"), batch_size=16,
                                             dataset="mag", address=daemon.address, replace=True)))
    checked = 0
    for edge_type in data.edge_types:
        if edge_type[2] != "paper":
            continue
        hop0 = int(data[edge_type].num_sampled_edges[0])
        counts = collections.Counter(data[edge_type].edge_index[1, :hop0].tolist())
        indptr = np.load(tmp / "mag" / f"{'___'.join(edge_type)}.indptr.npy")
        for v in range(16):
            node = int(data["paper"].n_id[v])
            assert counts.get(v, 0) == (4 if indptr[node + 1] > indptr[node] else 0), (edge_type, node)
            checked += counts.get(v, 0)
    assert checked > 0


def test_storage_gives_the_memorys_batches(served):
    daemon, _ = served
    got = {}
    for dataset in ("prod", "disk"):
        loader = gnnd.Loader(address=daemon.address, dataset=dataset, batch_size=32, fanouts=[4, 2], seed=3,
                             output="numpy", copy=True, replace=True, weight_attr="edge_weight")
        got[dataset] = [(b.node_ids, b.edge_src, b.edge_dst, b.features) for _, b in zip(range(3), loader)]
        loader.close()
    for a, b in zip(got["prod"], got["disk"]):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_replace_where_it_has_no_meaning_is_refused(served):
    daemon, _ = served
    for kw, words in ((dict(labor=True), "replace=True with labor"),
                      (dict(time_attr="time"), "replace=True with time_attr")):
        with pytest.raises(ValueError, match=words):
            gnnd.Loader(address=daemon.address, dataset="prod", batch_size=8, fanouts=[2], replace=True, **kw)
    # On the wire: the uniform rule's field (the same batches as the loader's argument).
    a = gnnd.Loader(address=daemon.address, dataset="prod", batch_size=8, fanouts=[2], output="numpy", copy=True,
                    open_fields="draw { uniform { replace: true } }")
    b = gnnd.Loader(address=daemon.address, dataset="prod", batch_size=8, fanouts=[2], output="numpy", copy=True,
                    replace=True)
    np.testing.assert_array_equal(next(iter(a)).edge_src, next(iter(b)).edge_src)
    a.close()
    b.close()
