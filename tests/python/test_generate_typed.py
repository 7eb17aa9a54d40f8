"""gnnctl generate --preset mag | igbh: typed synthetic datasets with the node types and relations of
ogbn-mag and IGBH, valid, seeded, skewed, with features where the real graphs have them (float8 on request)."""
import hashlib
import re
import subprocess

import numpy as np

from daemon_util import GNNCTL


def generate(out, *flags):
    proc = subprocess.run([GNNCTL, "generate", *map(str, flags), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def digest(directory):
    h = hashlib.sha256()
    for f in sorted(directory.glob("*.npy")):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()


def test_mag_has_ogbn_mags_types_relations_and_skew(tmp_path):
    out = generate(tmp_path / "mag", "--preset=mag", "--scale=0.005", "--seed=4")
    manifest = (out / "manifest.textproto").read_text()
    for name in ("author", "field_of_study", "institution", "paper"):
        assert f'name: "{name}"' in manifest
    features = np.load(out / "paper.features.npy")
    assert features.shape[1] == 128 and features.dtype == np.float32
    assert not (out / "author.features.npy").exists()  # as ogbn-mag: features on papers only
    labels = np.load(out / "paper.labels.npy")
    assert labels.max() < 349 and (labels >= 0).all()
    train = np.load(out / "paper.train.npy")
    assert 0.8 < len(train) / len(labels) < 0.9
    degrees = np.diff(np.load(out / "paper___cites___paper.indptr.npy"))
    assert degrees.max() > 20 * degrees.mean(), "no hubs: the sources are not skewed"
    # Papers' features cluster by class: a class's rows are nearer their own mean than another class's.
    a, b = [features[labels == c] for c in np.unique(labels)[:2]]
    assert np.linalg.norm(a.mean(0) - b.mean(0)) > 0.1
    assert subprocess.run([GNNCTL, "validate", str(out)], capture_output=True).returncode == 0
    assert digest(generate(tmp_path / "again", "--preset=mag", "--scale=0.005", "--seed=4")) == digest(out)
    assert digest(generate(tmp_path / "other", "--preset=mag", "--scale=0.005", "--seed=5")) != digest(out)


def test_igbh_with_float8_features_on_papers_and_authors(tmp_path):
    out = generate(tmp_path / "igbh", "--preset=igbh", "--scale=0.000002", "--feature-dtype=float8_e4m3fn",
                   "--feature-dim=64")
    manifest = (out / "manifest.textproto").read_text()
    assert manifest.count("FEATURE_DTYPE_FLOAT8_E4M3FN") == 2
    for name in ("paper", "author"):
        bits = np.load(out / f"{name}.features.npy")
        assert bits.dtype == np.uint8 and bits.shape[1] == 64
        assert not np.any((bits & 0x7F) == 0x7F), "NaN in float8 features"
    assert np.load(out / "paper.labels.npy").max() < 19
    npz = tmp_path / "b.npz"
    proc = subprocess.run([GNNCTL, "sample", f"--dataset={out}", "--batch-size=8", "--fanouts=3,2", f"--out={npz}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    batch = np.load(npz)
    assert batch["author.features"].dtype == np.uint8 and len(batch["paper.labels"]) == 8


def test_a_bad_scale_is_refused(tmp_path):
    proc = subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=2", str(tmp_path / "x")],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "scale = 2 (must be in (0, 1])" in proc.stderr


def test_typed_hot_order_ranks_featured_rows_by_global_id(tmp_path):
    """generate (as import) stores hot_order.npy for a typed dataset: every row of the featured types (papers,
    for mag), as global ids (a type's offset + id), the training papers first: each is read at least once an
    epoch, as a seed, and most others are reached with a probability below one."""
    out = generate(tmp_path / "mag", "--preset=mag", "--scale=0.002", "--seed=6", "--fanouts=5,3")
    manifest = (out / "manifest.textproto").read_text()
    counts = [int(x) for x in re.findall(r"num_nodes: (\d+)", manifest)]
    paper_offset, papers = sum(counts[:3]), counts[3]  # types in manifest order: author, field, institution, paper
    order = np.load(out / "hot_order.npy")
    assert order.dtype == np.int64
    assert sorted(order.tolist()) == list(range(paper_offset, paper_offset + papers))  # papers only: featured
    train = np.load(out / "paper.train.npy") + paper_offset
    top = set(order[:len(train)].tolist())
    assert len(top & set(train.tolist())) > 0.8 * len(train)
    assert generate(tmp_path / "again", "--preset=mag", "--scale=0.002", "--seed=6", "--fanouts=5,3") and \
        np.array_equal(np.load(tmp_path / "again" / "hot_order.npy"), order)


def test_link_relation_splits_hold_out_their_edges_and_are_distinct(tmp_path):
    key = "paper___cites___paper"
    out = generate(tmp_path / "mag", "--preset=mag", "--scale=0.002", "--seed=3", f"--link-relation={key}")
    indptr, indices = np.load(out / f"{key}.indptr.npy"), np.load(out / f"{key}.indices.npy")
    graph = {(int(s), int(d)) for d in range(len(indptr) - 1) for s in indices[indptr[d]:indptr[d + 1]]}
    splits = {}
    for name in ("train", "valid", "test"):
        pairs = np.load(out / f"{key}.{name}_edges.npy")
        splits[name] = [(int(s), int(d)) for s, d in pairs.T]
        assert len(set(splits[name])) == len(splits[name]) > 0, f"{name}: duplicate pairs"
        assert not [p for p in splits[name] if p[0] == p[1]], f"{name}: self-loops"
    assert set(splits["train"]) == graph  # the graph's edges of the relation are the train split's
    for held_out in ("valid", "test"):
        assert not set(splits[held_out]) & graph, f"{held_out} pairs are graph edges"
    assert not set(splits["valid"]) & set(splits["test"])
    assert 0.02 < len(splits["valid"]) / len(graph) < 0.1
