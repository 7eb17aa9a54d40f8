"""Where a CUDA session's batches are made (open.producer; needs a CUDA device and torch with CUDA, skipped
otherwise): "host_gather" (the GPU's kernels sample, gnnd's CPU threads gather the rows, the copy engines upload
them) and "host" (gnnd's CPU threads make the whole batch) give every batch kind exactly the batches "sm" (the
GPU's kernels) gives, a hot tier present or not; gnnd's --producer sets the default; stats say which made a
session's batches."""
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: GPU producer tests skipped", allow_module_level=True)

import gnnd
from daemon_util import GNNCTL, Daemon, edgelist_link_dataset, generate


def arrays(loader, batch):
    """Every array of a batch by name, on the host."""
    if isinstance(batch, gnnd.TypedBatch):
        named = dict(batch.arrays)
    else:
        named = {n: batch[n] for n in loader._views.names}
    for name, value in named.items():
        assert value.is_cuda, name
    # Compared as bytes (numpy has no bfloat16), with the shape and dtype beside them.
    return {name: (tuple(value.shape), str(value.dtype), value.cpu().contiguous().flatten().view(torch.uint8).numpy())
            for name, value in named.items()}


def assert_same_batches(producer, address, dataset, steps=5, **options):
    """The first `steps` batches of an "sm" session and a `producer` one, every array equal; returns how many."""
    shape = dict(address=address, dataset=dataset, device="cuda:0", copy=True, **options)
    with gnnd.Loader(producer="sm", **shape) as sm, gnnd.Loader(producer=producer, **shape) as host:
        compared = 0
        for made_by_sm, made_by_host in zip(sm, host):
            if compared == steps:
                break
            want, got = arrays(sm, made_by_sm), arrays(host, made_by_host)
            assert set(got) == set(want), (dataset, options)
            for name in want:
                assert got[name][:2] == want[name][:2], (dataset, options, name)
                np.testing.assert_array_equal(got[name][2], want[name][2], err_msg=f"{dataset} {options} {name}")
            compared += 1
        assert compared == min(steps, len(sm)) > 1
    return compared


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("producer")
    tiny = generate(root / "tiny", "--seed", 4, "--feature-dtype", "bfloat16")
    subprocess.run([GNNCTL, "hotness", f"--dataset={tiny}", "--fanouts=10,5", "--write"], check=True,
                   capture_output=True)
    edgelist_link_dataset(root, "links", seed=5, nodes=3000, edges=24000, train=400, dim=16)
    key = "author___writes___paper"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--seed=2", "--add-reverse", "--edge-attr",
                    "--temporal", f"--link-relation={key}", root / "mag"], check=True, capture_output=True)
    subprocess.run([GNNCTL, "generate", "--preset=products", "--scale=0.002", "--seed=3", "--edge-attr", "--temporal",
                    root / "products"], check=True, capture_output=True)
    return root, tiny


@pytest.mark.parametrize("producer", ["host_gather", "host"])
@pytest.mark.parametrize("tier", ["half", "none"])
def test_batches_made_on_the_host_equal_the_gpu_kernels(datasets, tier, producer):
    root, tiny = datasets
    features = np.load(tiny / "features.npy", mmap_mode="r")
    num_nodes, row_bytes = features.shape[0], features[0].nbytes
    cache = 4 * num_nodes + (num_nodes // 2) * (row_bytes + 8) if tier == "half" else "none"
    config = "\n".join([f'datasets {{ name: "tiny" path: "{tiny}" }}',
                        f'datasets {{ name: "links" path: "{root / "links"}" }}',
                        f'datasets {{ name: "mag" path: "{root / "mag"}" }}',
                        f'datasets {{ name: "products" path: "{root / "products"}" }}'])
    daemon = Daemon(root, f"--gpu-cache={cache}", config=config, name=f"{producer}{tier}")
    key = "author___writes___paper"
    link = dict(edge_split="train", neg_amount=2)
    cases = [("tiny", dict(batch_size=64, fanouts=[10, 5])),
             ("tiny", dict(batch_size=64, fanouts=[-1, 3], labor=True)),
             ("products", dict(batch_size=64, fanouts=[10, 5], weight_attr="edge_weight", replace=True)),
             ("products", dict(batch_size=64, fanouts=[10, 5], time_attr="time", time_window=20000)),
             ("products", dict(batch_size=64, fanouts=[10, 5], disjoint=True)),
             ("mag", dict(batch_size=32, fanouts=[4, 3], node_type="paper")),
             ("mag", dict(batch_size=32, fanouts=[4, 3], node_type="paper", time_attr="node_time",
                          temporal_strategy="last")),
             ("links", dict(batch_size=32, fanouts=[3, 2], neg_sampling="binary", exclude="reverse", **link)),
             ("links", dict(batch_size=32, fanouts=[3, 2], neg_sampling="triplet", strict_negatives=True, **link)),
             ("mag", dict(batch_size=32, fanouts=[3, 2], neg_sampling="binary", edge_type=key, **link))]
    try:
        for dataset, options in cases:
            assert_same_batches(producer, daemon.address, dataset, seed=6, **options)
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_gnnd_producer_sets_the_default_and_stats_say_which(tmp_path, datasets):
    _, tiny = datasets
    daemon = Daemon(tmp_path, f"--dataset=tiny={tiny}", "--producer=host_gather", name="producerdefault")
    try:
        shape = dict(address=daemon.address, dataset="tiny", batch_size=64, fanouts=[10, 5], device="cuda:0")
        with gnnd.Loader(**shape) as by_default, gnnd.Loader(producer="sm", **shape) as asked:
            next(iter(by_default)), next(iter(asked))
            sessions = [line for line in daemon.gnnctl("stats").stdout.splitlines() if line.startswith("session ")]
            assert len(sessions) == 2, sessions
            assert "cuda:0 (made by host_gather)" in sessions[0] and "cuda:0 (made by sm)" in sessions[1], sessions
        with pytest.raises(gnnd.GnndError, match=r"open.producer = 'gpu' \(sm, host_gather or host\)"):
            gnnd.Loader(producer="gpu", **shape)
        with pytest.raises(gnnd.GnndError, match=r"open.producer = 'host_gather' \(a CPU session's batches are made"):
            gnnd.Loader(producer="host_gather", **dict(shape, device="cpu"))
    finally:
        assert daemon.stop() == 0, daemon.output()
