"""Datasets for link prediction through the tools and gnnd: `gnnctl import --format edgelist` of a graph alone
with --edge-splits (text or .npy edges), `gnnctl validate`, gnnd loading it, and node batches of it without
features or labels (every node as a seed; the default split, which it lacks, refused naming it)."""
import importlib
import importlib.util
import os
import subprocess

import numpy as np
import pytest

import gnnd
from daemon_util import GNNCTL, Daemon

NAME = f"links{os.getpid()}"  # shared-memory names are host-wide


def gnnctl(*args):
    return subprocess.run([GNNCTL, *map(str, args)], capture_output=True, text=True)


def write_graph(root, seed=5):
    """A random directed graph of 60 nodes, and held-out test edges with 4 fixed negatives each."""
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, 60, size=(2, 400))
    root.mkdir()
    (root / "edges.txt").write_text("".join(f"{s} {d}\n" for s, d in edges.T))
    np.save(root / "edges.npy", edges)
    splits = root / "splits"
    splits.mkdir()
    np.save(splits / "train.npy", edges[:, :300])
    np.save(splits / "train_label.npy", rng.integers(0, 3, size=300))
    np.save(splits / "test.npy", np.array([[1, 2, 61], [3, 4, 5]]))  # 61: a node seen only here
    np.save(splits / "test_neg.npy", rng.integers(0, 60, size=(3, 4)).astype(np.int32))
    return edges


def test_a_graph_alone_with_edge_splits_imports_validates_and_loads(tmp_path):
    edges = write_graph(tmp_path / "src")
    outs = []
    for source in ("edges.txt", "edges.npy"):
        out = tmp_path / f"out-{source}"
        done = gnnctl("import", "--format=edgelist", tmp_path / "src" / source, out,
                      f"--edge-splits={tmp_path / 'src' / 'splits'}")
        assert done.returncode == 0, done.stderr
        assert "62 nodes, 400 edges" in done.stdout, done.stdout  # the largest id, 61, + 1
        assert "edge splits train 300 (labeled) / test 3 (4 negatives each)" in done.stdout, done.stdout
        assert not (out / "features.npy").exists() and not (out / "labels.npy").exists()
        outs.append(out)
    for name in ("indptr.npy", "indices.npy", "train_edges.npy", "train_edge_label.npy", "test_edges.npy",
                 "test_neg.npy"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    np.testing.assert_array_equal(np.load(outs[0] / "train_edges.npy"), edges[:, :300])
    assert np.load(outs[0] / "test_neg.npy").dtype == np.int64
    assert gnnctl("validate", outs[0]).returncode == 0

    # The CSC holds the graph: each node's in-neighbors, sorted.
    indptr, indices = np.load(outs[0] / "indptr.npy"), np.load(outs[0] / "indices.npy")
    for v in (0, 17, 59):
        assert list(indices[indptr[v]:indptr[v + 1]]) == sorted(edges[0, edges[1] == v]), v

    daemon = Daemon(tmp_path, f"--dataset={NAME}={outs[0]}", name="links")
    try:
        assert NAME in daemon.gnnctl("datasets").stdout
        with pytest.raises(gnnd.GnndError) as error:  # node batches need seeds: the graph has no node splits
            gnnd.Loader(address=daemon.address, dataset=NAME, batch_size=8, fanouts=[2], output="numpy")
        assert error.value.code == "INVALID_ARGUMENT", error.value
        assert "has no such split" in error.value.message, error.value
        # Without features or labels a graph still serves node batches (PyG: a Data of edge_index alone).
        with gnnd.Loader(address=daemon.address, dataset=NAME, split="all", batch_size=8, fanouts=[2],
                         output="numpy", copy=True) as loader:
            batches = list(loader)
        assert sorted(i for b in batches for i in b.node_ids[:b.nodes_per_hop[0]].tolist()) == list(range(62))
        for batch in batches:
            assert not hasattr(batch, "features") and not hasattr(batch, "labels")
            src, dst = batch.node_ids[batch.edge_src], batch.node_ids[batch.edge_dst]
            for u, v in zip(src.tolist(), dst.tolist()):
                assert u in indices[indptr[v]:indptr[v + 1]], (u, v)
        if importlib.util.find_spec("torch") is not None:  # gnnd.pyg's batch: x and y None, as PyG's
            pyg = importlib.import_module("gnnd.pyg")
            with pyg.NeighborLoader(None, num_neighbors=[2], input_nodes="all", batch_size=8, dataset=NAME,
                                         address=daemon.address) as loader:
                data = next(iter(loader))
                assert data.x is None and data.y is None and data.edge_index.shape[0] == 2 and data.batch_size == 8
        assert daemon.proc.poll() is None
    finally:
        assert daemon.stop() == 0, daemon.output()

    sampled = gnnctl("sample", f"--dataset={outs[0]}", "--batch-size=8", "--fanouts=2", f"--out={tmp_path / 'b.npz'}")
    assert sampled.returncode != 0 and "has no such split" in sampled.stderr, sampled.stderr
    sampled = gnnctl("sample", f"--dataset={outs[0]}", "--split=all", "--batch-size=8", "--fanouts=2",
                     f"--out={tmp_path / 'b.npz'}")
    assert sampled.returncode == 0 and "features" not in np.load(tmp_path / "b.npz").files, sampled.stderr


def test_edge_split_flags_are_checked(tmp_path):
    write_graph(tmp_path / "src")
    wrong_format = gnnctl("import", "--format=ogb", tmp_path / "src", tmp_path / "o1",
                          f"--edge-splits={tmp_path / 'src' / 'splits'}")
    assert wrong_format.returncode != 0 and "--edge-splits: only --format edgelist takes it" in wrong_format.stderr
    typed_count = gnnctl("import", "--format=edgelist", tmp_path / "src" / "edges.txt", tmp_path / "o2",
                         "--num-nodes=paper=5")
    assert typed_count.returncode != 0 and "give --num-nodes N" in typed_count.stderr, typed_count.stderr
    too_few = gnnctl("import", "--format=edgelist", tmp_path / "src" / "edges.txt", tmp_path / "o3",
                     "--num-nodes=61", f"--edge-splits={tmp_path / 'src' / 'splits'}")
    assert too_few.returncode != 0 and "node id 61 is out of range [0, 61)" in too_few.stderr, too_few.stderr
    assert not (tmp_path / "o3").exists()
    counted = gnnctl("import", "--format=edgelist", tmp_path / "src" / "edges.txt", tmp_path / "o4", "--num-nodes=100")
    assert counted.returncode == 0 and "100 nodes, 400 edges" in counted.stdout, counted.stderr


def test_ogb_link_layout_converts_then_imports(tmp_path):
    torch = pytest.importorskip("torch")
    import gzip
    ogb = tmp_path / "ogbl"
    (ogb / "raw").mkdir(parents=True)
    (ogb / "split" / "time").mkdir(parents=True)
    edges = np.random.default_rng(2).integers(0, 40, size=(2, 200))
    with gzip.open(ogb / "raw" / "edge.csv.gz", "wt") as f:
        f.write("".join(f"{s},{d}\n" for s, d in edges.T))
    with gzip.open(ogb / "raw" / "num-node-list.csv.gz", "wt") as f:
        f.write("50\n")
    with gzip.open(ogb / "raw" / "node-feat.csv.gz", "wt") as f:
        f.write("".join(f"{v}.5,{-v}\n" for v in range(50)))
    torch.save({"source_node": torch.tensor(edges[0, :150]), "target_node": torch.tensor(edges[1, :150])},
               ogb / "split" / "time" / "train.pt")
    negatives = torch.randint(0, 50, (50, 7))
    torch.save({"source_node": torch.tensor(edges[0, 150:]), "target_node": torch.tensor(edges[1, 150:]),
                "target_node_neg": negatives}, ogb / "split" / "time" / "valid.pt")
    script = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "dataset", "ogb_link_to_npy.py")
    converted = subprocess.run(["/usr/bin/python3", script, ogb, tmp_path / "npy"], capture_output=True, text=True)
    assert converted.returncode == 0, converted.stderr
    line = converted.stdout.strip().split()
    assert line[:3] == ["gnnctl", "import", "--format"], converted.stdout
    out = tmp_path / "dataset"
    done = gnnctl(*line[1:5], out, *line[6:])
    assert done.returncode == 0, done.stderr
    assert "50 nodes, 200 edges" in done.stdout and "features 2 x float32" in done.stdout, done.stdout
    assert "edge splits train 150 / valid 50 (7 negatives each)" in done.stdout, done.stdout
    np.testing.assert_array_equal(np.load(out / "valid_edges.npy"), edges[:, 150:])
    np.testing.assert_array_equal(np.load(out / "valid_neg.npy"), negatives.numpy())
    np.testing.assert_array_equal(np.load(out / "features.npy")[3], [3.5, -3])
