"""Node times for the temporal rule, at import (`gnnctl import --node-time FILE.npy`, a typed dataset's
`--node-time TYPE=FILE.npy`) and in generated datasets (`gnnctl generate --temporal`): the stored node_time
arrays equal the input as int64, a generated edge's time is its later endpoint's, and bad time files are refused
naming the file. Run by ctest with GNNCTL set."""

import numpy as np
import pytest

from daemon_util import run_gnnctl
from test_import_ogb_typed import TYPES, write_mag

N, E = 120, 600


@pytest.fixture()
def edge_list(tmp_path):
    rng = np.random.default_rng(5)
    np.save(tmp_path / "edges.npy", np.stack([rng.integers(0, N, E), rng.integers(0, N, E)]))
    return tmp_path / "edges.npy"


@pytest.mark.parametrize("dtype,shape", [(np.int64, (N,)), (np.int32, (N,)), (np.uint16, (N, 1))])
def test_import_stores_node_times_as_int64(tmp_path, edge_list, dtype, shape):
    times = np.random.default_rng(1).integers(0, 60000, N).astype(dtype).reshape(shape)
    np.save(tmp_path / "t.npy", times)
    out = tmp_path / "out"
    summary = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--node-time", tmp_path / "t.npy",
                         edge_list, out).stdout
    assert "node times" in summary
    stored = np.load(out / "node_time.npy")
    assert stored.dtype == np.int64 and stored.shape == (N,)
    assert np.array_equal(stored, times.reshape(N).astype(np.int64))
    assert 'node_time: true' in (out / "manifest.textproto").read_text()
    assert "node times" in run_gnnctl("validate", out).stdout


def test_large_int64_times_are_kept_exactly(tmp_path, edge_list):
    times = (np.int64(1_700_000_000_000_000_000) + np.arange(N, dtype=np.int64) * 7)  # ns since 1970: past 2^53
    np.save(tmp_path / "t.npy", times)
    run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, f"--node-time={tmp_path / 't.npy'}", edge_list,
               tmp_path / "out")
    assert np.array_equal(np.load(tmp_path / "out" / "node_time.npy"), times)


@pytest.mark.parametrize("write,message", [
    (lambda p: np.save(p, np.arange(N - 1)), f"times of shape ({N - 1}), expected (num_nodes = {N})"),
    (lambda p: np.save(p, np.arange(2 * N).reshape(N, 2)), f"times of shape ({N}, 2)"),
    (lambda p: np.save(p, np.arange(N, dtype=np.float64)), "times of dtype float64, expected integers"),
    (lambda p: np.save(p, np.ones(N, dtype=bool)), "times of dtype bool, expected integers"),
    # past int64 a uint64 time would wrap negative (the oldest time, not the newest)
    (lambda p: np.save(p, np.full(N, 2**63, np.uint64)), f"a uint64 value {2**63} is past int64"),
])
def test_bad_time_files_are_refused_naming_the_file(tmp_path, edge_list, write, message):
    write(tmp_path / "t.npy")
    proc = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--node-time", tmp_path / "t.npy", edge_list,
                      tmp_path / "out", ok=False)
    assert proc.returncode != 0
    assert str(tmp_path / "t.npy") in proc.stderr and message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()  # nothing half-written


@pytest.mark.parametrize("write,message", [
    (None, None),
    (lambda p: np.save(p, np.arange(9)), "times of shape (9), expected (the split's seed edges = 10)"),
    (lambda p: np.save(p, np.arange(10, dtype=np.float32)), "times of dtype float32, expected integers"),
    (lambda p: np.save(p, np.arange(10, dtype=np.uint64) + np.uint64(2**63)), f"a uint64 value {2**63} is past int64"),
])
def test_edge_split_times_are_stored_and_bad_ones_refused_naming_the_file(tmp_path, edge_list, write, message):
    """A link split's times (SPLIT_time.npy beside its seed edges in --edge-splits): stored as int64
    SPLIT_edge_time.npy, or refused naming the file, nothing half-written."""
    splits = tmp_path / "splits"
    splits.mkdir()
    np.save(splits / "valid.npy", np.stack([np.arange(10), np.arange(10, 20)]))
    times = np.arange(10, dtype=np.int32) * 5
    np.save(splits / "valid_time.npy", times)
    if write is not None:
        write(splits / "valid_time.npy")
    out = tmp_path / "out"
    proc = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, f"--edge-splits={splits}", edge_list, out,
                      ok=write is None)
    if write is None:
        assert np.array_equal(np.load(out / "valid_edge_time.npy"), times.astype(np.int64))
        assert "valid 10 (timed)" in run_gnnctl("validate", out).stdout
        return
    assert str(splits / "valid_time.npy") in proc.stderr and message in proc.stderr, proc.stderr
    assert not out.exists()


def test_flag_errors_name_what_is_wrong(tmp_path, edge_list):
    np.save(tmp_path / "t.npy", np.arange(N))
    typed = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--node-time", f"paper={tmp_path / 't.npy'}",
                       edge_list, tmp_path / "a", ok=False)
    assert "one node type; give FILE.npy alone" in typed.stderr
    twice = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--node-time", tmp_path / "t.npy",
                       "--node-time", tmp_path / "t.npy", edge_list, tmp_path / "b", ok=False)
    assert "the node times given twice" in twice.stderr
    bad_name = run_gnnctl("import", "--format", "edgelist", "--node-time", f"a/b={tmp_path / 't.npy'}", edge_list,
                          tmp_path / "c", ok=False)
    assert "'a/b' is not a node type name" in bad_name.stderr


def test_node_times_keep_another_name_and_bad_names_are_refused(tmp_path, edge_list):
    """--node-time-name NAME: the manifest's node_time_name, which open.time_attr takes as "node_time" (served in
    test_pyg_save.py); without node times, or a hostile name in a manifest, refused naming it."""
    np.save(tmp_path / "t.npy", np.arange(N))
    out = tmp_path / "out"
    run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--node-time", tmp_path / "t.npy",
               "--node-time-name", "time", edge_list, out)
    manifest = (out / "manifest.textproto").read_text()
    assert 'node_time_name: "time"' in manifest
    alone = run_gnnctl("import", "--format", "edgelist", "--node-time-name", "time", edge_list, tmp_path / "a", ok=False)
    assert "--node-time-name: names the node times: give --node-time too" in alone.stderr
    for bad in ("node_time", "a/b"):  # refused before any work, as the manifest would refuse it after
        proc = run_gnnctl("import", "--format", "edgelist", "--node-time", tmp_path / "t.npy", "--node-time-name", bad,
                          edge_list, tmp_path / "b", ok=False)
        assert proc.returncode != 0 and "--node-time-name: node_time_name" in proc.stderr, proc.stderr
        assert not (tmp_path / "b").exists()
    for bad in ("node_time", "../x"):
        (out / "manifest.textproto").write_text(manifest.replace('node_time_name: "time"', f'node_time_name: "{bad}"'))
        proc = run_gnnctl("validate", out, ok=False)
        assert proc.returncode != 0 and "node_time_name" in proc.stderr, proc.stderr


def test_a_stored_time_array_of_the_wrong_length_fails_validation(tmp_path, edge_list):
    np.save(tmp_path / "t.npy", np.arange(N))
    out = tmp_path / "out"
    run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--node-time", tmp_path / "t.npy", edge_list, out)
    np.save(out / "node_time.npy", np.arange(N + 3))
    proc = run_gnnctl("validate", out, ok=False)
    assert proc.returncode != 0 and "node_time.npy" in proc.stderr, proc.stderr


def test_typed_import_takes_times_per_type(tmp_path):
    src = write_mag(tmp_path / "mag")
    paper_times = np.arange(TYPES["paper"], dtype=np.int16) * 3 + 1990
    field_times = np.arange(TYPES["field_of_study"], dtype=np.int64)
    np.save(tmp_path / "paper.npy", paper_times)
    np.save(tmp_path / "field.npy", field_times)
    out = tmp_path / "out"
    summary = run_gnnctl("import", "--format=ogb", "--node-time", f"paper={tmp_path / 'paper.npy'}",
                         f"--node-time=field_of_study={tmp_path / 'field.npy'}", src, out).stdout
    assert np.array_equal(np.load(out / "paper.node_time.npy"), paper_times.astype(np.int64))
    assert np.array_equal(np.load(out / "field_of_study.node_time.npy"), field_times)
    assert not (out / "author.node_time.npy").exists()
    assert summary.count("node times") == 2
    wrong = run_gnnctl("import", "--format=ogb", "--node-time", f"venue={tmp_path / 'paper.npy'}", src, tmp_path / "o2",
                       ok=False)
    assert "name one of the node types" in wrong.stderr and "paper" in wrong.stderr
    untyped = run_gnnctl("import", "--format=ogb", "--node-time", tmp_path / "paper.npy", src, tmp_path / "o3",
                         ok=False)
    assert "as TYPE=FILE.npy" in untyped.stderr
    short = run_gnnctl("import", "--format=ogb", "--node-time", f"author={tmp_path / 'paper.npy'}", src,
                       tmp_path / "o4", ok=False)
    assert "paper.npy: times of shape" in short.stderr


def test_generate_temporal_times_grow_with_ids_and_edges_follow_their_endpoints(tmp_path):
    out = tmp_path / "t"
    run_gnnctl("generate", "--preset", "tiny", "--seed", 4, "--temporal", out)
    node_time = np.load(out / "node_time.npy")
    indptr, indices = np.load(out / "indptr.npy"), np.load(out / "indices.npy")
    num_nodes = len(indptr) - 1
    assert np.array_equal(node_time, np.arange(num_nodes))
    time = np.load(out / "edge.time.npy")
    assert time.dtype == np.int64 and time.shape == indices.shape
    dst_of = np.repeat(np.arange(num_nodes), np.diff(indptr))
    assert np.array_equal(time, np.maximum(node_time[indices], node_time[dst_of]))
    assert (out / "e_id.npy").exists()
    assert "valid" in run_gnnctl("validate", out).stdout


def test_generate_typed_temporal_times_per_type_and_relation(tmp_path):
    out = tmp_path / "mag"
    summary = run_gnnctl("generate", "--preset", "mag", "--scale", "0.002", "--seed", 3, "--add-reverse",
                         "--temporal", out).stdout
    node_time = {}
    for path in out.glob("*.node_time.npy"):
        node_time[path.name.split(".")[0]] = np.load(path)
    assert sorted(node_time) == ["author", "field_of_study", "institution", "paper"]
    assert summary.count("node times") == 4
    for name, times in node_time.items():
        assert np.array_equal(times, np.arange(len(times))), name
    keys = sorted(p.name[:-len(".indices.npy")] for p in out.glob("*.indices.npy"))
    assert len(keys) == 8
    for key in keys:
        src, _, dst = key.split("___")
        indptr, indices = np.load(out / f"{key}.indptr.npy"), np.load(out / f"{key}.indices.npy")
        time = np.load(out / f"{key}.edge.time.npy")
        dst_of = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        assert time.dtype == np.int64 and time.shape == indices.shape, key
        assert np.array_equal(time, np.maximum(node_time[src][indices], node_time[dst][dst_of])), key
    assert "valid" in run_gnnctl("validate", out).stdout


@pytest.fixture()
def labeled(tmp_path, edge_list):
    """An edge list with labels and node splits (train 0..39, valid 40..59, test none)."""
    np.save(tmp_path / "labels.npy", np.arange(N) % 3)
    splits = tmp_path / "splits"
    splits.mkdir()
    np.save(splits / "train.npy", np.arange(40))
    np.save(splits / "valid.npy", np.arange(40, 60))
    np.save(splits / "test.npy", np.zeros(0, np.int64))
    return ["--labels", tmp_path / "labels.npy", "--splits", splits]


def test_split_times_are_stored_beside_their_splits(tmp_path, edge_list, labeled):
    times = tmp_path / "times"
    times.mkdir()
    np.save(times / "train.npy", np.arange(40, dtype=np.int32) * 10)
    np.save(times / "valid.npy", np.full(20, 2**40, np.int64))  # test: no seeds, no file
    out = tmp_path / "out"
    run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, *labeled, "--split-time", times, edge_list, out)
    assert np.array_equal(np.load(out / "train_time.npy"), np.arange(40) * 10)
    assert np.array_equal(np.load(out / "valid_time.npy"), np.full(20, 2**40))
    assert np.load(out / "test_time.npy").shape == (0,)
    assert "split_times: true" in (out / "manifest.textproto").read_text()
    assert "valid" in run_gnnctl("validate", out).stdout


def test_split_time_errors_name_the_split_and_file(tmp_path, edge_list, labeled):
    times = tmp_path / "times"
    times.mkdir()
    np.save(times / "train.npy", np.arange(40))
    missing = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, *labeled, "--split-time", times, edge_list,
                         tmp_path / "a", ok=False)
    assert f"{times}: no valid.npy for the 20 seeds of split valid" in missing.stderr, missing.stderr
    np.save(times / "valid.npy", np.arange(19))
    short = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, *labeled, "--split-time", times, edge_list,
                       tmp_path / "b", ok=False)
    assert f"{times}/valid.npy: times of shape (19), expected (valid's seeds = 20)" in short.stderr, short.stderr
    np.save(times / "valid.npy", np.full(20, 2**64 - 1, np.uint64))
    wrapped = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, *labeled, "--split-time", times,
                         edge_list, tmp_path / "d", ok=False)
    assert f"{times}/valid.npy: a uint64 value {2**64 - 1} is past int64" in wrapped.stderr, wrapped.stderr
    unsplit = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--split-time", times, edge_list,
                         tmp_path / "c", ok=False)
    assert "the dataset has no node splits to time" in unsplit.stderr
    assert not any((tmp_path / name).exists() for name in "abcd")  # nothing half-written


def test_link_split_times_sit_beside_their_seed_edges(tmp_path, edge_list):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    np.save(seeds / "train.npy", np.array([[0, 1, 2], [3, 4, 5]]))
    np.save(seeds / "train_time.npy", np.array([7, 8, 9], np.uint32))
    np.save(seeds / "valid.npy", np.array([[6], [7]]))
    out = tmp_path / "out"
    run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--edge-splits", seeds, edge_list, out)
    assert np.array_equal(np.load(out / "train_edge_time.npy"), [7, 8, 9])
    assert not (out / "valid_edge_time.npy").exists()
    assert "timed: true" in (out / "manifest.textproto").read_text()
    np.save(seeds / "test_time.npy", np.array([1]))  # times without the split's seed edges
    lone = run_gnnctl("import", "--format", "edgelist", "--num-nodes", N, "--edge-splits", seeds, edge_list,
                      tmp_path / "o2", ok=False)
    assert "test_time.npy without test.npy" in lone.stderr, lone.stderr


def test_typed_split_times_per_node_type(tmp_path):
    src = write_mag(tmp_path / "mag")
    times = tmp_path / "times"
    (times / "paper").mkdir(parents=True)
    for name, count in (("train", 3), ("valid", 1), ("test", 1)):
        np.save(times / "paper" / f"{name}.npy", np.arange(count) + 2000)
    out = tmp_path / "out"
    run_gnnctl("import", "--format=ogb", "--split-time", times, src, out)
    assert np.array_equal(np.load(out / "paper.train_time.npy"), [2000, 2001, 2002])
    assert np.array_equal(np.load(out / "paper.test_time.npy"), [2000])
    (times / "author").mkdir()
    unsplit = run_gnnctl("import", "--format=ogb", "--split-time", times, src, tmp_path / "o2", ok=False)
    assert "times the splits of node type 'author', which has none" in unsplit.stderr, unsplit.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    none = run_gnnctl("import", "--format=ogb", "--split-time", empty, src, tmp_path / "o3", ok=False)
    assert "has no folder T/" in none.stderr


def test_gnnd_serves_a_timed_dataset_as_before(tmp_path):
    """Times load into shared memory beside the graph; until a session asks for the temporal rule, its batches
    are those of the same graph without them."""
    import gnnd
    from daemon_util import Daemon
    run_gnnctl("generate", "--preset", "tiny", "--seed", 6, "--temporal", tmp_path / "timed")
    run_gnnctl("generate", "--preset", "tiny", "--seed", 6, "--edge-attr", tmp_path / "plain")
    daemon = Daemon(tmp_path, f"--dataset=timed={tmp_path / 'timed'}", f"--dataset=plain={tmp_path / 'plain'}",
                    name="timed")
    try:
        batches = {}
        for name in ("timed", "plain"):
            loader = gnnd.Loader(address=daemon.address, dataset=name, batch_size=64, fanouts=[5, 3], seed=2,
                                 edge_attrs=[], output="numpy", copy=True)
            batches[name] = [(b.node_ids, b.edge_src, b.edge_dst, b.features) for b in loader]
            loader.close()
        assert len(batches["timed"]) == len(batches["plain"]) > 0
        for a, b in zip(batches["timed"], batches["plain"]):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
    finally:
        assert daemon.stop() == 0, daemon.output()
