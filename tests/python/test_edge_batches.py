"""Batches carry their edges' data: each sampled edge's e_id (its row in the imported edge list) and the rows of
the edge attributes the session asks for (default all), row k belonging to edge k, for node and link sessions,
homogeneous and typed datasets; gnnd.pyg puts them on Data / HeteroData as PyG's loaders do, gnnd.dgl in each
block's edata. Run by ctest with GNNCTL, GNND and GNND_CLIENT_LIBRARY set."""
import shutil

import numpy as np
import pytest

import gnnd
import gnnd.dgl
import gnnd.pyg
from daemon_util import Daemon, generate, run_gnnctl

N, E = 300, 2400


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """An undirected, deduplicated edge list with three attributes (float32, 4 x float16, int64), and a typed
    generated graph with attributes on every relation, served by one gnnd."""
    tmp = tmp_path_factory.mktemp("edges")
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, N, E), rng.integers(0, N, E)
    src[:30], dst[:30] = src[30:60], dst[30:60]  # parallel edges: --dedup keeps the first row's
    inputs = {"w": rng.random(E).astype(np.float32), "f": rng.standard_normal((E, 4)).astype(np.float16),
              "kind": rng.integers(0, 9, E), "signed": rng.standard_normal(E).astype(np.float32)}
    inputs["w"][::5] = 0  # never drawn by a weighted session
    np.save(tmp / "edges.npy", np.stack([src, dst]))
    for name, values in inputs.items():
        np.save(tmp / f"{name}.npy", values)
    np.save(tmp / "x.npy", rng.standard_normal((N, 8)).astype(np.float32))
    np.save(tmp / "y.npy", rng.integers(0, 3, N))
    (tmp / "splits").mkdir()
    for name, ids in (("train", np.arange(0, 200)), ("valid", np.arange(200, 250)), ("test", np.arange(250, 300))):
        np.save(tmp / "splits" / f"{name}.npy", ids)
    attrs = [f"--edge-attr={name}={tmp / name}.npy" for name in inputs]
    run_gnnctl("import", "--format", "edgelist", "--undirected", "--dedup", "--features", tmp / "x.npy", "--labels",
               tmp / "y.npy", "--splits", tmp / "splits", *attrs, tmp / "edges.npy", tmp / "homo")
    generate(tmp / "mag", "--preset", "mag", "--scale", "0.002", "--seed", "5", "--add-reverse", "--edge-attr")
    daemon = Daemon(tmp, f"--dataset=homo={tmp / 'homo'}", f"--dataset=mag={tmp / 'mag'}")
    yield daemon, tmp, (src, dst, inputs)
    assert daemon.stop() == 0, daemon.output()


def check_homogeneous(batch, src, dst, inputs, names):
    """Every edge k of a homogeneous batch is input row e_id[k] (or its reverse: --undirected), with that
    row's attribute values."""
    u, v = batch.node_ids[batch.edge_src], batch.node_ids[batch.edge_dst]
    e_id = batch.e_id
    assert e_id.dtype == np.int64 and len(e_id) == len(batch.edge_src) > 0
    forward = (src[e_id] == u) & (dst[e_id] == v)
    backward = (src[e_id] == v) & (dst[e_id] == u)
    assert np.all(forward | backward)
    for name in names:
        np.testing.assert_array_equal(getattr(batch, name), inputs[name][e_id], err_msg=name)
    for name in set(inputs) - set(names):
        assert not hasattr(batch, name), name


def test_node_batches_carry_e_id_and_every_attribute(served):
    daemon, _, (src, dst, inputs) = served
    loader = gnnd.Loader(address=daemon.address, dataset="homo", batch_size=40, fanouts=[5, 3], seed=2,
                         output="numpy", copy=True)
    batches = list(loader)
    loader.close()
    assert len(batches) == 5
    for batch in batches:
        check_homogeneous(batch, src, dst, inputs, ["w", "f", "kind", "signed"])
        assert batch.f.dtype == np.float16 and batch.f.shape[1] == 4 and batch.kind.dtype == np.int64


@pytest.mark.parametrize("selection,names", [(["f"], ["f"]), ([], []), ("kind", ["kind"])])
def test_a_session_carries_the_attributes_it_names(served, selection, names):
    daemon, _, (src, dst, inputs) = served
    loader = gnnd.Loader(address=daemon.address, dataset="homo", batch_size=64, fanouts=[4], seed=3,
                         output="numpy", copy=True, edge_attrs=selection)
    for batch in loader:
        check_homogeneous(batch, src, dst, inputs, names)
    loader.close()


def test_an_unknown_attribute_is_refused_by_name(served):
    daemon = served[0]
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(address=daemon.address, dataset="homo", batch_size=8, fanouts=[2], edge_attrs=["weight"])
    assert "open.edge_attrs.names: 'weight' is not an edge attribute of the dataset (it has w, f, kind, signed)" \
        in str(error.value)


def test_link_batches_carry_the_edge_data_of_their_message_passing_edges(served):
    daemon, tmp, (src, dst, inputs) = served
    pairs = np.stack([src[:50], dst[:50]])
    loader = gnnd.Loader(address=daemon.address, dataset="homo", seed_edges=pairs, batch_size=16, fanouts=[3, 2],
                         exclude="self", output="numpy", copy=True)
    for batch in loader:
        check_homogeneous(batch, src, dst, inputs, ["w", "f", "kind", "signed"])
    loader.close()


def csc_of(folder, key):
    """The relation's edges by stored id: {e_id: (source, destination, row position)}."""
    indptr, indices = np.load(folder / f"{key}.indptr.npy"), np.load(folder / f"{key}.indices.npy")
    dst_of = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return {int(i): (int(s), int(d), p) for p, (i, s, d) in
            enumerate(zip(np.load(folder / f"{key}.e_id.npy"), indices, dst_of))}


def test_typed_batches_carry_each_relations_edge_data(served):
    daemon, tmp, _ = served
    loader = gnnd.Loader(address=daemon.address, dataset="mag", batch_size=32, fanouts=[3, 2], seed=4,
                         output="numpy", copy=True)
    batch = next(iter(loader))
    loader.close()
    folder = tmp / "mag"
    checked = 0
    for src_type, rel, dst_type in batch.edge_types:
        key = f"{src_type}___{rel}___{dst_type}"
        edges = csc_of(folder, key)
        e_id = batch[f"{key}.e_id"]
        assert len(e_id) == batch.num_edges(key)
        u = batch[f"{src_type}.node_ids"][batch[f"{key}.edge_src"]]
        v = batch[f"{dst_type}.node_ids"][batch[f"{key}.edge_dst"]]
        positions = [edges[int(i)][2] for i in e_id]
        assert [edges[int(i)][:2] for i in e_id] == list(zip(u.tolist(), v.tolist())), key
        for name in ("edge_weight", "edge_feat"):
            np.testing.assert_array_equal(batch[f"{key}.{name}"], np.load(folder / f"{key}.edge.{name}.npy")[positions])
        checked += len(e_id)
    assert checked > 0


def test_pyg_and_dgl_put_the_edge_data_where_they_look_for_it(served):
    daemon, _, (src, dst, inputs) = served
    loader = gnnd.pyg.NeighborLoader(num_neighbors=[4, 2], batch_size=32, dataset="homo", address=daemon.address,
                                     edge_attrs=["w"])
    data = next(iter(loader))
    u, v = data.n_id[data.edge_index[0]].numpy(), data.n_id[data.edge_index[1]].numpy()
    e_id = data.e_id.numpy()
    assert np.all(((src[e_id] == u) & (dst[e_id] == v)) | ((src[e_id] == v) & (dst[e_id] == u)))
    np.testing.assert_array_equal(data.w.numpy(), inputs["w"][e_id])
    loader.close()

    typed = gnnd.pyg.NeighborLoader(num_neighbors=[3, 2], batch_size=16, dataset="mag", address=daemon.address)
    hetero = next(iter(typed))
    for edge_type in hetero.edge_types:
        store = hetero[edge_type]
        assert store.e_id.shape[0] == store.edge_index.shape[1] == store.edge_feat.shape[0], edge_type
        assert store.edge_feat.shape[1] == 4
    typed.close()

    loader = gnnd.Loader(address=daemon.address, dataset="homo", batch_size=32, fanouts=[4, 2], seed=1)
    batch = next(iter(loader))
    blocks = gnnd.dgl.blocks(batch)
    assert len(blocks) == 2
    for block in blocks:  # the outermost block holds every edge, the last the seeds' in-edges (a prefix)
        count = block.num_edges()
        np.testing.assert_array_equal(np.asarray(block.edata["_ID"]), np.asarray(batch.e_id[:count]))
        np.testing.assert_array_equal(np.asarray(block.edata["f"]), np.asarray(batch.f[:count]))
    loader.close()

    loader = gnnd.Loader(address=daemon.address, dataset="mag", batch_size=16, fanouts=[3, 2], seed=1)
    batch = next(iter(loader))
    for block in gnnd.dgl.blocks(batch):  # a typed block's edata: per name, per relation, that block's prefix
        for edge_type in batch.edge_types:
            key = "___".join(edge_type)
            count = (block.num_edges(edge_type) if isinstance(block, gnnd.dgl.HeteroBlock)
                     else block.num_edges(etype=edge_type))
            ids = block.edata["_ID"][edge_type] if isinstance(block, gnnd.dgl.HeteroBlock) \
                else block.edges[edge_type].data["_ID"]
            np.testing.assert_array_equal(np.asarray(ids), np.asarray(batch[f"{key}.e_id"][:count]))
    loader.close()


def positive_in_degrees(folder, weights_file):
    indptr, w = np.load(folder / "indptr.npy"), np.load(folder / weights_file)
    return np.add.reduceat(w > 0, indptr[:-1]) * (np.diff(indptr) > 0)


@pytest.mark.parametrize("seed_edges", [False, True])
def test_weighted_sessions_draw_only_positive_weights_and_exactly_min_fanout(served, seed_edges):
    daemon, tmp, (src, dst, inputs) = served
    positive = positive_in_degrees(tmp / "homo", "edge.w.npy")
    options = dict(seed_edges=np.stack([src[:60], dst[:60]]), exclude="self") if seed_edges else {}
    loader = gnnd.Loader(address=daemon.address, dataset="homo", batch_size=24, fanouts=[3, 2], seed=9,
                         output="numpy", copy=True, weight_attr="w", **options)
    drawn = 0
    for batch in loader:
        check_homogeneous(batch, src, dst, inputs, ["w", "f", "kind", "signed"])
        assert np.all(batch.w > 0)  # weight 0 is never drawn
        drawn += len(batch.w)
        if not seed_edges:  # each seed: min(3, its positive-weight in-edges) at hop 0
            hop0 = batch.edges_per_hop[0]
            per_seed = np.bincount(batch.edge_dst[:hop0], minlength=batch.nodes_per_hop[0])
            np.testing.assert_array_equal(per_seed, np.minimum(3, positive[batch.node_ids[:batch.nodes_per_hop[0]]]))
    loader.close()
    assert drawn > 100


def test_weight_attributes_that_cannot_weigh_are_refused_by_name(served):
    daemon = served[0]
    for name, message in (("nope", "open.draw.weighted.attr = 'nope': the dataset has no such edge attribute"),
                          ("kind", "open.draw.weighted.attr = 'kind': weights are one float32 an edge; the dataset's is int64"),
                          ("f", "open.draw.weighted.attr = 'f': weights are one float32 an edge; the dataset's is 4 x float16"),
                          ("signed", "edge.signed.npy element [")):
        with pytest.raises(gnnd.GnndError) as error:
            gnnd.Loader(address=daemon.address, dataset="homo", batch_size=8, fanouts=[2], weight_attr=name)
        assert message in str(error.value), str(error.value)
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(address=daemon.address, dataset="homo", batch_size=8, fanouts=[2], weight_attr="signed")
    said = str(error.value)
    assert "(weights are 0, never drawn, or from 2^-120 to 2^90" in said
    # gnnd keeps each attribute's first undrawable value from the load; gnnctl finds the same one by a pass.
    first = int(np.argmax(np.load(served[1] / "homo" / "edge.signed.npy") < 0))
    assert f"edge.signed.npy element [{first}] is " in said, said
    cli = run_gnnctl("sample", f"--dataset={served[1] / 'homo'}", "--batch-size=8", "--fanouts=2",
                     "--open_fields=weight_attr: \"signed\"", f"--out={served[1] / 'x.npz'}", ok=False)
    assert cli.returncode != 0 and f"edge.signed.npy element [{first}] is " in cli.stderr, cli.stderr


def test_weighted_typed_and_pyg_sessions(served):
    daemon, tmp, _ = served
    loader = gnnd.pyg.NeighborLoader(num_neighbors=[3, 2], batch_size=16, dataset="mag", address=daemon.address,
                                     weight_attr="edge_weight")
    hetero = next(iter(loader))
    loader.close()
    for edge_type in hetero.edge_types:
        assert bool((hetero[edge_type].edge_weight > 0).all()), edge_type
    loader = gnnd.pyg.NeighborLoader(num_neighbors=[4], batch_size=32, dataset="homo", address=daemon.address,
                                     weight_attr="w")
    data = next(iter(loader))
    loader.close()
    assert data.e_id.numel() > 0 and bool((data.w > 0).all())


def test_features_on_storage_give_the_same_weighted_batches_and_edge_data(tmp_path):
    """The edge data and the weighted rule belong to the sampling stage: a dataset whose features are on storage
    (feature_cache) serves the in-memory dataset's batches, node and link."""
    data = generate(tmp_path / "g", "--seed", 8, "--edge-attr")
    config = "\n".join([f'datasets {{ name: "mem" path: "{data}" }}',
                        f'datasets {{ name: "disk" path: "{data}" feature_cache: "1MiB" look_ahead: 2 }}'])
    daemon = Daemon(tmp_path, "--threads=2", config=config)
    try:
        names = ("node_ids", "edge_src", "edge_dst", "features", "e_id", "edge_weight", "edge_feat")
        for options in (dict(split="train"), dict(seed_edges=np.array([[1, 2, 3, 4], [5, 6, 7, 8]]), exclude="self")):
            got = {}
            for dataset in ("mem", "disk"):
                loader = gnnd.Loader(address=daemon.address, dataset=dataset, batch_size=32, fanouts=[4, 2], seed=3,
                                     output="numpy", copy=True, weight_attr="edge_weight", **options)
                got[dataset] = [[getattr(b, k) for k in names] for b in loader]
                loader.close()
            assert len(got["mem"]) == len(got["disk"]) > 0
            for a, b in zip(got["mem"], got["disk"]):
                for name, x, y in zip(names, a, b):
                    np.testing.assert_array_equal(x, y, err_msg=name)
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_typed_weighted_sessions_never_draw_zero_weights_and_need_the_attribute_everywhere(tmp_path):
    """Typed: every third weight of every relation set to 0 is never drawn (the uniform rule, same seed, draws
    such edges); a relation without the attribute refuses the open, naming it, unless no hop samples it."""
    zeros = tmp_path / "zeros"
    generate(zeros, "--preset", "mag", "--scale", "0.002", "--seed", "5", "--add-reverse", "--edge-attr")
    for path in zeros.glob("*.edge.edge_weight.npy"):
        w = np.load(path)
        w[::3] = 0
        np.save(path, w)
    partial = tmp_path / "partial"
    shutil.copytree(zeros, partial)
    lacking = "author___affiliated_with___institution"
    (partial / f"{lacking}.edge.edge_weight.npy").unlink()
    manifest = (partial / "manifest.textproto").read_text()
    block = '  edge_attrs {\n    name: "edge_weight"\n    dtype: FEATURE_DTYPE_FLOAT32\n  }\n'
    assert manifest.index(block) < manifest.index("writes")  # the first relation's: affiliated_with
    (partial / "manifest.textproto").write_text(manifest.replace(block, "", 1))
    daemon = Daemon(tmp_path, f"--dataset=zeros={zeros}", f"--dataset=partial={partial}")
    try:
        zero_drawn = {}
        for weighted in (True, False):
            loader = gnnd.Loader(address=daemon.address, dataset="zeros", batch_size=64, fanouts=[4, 3], seed=6,
                                 output="numpy", copy=True, weight_attr="edge_weight" if weighted else None)
            zero_drawn[weighted] = sum(int(np.sum(b[f"{'___'.join(et)}.edge_weight"] == 0))
                                       for b in loader for et in b.edge_types)
            loader.close()
        assert zero_drawn[True] == 0 and zero_drawn[False] > 0, zero_drawn
        with pytest.raises(gnnd.GnndError) as error:
            gnnd.Loader(address=daemon.address, dataset="partial", batch_size=8, fanouts=[2], weight_attr="edge_weight")
        assert f"open.draw.weighted.attr = 'edge_weight': relation {lacking} has no such edge attribute" in str(error.value)
        loader = gnnd.Loader(address=daemon.address, dataset="partial", batch_size=8, weight_attr="edge_weight",
                             fanouts={key: [0] if key == lacking else [2] for key in
                                      (p.name[:-len(".indices.npy")] for p in partial.glob("*.indices.npy"))})
        assert next(iter(loader)).num_edges(lacking) == 0
        loader.close()
    finally:
        assert daemon.stop() == 0, daemon.output()
