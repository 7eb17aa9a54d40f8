"""`gnnctl sample` writes one batch as .npz; numpy checks it against the dataset and the layout."""
import os
import stat
import subprocess

import numpy as np
import pytest

GNNCTL = os.environ.get("GNNCTL", "gnnctl")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("data") / "tiny"
    subprocess.run([GNNCTL, "generate", "--preset", "tiny", "--scale", "0.2", "--feature-dtype", "bfloat16",
                    "--seed", "4", str(out)], check=True, capture_output=True)
    return out


def sample(dataset, out, *flags):
    return subprocess.run([GNNCTL, "sample", "--dataset", str(dataset), "--out", str(out), *map(str, flags)],
                          capture_output=True, text=True)


def test_batch_matches_dataset_and_layout(dataset, tmp_path):
    proc = sample(dataset, tmp_path / "b.npz", "--batch-size", 32, "--fanouts", "4,3", "--seed", 7, "--epoch", 1,
                  "--step", 2, "--rank", 1, "--world-size", 2)
    assert proc.returncode == 0, proc.stderr
    b = np.load(tmp_path / "b.npz")
    indptr, indices = np.load(dataset / "indptr.npy"), np.load(dataset / "indices.npy")
    feats, labels = np.load(dataset / "features.npy"), np.load(dataset / "labels.npy")
    ids = b["node_ids"]
    assert b["num_nodes_per_hop"].sum() == len(ids) and b["num_nodes_per_hop"][0] == 32
    assert len(np.unique(ids)) == len(ids)
    assert b["features"].dtype == np.uint16  # bfloat16 bits
    np.testing.assert_array_equal(b["features"], feats[ids])
    np.testing.assert_array_equal(b["labels"], labels[ids[:32]])
    for s, d in zip(b["edge_src"], b["edge_dst"]):
        v, u = ids[d], ids[s]
        assert u in indices[indptr[v]:indptr[v + 1]]
    assert b["num_edges_per_hop"].sum() == len(b["edge_src"])
    # Seeds are this rank's share: ids of the train split.
    assert set(ids[:32]) <= set(np.load(dataset / "train.npy"))


def test_same_request_same_bytes(dataset, tmp_path):
    for name in ("a", "b"):
        assert sample(dataset, tmp_path / f"{name}.npz", "--fanouts", "-1,2", "--batch-size", 16).returncode == 0
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    for key in a.files:
        np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("flags,message", [
    (("--fanouts", "5,-3"), "fanouts[1] = -3 (must be -1 for all neighbors, or 0 or more)"),
    (("--batch-size", 0), "batch_size = 0 (must be at least 1)"),
    (("--rank", 2, "--world-size", 2), "rank = 2 (must be in [0, world_size = 2))"),
    (("--split", "dev"), "split = 'dev' (must be train, valid, test, or all: every node of the type)"),
    (("--step", 100000), "has"),
])
def test_bad_requests_are_named(dataset, tmp_path, flags, message):
    proc = sample(dataset, tmp_path / "x.npz", *flags)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not (tmp_path / "x.npz").exists()


def test_out_is_only_ever_a_new_or_regular_file(dataset, tmp_path):
    fifo, directory, link = tmp_path / "fifo", tmp_path / "dir", tmp_path / "link"
    os.mkfifo(fifo)
    directory.mkdir()
    os.symlink(tmp_path / "elsewhere.npz", link)
    targets = [(fifo, "a FIFO"), (directory, "a directory"), (link, "a symbolic link")]
    if os.geteuid() == 0:  # a character device of our own, as /dev/full or /dev/null would be
        device = tmp_path / "null"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        targets.append((device, "a character device"))
    for target, what in targets:
        before = os.lstat(target)
        proc = sample(dataset, target)
        assert proc.returncode != 0
        assert f"{target} is {what}: the output must be a new or regular file" in proc.stderr, proc.stderr
        after = os.lstat(target)
        assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino), f"{target} was replaced"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["fifo", "dir", "link"] +
                                                                (["null"] if os.geteuid() == 0 else []))
    regular = tmp_path / "old.npz"
    regular.write_text("an older batch")
    assert sample(dataset, regular).returncode == 0  # a regular file is replaced
    assert set(np.load(regular).files) >= {"node_ids", "features"}
    assert oct(os.stat(regular).st_mode & 0o777) == oct(0o666 & ~current_umask())


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_hotness_reports_hit_rates_and_writes_the_ranking(dataset, tmp_path):
    proc = subprocess.run([GNNCTL, "hotness", "--dataset", str(dataset), "--batch-size", "32", "--fanouts", "4,3",
                           "--presample-batches", "5", "--write"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "| cache, % of rows | rows | expected | lists | presample | ideal |" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| 10 |")]
    assert len(rows) == 1, proc.stdout
    order = np.load(dataset / "hot_order.npy")
    assert order.dtype == np.int64 and sorted(order) == list(range(len(np.load(dataset / "labels.npy"))))
    # The dataset stays valid with the extra file beside it.
    assert subprocess.run([GNNCTL, "validate", str(dataset)], capture_output=True).returncode == 0
    bad = subprocess.run([GNNCTL, "hotness", "--dataset", str(dataset), "--fanouts=-4"], capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "fanouts[0] = -4 (must be -1 for all neighbors, or 0 or more)" in bad.stderr


def test_generate_stores_the_hot_tier_ranking(tmp_path):
    """generate (like import) stores hot_order.npy: the ranking `hotness --write` stores for the same fanouts."""
    def generate(out, *flags):
        return subprocess.run([GNNCTL, "generate", "--preset", "tiny", "--scale", "0.2", "--seed", "9", *flags,
                               str(out)], capture_output=True, text=True)

    ranked = tmp_path / "ranked"
    proc = generate(ranked, "--fanouts", "4,3")
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {ranked}/hot_order.npy" in proc.stdout
    stored = np.load(ranked / "hot_order.npy")
    assert sorted(stored) == list(range(len(np.load(ranked / "labels.npy"))))
    assert not np.array_equal(stored, np.arange(len(stored)))  # ranked, not left in id order
    proc = subprocess.run([GNNCTL, "hotness", "--dataset", str(ranked), "--fanouts", "4,3", "--presample-batches",
                           "2", "--write"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(ranked / "hot_order.npy"), stored)

    assert generate(tmp_path / "plain", "--hot-order=false").returncode == 0
    assert not (tmp_path / "plain" / "hot_order.npy").exists()
    bad = generate(tmp_path / "bad", "--fanouts=4,-2")
    assert bad.returncode != 0 and "fanouts[1] = -2" in bad.stderr
    assert not (tmp_path / "bad").exists()  # refused before anything is written
