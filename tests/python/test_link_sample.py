"""Link batches from `gnnctl sample --edge-split` against the issue's fixture checks, over whole epochs of a
random graph: label-1 pairs are the split's edges at input_id, an epoch's input_id cover the split exactly
(also sharded over ranks), strict label-0 pairs are never edges, negatives are uniform (chi-square), no
excluded edge is ever a message-passing edge, every expanded node gets min(fanout, in-degree - excluded)
neighbors, triplets keep their source, labeled splits shift their classes up by one, and the same request
gives the same bytes."""
import subprocess

import numpy as np
import pytest

from daemon_util import GNNCTL

NODES, EDGES, TRAIN, BATCH = 200, 2400, 1500, 64


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    root = tmp_path_factory.mktemp("links")
    rng = np.random.default_rng(4)
    edges = rng.integers(0, NODES, size=(2, EDGES))
    (root / "splits").mkdir()
    np.save(root / "edges.npy", edges)
    np.save(root / "splits" / "train.npy", edges[:, :TRAIN])
    np.save(root / "splits" / "valid.npy", edges[:, TRAIN:TRAIN + 100])
    np.save(root / "splits" / "valid_label.npy", rng.integers(0, 3, size=100))
    np.save(root / "features.npy", rng.standard_normal((NODES, 4)).astype(np.float32))
    subprocess.run([GNNCTL, "import", "--format=edgelist", root / "edges.npy", root / "data",
                    f"--edge-splits={root / 'splits'}", f"--features={root / 'features.npy'}"], check=True,
                   capture_output=True)
    data = root / "data"
    return data, np.load(data / "indptr.npy"), np.load(data / "indices.npy"), edges


def sample(data, out, step, *flags):
    done = subprocess.run([GNNCTL, "sample", f"--dataset={data}", f"--batch-size={BATCH}", "--seed=9",
                           f"--step={step}", *flags, f"--out={out}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return dict(np.load(out))


def epoch(data, tmp_path, *flags):
    first = sample(data, tmp_path / "b0.npz", 0, *flags)
    steps = -(-TRAIN // BATCH)
    return [first] + [sample(data, tmp_path / f"b{s}.npz", s, *flags) for s in range(1, steps)]


def in_neighbors(indptr, indices, v):
    return indices[indptr[v]:indptr[v + 1]]


def test_binary_batches_cover_the_split_and_exclusion_keeps_fanouts_exact(graph, tmp_path):
    data, indptr, indices, edges = graph
    fanouts = [4, 2]
    for exclude in ("none", "self", "reverse"):
        seen = []
        for b in epoch(data, tmp_path, "--edge-split=train", "--fanouts=4,2", "--neg-sampling=binary",
                       "--neg-amount=2", f"--exclude={exclude}"):
            ids, eli, label = b["node_ids"], b["edge_label_index"], b["edge_label"]
            p = len(b["input_id"])
            seen.extend(b["input_id"])
            assert eli.shape == (2, 3 * p) and label.dtype == np.float32
            assert (label[:p] == 1).all() and (label[p:] == 0).all()
            np.testing.assert_array_equal(ids[eli[:, :p]], edges[:, b["input_id"]])  # label 1: the split's edges
            hop0 = b["num_nodes_per_hop"][0]
            assert list(ids[:hop0]) == sorted(set(ids[eli].ravel())), "hop 0: the unique endpoints, ascending"
            np.testing.assert_array_equal(b["features"], np.load(data / "features.npy")[ids])

            positives = set(map(tuple, edges[:, b["input_id"]].T))
            excluded = set() if exclude == "none" else set(positives)
            if exclude == "reverse":
                excluded |= {(v, u) for u, v in positives}
            src, dst = ids[b["edge_src"]], ids[b["edge_dst"]]
            assert not excluded & set(zip(src, dst)), "an excluded edge was sampled"
            # Per hop, per expanded node: min(fanout, in-degree - excluded in-edges), all of them graph edges.
            begin, frontier, edge = 0, hop0, 0
            for hop, fanout in enumerate(fanouts):
                count = b["num_edges_per_hop"][hop]
                hop_dst = b["edge_dst"][edge:edge + count]
                for at in range(begin, frontier):
                    v = ids[at]
                    neighbors = in_neighbors(indptr, indices, v)
                    allowed = sum((u, v) not in excluded for u in neighbors)
                    assert (hop_dst == at).sum() == min(fanout, allowed), (exclude, hop, v)
                for u, v in zip(ids[b["edge_src"][edge:edge + count]], ids[hop_dst]):
                    assert u in in_neighbors(indptr, indices, v)
                edge += count
                begin, frontier = frontier, frontier + b["num_nodes_per_hop"][hop + 1]
        assert sorted(seen) == list(range(TRAIN)), "an epoch's input_id cover the split once"


def test_strict_and_uniform_negatives_triplets_labels_and_ranks(graph, tmp_path):
    data, indptr, indices, edges = graph
    edge_set = set(zip(edges[0], edges[1]))
    loose, strict_hits, sources = 0, 0, np.zeros(NODES, dtype=np.int64)
    for strict in (False, True):
        flags = ["--edge-split=train", "--fanouts=2", "--neg-sampling=binary", "--neg-amount=3"]
        for b in epoch(data, tmp_path, *flags, *(["--strict-negatives"] if strict else [])):
            p = len(b["input_id"])
            pairs = b["node_ids"][b["edge_label_index"][:, p:]]
            hits = sum((u, v) in edge_set for u, v in pairs.T)
            if strict:
                strict_hits += hits
            else:
                loose += hits
                np.add.at(sources, pairs[0], 1)
    assert strict_hits == 0 and loose > 0  # 6% of random pairs are edges here: strictness did the work
    expected = sources.sum() / NODES
    chi = ((sources - expected) ** 2 / expected).sum()
    assert chi < 268.5, chi  # 199 degrees of freedom: the 0.999 quantile

    b = sample(data, tmp_path / "t.npz", 1, "--edge-split=train", "--fanouts=2", "--neg-sampling=triplet",
               "--neg-amount=5", "--strict-negatives")
    ids, p = b["node_ids"], len(b["input_id"])
    assert "edge_label_index" not in b and b["dst_neg_index"].shape == (p, 5)
    np.testing.assert_array_equal(ids[b["src_index"]], edges[0, b["input_id"]])
    np.testing.assert_array_equal(ids[b["dst_pos_index"]], edges[1, b["input_id"]])
    for i in range(p):
        for v in ids[b["dst_neg_index"][i]]:
            assert (ids[b["src_index"][i]], v) not in edge_set

    labeled = sample(data, tmp_path / "l.npz", 0, "--edge-split=valid", "--fanouts=2", "--neg-sampling=binary")
    p = len(labeled["input_id"])
    assert labeled["edge_label"].dtype == np.int64
    np.testing.assert_array_equal(labeled["edge_label"][:p], np.load(data / "valid_edge_label.npy")[labeled["input_id"]] + 1)
    assert (labeled["edge_label"][p:] == 0).all()
    refused = subprocess.run([GNNCTL, "sample", f"--dataset={data}", "--edge-split=valid", "--neg-sampling=triplet",
                              f"--out={tmp_path / 'x.npz'}"], capture_output=True, text=True)
    assert refused.returncode != 0 and "triplets carry no labels" in refused.stderr, refused.stderr
    stray = subprocess.run([GNNCTL, "sample", f"--dataset={data}", "--exclude=self", f"--out={tmp_path / 'x.npz'}"],
                           capture_output=True, text=True)  # a node batch with a link batch's option
    assert stray.returncode != 0 and "set open.edge_split" in stray.stderr, stray.stderr

    shards = []
    for rank in (0, 1):
        steps = -(-TRAIN // (2 * BATCH))
        for step in range(steps):
            b = sample(data, tmp_path / "r.npz", step, "--edge-split=train", "--fanouts=2", f"--rank={rank}",
                       "--world-size=2")
            shards.extend(b["input_id"])
    assert sorted(set(shards)) == list(range(TRAIN)) and len(shards) == TRAIN + TRAIN % 2  # padded as node seeds

    again = [sample(data, tmp_path / f"d{i}.npz", 3, "--edge-split=train", "--neg-sampling=binary", "--exclude=self")
             for i in range(2)]
    assert set(again[0]) == set(again[1])  # (the files differ in their zip timestamps, not their arrays)
    for name in again[0]:
        assert again[0][name].dtype == again[1][name].dtype
        np.testing.assert_array_equal(again[0][name], again[1][name], err_msg=name)
