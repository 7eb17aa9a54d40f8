"""Where a CUDA session's batches are made (open.producer; needs a CUDA device and torch with CUDA, skipped
otherwise): "host_gather" (the GPU's kernels sample, gnnd's CPU threads gather the rows, the copy engines upload
them), "host" (gnnd's CPU threads make the whole batch) and "auto" (host_gather, or sm once the host is found the
bound, mid-epoch) give every batch kind exactly the batches "sm" (the GPU's kernels) gives, a hot tier present or
not; gnnd's --producer sets the default; stats say which made a session's batches, and auto's why."""
import re
import subprocess
import time

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


@pytest.mark.parametrize("producer", ["host_gather", "host", "auto"])
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
        with pytest.raises(gnnd.GnndError, match=r"open.producer = 'gpu' \(sm, host_gather, host or auto\)"):
            gnnd.Loader(producer="gpu", **shape)
        with pytest.raises(gnnd.GnndError, match=r"open.producer = 'host_gather' \(a CPU session's batches are made"):
            gnnd.Loader(producer="host_gather", **dict(shape, device="cpu"))
    finally:
        assert daemon.stop() == 0, daemon.output()


def session_lines(daemon):
    return [line for line in daemon.gnnctl("stats").stdout.splitlines() if line.startswith("session ")]


def test_auto_moves_from_host_gather_to_sm_mid_epoch_and_the_batches_stay_the_same(tmp_path, datasets):
    """GNND_AUTO_GATHER_SHARE=0 finds the host the bound at the end of auto's first window: the batches gathered on
    the host before the move, those in flight across it and those the SMs gather after it all equal sm's."""
    _, tiny = datasets
    daemon = Daemon(tmp_path, f"--dataset=tiny={tiny}", "--threads=4", name="automove",
                    env={"GNND_AUTO_GATHER_SHARE": "0"})
    try:
        shape = dict(address=daemon.address, dataset="tiny", batch_size=64, fanouts=[10, 5], device="cuda:0", copy=True,
                     seed=3)
        with gnnd.Loader(producer="sm", **shape) as sm, gnnd.Loader(producer="auto", **shape) as chosen:
            compared = 0
            for made_by_sm, made_by_auto in zip(sm, chosen):
                if compared == 0:
                    line = session_lines(daemon)[1]
                    assert "(made by host_gather)" in line and line.endswith(
                        "auto host_gather: trying host_gather and sm in turn, 4 windows (4 producer threads)"), line
                want, got = arrays(sm, made_by_sm), arrays(chosen, made_by_auto)
                for name in want:
                    assert got[name][:2] == want[name][:2], name
                    np.testing.assert_array_equal(got[name][2], want[name][2], err_msg=f"step {compared} {name}")
                compared += 1
                time.sleep(0.01)  # a window spans 0.4 s: it ends about 40 batches in, of 94
            assert compared == len(sm) == 94
            line = session_lines(daemon)[1]
            assert "(made by sm)" in line, line
            assert re.search(r"auto sm: host_gather's 4 producer threads took [0-9.]+ ms a batch, the trainer one every "
                             r"[0-9.]+ ms \(over 0 %\): the host was the bound$", line), line
        assert "session 2's producer auto makes its batches with sm from now: sm: host_gather's" in daemon.output()
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_auto_tries_host_gather_and_sm_in_turn_over_two_epochs_and_the_batches_stay_the_same(tmp_path, datasets):
    """auto's trial: windows of host_gather, sm, sm, host_gather (0.4 s each), then the one the trainer took faster;
    every batch of two epochs, made whichever way, equals sm's."""
    _, tiny = datasets
    daemon = Daemon(tmp_path, f"--dataset=tiny={tiny}", "--threads=4", name="autotrial")
    try:
        shape = dict(address=daemon.address, dataset="tiny", batch_size=32, fanouts=[10, 5], device="cuda:0", copy=True,
                     seed=5)
        with gnnd.Loader(producer="sm", **shape) as sm, gnnd.Loader(producer="auto", **shape) as chosen:
            compared = 0
            for epoch in range(2):
                for made_by_sm, made_by_auto in zip(sm, chosen):
                    want, got = arrays(sm, made_by_sm), arrays(chosen, made_by_auto)
                    for name in want:
                        np.testing.assert_array_equal(got[name][2], want[name][2], err_msg=f"{epoch} {compared} {name}")
                    compared += 1
                    time.sleep(0.005)  # a window of 0.4 s is ~80 batches: the four end within the two epochs
            assert compared == 2 * len(sm)
            line = session_lines(daemon)[1]
            assert re.search(r"\(made by (sm|host_gather)\).*\tauto (sm|host_gather): the trainer took a batch every "
                             r"[0-9.]+ ms with it, [0-9.]+ ms with (host_gather|sm)", line), line
        changes = [l for l in daemon.output().splitlines() if "session 2's producer auto makes its batches with" in l]
        assert [c.split(" with ")[1].split(" ")[0] for c in changes[:2]] == ["sm", "host_gather"], changes
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_auto_on_one_thread_is_sm_and_a_cpu_sessions_auto_is_the_host(tmp_path, datasets):
    _, tiny = datasets
    daemon = Daemon(tmp_path, f"--dataset=tiny={tiny}", "--threads=1", "--producer=auto", name="autoone")
    try:
        shape = dict(address=daemon.address, dataset="tiny", batch_size=64, fanouts=[10, 5])
        with gnnd.Loader(device="cuda:0", **shape) as by_default, gnnd.Loader(device="cpu", producer="auto",
                                                                             **shape) as cpu:
            next(iter(by_default)), next(iter(cpu))
            gpu_line, cpu_line = session_lines(daemon)
            assert "cuda:0 (made by sm)" in gpu_line and gpu_line.endswith(
                "auto sm: gnnd has 1 producer thread(s) to gather rows on (host_gather wants 2)"), gpu_line
            assert "cpu (made by host)" in cpu_line and "auto" not in cpu_line.split("\t")[-1], cpu_line
    finally:
        assert daemon.stop() == 0, daemon.output()


def memory_mib(line):
    return float(re.search(r"\tmemory ([0-9.]+) MiB\t", line).group(1))


def test_auto_whose_host_copies_do_not_fit_the_limit_is_sm_where_host_gather_is_refused(tmp_path, datasets):
    """host_gather's pinned copies of the slots count against max_session_bytes; under a limit that sm's session
    fits and host_gather's does not, host_gather is refused and auto opens as sm, holding sm's bytes."""
    _, tiny = datasets
    shape = dict(dataset="tiny", batch_size=256, fanouts=[10, 5], device="cuda:0", copy=True, seed=1)
    probe = Daemon(tmp_path, f"--dataset=tiny={tiny}", name="autoprobe")
    try:
        with gnnd.Loader(address=probe.address, producer="sm", **shape), \
                gnnd.Loader(address=probe.address, producer="host_gather", **shape):
            sm_line, copies_line = session_lines(probe)
    finally:
        assert probe.stop() == 0, probe.output()
    assert memory_mib(copies_line) - memory_mib(sm_line) > 0.5, (sm_line, copies_line)  # 2 copies of 0.5 MiB
    limit = int((memory_mib(sm_line) + memory_mib(copies_line)) / 2 * 1048576)
    daemon = Daemon(tmp_path, name="autolimit",
                    config=f'max_session_bytes: {limit}\ndatasets {{ name: "tiny" path: "{tiny}" }}')
    try:
        with pytest.raises(gnnd.GnndError, match=r"over the limit of [0-9]+ \(max_session_bytes\)"):
            gnnd.Loader(address=daemon.address, producer="host_gather", **shape)
        with gnnd.Loader(address=daemon.address, producer="auto", **shape) as chosen, \
                gnnd.Loader(address=daemon.address, producer="sm", **shape) as sm:
            want, got = arrays(sm, next(iter(sm))), arrays(chosen, next(iter(chosen)))
            for name in want:
                np.testing.assert_array_equal(got[name][2], want[name][2], err_msg=name)
            line = session_lines(daemon)[0]
            assert "(made by sm)" in line and line.endswith(
                "auto sm: host_gather's pinned copies of the slots would take the session past max_session_bytes"), line
            assert memory_mib(line) == memory_mib(sm_line), (line, sm_line)
    finally:
        assert daemon.stop() == 0, daemon.output()
