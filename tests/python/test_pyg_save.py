"""A PyG user's own graph into gnnd in one call: gnnd.pyg.save(data, DIR) and `python3 -m gnnd.pyg save FILE.pt
DIR` write a Data or a HeteroData (here their to_dict() forms and plain objects with their attributes, built
with torch alone: PyG is not needed) as a gnnd dataset. The saved arrays equal the data's (CSC = each node's
in-edges, features bit for bit in their dtype, labels, splits from masks or ids), gnnd serves them, and a
batch is what PyG's loader semantics give on that data: x the rows of n_id, y the seeds' labels, every
message-passing edge an edge of the data. Bad data is refused naming what is wrong, leaving nothing."""
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gnnd.pyg  # noqa: E402
from daemon_util import Daemon  # noqa: E402

N = 300


def homogeneous(seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, N, (2, 4000), generator=g)
    edge_index[:, -1] = torch.tensor([5, 5])  # a self-loop and a repeated edge are kept as given
    edge_index[:, -2] = torch.tensor([5, 5])
    return dict(x=torch.randn(N, 12, generator=g).to(dtype), edge_index=edge_index,
                y=torch.randint(0, 5, (N,), generator=g), train_mask=torch.rand(N, generator=g) < 0.6,
                val_mask=torch.arange(200, 250), test_mask=torch.arange(250, N))


def hetero(seed=1):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (120,), generator=g)
    y[:10] = -1
    return {"paper": {"x": torch.randn(120, 6, generator=g).half(), "y": y, "train_mask": torch.arange(10, 90),
                      "val_mask": torch.arange(90, 110), "test_mask": torch.arange(110, 120)},
            "author": {"num_nodes": 80},
            ("author", "writes", "paper"): {"edge_index": torch.stack([torch.randint(0, 80, (700,), generator=g),
                                                                       torch.randint(0, 120, (700,), generator=g)])},
            ("paper", "cites", "paper"): {"edge_index": torch.randint(0, 120, (2, 900), generator=g)}}


def in_neighbors(indptr, indices, v):
    return sorted(indices[indptr[v]:indptr[v + 1]].tolist())


def check_csc(directory, prefix, edge_index, num_dst):
    indptr = np.load(directory / f"{prefix}indptr.npy")
    indices = np.load(directory / f"{prefix}indices.npy")
    src, dst = edge_index.numpy()
    assert len(indptr) == num_dst + 1 and indptr[-1] == edge_index.shape[1]
    for v in range(num_dst):
        assert in_neighbors(indptr, indices, v) == sorted(src[dst == v].tolist()), v


def bits(tensor):
    """A tensor's raw bits (bfloat16 and float16 as 16-bit integers)."""
    return tensor.view(torch.int16).numpy() if tensor.element_size() == 2 else tensor.numpy()


def test_a_data_is_saved_array_for_array(tmp_path):
    data = homogeneous(dtype=torch.bfloat16)
    out = gnnd.pyg.save(data, tmp_path / "homo")
    check_csc(out, "", data["edge_index"], N)
    stored = np.load(out / "features.npy")  # bfloat16 as numpy sees it: uint16 bits
    assert stored.dtype == np.uint16 and np.array_equal(stored.view(np.int16), bits(data["x"]))
    assert np.array_equal(np.load(out / "labels.npy"), data["y"].numpy())
    assert np.array_equal(np.load(out / "train.npy"), np.flatnonzero(data["train_mask"].numpy()))
    assert np.array_equal(np.load(out / "valid.npy"), np.arange(200, 250))
    assert "feature_dtype: FEATURE_DTYPE_BFLOAT16" in (out / "manifest.textproto").read_text()
    assert (out / "hot_order.npy").exists()
    assert sorted(os.listdir(tmp_path)) == ["homo"], "staging left behind"


def test_a_hetero_data_is_saved_per_type_and_relation(tmp_path):
    data = hetero()
    out = gnnd.pyg.save(data, tmp_path / "het")
    check_csc(out, "author___writes___paper.", data[("author", "writes", "paper")]["edge_index"], 120)
    check_csc(out, "paper___cites___paper.", data[("paper", "cites", "paper")]["edge_index"], 120)
    assert np.array_equal(np.load(out / "paper.features.npy"), data["paper"]["x"].numpy())  # float16 kept
    assert np.array_equal(np.load(out / "paper.labels.npy"), data["paper"]["y"].numpy())
    assert np.array_equal(np.load(out / "paper.test.npy"), np.arange(110, 120))
    manifest = (out / "manifest.textproto").read_text()
    assert 'name: "author"\n  num_nodes: 80\n}' in manifest  # no features, no labels: a type still
    assert "FEATURE_DTYPE_FLOAT16" in manifest


class Store:
    """An object with attributes, as PyG's storages are read when they are not dicts."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def test_objects_with_the_attributes_are_taken_too(tmp_path):
    data = homogeneous(seed=3)
    out = gnnd.pyg.save(Store(**data, num_nodes=N), tmp_path / "object")
    check_csc(out, "", data["edge_index"], N)
    assert np.array_equal(np.load(out / "features.npy"), data["x"].numpy())


def test_served_batches_follow_pygs_loader_semantics(tmp_path):
    data, typed = homogeneous(seed=4), hetero(seed=5)
    homo_dir = gnnd.pyg.save(data, tmp_path / "homo")
    typed_dir = gnnd.pyg.save(typed, tmp_path / "typed")
    daemon = Daemon(tmp_path, f"--dataset=homo={homo_dir}", f"--dataset=typed={typed_dir}")
    try:
        edges = set(map(tuple, data["edge_index"].t().tolist()))
        train = set(np.flatnonzero(data["train_mask"].numpy()).tolist())
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[5, 3], batch_size=64, input_nodes="train", shuffle=True,
                                     dataset="homo", address=daemon.address) as loader:
            for batch in loader:
                n_id = batch.n_id.long()
                assert set(n_id[:batch.batch_size].tolist()) <= train
                assert torch.equal(batch.x, data["x"][n_id])
                assert torch.equal(batch.y[:batch.batch_size], data["y"][n_id[:batch.batch_size]])
                src, dst = n_id[batch.edge_index[0]], n_id[batch.edge_index[1]]
                assert all((s, d) in edges for s, d in zip(src.tolist(), dst.tolist()))
                assert list(batch.x.shape) == [len(n_id), 12] and batch.edge_index.shape[0] == 2
        relations = {et: set(map(tuple, typed[et]["edge_index"].t().tolist())) for et in typed if isinstance(et, tuple)}
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[4, 2], batch_size=32, input_nodes=("paper", "train"),
                                     dataset="typed", address=daemon.address) as loader:
            for batch in loader:
                paper = batch["paper"].n_id.long()
                assert torch.equal(batch["paper"].x, typed["paper"]["x"][paper])
                size = batch["paper"].batch_size
                assert torch.equal(batch["paper"].y[:size], typed["paper"]["y"][paper[:size]])
                for et in batch.edge_types:
                    src_ids, dst_ids = batch[et[0]].n_id.long(), batch[et[2]].n_id.long()
                    ei = batch[et].edge_index
                    pairs = zip(src_ids[ei[0]].tolist(), dst_ids[ei[1]].tolist())
                    assert all(p in relations[et] for p in pairs), et
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_bad_data_is_refused_naming_what_and_leaves_nothing(tmp_path):
    data = homogeneous()
    with pytest.raises(gnnd.pyg.SaveError, match=r"data.x: float64 .*feature_dtype='float32'"):
        gnnd.pyg.save({**data, "x": data["x"].double()}, tmp_path / "a")
    with pytest.raises(gnnd.pyg.SaveError, match=r"data.y: shape \(300, 3\), expected one class id per node"):
        gnnd.pyg.save({**data, "y": torch.zeros(N, 3, dtype=torch.long)}, tmp_path / "b")
    with pytest.raises(gnnd.pyg.SaveError, match=r"no edge_index .* and no num_nodes, x or y to count its nodes"):
        gnnd.pyg.save({"val_mask": torch.arange(3)}, tmp_path / "c")
    bad = data["edge_index"].clone()
    bad[0, 7] = N + 5  # an id past x's rows: the import's own validation names it
    with pytest.raises(gnnd.pyg.SaveError, match=r"is not a node id|out of range|node id"):
        gnnd.pyg.save({**data, "edge_index": bad}, tmp_path / "d")
    types = hetero()
    types["author"]["x"] = torch.randn(80, 6)
    with pytest.raises(gnnd.pyg.SaveError, match=r"x dtypes differ by node type \(paper: float16, author: float32\)"
                                               r"|x dtypes differ by node type \(author: float32, paper: float16\)"):
        gnnd.pyg.save(types, tmp_path / "e")
    (tmp_path / "exists").mkdir()
    with pytest.raises(gnnd.pyg.SaveError, match="exists"):
        gnnd.pyg.save(data, tmp_path / "exists")
    assert sorted(os.listdir(tmp_path)) == ["exists"]
    # feature_dtype converts what gnnd does not store as it is
    out = gnnd.pyg.save({**data, "x": data["x"].double()}, tmp_path / "f", feature_dtype="float32")
    assert np.array_equal(np.load(out / "features.npy"), data["x"].numpy())


def test_the_command_saves_a_torch_saved_data(tmp_path):
    torch.save(hetero(), tmp_path / "data.pt")
    proc = subprocess.run([sys.executable, "-m", "gnnd.pyg", "save", str(tmp_path / "data.pt"), str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"saved {tmp_path / 'out'}" in proc.stdout
    assert (tmp_path / "out" / "paper.features.npy").exists()
    proc = subprocess.run([sys.executable, "-m", "gnnd.pyg", "save", str(tmp_path / "data.pt"), str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "exists" in proc.stderr


@pytest.mark.parametrize("name", ["../../escaped", "/abs/dir", "a/b", "", "x___y"])
def test_type_names_that_name_no_schema_type_are_refused_writing_nothing(tmp_path, name):
    """Type names become directories while the data is staged: "../../x" or "/abs" would have written (and
    left) node_feat.npy and edge_index.npy outside the output."""
    (tmp_path / "inner").mkdir()
    as_node = hetero()
    as_node[name] = as_node.pop("paper")
    as_node[("author", "writes", name)] = as_node.pop(("author", "writes", "paper"))
    as_node[(name, "cites", name)] = as_node.pop(("paper", "cites", "paper"))
    as_relation = hetero()
    as_relation[("author", name, "paper")] = as_relation.pop(("author", "writes", "paper"))
    for data in (as_node, as_relation):
        with pytest.raises(gnnd.pyg.SaveError, match="names are letters, digits and _"):
            gnnd.pyg.save(data, tmp_path / "inner" / "out")
    assert os.listdir(tmp_path / "inner") == [] and sorted(os.listdir(tmp_path)) == ["inner"]
    assert not os.path.exists("/abs")


def test_a_symbolic_link_as_the_output_is_never_followed(tmp_path):
    os.symlink(tmp_path / "elsewhere", tmp_path / "out")  # dangling
    with pytest.raises(gnnd.pyg.SaveError, match="exists"):
        gnnd.pyg.save(homogeneous(), tmp_path / "out")
    assert not (tmp_path / "elsewhere").exists()


def test_a_mask_that_does_not_cover_the_nodes_is_refused(tmp_path):
    short = {**homogeneous(), "train_mask": torch.ones(5, dtype=torch.bool)}  # was read as ids 0..4
    with pytest.raises(gnnd.pyg.SaveError, match=r"data.train_mask: a mask of 5 entries over 300 nodes"):
        gnnd.pyg.save(short, tmp_path / "a")
    masks_only = {"edge_index": homogeneous()["edge_index"], "train_mask": torch.ones(N, dtype=torch.bool),
                  "val_mask": torch.ones(N - 1, dtype=torch.bool)}
    with pytest.raises(gnnd.pyg.SaveError, match=r"data.val_mask: a mask of 299 entries over 300 nodes"):
        gnnd.pyg.save(masks_only, tmp_path / "b")
    assert os.listdir(tmp_path) == []


class _RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_the_command_runs_no_code_from_the_file_unless_trusted(tmp_path):
    """A .pt file is a pickle: loading it may run any code it names. The command reads tensors, containers and
    PyG's data classes only, unless --trust-pickle says the file is trusted."""
    marker = tmp_path / "ran"
    torch.save({"edge_index": torch.zeros(2, 3, dtype=torch.long), "evil": _RunsACommand(marker)},
               tmp_path / "evil.pt")
    proc = subprocess.run([sys.executable, "-m", "gnnd.pyg", "save", str(tmp_path / "evil.pt"), str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "pass --trust-pickle" in proc.stderr, proc.stderr
    assert not marker.exists() and not (tmp_path / "o").exists()
    trusted = subprocess.run([sys.executable, "-m", "gnnd.pyg", "save", "--trust-pickle", str(tmp_path / "evil.pt"),
                              str(tmp_path / "o")], capture_output=True, text=True)
    assert marker.exists(), trusted.stderr  # the opt-in does what it says


def test_edge_data_node_times_and_edge_ids_are_saved_and_served(tmp_path):
    """Everything PyG's loader would hand a model: edge_attr, edge_weight, edge times and the user's own edge
    attributes reach batches by name, each edge's row as e_id (PyG's e_id); node times serve time_attr by their
    name (and "node_time");
    typed relations' edge data likewise; what cannot be stored is refused, naming it."""
    g = torch.Generator().manual_seed(9)
    data = homogeneous(seed=9)
    edges = data["edge_index"].shape[1]
    data.update(edge_attr=torch.randn(edges, 3, generator=g), edge_weight=torch.rand(edges, generator=g),
                edge_time=torch.randint(0, 100, (edges,), generator=g), time=torch.randint(0, 100, (N,), generator=g),
                n_id=torch.arange(N))
    typed = hetero(seed=10)
    cites = ("paper", "cites", "paper")
    typed[cites]["edge_attr"] = torch.arange(900 * 2).view(900, 2)
    typed["paper"]["node_time"] = torch.arange(120)
    homo_dir, typed_dir = gnnd.pyg.save(data, tmp_path / "homo"), gnnd.pyg.save(typed, tmp_path / "typed")
    daemon = Daemon(tmp_path, f"--dataset=homo={homo_dir}", f"--dataset=typed={typed_dir}")
    try:
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[4, 2], batch_size=32, dataset="homo",
                                     address=daemon.address) as loader:
            batch = next(iter(loader))
            e_id = batch.e_id.long()
            n_id = batch.n_id.long()
            assert torch.equal(data["edge_index"][:, e_id], torch.stack([n_id[batch.edge_index[0]],
                                                                         n_id[batch.edge_index[1]]]))
            for name in ("edge_attr", "edge_weight", "edge_time"):
                assert torch.equal(getattr(batch, name), data[name][e_id]), name
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[-1], batch_size=16, dataset="homo", time_attr="time",
                                     input_nodes=torch.arange(16), input_time=torch.full((16,), 50),
                                     address=daemon.address) as loader:
            batch = next(iter(loader))
            assert bool((data["time"][batch.n_id.long()[16:]] <= 50).all())  # the saved node times, by their name
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[3], batch_size=16, input_nodes=("paper", "train"),
                                     dataset="typed", address=daemon.address) as loader:
            batch = next(iter(loader))
            store = batch[cites]
            assert torch.equal(store.edge_attr, typed[cites]["edge_attr"][store.e_id.long()])
            writes = batch["author", "writes", "paper"]
            src, dst = typed["author", "writes", "paper"]["edge_index"][:, writes.e_id.long()]
            assert torch.equal(src, batch["author"].n_id.long()[writes.edge_index[0]])
    finally:
        assert daemon.stop() == 0, daemon.output()
    cases = [({**data, "mine": torch.zeros(N + 1)}, r"data.mine: shape \(301,\), not one row per node \(300\)"),
             ({**data, "batch": torch.zeros(N)}, r"data.batch: PyG's batches set their own batch"),
             ({**data, "n_id": torch.arange(N).flip(0)}, r"data.n_id: not 0 .. N-1"),
             ({**data, "e_id": torch.arange(edges) + 1}, r"data.e_id: not 0 .. E-1"),
             ({**data, "edge_mine": torch.zeros(7)}, r"data.edge_mine: shape \(7,\), not one row per edge"),
             ({**typed, "paper": {**typed["paper"], "time": torch.arange(120)}}, r"both node_time and time")]
    for i, (bad, message) in enumerate(cases):
        with pytest.raises(gnnd.pyg.SaveError, match=message):
            gnnd.pyg.save(bad, tmp_path / f"bad{i}")
        assert not (tmp_path / f"bad{i}").exists()
    # A RandomLinkSplit's seeds: PyG's link loaders take them as arguments; saved without them, with a warning.
    with pytest.warns(UserWarning, match=r"data.edge_label_index not stored: link seeds are not edge data"):
        gnnd.pyg.save({**data, "edge_label_index": torch.zeros(2, 5, dtype=torch.long)}, tmp_path / "split")
    assert not list((tmp_path / "split").glob("**/edge_label_index*"))


def partially_timed(seed=12):
    """hetero() with node times on papers alone (PyG: the untimed authors are drawn from unfiltered)."""
    typed = hetero(seed)
    typed["paper"]["time"] = torch.randint(0, 50, (120,), generator=torch.Generator().manual_seed(seed))
    return typed


def test_node_times_on_some_types_filter_those_types_alone(tmp_path):
    typed = partially_timed()
    out = gnnd.pyg.save(typed, tmp_path / "partial")
    daemon = Daemon(tmp_path, f"--dataset=partial={out}")
    writes, cites = ("author", "writes", "paper"), ("paper", "cites", "paper")
    seeds, when = torch.arange(0, 120, 7), torch.full((18,), 25)
    try:
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[-1], batch_size=len(seeds), dataset="partial",
                                     input_nodes=("paper", seeds), input_time=when, time_attr="time",
                                     address=daemon.address) as loader:
            batch = next(iter(loader))
        paper, author = batch["paper"].n_id.long(), batch["author"].n_id.long()
        src, dst = batch[cites].edge_index
        assert len(src) > 0 and bool((typed["paper"]["time"][paper[src]] <= 25).all())  # papers: filtered
        got = sorted(zip(author[batch[writes].edge_index[0]].tolist(), paper[batch[writes].edge_index[1]].tolist()))
        want = sorted((a, p) for a, p in typed[writes]["edge_index"].t().tolist() if p in seeds.tolist())
        assert got == want  # authors have no times: every in-edge from them, as PyG's
        with pytest.raises(gnnd.GnndError, match="none of the node types sampled from has node times"):
            gnnd.pyg.NeighborLoader(None, num_neighbors={writes: [2], cites: [0]}, batch_size=4, dataset="partial",
                                    input_nodes=("paper", seeds), input_time=when, time_attr="time",
                                    address=daemon.address)
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_node_attributes_of_any_name_reach_batches_by_n_id(tmp_path):
    """A node store's attributes of any name (an integer x as PyG's tests build it, boolean masks, node times,
    the user's own vectors) are saved and carried into batches under their names, row i node n_id[i], in
    their dtypes (float32, float16, bool kept; integers int64), as PyG slices them; typed too, by type."""
    g = torch.Generator().manual_seed(21)
    data = homogeneous(seed=21)
    data.update(x=torch.arange(N) * 3, score=torch.randn(N, 2, generator=g).half(), time=torch.arange(N) % 7,
                train_mask=torch.rand(N, generator=g) < 0.5, degree=torch.randint(0, 9, (N,), generator=g).int())
    typed = hetero(seed=22)
    typed["author"].update(flag=torch.rand(80, generator=g) < 0.3, emb=torch.randn(80, 4, generator=g))
    homo_dir, typed_dir = gnnd.pyg.save(data, tmp_path / "homo"), gnnd.pyg.save(typed, tmp_path / "typed")
    daemon = Daemon(tmp_path, f"--dataset=homo={homo_dir}", f"--dataset=typed={typed_dir}")
    try:
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[3, 2], batch_size=24, input_nodes="all", dataset="homo",
                                     address=daemon.address) as loader:
            batches = 0
            for batch in loader:
                n_id = batch.n_id.long()
                assert torch.equal(batch.x, data["x"][n_id])  # no features: x is the node attribute
                assert torch.equal(batch.score, data["score"][n_id]) and batch.score.dtype == torch.float16
                assert torch.equal(batch.train_mask, data["train_mask"][n_id])
                assert batch.train_mask.dtype == torch.bool
                assert torch.equal(batch.time, data["time"][n_id])
                assert torch.equal(batch.degree, data["degree"][n_id].long())  # other integers as int64
                batches += 1
            assert batches == len(loader)
        with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=data["edge_index"][:, :40],
                                         batch_size=8, dataset="homo", address=daemon.address) as loader:
            batch = next(iter(loader))
            assert torch.equal(batch.x, data["x"][batch.n_id.long()])  # link batches carry them too
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[3], batch_size=16, input_nodes=("paper", "train"),
                                     dataset="typed", address=daemon.address) as loader:
            batch = next(iter(loader))
            author = batch["author"].n_id.long()
            assert len(author) > 0
            assert torch.equal(batch["author"].flag, typed["author"]["flag"][author])
            assert torch.equal(batch["author"].emb, typed["author"]["emb"][author])
            assert "flag" not in batch["paper"] and batch["paper"].x.dtype == torch.float16  # features stay x
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_a_hetero_data_of_nodes_alone_serves_link_seeds_between_any_two_types(tmp_path):
    """PyG's HeteroData without edge types as a link graph: gnnd.pyg.save gives every two node types an empty
    relation (src, "to", dst), so that link seeds of any (src, dst) pair have one to name."""
    # As HeteroData(paper=dict(num_nodes=100), ...).to_dict() gives it, with its (empty) global store.
    nodes = {"_global_store": {}, "paper": {"num_nodes": 100}, "author": {"num_nodes": 40}}
    out = gnnd.pyg.save(nodes, tmp_path / "nodes")
    daemon = Daemon(tmp_path, f"--dataset=nodes={out}")
    g = torch.Generator().manual_seed(5)
    try:
        for edge_type, counts in [(("paper", "paper"), (100, 100)), (("author", "paper"), (40, 100))]:
            pairs = torch.stack([torch.randint(0, counts[0], (60,), generator=g),
                                 torch.randint(0, counts[1], (60,), generator=g)])
            with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[], edge_label_index=(edge_type, pairs),
                                             batch_size=20, dataset="nodes", address=daemon.address) as loader:
                seen = 0
                for batch in loader:
                    store = batch[(edge_type[0], "to", edge_type[1])]
                    assert store.input_id.numel() == 20 and store.edge_label_index.shape == (2, 20)
                    src = batch[edge_type[0]].n_id[store.edge_label_index[0]]
                    dst = batch[edge_type[1]].n_id[store.edge_label_index[1]]
                    assert torch.equal(torch.stack([src, dst]), pairs[:, store.input_id])
                    assert all(batch[et].edge_index.shape[1] == 0 for et in batch.edge_types)  # no edges at all
                    seen += 1
                assert seen == 3
    finally:
        assert daemon.stop() == 0, daemon.output()
    with pytest.raises(gnnd.pyg.SaveError, match="no node types and no edge types"):
        gnnd.pyg.save(type("HeteroData", (), {"node_types": [], "edge_types": []})(), tmp_path / "empty")
