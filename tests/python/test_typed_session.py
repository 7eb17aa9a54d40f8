"""Typed sessions end to end: gnnd serving a typed dataset (the `mag` preset) to gnnd.Loader, batches equal to
`gnnctl sample`'s of the same request, per-relation fanouts, seeds by split or ids of the seed type, clear
refusals, and the API 1.x calls refusing a typed session."""
import ctypes
import os
import re
import subprocess

import numpy as np
import pytest

import gnnd
from daemon_util import GNNCTL, Daemon, free_port
from test_metrics import scrape

CITES, WRITES = ("paper", "cites", "paper"), ("author", "writes", "paper")
NAME = f"mag{os.getpid()}"  # shared-memory names are host-wide


@pytest.fixture(scope="module")
def mag(tmp_path_factory):
    root = tmp_path_factory.mktemp("typed")
    data = root / "mag"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.002", "--seed=3", str(data)], check=True,
                   capture_output=True)
    port = free_port()
    daemon = Daemon(root, f"--dataset={NAME}={data}", f"--metrics-address=127.0.0.1:{port}")
    daemon.metrics_port = port
    yield daemon, data
    daemon.stop()


def loader(daemon, **options):
    options = {"batch_size": 64, "fanouts": [4, 3], "seed": 11, "output": "numpy", **options}
    return gnnd.Loader(address=daemon.address, dataset=NAME, **options)


def sample(data, tmp_path, step, *flags):
    out = tmp_path / f"step{step}.npz"
    subprocess.run([GNNCTL, "sample", f"--dataset={data}", "--batch-size=64", "--fanouts=4,3", "--seed=11",
                    f"--step={step}", *flags, f"--out={out}"], check=True, capture_output=True)
    return np.load(out)


def test_batches_equal_gnnctl_sample_and_are_described_by_the_schema(mag, tmp_path):
    daemon, data = mag
    with loader(daemon, node_type="paper", copy=True) as batches:
        epoch, steps = list(batches), len(batches)
    assert len(epoch) == steps > 2
    first = epoch[0]
    assert isinstance(first, gnnd.TypedBatch)
    assert first.seed_type == "paper" and first.batch_size == 64
    assert set(first.node_types) == {"author", "field_of_study", "institution", "paper"}
    assert CITES in first.edge_types and WRITES in first.edge_types
    for step in (0, len(epoch) - 1):
        reference, batch = sample(data, tmp_path, step, "--node-type=paper"), epoch[step]
        assert set(reference.files) == set(batch.arrays)
        for name in reference.files:
            assert batch[name].dtype == reference[name].dtype, name
            assert np.array_equal(batch[name], reference[name]), name
        for t in batch.node_types:
            hops = batch.nodes_per_hop(t)
            assert hops == list(batch[f"{t}.num_nodes_per_hop"]) and sum(hops) == len(batch[f"{t}.node_ids"])
        for et in batch.edge_types:
            key = "___".join(et)
            assert sum(batch.edges_per_hop(et)) == len(batch[f"{key}.edge_src"]) == batch.counts[f"{key}.edges"]
    # The epoch's seeds are the paper split, each once.
    seeds = np.concatenate([b["paper.node_ids"][:b.batch_size] for b in epoch])
    assert np.array_equal(np.sort(seeds), np.sort(np.load(data / "paper.train.npy")))


def assert_hetero_batch_equals(batch, reference):
    """A gnnd.pyg typed batch (HeteroData, or HeteroBatch without PyG) holds exactly the arrays of the
    reference npz (gnnctl sample's) under PyG's names: n_id, x, y, num_sampled_nodes per node type, edge_index
    (int64, edge_src over edge_dst) and num_sampled_edges per relation."""
    import torch
    host = lambda tensor: tensor.cpu().numpy()  # noqa: E731
    for t in batch.node_types:
        store = batch[t]
        assert np.array_equal(host(store.n_id), reference[f"{t}.node_ids"]), t
        assert store.num_nodes == len(reference[f"{t}.node_ids"])
        assert list(store.num_sampled_nodes) == reference[f"{t}.num_nodes_per_hop"].tolist(), t
        if f"{t}.features" in reference.files:
            x = store.x
            bits = x.view(torch.int16) if x.element_size() == 2 else x
            assert np.array_equal(host(bits), reference[f"{t}.features"].view(host(bits).dtype)), t
        else:
            assert "x" not in store, t
    seeds = next(batch[t] for t in batch.node_types if "batch_size" in batch[t])
    assert np.array_equal(host(seeds.y), next(reference[n] for n in reference.files if n.endswith(".labels")))
    assert seeds.batch_size == len(seeds.y)
    relations = {tuple(n[:-len(".edge_src")].split("___")) for n in reference.files if n.endswith(".edge_src")}
    assert set(batch.edge_types) == relations
    for et in relations:
        key, edge_index = "___".join(et), batch[et].edge_index
        assert edge_index.dtype == torch.int64 and edge_index.shape[0] == 2, et
        want = np.stack((reference[f"{key}.edge_src"], reference[f"{key}.edge_dst"])).astype(np.int64)
        assert np.array_equal(host(edge_index), want), et
        assert list(batch[et].num_sampled_edges) == reference[f"{key}.num_edges_per_hop"].tolist(), et


def test_pyg_hetero_batches_equal_gnnctl_sample(mag, tmp_path):
    pytest.importorskip("torch")
    import gnnd.pyg
    daemon, data = mag
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[4, 3], batch_size=64, input_nodes=("paper", "train"),
                                 shuffle=True, dataset=NAME, address=daemon.address, seed=11) as batches:
        steps = 0
        for batch in batches:
            assert_hetero_batch_equals(batch, sample(data, tmp_path, steps, "--node-type=paper"))
            steps += 1
        assert steps == len(batches) > 2


def test_edge_indices_of_relations_with_and_without_edges():
    torch = pytest.importorskip("torch")
    from gnnd.pyg import edge_indices
    pairs = [(torch.tensor([3, 1, 2], dtype=torch.int32), torch.tensor([0, 0, 1], dtype=torch.int32)),
             (torch.tensor([], dtype=torch.int32), torch.tensor([], dtype=torch.int32)),
             (torch.tensor([7], dtype=torch.int32), torch.tensor([2**31 - 1], dtype=torch.int32))]
    out = edge_indices(pairs)
    assert [e.dtype for e in out] == [torch.int64] * 3 and [tuple(e.shape) for e in out] == [(2, 3), (2, 0), (2, 1)]
    assert out[0].tolist() == [[3, 1, 2], [0, 0, 1]] and out[2].tolist() == [[7], [2**31 - 1]]
    assert all(e.is_contiguous() for e in out) and edge_indices([]) == []


def test_per_relation_fanouts_and_seed_ids(mag):
    daemon, data = mag
    fanouts = {edge_type: [0, 0] for edge_type in loader(daemon).__enter__()._views.edge_types}
    fanouts[CITES] = [2, 2]
    ids = np.load(data / "paper.valid.npy")[:50]
    with loader(daemon, fanouts=fanouts, seed_ids=ids, shuffle=False) as batches:
        (batch,) = list(batches)
        assert np.array_equal(batch["paper.node_ids"][:50], ids)
        for et in batch.edge_types:
            edges = len(batch["___".join(et) + ".edge_src"])
            assert edges == 0 if et != CITES else 0 < edges <= 50 * 2 + 50 * 2 * 2
        assert batch.counts["author.nodes"] == 0
        # Every cites edge joins a paper drawn from a destination's in-neighbors: at most 2 per node and hop.
        dst = batch["paper___cites___paper.edge_dst"]
        assert np.bincount(dst).max() <= 2


def test_bad_typed_requests_are_refused_naming_the_field(mag):
    daemon, _ = mag
    cases = [
        (dict(node_type="venue"), "INVALID_ARGUMENT", "open.node_type = 'venue' (the node types are"),
        (dict(node_type="author"), "INVALID_ARGUMENT", "node type 'author' has no such split"),
        (dict(fanouts={CITES: [2, 2]}), "INVALID_ARGUMENT", "has none (give every relation"),
        (dict(fanouts={("paper", "cited", "paper"): [2]}), "INVALID_ARGUMENT", f"not a relation of '{NAME}'"),
        (dict(fanouts=[4, -3]), "INVALID_ARGUMENT", "open.fanouts["),
        (dict(seed_ids=[10**9]), "INVALID_ARGUMENT", f"not a 'paper' node of '{NAME}'"),
    ]
    for options, code, message in cases:
        with pytest.raises(gnnd.GnndError) as error:
            loader(daemon, **options)
        assert error.value.code == code and message in error.value.message, (options, error.value)
    assert "event=serving" in daemon.output() and daemon.proc.poll() is None


def test_api_1x_calls_refuse_a_typed_session(mag):
    daemon, _ = mag
    with loader(daemon) as batches:
        lib = gnnd._native.bound().lib
        batch = gnnd._native.bound().Batch()
        assert lib.gnnd_next_batch_on_stream(batches._session, None, ctypes.byref(batch)) == 9  # FAILED_PRECONDITION
        assert b"read by their schema" in lib.gnnd_last_error()
        arrays = (gnnd._native.Array * 7)()
        assert lib.gnnd_slot_arrays(batches._session, 0, arrays) == 9
        hops = (ctypes.c_int32 * 17)()
        assert lib.gnnd_batch_hop_counts(batches._session, 0, hops, hops, 17) == -1
        assert len(list(batches)) == len(batches)  # the session still serves by its schema


def test_stats_name_the_seed_type_and_count_a_typed_sessions_bytes(mag):
    daemon, _ = mag
    served = f'gnnd_bytes_total{{dataset="{NAME}",device="cpu"}}'
    before = scrape(daemon.metrics_port).get(served, 0)
    with loader(daemon, copy=True) as batches:
        assert "/paper.train\t" in daemon.gnnctl("stats").stdout
        expected = sum(sum(a.nbytes for a in batch.arrays.values()) for batch in batches)
    assert scrape(daemon.metrics_port)[served] - before == expected > 0


def test_gnnctl_load_of_a_typed_dataset_counts_every_type_and_relation(mag, tmp_path):
    _, data = mag
    daemon = Daemon(tmp_path, config=f'dataset_roots: "{data.parent}"', name=f"typedload{os.getpid()}")
    try:
        said = daemon.gnnctl("load", "m", data).stdout
        manifest = (data / "manifest.textproto").read_text()
        nodes = sum(int(n) for n in re.findall(r"num_nodes: (\d+)", manifest))
        edges = sum(int(n) for n in re.findall(r"num_edges: (\d+)", manifest))
        assert nodes > 0 and edges > 0
        assert f": {nodes} nodes, {edges} edges, " in said, said
        assert f"\t{nodes} nodes\t{edges} edges\t" in daemon.gnnctl("datasets").stdout
    finally:
        assert daemon.stop() == 0, daemon.output()
