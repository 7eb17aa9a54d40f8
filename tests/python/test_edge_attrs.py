"""Edge attributes and edge ids at import (`gnnctl import --format edgelist --edge-attr NAME=FILE.npy`, a text
edge list's third column as edge_weight): every CSC edge's e_id is its row in the input (an undirected copy its
edge's, a deduplicated edge its first row's), every attribute row is the input's row at e_id, and bad files are
refused naming file and element. Run by ctest with GNNCTL set."""

import numpy as np
import pytest

from daemon_util import run_gnnctl

N, E = 200, 1500


@pytest.fixture(scope="module")
def edges():
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, N, E), rng.integers(0, N, E)
    src[:20], dst[:20] = src[20:40], dst[20:40]  # parallel edges
    dst[40:50] = src[40:50]  # self-loops
    weight = rng.random(E).astype(np.float32)
    feat = rng.standard_normal((E, 4)).astype(np.float16)
    kind = rng.integers(0, 9, E).astype(np.int32)
    return src, dst, weight, feat, kind


@pytest.mark.parametrize("flags", [[], ["--undirected"], ["--dedup"], ["--undirected", "--dedup"]])
def test_attributes_follow_their_edges_into_csc_order(tmp_path, edges, flags):
    src, dst, weight, feat, kind = edges
    np.save(tmp_path / "edges.npy", np.stack([src, dst]))
    np.save(tmp_path / "w.npy", weight.astype(np.float64))  # stored as float32
    np.save(tmp_path / "f.npy", feat)
    np.save(tmp_path / "k.npy", kind)  # stored as int64
    out = tmp_path / "out"
    run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, *flags, "--edge-attr", f"w={tmp_path / 'w.npy'}",
               "--edge-attr", f"f={tmp_path / 'f.npy'}", f"--edge-attr=kind={tmp_path / 'k.npy'}",
               tmp_path / "edges.npy", out)
    indptr, indices = np.load(out / "indptr.npy"), np.load(out / "indices.npy")
    e_id = np.load(out / "e_id.npy")
    assert e_id.dtype == np.int64 and e_id.shape == indices.shape
    dst_of = np.repeat(np.arange(N), np.diff(indptr))
    undirected = "--undirected" in flags
    # Each CSC edge u -> v is its input row's edge, or (undirected) that row's edge reversed.
    forward = (src[e_id] == indices) & (dst[e_id] == dst_of)
    backward = (dst[e_id] == indices) & (src[e_id] == dst_of)
    assert np.all(forward | backward) if undirected else np.all(forward)
    if "--dedup" in flags:
        assert np.all(indices != dst_of)
        # A kept edge's id is the first row with its endpoints.
        first = {}
        for row, (u, v) in enumerate(zip(src, dst)):
            first.setdefault((u, v), row)
            if undirected:
                first.setdefault((v, u), row)
        assert all(first[(u, v)] == row for u, v, row in zip(indices, dst_of, e_id))
    else:  # every row once, twice undirected
        assert np.all(np.bincount(e_id, minlength=E) == (2 if undirected else 1))
    np.testing.assert_array_equal(np.load(out / "edge.w.npy"), weight[e_id])
    np.testing.assert_array_equal(np.load(out / "edge.f.npy"), feat[e_id])
    stored_kind = np.load(out / "edge.kind.npy")
    assert stored_kind.dtype == np.int64
    np.testing.assert_array_equal(stored_kind, kind[e_id])
    manifest = (out / "manifest.textproto").read_text()
    assert "edge_ids: true" in manifest and 'name: "kind"' in manifest and "FEATURE_DTYPE_INT64" in manifest
    assert "edge ids; edge attributes w (float32), f (4 x float16), kind (int64)" in run_gnnctl("validate", out).stdout


def test_gnnd_serves_a_dataset_with_edge_arrays(tmp_path, edges):
    """The edge arrays load into shared memory beside the graph; node batches are the same as without them."""
    import gnnd
    from daemon_util import Daemon
    src, dst, weight, _, _ = edges
    rng = np.random.default_rng(4)
    np.save(tmp_path / "edges.npy", np.stack([src, dst]))
    np.save(tmp_path / "w.npy", weight)
    np.save(tmp_path / "x.npy", rng.standard_normal((N, 8)).astype(np.float32))
    np.save(tmp_path / "y.npy", rng.integers(0, 3, N))
    (tmp_path / "splits").mkdir()
    for name, ids in (("train", np.arange(0, 120)), ("valid", np.arange(120, 160)), ("test", np.arange(160, 200))):
        np.save(tmp_path / "splits" / f"{name}.npy", ids)
    common = ["--features", tmp_path / "x.npy", "--labels", tmp_path / "y.npy", "--splits", tmp_path / "splits"]
    run_gnnctl("import", "--format", "edgelist", *common, "--edge-attr", f"w={tmp_path / 'w.npy'}",
               tmp_path / "edges.npy", tmp_path / "with")
    run_gnnctl("import", "--format", "edgelist", *common, tmp_path / "edges.npy", tmp_path / "without")
    daemon = Daemon(tmp_path, f"--dataset=with={tmp_path / 'with'}", f"--dataset=without={tmp_path / 'without'}",
                    name="edgeattrs")
    try:
        batches = {}
        for name in ("with", "without"):
            loader = gnnd.Loader(address=daemon.address, dataset=name, batch_size=32, fanouts=[4, 2], seed=1,
                                 output="numpy", copy=True)
            names = ("node_ids", "edge_src", "edge_dst", "features", "labels")
            batches[name] = [{k: getattr(batch, k) for k in names} for batch in loader]
            loader.close()
        assert len(batches["with"]) == len(batches["without"]) > 0
        for a, b in zip(batches["with"], batches["without"]):
            assert a.keys() == b.keys()
            for k in a:
                np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_a_third_column_is_edge_weight(tmp_path):
    lines = ["# src dst weight", "0 1 0.5", "2 1 1.25", "", "1 0 3"]
    (tmp_path / "edges.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    run_gnnctl("import", "--format", "edgelist", "--dedup", tmp_path / "edges.txt", out)
    e_id, w = np.load(out / "e_id.npy"), np.load(out / "edge.edge_weight.npy")
    np.testing.assert_array_equal(w, np.array([0.5, 1.25, 3], np.float32)[e_id])
    # Without weights, no edge arrays at all.
    (tmp_path / "plain.txt").write_text("0 1\n2 1\n")
    run_gnnctl("import", "--format", "edgelist", tmp_path / "plain.txt", tmp_path / "plain")
    assert not (tmp_path / "plain" / "e_id.npy").exists()
    run_gnnctl("import", "--format", "edgelist", "--edge-ids", tmp_path / "plain.txt", tmp_path / "ids")
    np.testing.assert_array_equal(np.load(tmp_path / "ids" / "e_id.npy"), [0, 1])


@pytest.mark.parametrize("weight,drawn", [(1e-44, False), (2.0**-121, False), (2.0**-120, True), (2.0**90, True),
                                          (2.0**91, False), (0.0, True)])
def test_weights_beyond_what_the_rule_orders_exactly_are_refused_at_open(tmp_path, weight, drawn):
    """A weighted draw's keys E / w stay normal floats for w = 0 or 2^-120 <= w <= 2^90; beyond, keys tie (1e-44
    against 1e-39 drew the light edge 290 times in 400), so a weighted session on such weights is refused, naming
    the element."""
    (tmp_path / "edges.txt").write_text("0 1\n2 1\n1 0\n0 2\n")
    np.save(tmp_path / "w.npy", np.array([1.0, weight, 1.0, 1.0], np.float32))
    np.save(tmp_path / "x.npy", np.ones((3, 2), np.float32))
    np.save(tmp_path / "y.npy", np.zeros(3, np.int64))
    (tmp_path / "splits").mkdir()
    for split in ("train", "valid", "test"):
        np.save(tmp_path / "splits" / f"{split}.npy", np.arange(3))
    run_gnnctl("import", "--format", "edgelist", "--edge-attr", f"w={tmp_path / 'w.npy'}", "--features",
               tmp_path / "x.npy", "--labels", tmp_path / "y.npy", "--splits", tmp_path / "splits",
               tmp_path / "edges.txt", tmp_path / "out")
    at = int(np.flatnonzero(np.load(tmp_path / "out" / "e_id.npy") == 1)[0])  # input row 1, in CSC order
    proc = run_gnnctl("sample", f"--dataset={tmp_path / 'out'}", "--batch-size=2", "--fanouts=1",
                      "--open_fields=weight_attr: \"w\"", f"--out={tmp_path / 'b.npz'}", ok=drawn)
    if not drawn:
        assert f"edge.w.npy element [{at}] is " in proc.stderr, proc.stderr
        assert "(weights are 0, never drawn, or from 2^-120 to 2^90" in proc.stderr, proc.stderr


@pytest.mark.parametrize("write,flag,message", [
    (lambda d: np.save(d / "a.npy", np.ones(3, np.float32)), "w=a.npy", "a.npy: 3 rows, but the edges are 4"),
    (lambda d: np.save(d / "a.npy", np.array([1, np.nan, 2, 3], np.float32)), "w=a.npy", "a.npy: edge attribute value nan at row 1, column 0 is NaN"),
    (lambda d: np.save(d / "a.npy", np.array([1, 2, np.inf, 3])), "w=a.npy", "a.npy: edge attribute value inf at row 2, column 0 is not finite"),
    (lambda d: np.save(d / "a.npy", np.array(["x"] * 4)), "w=a.npy", "a.npy: unsupported dtype"),
    (lambda d: np.save(d / "a.npy", np.ones(4)), "bad-name=a.npy", "names are letters, digits and _"),
    (lambda d: np.save(d / "a.npy", np.ones(4)), "w", "expected NAME=FILE.npy"),
    (lambda d: np.save(d / "a.npy", np.ones(4)), "labels=a.npy", "--edge-attr 'labels': the name of a batch's array"),
    # (E, 0) holds no value: it was read as (E,), past the file's end
    (lambda d: np.save(d / "a.npy", np.ones((4, 0), np.float32)), "w=a.npy",
     "a.npy: shape (4, 0), an attribute needs at least one value an edge"),
    (lambda d: np.save(d / "a.npy", np.ones((4, 0), np.int64)), "w=a.npy", "shape (4, 0)"),
    # a float64 value that float32 stores as 0 would make a weight "never drawn" silently
    (lambda d: np.save(d / "a.npy", np.array([1, 1e-300, 2, 3])), "w=a.npy",
     "a.npy: edge attribute value 1e-300 at row 1 is 0 in float32"),
])
def test_bad_attribute_files_are_named(tmp_path, write, flag, message):
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n2 0\n0 2\n")
    write(tmp_path)
    name, _, path = flag.partition("=")
    arg = f"--edge-attr={name}={tmp_path / path}" if path else f"--edge-attr={flag}"
    bad = run_gnnctl("import", "--format", "edgelist", arg, tmp_path / "edges.txt", tmp_path / "out", ok=False)
    assert bad.returncode != 0 and message in bad.stderr, bad.stderr
    assert not (tmp_path / "out").exists()
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("0 1 0.5\n1 2\n")
    bad = run_gnnctl("import", "--format", "edgelist", mixed, tmp_path / "out2", ok=False)
    assert "mixed.txt line 2: 2 fields, expected 'src dst weight' as the first line" in bad.stderr, bad.stderr


def test_validate_refuses_bad_edge_arrays_naming_file_and_element(tmp_path):
    (tmp_path / "edges.txt").write_text("0 1 0.5\n1 2 1\n2 0 2\n")
    out = tmp_path / "out"
    run_gnnctl("import", "--format", "edgelist", tmp_path / "edges.txt", out)
    weight = np.load(out / "edge.edge_weight.npy")
    weight[2] = np.nan
    np.save(out / "edge.edge_weight.npy", weight)
    bad = run_gnnctl("validate", out, ok=False)
    assert "edge.edge_weight.npy: element [2] is nan (edge attributes must be finite)" in bad.stderr, bad.stderr
    weight[2] = 1
    np.save(out / "edge.edge_weight.npy", weight)
    ids = np.load(out / "e_id.npy")
    ids[1] = -4
    np.save(out / "e_id.npy", ids)
    bad = run_gnnctl("validate", out, ok=False)
    assert "e_id.npy: e_id[1] = -4 is negative" in bad.stderr, bad.stderr
    np.save(out / "e_id.npy", np.zeros(2, np.int64))  # a row short
    bad = run_gnnctl("validate", out, ok=False)
    assert "e_id.npy: shape is (2) but the manifest implies (3)" in bad.stderr, bad.stderr


def test_generate_draws_a_weight_and_a_feature_per_edge(tmp_path):
    run_gnnctl("generate", "--preset", "tiny", "--seed", 7, "--edge-attr", tmp_path / "a")
    run_gnnctl("generate", "--preset", "tiny", "--seed", 7, "--edge-attr", tmp_path / "b")
    run_gnnctl("generate", "--preset", "tiny", "--seed", 7, tmp_path / "plain")
    a = tmp_path / "a"
    for name in ("indptr", "indices", "features", "labels", "train"):  # the graph of the same seed
        np.testing.assert_array_equal(np.load(a / f"{name}.npy"), np.load(tmp_path / "plain" / f"{name}.npy"))
    e_id, w, f = np.load(a / "e_id.npy"), np.load(a / "edge.edge_weight.npy"), np.load(a / "edge.edge_feat.npy")
    assert w.dtype == np.float32 and w.shape == e_id.shape and np.all((w > 0) & (w <= 1))
    assert f.dtype == np.float32 and f.shape == (len(e_id), 4) and np.all((f >= -1) & (f < 1))
    assert len(np.unique(w)) > len(w) // 2  # drawn, not constant
    for name in ("e_id", "edge.edge_weight", "edge.edge_feat"):  # a function of the seed
        np.testing.assert_array_equal(np.load(a / f"{name}.npy"), np.load(tmp_path / "b" / f"{name}.npy"))
    assert "edge_attrs" in (a / "manifest.textproto").read_text()


def test_generate_typed_attributes_follow_edges_and_their_reverses(tmp_path):
    out = tmp_path / "mag"
    run_gnnctl("generate", "--preset", "mag", "--scale", "0.002", "--seed", 3, "--add-reverse",
               "--link-relation=author___writes___paper", "--edge-attr", out)
    keys = sorted(p.name[:-len(".indices.npy")] for p in out.glob("*.indices.npy"))
    assert len(keys) == 8
    for key in keys:
        indptr, indices = np.load(out / f"{key}.indptr.npy"), np.load(out / f"{key}.indices.npy")
        e_id, w = np.load(out / f"{key}.e_id.npy"), np.load(out / f"{key}.edge.edge_weight.npy")
        f = np.load(out / f"{key}.edge.edge_feat.npy")
        assert e_id.shape == indices.shape == w.shape and f.shape == (len(e_id), 4), key
        assert np.all((w > 0) & (w <= 1)), key
        src, rel, dst = key.split("___")
        if rel.startswith("rev_"):
            continue
        # The reverse relation holds each edge reversed with the same attribute rows.
        rev = f"{dst}___rev_{rel}___{src}"
        dst_of = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        rindptr, rindices = np.load(out / f"{rev}.indptr.npy"), np.load(out / f"{rev}.indices.npy")
        rdst_of = np.repeat(np.arange(len(rindptr) - 1), np.diff(rindptr))
        forward = dict(zip(zip(indices.tolist(), dst_of.tolist()), w.tolist()))
        backward = dict(zip(zip(rdst_of.tolist(), rindices.tolist()), np.load(out / f"{rev}.edge.edge_weight.npy").tolist()))
        assert forward == backward, key
    assert "valid" in run_gnnctl("validate", out).stdout


@pytest.mark.parametrize("write,flag,message", [
    (lambda d: np.save(d / "a.npy", np.ones(3, np.int64)), "m=a.npy", "a.npy: 3 rows, but the nodes are 4"),
    (lambda d: np.save(d / "a.npy", np.array([0, 1, 2, 1], np.uint8).view(np.bool_)), "m=a.npy",
     "a.npy: element 2 = 2 is not a bool (0 or 1)"),
    (lambda d: np.save(d / "a.npy", np.ones((4, 0), np.int64)), "m=a.npy",
     "a.npy: shape (4, 0), an attribute needs at least one value a node"),
    (lambda d: np.save(d / "a.npy", np.ones(4)), "node_ids=a.npy",
     "--node-attr 'node_ids': the name of a batch's array"),
    (lambda d: np.save(d / "a.npy", np.ones(4)), "paper.m=a.npy",
     "--node-attr paper.m: this dataset has one node type"),
    (lambda d: np.save(d / "a.npy", np.ones(4)), "m", "expected NAME=FILE.npy or TYPE.NAME=FILE.npy"),
    (lambda d: np.save(d / "a.npy", np.ones(4, np.float32)), "w=a.npy", "--node-attr w: also an edge attribute's name"),
])
def test_bad_node_attributes_are_named(tmp_path, write, flag, message):
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n2 0\n0 3\n")
    np.save(tmp_path / "w.npy", np.ones(4, np.float32))
    write(tmp_path)
    name, _, path = flag.partition("=")
    arg = f"--node-attr={name}={tmp_path / path}" if path else f"--node-attr={flag}"
    bad = run_gnnctl("import", "--format", "edgelist", f"--edge-attr=w={tmp_path / 'w.npy'}", arg,
                     tmp_path / "edges.txt", tmp_path / "out", ok=False)
    assert bad.returncode != 0 and message in bad.stderr, bad.stderr
    assert not (tmp_path / "out").exists()


def test_node_attributes_are_stored_in_id_order_with_their_dtypes(tmp_path):
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n2 0\n0 3\n")
    np.save(tmp_path / "m.npy", np.array([True, False, True, True]))
    np.save(tmp_path / "v.npy", np.arange(8, dtype=np.int32).reshape(4, 2))
    run_gnnctl("import", "--format", "edgelist", f"--node-attr=m={tmp_path / 'm.npy'}",
               f"--node-attr=v={tmp_path / 'v.npy'}", tmp_path / "edges.txt", tmp_path / "out")
    mask, vectors = np.load(tmp_path / "out" / "node.m.npy"), np.load(tmp_path / "out" / "node.v.npy")
    assert mask.dtype == np.bool_ and mask.tolist() == [True, False, True, True]
    assert vectors.dtype == np.int64 and vectors.tolist() == np.arange(8).reshape(4, 2).tolist()
    manifest = (tmp_path / "out" / "manifest.textproto").read_text()
    assert "FEATURE_DTYPE_BOOL" in manifest and 'name: "m"' in manifest, manifest
    run_gnnctl("validate", tmp_path / "out")
    # What gnnd loads is checked again: a bool that is neither 0 nor 1, a file of the wrong shape.
    np.save(tmp_path / "out" / "node.m.npy", np.array([1, 0, 2, 1], np.uint8).view(np.bool_))
    bad = run_gnnctl("validate", tmp_path / "out", ok=False)
    assert "node.m.npy: element [2] is 2 (node attributes of dtype bool are 0 or 1)" in bad.stderr, bad.stderr
    np.save(tmp_path / "out" / "node.m.npy", np.ones(3, np.bool_))
    bad = run_gnnctl("validate", tmp_path / "out", ok=False)
    assert "node.m.npy: shape is (3) but the manifest implies (4)" in bad.stderr, bad.stderr
