"""gnnctl import --format ogb on OGB's heterogeneous raw layout (as ogbn-mag ships it), checked against an
independent reader written here with numpy: every relation's CSC, the per-type features, labels and splits,
--add-reverse's relations, and bad files refused by name."""
import gzip
import subprocess

import numpy as np

from daemon_util import GNNCTL

TYPES = {"author": 4, "field_of_study": 3, "institution": 2, "paper": 5}
EDGES = {
    ("author", "affiliated_with", "institution"): [(0, 1), (1, 0), (3, 1), (2, 1)],
    ("author", "writes", "paper"): [(0, 0), (1, 0), (3, 4), (2, 2), (0, 4), (1, 3)],
    ("paper", "cites", "paper"): [(1, 0), (2, 0), (4, 3), (0, 4), (3, 4), (2, 1)],
    ("paper", "has_topic", "field_of_study"): [(0, 2), (4, 2), (1, 0), (3, 1)],
}
PAPER_FEATURES = np.arange(15, dtype=np.float32).reshape(5, 3) / 4
PAPER_LABELS = [3, 0, 1, 1, 2]
SPLITS = {"train": [0, 3, 4], "valid": [1], "test": [2]}


def write_gz(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write(text)


def write_mag(root, edges=EDGES):
    raw = root / "raw"
    write_gz(raw / "num-node-dict.csv.gz", ",".join(TYPES) + "\n" + ",".join(map(str, TYPES.values())) + "\n")
    write_gz(raw / "triplet-type-list.csv.gz", "".join(",".join(t) + "\n" for t in edges))
    for triplet, pairs in edges.items():
        folder = raw / "relations" / "___".join(triplet)
        write_gz(folder / "edge.csv.gz", "".join(f"{s},{d}\n" for s, d in pairs))
        write_gz(folder / "num-edge-list.csv.gz", f"{len(pairs)}\n")
    write_gz(raw / "node-feat" / "paper" / "node-feat.csv.gz",
             "".join(",".join(repr(float(v)) for v in row) + "\n" for row in PAPER_FEATURES))
    write_gz(raw / "nodetype-has-label.csv.gz", ",".join(TYPES) + "\nFalse,False,False,True\n")
    write_gz(raw / "node-label" / "paper" / "node-label.csv.gz", "".join(f"{v}\n" for v in PAPER_LABELS))
    split = root / "split" / "time"
    write_gz(split / "nodetype-has-split.csv.gz", ",".join(TYPES) + "\nFalse,False,False,True\n")
    for name, ids in SPLITS.items():
        write_gz(split / "paper" / f"{name}.csv.gz", "".join(f"{v}\n" for v in ids))
    return root


def gnnctl_import(src, out, *flags):
    return subprocess.run([GNNCTL, "import", "--format=ogb", *flags, str(src), str(out)], capture_output=True,
                          text=True)


def expected_csc(pairs, num_dst):
    """CSC of (src, dst) pairs: each destination's sources ascending."""
    ordered = sorted(pairs, key=lambda p: (p[1], p[0]))
    indptr = np.zeros(num_dst + 1, np.int64)
    np.add.at(indptr, [d + 1 for _, d in ordered], 1)
    return np.cumsum(indptr), np.array([s for s, _ in ordered], np.int32)


def test_every_relation_type_and_split_matches_an_independent_reader(tmp_path):
    src = write_mag(tmp_path / "mag")
    proc = gnnctl_import(src, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    manifest = (out / "manifest.textproto").read_text()
    assert "format_version: 2" in manifest
    for (h, r, t), pairs in EDGES.items():
        indptr, indices = expected_csc(pairs, TYPES[t])
        np.testing.assert_array_equal(np.load(out / f"{h}___{r}___{t}.indptr.npy"), indptr)
        np.testing.assert_array_equal(np.load(out / f"{h}___{r}___{t}.indices.npy"), indices)
    np.testing.assert_array_equal(np.load(out / "paper.features.npy"), PAPER_FEATURES)
    np.testing.assert_array_equal(np.load(out / "paper.labels.npy"), PAPER_LABELS)
    for name, ids in SPLITS.items():
        np.testing.assert_array_equal(np.load(out / f"paper.{name}.npy"), ids)
    assert not (out / "author.features.npy").exists() and not (out / "author.labels.npy").exists()
    check = subprocess.run([GNNCTL, "validate", str(out)], capture_output=True, text=True)
    assert check.returncode == 0 and "4 node types, 4 relations" in check.stdout, check.stdout + check.stderr


def test_add_reverse_gives_every_relation_its_reverse(tmp_path):
    src = write_mag(tmp_path / "mag")
    proc = gnnctl_import(src, tmp_path / "out", "--add-reverse", "--feature-dtype=float16")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    assert np.load(out / "paper.features.npy").dtype == np.float16
    for (h, r, t), pairs in EDGES.items():
        indptr, indices = expected_csc([(d, s) for s, d in pairs], TYPES[h])
        np.testing.assert_array_equal(np.load(out / f"{t}___rev_{r}___{h}.indptr.npy"), indptr)
        np.testing.assert_array_equal(np.load(out / f"{t}___rev_{r}___{h}.indices.npy"), indices)
    assert "8 relations" in subprocess.run([GNNCTL, "validate", str(out)], capture_output=True, text=True).stdout


def test_bad_files_are_refused_by_name(tmp_path):
    bad_edges = dict(EDGES)
    bad_edges[("author", "writes", "paper")] = [(0, 0), (4, 1)]  # author 4 does not exist
    proc = gnnctl_import(write_mag(tmp_path / "a", bad_edges), tmp_path / "out-a")
    assert proc.returncode != 0
    assert "raw/relations/author___writes___paper/edge.csv.gz line 2: source id 4 is out of range [0, 4)" \
        in proc.stderr, proc.stderr
    assert not (tmp_path / "out-a").exists()

    src = write_mag(tmp_path / "b")
    write_gz(src / "raw" / "triplet-type-list.csv.gz", "author,writes\n")
    proc = gnnctl_import(src, tmp_path / "out-b")
    assert proc.returncode != 0 and "raw/triplet-type-list.csv.gz: 2 fields" in proc.stderr, proc.stderr

    src = write_mag(tmp_path / "c")
    write_gz(src / "raw" / "relations" / "paper___cites___paper" / "num-edge-list.csv.gz", "7\n")
    proc = gnnctl_import(src, tmp_path / "out-c")
    assert proc.returncode != 0
    assert "raw/relations/paper___cites___paper/num-edge-list.csv.gz: does not say 6" in proc.stderr, proc.stderr

    src = write_mag(tmp_path / "d")
    write_gz(src / "raw" / "node-feat" / "paper" / "node-feat.csv.gz", "1,2,3\n4,5\n")
    proc = gnnctl_import(src, tmp_path / "out-d")
    assert proc.returncode != 0
    assert "raw/node-feat/paper/node-feat.csv.gz line 2: 2 feature values, expected 3" in proc.stderr, proc.stderr


def test_gnnctl_samples_a_typed_batch_by_the_rule(tmp_path):
    out = tmp_path / "out"
    assert gnnctl_import(write_mag(tmp_path / "mag"), out, "--add-reverse").returncode == 0
    npz = tmp_path / "batch.npz"
    proc = subprocess.run([GNNCTL, "sample", f"--dataset={out}", "--batch-size=2", "--fanouts=2,2", "--seed=1",
                           "--shuffle=false", f"--out={npz}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "2 'paper' seeds" in proc.stdout, proc.stdout
    b = np.load(npz)
    papers = b["paper.node_ids"]
    assert papers[:2].tolist() == SPLITS["train"][:2]  # the seeds first, in split order (no shuffle)
    assert len(set(papers.tolist())) == len(papers)
    np.testing.assert_array_equal(b["paper.features"], PAPER_FEATURES[papers])
    np.testing.assert_array_equal(b["paper.labels"], np.array(PAPER_LABELS)[papers[:2]])
    relations = dict(EDGES)
    relations.update({(t, f"rev_{r}", h): [(d, s) for s, d in pairs] for (h, r, t), pairs in EDGES.items()})
    for (h, r, t), pairs in relations.items():
        key = f"{h}___{r}___{t}"
        src = b[f"{h}.node_ids"][b[f"{key}.edge_src"]]
        dst = b[f"{t}.node_ids"][b[f"{key}.edge_dst"]]
        assert set(zip(src.tolist(), dst.tolist())) <= set(pairs), key  # only edges of that relation
        hop0 = b[f"{key}.num_edges_per_hop"][0]
        if t == "paper":  # every seed expanded through every relation into papers: min(2, in-degree) edges
            for seed in papers[:2]:
                degree = sum(1 for _, d in pairs if d == seed)
                assert int(np.sum(dst[:hop0] == seed)) == min(2, degree), (key, seed)
        else:
            assert hop0 == 0, key  # hop 0 expands the seeds' type only
    bad = subprocess.run([GNNCTL, "sample", f"--dataset={out}", "--node-type=author", f"--out={npz}"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "open.split = 'train' (node type 'author' has no such split)" in bad.stderr


def write_mag_npz(root, feature_dtype=np.float32):
    """The same graph in OGB's binary heterogeneous layout (npz tables, CSV splits)."""
    raw = root / "raw"
    raw.mkdir(parents=True)
    np.savez(raw / "num_nodes_dict.npz", **{t: np.array([n]) for t, n in TYPES.items()})
    np.savez(raw / "num_edges_dict.npz", **{"___".join(k): np.array([len(v)]) for k, v in EDGES.items()})
    np.savez(raw / "edge_index_dict.npz", **{"___".join(k): np.array(v, np.int64).T for k, v in EDGES.items()})
    np.savez(raw / "node_feat.npz", paper=PAPER_FEATURES.astype(feature_dtype))
    np.savez(raw / "node-label.npz", paper=np.array(PAPER_LABELS, np.float64).reshape(-1, 1))
    split = root / "split" / "time"
    write_gz(split / "nodetype-has-split.csv.gz", ",".join(TYPES) + "\nFalse,False,False,True\n")
    for name, ids in SPLITS.items():
        write_gz(split / "paper" / f"{name}.csv.gz", "".join(f"{v}\n" for v in ids))
    return root


def test_the_binary_layout_gives_the_csv_layouts_dataset(tmp_path):
    from_csv, from_npz = tmp_path / "csv", tmp_path / "npz"
    assert gnnctl_import(write_mag(tmp_path / "a"), from_csv).returncode == 0
    proc = subprocess.run([GNNCTL, "import", "--format=ogb-bin", str(write_mag_npz(tmp_path / "b")), str(from_npz)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in from_csv.glob("*.npy"))
    assert names == sorted(p.name for p in from_npz.glob("*.npy")) and len(names) == 14  # hot_order.npy too
    for name in names:
        assert (from_csv / name).read_bytes() == (from_npz / name).read_bytes(), name
    # float16 features keep their dtype unless another is asked for
    half = tmp_path / "half"
    src = write_mag_npz(tmp_path / "c", np.float16)
    assert subprocess.run([GNNCTL, "import", "--format=ogb-bin", str(src), str(half)]).returncode == 0
    features = np.load(half / "paper.features.npy")
    assert features.dtype == np.float16
    np.testing.assert_array_equal(features, PAPER_FEATURES.astype(np.float16))
    # a relation array misnamed, or ids past a type's count, are refused by name
    bad = write_mag_npz(tmp_path / "d")
    np.savez(bad / "raw" / "edge_index_dict.npz", author__writes=np.zeros((2, 1), np.int64))
    proc = subprocess.run([GNNCTL, "import", "--format=ogb-bin", str(bad), str(tmp_path / "x")], capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "array 'author__writes' is not named H___R___T" in proc.stderr, proc.stderr
    np.savez(bad / "raw" / "edge_index_dict.npz", author___writes___paper=np.array([[0, 9], [1, 1]], np.int64))
    proc = subprocess.run([GNNCTL, "import", "--format=ogb-bin", str(bad), str(tmp_path / "y")], capture_output=True,
                          text=True)
    assert proc.returncode != 0
    assert "raw/edge_index_dict.npz:author___writes___paper[:, 1]: source id 9 is out of range [0, 4)" in proc.stderr, \
        proc.stderr


WRITES_FEATURES = np.arange(12, dtype=np.float32).reshape(6, 2) / 8  # a row per writes edge, in its file's order


def test_edge_features_of_a_relation_follow_its_edges_in_both_layouts(tmp_path):
    csv_src = write_mag(tmp_path / "a")
    write_gz(csv_src / "raw" / "relations" / "author___writes___paper" / "edge-feat.csv.gz",
             "".join(",".join(repr(float(v)) for v in row) + "\n" for row in WRITES_FEATURES))
    npz_src = write_mag_npz(tmp_path / "b")
    np.savez(npz_src / "raw" / "edge_feat_dict.npz", author___writes___paper=WRITES_FEATURES)
    from_csv, from_npz = tmp_path / "csv", tmp_path / "npz"
    assert gnnctl_import(csv_src, from_csv, "--add-reverse").returncode == 0
    proc = subprocess.run([GNNCTL, "import", "--format=ogb-bin", "--add-reverse", str(npz_src), str(from_npz)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    pairs = EDGES[("author", "writes", "paper")]
    for out in (from_csv, from_npz):
        for key, flip in (("author___writes___paper", False), ("paper___rev_writes___author", True)):
            indptr, indices = np.load(out / f"{key}.indptr.npy"), np.load(out / f"{key}.indices.npy")
            e_id, attr = np.load(out / f"{key}.e_id.npy"), np.load(out / f"{key}.edge.edge_attr.npy")
            assert attr.dtype == np.float32 and attr.shape == (6, 2), key
            np.testing.assert_array_equal(attr, WRITES_FEATURES[e_id])  # row k is the input row of edge k
            dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
            edges = [pairs[i][::-1] if flip else pairs[i] for i in e_id]
            assert edges == list(zip(indices.tolist(), dst.tolist())), key
        assert not (out / "paper___cites___paper.edge.edge_attr.npy").exists()  # relations without features
    for name in sorted(p.name for p in from_csv.glob("*.npy")):
        assert (from_csv / name).read_bytes() == (from_npz / name).read_bytes(), name
    # A table of the wrong length, or for no relation, is refused by name.
    write_gz(csv_src / "raw" / "relations" / "author___writes___paper" / "edge-feat.csv.gz", "1,2\n")
    proc = gnnctl_import(csv_src, tmp_path / "x")
    assert proc.returncode != 0
    assert "raw/relations/author___writes___paper/edge-feat.csv.gz: 1 lines, but raw/relations/author___writes___paper/edge.csv.gz has 6 edges" in proc.stderr
    np.savez(npz_src / "raw" / "edge_feat_dict.npz", author___reads___paper=WRITES_FEATURES)
    proc = subprocess.run([GNNCTL, "import", "--format=ogb-bin", str(npz_src), str(tmp_path / "y")],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "raw/edge_feat_dict.npz: array 'author___reads___paper' is not a relation" in proc.stderr, proc.stderr
