"""gnnctl import --format mag240m: OGB-LSC MAG240M's processed layout of .npy arrays (float16 paper
features, H___R___T/edge_index.npy, NaN-for-none labels, split ids) becomes a typed dataset equal to an
independent reading of the files; node counts from --num-nodes, the features' rows or the largest id; bad
files are refused naming them."""
import subprocess

import numpy as np

from daemon_util import GNNCTL

PAPERS, AUTHORS, INSTITUTIONS = 40, 25, 6


def write_mag240m(root, writes_ids=None):
    """A small directory in MAG240M's processed layout (under processed/, as OGB-LSC unpacks it)."""
    rng = np.random.default_rng(3)
    processed = root / "processed"
    relations = {
        ("author", "writes", "paper"): np.stack([rng.integers(0, AUTHORS - 1, 90), rng.integers(0, PAPERS, 90)]),
        ("paper", "cites", "paper"): np.stack([rng.integers(0, PAPERS, 120), rng.integers(0, PAPERS, 120)]),
        ("author", "affiliated_with", "institution"): np.stack([rng.integers(0, AUTHORS, 30),
                                                                rng.integers(0, INSTITUTIONS, 30)]),
    }
    if writes_ids is not None:
        relations[("author", "writes", "paper")][0, 7] = writes_ids
    for (h, r, t), edge_index in relations.items():
        (processed / f"{h}___{r}___{t}").mkdir(parents=True)
        np.save(processed / f"{h}___{r}___{t}" / "edge_index.npy", edge_index.astype(np.int64))
    (processed / "paper").mkdir()
    features = rng.normal(size=(PAPERS, 12)).astype(np.float16)
    np.save(processed / "paper" / "node_feat.npy", features)
    labels = rng.integers(0, 5, PAPERS).astype(np.float32)
    labels[::3] = np.nan  # unlabeled, as MAG240M's non-arXiv papers
    np.save(processed / "paper" / "node_label.npy", labels)
    np.save(processed / "paper" / "node_year.npy", np.full(PAPERS, 2019, np.int64))  # ignored
    labeled = np.flatnonzero(~np.isnan(labels))
    for name, ids in zip(("train", "valid", "test"), np.array_split(labeled, 3)):
        np.save(processed / "paper" / f"{name}.npy", ids)
    return relations, features, labels


def csc_edges(out, key):
    indptr, indices = np.load(out / f"{key}.indptr.npy"), np.load(out / f"{key}.indices.npy")
    dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return sorted(zip(indices.tolist(), dst.tolist()))


def gnnctl(*args):
    return subprocess.run([GNNCTL, *map(str, args)], capture_output=True, text=True)


def test_imports_mag240m_layout_equal_to_the_files(tmp_path):
    relations, features, labels = write_mag240m(tmp_path / "src")
    out = tmp_path / "out"
    proc = gnnctl("import", "--format=mag240m", f"--num-nodes=author={AUTHORS}", tmp_path / "src", out)
    assert proc.returncode == 0, proc.stderr
    assert gnnctl("validate", out).returncode == 0
    manifest = (out / "manifest.textproto").read_text()
    assert "format_version: 2" in manifest and "FEATURE_DTYPE_FLOAT16" in manifest  # the dtype kept
    # Counts: given (author, whose last node has no edge), the features' rows (paper), the largest id (institution).
    for name, count in (("author", AUTHORS), ("paper", PAPERS)):
        assert f'name: "{name}"\n  num_nodes: {count}\n' in manifest, manifest
    largest = int(relations[("author", "affiliated_with", "institution")][1].max()) + 1
    assert f'name: "institution"\n  num_nodes: {largest}\n' in manifest
    for (h, r, t), edge_index in relations.items():
        assert csc_edges(out, f"{h}___{r}___{t}") == sorted(zip(*edge_index.tolist())), (h, r, t)
    stored = np.load(out / "paper.features.npy")
    assert stored.dtype == np.float16 and np.array_equal(stored, features)
    want = np.where(np.isnan(labels), -1, labels).astype(np.int64)
    assert np.array_equal(np.load(out / "paper.labels.npy"), want)
    assert np.array_equal(np.load(out / "paper.train.npy"), np.load(tmp_path / "src/processed/paper/train.npy"))
    assert not (out / "author.features.npy").exists()


def test_bad_mag240m_files_are_refused_naming_them(tmp_path):
    write_mag240m(tmp_path / "src", writes_ids=PAPERS + 1000)
    proc = gnnctl("import", "--format=mag240m", f"--num-nodes=author={AUTHORS}", tmp_path / "src", tmp_path / "o1")
    assert proc.returncode != 0 and "author___writes___paper/edge_index.npy" in proc.stderr, proc.stderr
    proc = gnnctl("import", "--format=mag240m", "--num-nodes=venue=3", tmp_path / "src", tmp_path / "o2")
    assert proc.returncode != 0 and "--num-nodes venue=3: not a node type" in proc.stderr, proc.stderr
    (tmp_path / "empty").mkdir()
    proc = gnnctl("import", "--format=mag240m", tmp_path / "empty", tmp_path / "o3")
    assert proc.returncode != 0 and "no H___R___T/edge_index.npy" in proc.stderr, proc.stderr
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_a_relations_other_arrays_are_its_edge_attributes(tmp_path):
    """H___R___T/NAME.npy beside edge_index.npy: the relation's edge attribute NAME, rows in edge_index's order
    (each edge's row is its e_id); --edge-ids stores e_id on every relation; a bad one is refused naming it."""
    relations, _, _ = write_mag240m(tmp_path / "src")
    writes = ("author", "writes", "paper")
    key = "___".join(writes)
    edges = relations[writes].shape[1]
    weight = np.arange(edges, dtype=np.float32) / 7
    np.save(tmp_path / "src" / "processed" / key / "edge_weight.npy", weight)
    proc = gnnctl("import", "--format=mag240m", "--edge-ids", tmp_path / "src", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    e_id, stored = np.load(out / f"{key}.e_id.npy"), np.load(out / f"{key}.edge.edge_weight.npy")
    np.testing.assert_array_equal(stored, weight[e_id])  # each stored edge's attribute is its input row's
    indptr, indices = np.load(out / f"{key}.indptr.npy"), np.load(out / f"{key}.indices.npy")
    dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    np.testing.assert_array_equal(relations[writes][:, e_id], np.stack([indices, dst]))
    assert (out / "paper___cites___paper.e_id.npy").exists()  # --edge-ids: every relation's
    np.save(tmp_path / "src" / "processed" / key / "bad-name.npy", weight)
    proc = gnnctl("import", "--format=mag240m", tmp_path / "src", tmp_path / "bad")
    assert proc.returncode != 0 and f"{key}/bad-name.npy" in proc.stderr and "names are letters" in proc.stderr
    (tmp_path / "src" / "processed" / key / "bad-name.npy").unlink()
    np.save(tmp_path / "src" / "processed" / key / "short.npy", weight[:-1])
    proc = gnnctl("import", "--format=mag240m", tmp_path / "src", tmp_path / "bad")
    assert proc.returncode != 0 and "short" in proc.stderr, proc.stderr
    assert not (tmp_path / "bad").exists()
