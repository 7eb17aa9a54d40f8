"""Imports refuse what cannot be stored faithfully or cannot be meant, naming the file and element, and leave
nothing behind: non-finite feature values, values past the feature dtype's range (unless --clamp), node
counts far beyond the input, impossible --feature-dim widths, a type counted twice in --num-nodes; a
feature file one row short is named."""
import gzip
import subprocess

import numpy as np
import pytest

from daemon_util import GNNCTL

NODES = 6


def gnnctl(*args):
    return subprocess.run([GNNCTL, *map(str, args)], capture_output=True, text=True, timeout=120)


def edgelist(tmp_path, features):
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n2 3\n3 4\n4 5\n5 0\n")
    np.save(tmp_path / "f.npy", features)
    return ["import", "--format=edgelist", tmp_path / "edges.txt", f"--features={tmp_path / 'f.npy'}"]


def leftovers(tmp_path, out):
    return [p.name for p in tmp_path.iterdir() if p.name.startswith(out.name)]


@pytest.mark.parametrize("value,dtype,target,what", [
    (np.inf, np.float32, "float32", "is not finite"),
    (np.nan, np.float32, "float32", "is NaN"),
    (-np.inf, np.float16, "float16", "is not finite"),
    (1e39, np.float64, "float32", "is past float32's range"),
    (1e5, np.float32, "float16", "is past float16's range (|x| <= 65504)"),
    (3e38 * 2, np.float64, "bfloat16", "is past bfloat16's range"),
    (np.inf, np.float32, "float8_e4m3fn", "is not finite"),
    (500, np.float32, "float8_e4m3fn", "is past float8_e4m3fn's range (|x| <= 448)"),
])
def test_feature_values_that_cannot_be_stored_are_refused_naming_the_element(tmp_path, value, dtype, target, what):
    features = np.ones((NODES, 3), dtype)
    features[4, 2] = value
    out = tmp_path / "out"
    proc = gnnctl(*edgelist(tmp_path, features), out, f"--feature-dtype={target}")
    assert proc.returncode != 0
    assert f"f.npy: feature value" in proc.stderr and f"at row 4, column 2 {what}" in proc.stderr, proc.stderr
    assert leftovers(tmp_path, out) == []


def test_clamp_stores_the_dtypes_largest_and_nan_stays_refused(tmp_path):
    features = np.ones((NODES, 2), np.float32)
    features[1, 0], features[2, 1] = 1e5, -np.inf
    out = tmp_path / "out"
    proc = gnnctl(*edgelist(tmp_path, features), out, "--feature-dtype=float16", "--clamp")
    assert proc.returncode == 0, proc.stderr
    stored = np.load(out / "features.npy")
    assert stored.dtype == np.float16 and stored[1, 0] == 65504 and stored[2, 1] == -65504 and stored[0, 0] == 1
    features[3, 1] = np.nan
    proc = gnnctl(*edgelist(tmp_path, features), tmp_path / "out2", "--clamp")
    assert proc.returncode != 0 and "at row 3, column 1 is NaN" in proc.stderr, proc.stderr


def write_gz(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write(text)


def ogb_typed(root, paper_count, feature_rows=None):
    raw = root / "raw"
    write_gz(raw / "num-node-dict.csv.gz", f"paper,author\n{paper_count},3\n")
    write_gz(raw / "triplet-type-list.csv.gz", "author,writes,paper\n")
    write_gz(raw / "relations/author___writes___paper/edge.csv.gz", "0,1\n1,2\n2,0\n")
    if feature_rows is not None:
        write_gz(raw / "node-feat/paper/node-feat.csv.gz", "".join("0.5,1.5\n" for _ in range(feature_rows)))
    write_gz(raw / "nodetype-has-label.csv.gz", "paper,author\nFalse,False\n")
    write_gz(root / "split/time/nodetype-has-split.csv.gz", "paper,author\nFalse,False\n")
    return root


@pytest.mark.parametrize("count", [10**12, 3 * 10**9])
def test_a_node_count_far_beyond_the_input_is_refused_without_an_abort(tmp_path, count):
    out = tmp_path / "out"
    proc = gnnctl("import", "--format=ogb", ogb_typed(tmp_path / "src", count), out)
    assert proc.returncode not in (0, 134, -6, -9), proc.returncode
    assert (f"raw/num-node-dict.csv.gz: node type 'paper' has {count} nodes, but the input names ids only below 3 "
            "and holds 0 feature rows for it: the count looks wrong") in proc.stderr, proc.stderr
    assert leftovers(tmp_path, out) == []


def test_a_feature_file_a_row_short_is_named(tmp_path):
    proc = gnnctl("import", "--format=ogb", ogb_typed(tmp_path / "src", 400, feature_rows=399), tmp_path / "out")
    assert proc.returncode != 0
    assert "raw/node-feat/paper/node-feat.csv.gz: node type 'paper': 399 feature rows but 400 nodes" in proc.stderr


@pytest.mark.parametrize("dim", ["0", "-5", "100000000"])
def test_generate_refuses_a_feature_width_it_cannot_mean(tmp_path, dim):
    out = tmp_path / "g"
    proc = gnnctl("generate", "--preset=tiny", f"--feature-dim={dim}", out)
    assert proc.returncode == 2 and f"--feature-dim = {dim} (1 to 65536)" in proc.stderr, proc.stderr
    assert leftovers(tmp_path, out) == []


def test_num_nodes_names_a_type_twice_is_refused(tmp_path):
    proc = gnnctl("import", "--format=mag240m", "--num-nodes=author=2,author=5", tmp_path, tmp_path / "out")
    assert proc.returncode == 2 and "--num-nodes: 'author' is given twice" in proc.stderr, proc.stderr


def test_fixed_negatives_gnnd_could_never_serve_are_refused_at_import(tmp_path):
    edges = np.array([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]])
    (tmp_path / "splits").mkdir()
    np.save(tmp_path / "edges.npy", edges)
    np.save(tmp_path / "splits" / "test.npy", edges[:, :2])
    np.save(tmp_path / "splits" / "test_neg.npy", np.zeros((2, 1025), np.int64))
    out = tmp_path / "out"
    proc = gnnctl("import", "--format=edgelist", tmp_path / "edges.npy", out, f"--edge-splits={tmp_path / 'splits'}")
    assert proc.returncode != 0
    assert "test_neg.npy: 1025 negatives per seed edge; gnnd serves at most 1024" in proc.stderr, proc.stderr
    assert leftovers(tmp_path, out) == []
