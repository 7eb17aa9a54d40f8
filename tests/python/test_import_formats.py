"""The same random graph written by numpy in every supported source format imports to identical
dataset arrays, equal to a CSC computed here independently. Run by ctest with GNNCTL set."""
import gzip
import zipfile

import numpy as np
import pytest

from daemon_util import run_gnnctl

N, E, D, C = 300, 2500, 7, 5


def load(out):
    return {name: np.load(out / f"{name}.npy") for name in
            ("indptr", "indices", "features", "labels", "train", "valid", "test", "hot_order")}


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(5)
    src = rng.integers(0, N, E)
    dst = rng.integers(0, N, E)
    feat = rng.standard_normal((N, D)).astype(np.float32)
    labels = rng.integers(0, C, N).astype(np.float64)
    labels[rng.random(N) < 0.2] = np.nan
    labeled = np.flatnonzero(~np.isnan(labels))
    rng.shuffle(labeled)
    # Every labeled node is in a split: GraphBolt carries labels only for split members.
    a, b = len(labeled) * 6 // 10, len(labeled) * 8 // 10
    splits = {"train": labeled[:a], "valid": labeled[a:b], "test": labeled[b:]}
    return src, dst, feat, labels, splits


def expected_csc(src, dst, undirected=False, dedup=False):
    if undirected:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    if dedup:
        keep = src != dst
        pairs = np.unique(np.stack([dst[keep], src[keep]], 1), axis=0)
        dst, src = pairs[:, 0], pairs[:, 1]
    order = np.lexsort((src, dst))
    indptr = np.zeros(N + 1, np.int64)
    np.add.at(indptr, dst + 1, 1)
    return np.cumsum(indptr), src[order].astype(np.int32)


def gz_lines(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        for row in rows:
            f.write(",".join(row) + "\n")


def write_ogb_splits(root, splits):
    for name, ids in splits.items():
        gz_lines(root / "split" / "scheme" / f"{name}.csv.gz", [[str(i)] for i in ids])


def write_ogb(root, g):
    src, dst, feat, labels, splits = g
    gz_lines(root / "raw" / "num-node-list.csv.gz", [[str(N)]])
    gz_lines(root / "raw" / "edge.csv.gz", [[str(u), str(v)] for u, v in zip(src, dst)])
    gz_lines(root / "raw" / "node-feat.csv.gz", [[repr(float(x)) for x in row] for row in feat])
    gz_lines(root / "raw" / "node-label.csv.gz", [["nan" if np.isnan(y) else str(int(y))] for y in labels])
    write_ogb_splits(root, splits)


def write_ogb_bin(root, g, compressed):
    src, dst, feat, labels, splits = g
    (root / "raw").mkdir(parents=True)
    save = np.savez_compressed if compressed else np.savez
    save(root / "raw" / "data.npz", edge_index=np.stack([src, dst]), node_feat=feat,
         num_nodes_list=np.array([N]), edge_feat=None)
    save(root / "raw" / "node-label.npz", node_label=labels.reshape(-1, 1))
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    assert all(i.compress_type == method for i in zipfile.ZipFile(root / "raw" / "data.npz").infolist())
    write_ogb_splits(root, splits)


def write_graphbolt(root, g):
    src, dst, feat, labels, splits = g
    (root / "data").mkdir(parents=True)
    np.save(root / "data" / "edges.npy", np.stack([src, dst]))
    np.save(root / "data" / "feat.npy", feat)
    sets = ""
    for key, name in (("train_set", "train"), ("validation_set", "valid"), ("test_set", "test")):
        ids = splits[name]
        np.save(root / "data" / f"{name}_seeds.npy", ids)
        np.save(root / "data" / f"{name}_labels.npy", labels[ids].astype(np.int64))
        sets += f"""    {key}:
      - data:
          - name: seeds
            format: numpy
            path: data/{name}_seeds.npy
          - name: labels
            format: numpy
            path: data/{name}_labels.npy
"""
    (root / "metadata.yaml").write_text(f"""dataset_name: cross
graph:
  nodes:
    - num: {N}
  edges:
    - format: numpy
      path: data/edges.npy
feature_data:
  - domain: node
    name: feat
    format: numpy
    path: data/feat.npy
tasks:
  - name: node_classification
    num_classes: {C}
{sets}""")


def write_edgelist(root, g):
    src, dst, feat, labels, splits = g
    root.mkdir(parents=True)
    with gzip.open(root / "edges.txt.gz", "wt") as f:
        f.write("# src dst\n")
        f.writelines(f"{u}\t{v}\n" for u, v in zip(src, dst))
    np.save(root / "feat.npy", feat)
    np.save(root / "labels.npy", np.where(np.isnan(labels), -1, labels).astype(np.int64))
    (root / "splits").mkdir()
    for name, ids in splits.items():
        np.save(root / "splits" / f"{name}.npy", ids)
    return ["--features", root / "feat.npy", "--labels", root / "labels.npy", "--splits", root / "splits"]


def import_all(tmp_path, g, *flags):
    outs = {}
    write_ogb(tmp_path / "ogb", g)
    run_gnnctl("import", "--format", "ogb", *flags, tmp_path / "ogb", tmp_path / "out-ogb")
    outs["ogb"] = tmp_path / "out-ogb"
    for compressed in (False, True):
        src = tmp_path / f"ogb-bin-{compressed}"
        write_ogb_bin(src, g, compressed)
        run_gnnctl("import", "--format", "ogb-bin", *flags, src, tmp_path / f"out-bin-{compressed}")
        outs[f"ogb-bin-{compressed}"] = tmp_path / f"out-bin-{compressed}"
    write_graphbolt(tmp_path / "gb", g)
    run_gnnctl("import", "--format", "graphbolt", *flags, tmp_path / "gb", tmp_path / "out-gb")
    outs["graphbolt"] = tmp_path / "out-gb"
    extra = write_edgelist(tmp_path / "el", g)
    run_gnnctl("import", "--format", "edgelist", *flags, *extra, tmp_path / "el" / "edges.txt.gz", tmp_path / "out-el")
    outs["edgelist"] = tmp_path / "out-el"
    return {name: load(path) for name, path in outs.items()}


@pytest.mark.parametrize("flags", [(), ("--undirected", "--dedup")])
def test_every_format_gives_identical_arrays(tmp_path, graph, flags):
    src, dst, feat, labels, splits = graph
    results = import_all(tmp_path, graph, *flags)
    indptr, indices = expected_csc(src, dst, undirected="--undirected" in flags, dedup="--dedup" in flags)
    want_labels = np.where(np.isnan(labels), -1, labels).astype(np.int64)
    for name, arrays in results.items():
        np.testing.assert_array_equal(arrays["indptr"], indptr, err_msg=name)
        assert arrays["indices"].dtype == np.int32, name
        np.testing.assert_array_equal(arrays["indices"], indices, err_msg=name)
        np.testing.assert_array_equal(arrays["features"], feat, err_msg=name)
        np.testing.assert_array_equal(arrays["labels"], want_labels, err_msg=name)
        for split, ids in splits.items():
            np.testing.assert_array_equal(arrays[split], ids, err_msg=f"{name} {split}")
        # The hot tier's ranking is stored with every import: a permutation of the nodes, the same graph ranked
        # the same way whatever the source format.
        np.testing.assert_array_equal(np.sort(arrays["hot_order"]), np.arange(N), err_msg=name)
        np.testing.assert_array_equal(arrays["hot_order"], results["ogb"]["hot_order"], err_msg=name)


def test_npz_errors_are_named(tmp_path, graph):
    src, dst, feat, labels, splits = graph
    root = tmp_path / "bad"
    (root / "raw").mkdir(parents=True)
    np.savez(root / "raw" / "data.npz", edge_index=np.stack([src, dst + N]), node_feat=feat, num_nodes_list=np.array([N]))
    np.savez(root / "raw" / "node-label.npz", node_label=labels)
    write_ogb_splits(root, splits)
    proc = run_gnnctl("import", "--format", "ogb-bin", root, tmp_path / "out", ok=False)
    assert proc.returncode != 0
    assert f"raw/data.npz:edge_index[:, 0]: node id {dst[0] + N} is out of range [0, {N})" in proc.stderr
    assert not (tmp_path / "out").exists()
    np.savez(root / "raw" / "data.npz", edge_index=np.stack([src, dst]), num_nodes_list=np.array([N]))
    proc = run_gnnctl("import", "--format", "ogb-bin", root, tmp_path / "out", ok=False)
    assert "raw/data.npz: has no array 'node_feat'" in proc.stderr


def test_float16_features_are_kept(tmp_path, graph):
    src, dst, feat, labels, splits = graph
    half = (graph[0], graph[1], feat.astype(np.float16), labels, splits)
    write_graphbolt(tmp_path / "gb", half)
    run_gnnctl("import", "--format", "graphbolt", tmp_path / "gb", tmp_path / "out")
    out = np.load(tmp_path / "out" / "features.npy")
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, feat.astype(np.float16))
    assert "feature_dtype: FEATURE_DTYPE_FLOAT16" in (tmp_path / "out" / "manifest.textproto").read_text()


@pytest.mark.parametrize("flags", [(), ("--undirected", "--dedup")])
def test_ogb_edge_features_become_edge_attr(tmp_path, graph, flags):
    """OGB's edge features (raw/edge-feat.csv.gz; data.npz's edge_feat) are the edge attribute edge_attr, in CSC
    order with the edge ids, the same from both layouts."""
    src, dst, feat, labels, splits = graph
    edge_feat = np.random.default_rng(9).standard_normal((E, 3)).astype(np.float32)
    write_ogb(tmp_path / "ogb", graph)
    gz_lines(tmp_path / "ogb" / "raw" / "edge-feat.csv.gz", [[repr(float(x)) for x in row] for row in edge_feat])
    write_ogb_bin(tmp_path / "bin", graph, compressed=True)
    np.savez_compressed(tmp_path / "bin" / "raw" / "data.npz", edge_index=np.stack([src, dst]), node_feat=feat,
                        num_nodes_list=np.array([N]), edge_feat=edge_feat.astype(np.float64))
    outs = {}
    for fmt, source in (("ogb", tmp_path / "ogb"), ("ogb-bin", tmp_path / "bin")):
        outs[fmt] = tmp_path / f"out-{fmt}"
        run_gnnctl("import", "--format", fmt, *flags, source, outs[fmt])
    for fmt, out in outs.items():
        e_id = np.load(out / "e_id.npy")
        np.testing.assert_array_equal(np.load(out / "edge.edge_attr.npy"), edge_feat[e_id], err_msg=fmt)
        np.testing.assert_array_equal(np.load(out / "indices.npy"), load(outs["ogb"])["indices"], err_msg=fmt)
    # Short of a row: refused naming the file.
    gz_lines(tmp_path / "ogb" / "raw" / "edge-feat.csv.gz", [[repr(float(x)) for x in row] for row in edge_feat[1:]])
    bad = run_gnnctl("import", "--format", "ogb", tmp_path / "ogb", tmp_path / "bad", ok=False)
    assert f"raw/edge-feat.csv.gz: {E - 1} lines, but raw/edge.csv.gz has {E} edges" in bad.stderr, bad.stderr
