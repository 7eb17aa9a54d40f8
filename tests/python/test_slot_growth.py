"""Slots sized by the batches (OpenSession.slots_may_grow, what gnnd.Loader asks for): on graphs where one
batch is far larger than the ones gnnd samples at open (a star whose seed's step the open-time sample misses),
the session adds larger slots and makes that batch again in them. Every batch is the one the reference
sampler makes (trainer_check, gnnctl sample), homogeneous, typed and link; the slots are added as often as
the stats say; a session that could only grow past max_session_bytes ends with an error naming it."""
import os
import re
import subprocess

import numpy as np
import pytest

import gnnd
from daemon_util import GNNCTL, Daemon
from test_import_ogb_typed import write_gz

TRAINER_CHECK = os.environ.get("TRAINER_CHECK", "trainer_check")

NODES = 400
SEEDS = 200  # batch_size 1, no shuffle: step k is seed k
STAR = 150   # not among the 16 steps sampled at open (0, 13, ..., 145, 159, ..., 199)
SPOKES = 180


def star_pairs():
    """A chain (i - 1 -> i) and SPOKES in-edges of node STAR from the nodes past the seeds."""
    return [(i - 1, i) for i in range(1, NODES)] + [(NODES - 1 - k, STAR) for k in range(SPOKES)]


def homogeneous_star(root):
    rng = np.random.default_rng(5)
    np.save(root / "edges.npy", np.array(star_pairs(), np.int64).T)
    np.save(root / "features.npy", rng.standard_normal((NODES, 16)).astype(np.float32))
    np.save(root / "labels.npy", rng.integers(0, 4, NODES))
    (root / "splits").mkdir()
    for name, ids in {"train": range(SEEDS), "valid": [SEEDS], "test": [SEEDS + 1]}.items():
        np.save(root / "splits" / f"{name}.npy", np.array(ids, np.int64))
    # The train edge split: the chain's edges into 1 .. SEEDS, one of them into the star at position STAR - 1.
    (root / "edge_splits").mkdir()
    np.save(root / "edge_splits" / "train.npy", np.array([(i - 1, i) for i in range(1, SEEDS + 1)], np.int64).T)
    subprocess.run([GNNCTL, "import", "--format=edgelist", root / "edges.npy", root / "star",
                    f"--features={root / 'features.npy'}", f"--labels={root / 'labels.npy'}",
                    f"--splits={root / 'splits'}", f"--edge-splits={root / 'edge_splits'}"], check=True,
                   capture_output=True)
    return root / "star"


def typed_star(root):
    """OGB's heterogeneous raw layout: papers citing in a chain with a star, one author writing each paper;
    wide paper features (the slots' bound, every paper, would not fit under the test's max_session_bytes)."""
    types = {"author": NODES, "paper": NODES}
    edges = {("author", "writes", "paper"): [(i, i) for i in range(NODES)], ("paper", "cites", "paper"): star_pairs()}
    raw = root / "raw"
    write_gz(raw / "num-node-dict.csv.gz", ",".join(types) + "\n" + ",".join(map(str, types.values())) + "\n")
    write_gz(raw / "triplet-type-list.csv.gz", "".join(",".join(t) + "\n" for t in edges))
    for triplet, pairs in edges.items():
        folder = raw / "relations" / "___".join(triplet)
        write_gz(folder / "edge.csv.gz", "".join(f"{s},{d}\n" for s, d in pairs))
        write_gz(folder / "num-edge-list.csv.gz", f"{len(pairs)}\n")
    rng = np.random.default_rng(7)
    for name, dim in (("author", 4), ("paper", 256)):
        rows = rng.standard_normal((types[name], dim))
        write_gz(raw / "node-feat" / name / "node-feat.csv.gz",
                 "".join(",".join(repr(float(v)) for v in row) + "\n" for row in rows))
    write_gz(raw / "nodetype-has-label.csv.gz", "author,paper\nFalse,True\n")
    write_gz(raw / "node-label" / "paper" / "node-label.csv.gz", "".join(f"{i % 3}\n" for i in range(NODES)))
    split = root / "split" / "time"
    write_gz(split / "nodetype-has-split.csv.gz", "author,paper\nFalse,True\n")
    for name, ids in {"train": range(SEEDS), "valid": [SEEDS], "test": [SEEDS + 1]}.items():
        write_gz(split / "paper" / f"{name}.csv.gz", "".join(f"{v}\n" for v in ids))
    subprocess.run([GNNCTL, "import", "--format=ogb", root, root / "typed_star"], check=True, capture_output=True)
    return root / "typed_star"


@pytest.fixture(scope="module")
def stars(tmp_path_factory):
    root = tmp_path_factory.mktemp("growth")
    (root / "h").mkdir()
    (root / "t").mkdir()
    homogeneous, typed = homogeneous_star(root / "h"), typed_star(root / "t")
    config = "\n".join([f'datasets {{ name: "star" path: "{homogeneous}" }}',
                        f'datasets {{ name: "typed_star" path: "{typed}" }}',
                        f'datasets {{ name: "typed_disk" path: "{typed}" feature_cache: "1MiB" look_ahead: 3 }}'])
    daemon = Daemon(root, config=config)
    yield daemon, homogeneous, typed
    daemon.stop()


def times_added(daemon):
    """Per open session, how many times larger slots were added (gnnctl stats)."""
    return [int(n) for n in re.findall(r"(\d+) times added", daemon.gnnctl("stats").stdout)]


def reference(data, tmp_path, step, *flags):
    out = tmp_path / f"step{step}.npz"
    subprocess.run([GNNCTL, "sample", f"--dataset={data}", "--batch-size=1", "--fanouts=-1", "--noshuffle",
                    f"--step={step}", *flags, f"--out={out}"], check=True, capture_output=True)
    return np.load(out)


def assert_equal(batch, expected):
    for name in expected.files:
        value = batch[name] if isinstance(batch, gnnd.TypedBatch) else getattr(batch, name)
        if name == "edge_label_index":  # gnnctl sample's (2, L) for the slot's (L, 2) rows
            value = value.T
        assert np.array_equal(value, expected[name]), name


def trainer_check(daemon, data, *flags):
    return subprocess.run([TRAINER_CHECK, f"--address={daemon.address}", "--dataset=star", f"--dir={data}",
                           "--batch-size=1", "--fanouts=-1", "--no-shuffle", "--epochs=2", *flags],
                          capture_output=True, text=True, timeout=120)


def test_homogeneous_batches_equal_the_reference_in_added_slots(stars):
    daemon, homogeneous, _ = stars
    grown = trainer_check(daemon, homogeneous, "--slots-may-grow")
    assert grown.returncode == 0, grown.stderr
    # Two epochs of every batch checked byte for byte; the star's batch came in a third and fourth slot.
    assert f"checked {2 * SEEDS} batches in 4 slots" in grown.stdout, grown.stdout
    bound = trainer_check(daemon, homogeneous)  # slots at the bound: never added to
    assert bound.returncode == 0 and f"checked {2 * SEEDS} batches in 2 slots" in bound.stdout, bound.stdout


@pytest.mark.parametrize("dataset,output", [("typed_star", "numpy"), ("typed_star", "torch"), ("typed_disk", "numpy")])
def test_typed_batches_equal_gnnctl_sample_after_slots_are_added(stars, tmp_path, dataset, output):
    """In memory and on storage (rows read through the feature cache), numpy and torch arrays."""
    daemon, _, typed = stars
    if output == "torch":
        pytest.importorskip("torch")
    with gnnd.Loader(address=daemon.address, dataset=dataset, node_type="paper", batch_size=1, fanouts=[-1],
                     shuffle=False, output=output, copy=True) as loader:
        epoch = list(loader)
        assert times_added(daemon) == [1]
    assert [b.step for b in epoch] == list(range(SEEDS))
    assert epoch[STAR].counts["paper.nodes"] == SPOKES + 2  # the star, the one before it and its spokes
    for step in (0, STAR - 1, STAR, STAR + 1, SEEDS - 1):
        expected = reference(typed, tmp_path, step, "--node-type=paper")
        batch = epoch[step]
        if output == "torch":
            batch = {name: batch[name].numpy() for name in expected.files}
            assert all(np.array_equal(batch[n], expected[n]) for n in expected.files)
        else:
            assert_equal(batch, expected)


def test_link_batches_equal_gnnctl_sample_after_slots_are_added(stars, tmp_path):
    daemon, homogeneous, _ = stars
    with gnnd.Loader(address=daemon.address, dataset="star", edge_split="train", batch_size=1, fanouts=[-1],
                     shuffle=False, output="numpy", copy=True) as loader:
        epoch = list(loader)
        assert times_added(daemon) == [1]
    assert len(epoch) == SEEDS
    for step in (0, STAR - 2, STAR - 1, STAR, SEEDS - 1):  # position STAR - 1 is the edge into the star
        assert_equal(epoch[step], reference(homogeneous, tmp_path, step, "--edge-split=train"))


def test_slots_that_would_outgrow_max_session_bytes_end_the_session_naming_it(tmp_path, stars):
    _, homogeneous, typed = stars
    # Room for the slots sized at open (about 2 x 70 KB), not for the star's too (2 x 300 KB more).
    daemon = Daemon(tmp_path, f"--dataset=typed_star={typed}", config="max_session_bytes: 400000\n")
    try:
        with gnnd.Loader(address=daemon.address, dataset="typed_star", node_type="paper", batch_size=1,
                         fanouts=[-1], shuffle=False, output="numpy") as loader:
            with pytest.raises(gnnd.GnndError, match=r"step 150 of epoch 0 needs 182 rows of paper.features.*"
                                                     r"max_session_bytes"):
                for _ in loader:
                    pass
        assert not re.search(r"^session \d+", daemon.gnnctl("stats").stdout, re.M)  # none left open
    finally:
        daemon.stop()
