"""GPU sessions end to end (needs a CUDA device and torch with CUDA; skipped otherwise): a trainer process
reads whole epochs of CUDA tensors from gnnd through CUDA IPC, every batch equal to the CPU reference;
closing the session returns its GPU memory. (The test that kills a trainer with GPU work pending stays last:
under MPS it leaves the MPS server refusing new clients for a while.)"""
import os
import subprocess
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: GPU session tests skipped", allow_module_level=True)

import gnnd
import gnnd.pyg
from daemon_util import GNNCTL, Daemon, edgelist_link_dataset, generate
from test_typed_session import assert_hetero_batch_equals


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu")
    data = generate(root / "tiny", "--seed", 4, "--feature-dtype", "bfloat16")
    daemon = Daemon(root, f"--dataset=gputiny={data}", name="gpu")
    yield daemon, data
    print(daemon.output())
    assert daemon.stop() == 0, daemon.output()


def reference(data, tmp_path, step, epoch, **flags):
    out = tmp_path / f"ref-{epoch}-{step}.npz"
    args = [GNNCTL, "sample", f"--dataset={data}", f"--step={step}", f"--epoch={epoch}", f"--out={out}", "--device=cpu"]
    args += [f"--{k.replace('_', '-')}={v}" for k, v in flags.items()]
    subprocess.run(args, check=True, capture_output=True)
    return np.load(out)


def assert_matches_reference(batch, data, tmp_path, epoch, **flags):
    """Every array of a CUDA batch equals the CPU reference's (16-bit features compared as their bits)."""
    ref = reference(data, tmp_path, batch.step, epoch, **flags)
    for name in gnnd.ARRAY_NAMES:
        value = getattr(batch, name)
        is_16_bit = name == "features" and value.element_size() == 2
        got = (value.view(torch.int16) if is_16_bit else value).cpu().numpy()
        want = ref[name].view(np.int16) if is_16_bit else ref[name]
        np.testing.assert_array_equal(got, want, err_msg=f"epoch {epoch} step {batch.step} {name}")


def test_cuda_tensors_over_ipc_match_the_cpu_reference(setup, tmp_path):
    daemon, data = setup
    loader = gnnd.Loader(address=daemon.address, dataset="gputiny", batch_size=512, fanouts=[10, -1], seed=3,
                         device="cuda:0")
    for epoch in range(2):
        steps = 0
        for batch in loader:
            assert batch.features.is_cuda and batch.features.dtype == torch.bfloat16
            assert_matches_reference(batch, data, tmp_path, epoch, batch_size=512, fanouts="10,-1", seed=3)
            steps += 1
        assert steps == len(loader)
    loader.close()


def test_hops_that_draw_none_match_the_cpu_reference(setup, tmp_path):
    """Fanouts of 0 (PyG's num_neighbors=[0], and [] served as one hop that draws none) on cuda:0: every batch
    equals the CPU reference, the hops of 0 holding no edges and no new nodes."""
    daemon, data = setup
    for fanouts in ([0], [4, 0], [0, 3]):
        text = ",".join(map(str, fanouts))
        with gnnd.Loader(address=daemon.address, dataset="gputiny", batch_size=128, fanouts=fanouts, seed=3,
                         device="cuda:0") as loader:
            for batch in loader:
                assert_matches_reference(batch, data, tmp_path, 0, batch_size=128, fanouts=text, seed=3)
                for hop, k in enumerate(fanouts):
                    if k == 0 or (hop > 0 and fanouts[0] == 0):
                        assert batch.edges_per_hop[hop] == 0 and batch.nodes_per_hop[hop + 1] == 0, fanouts


def test_node_times_on_some_types_give_the_cpus_batches(tmp_path):
    """Node times on papers alone (authors drawn from unfiltered, PyG's rule), by their saved name "time", uniform
    and last: every array of every cuda:0 batch equals the CPU session's."""
    from test_pyg_save import partially_timed
    data = gnnd.pyg.save(partially_timed(), tmp_path / "partial")
    daemon = Daemon(tmp_path, f"--dataset=partial={data}", name="partial")
    try:
        for strategy in ("uniform", "last"):
            got = {}
            for device in ("cpu", "cuda:0"):
                with gnnd.Loader(address=daemon.address, dataset="partial", node_type="paper",
                                 seed_ids=np.arange(0, 120, 3), seed_times=np.arange(40) % 50, batch_size=16,
                                 fanouts=[3, 2], seed=2, device=device, copy=True, time_attr="time",
                                 temporal_strategy=strategy) as loader:
                    got[device] = [{k: v.cpu().numpy() for k, v in b.arrays.items()} for b in loader]
            assert len(got["cpu"]) == len(got["cuda:0"]) == 3
            for want, have in zip(got["cpu"], got["cuda:0"]):
                assert sorted(want) == sorted(have)
                for name in want:
                    np.testing.assert_array_equal(have[name], want[name], err_msg=f"{strategy} {name}")
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_batches_that_outgrow_their_fitted_sorts_are_filled_again(tmp_path):
    """GNND_FIT_SORTS=tight fits each hop's sort to exactly the keys seen from the first batch on, so the first
    batch of a session outgrows every sort and later ones often do: each is filled again before it is delivered,
    and every batch of two epochs still equals the CPU reference (a homogeneous and a typed session)."""
    data = generate(tmp_path / "tiny", "--seed", 5)
    mag = tmp_path / "mag"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--add-reverse", "--seed=2", str(mag)],
                   check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=tight={data}", f"--dataset=tightmag={mag}", name="tight",
                    env={"GNND_FIT_SORTS": "tight"})
    try:
        with gnnd.Loader(address=daemon.address, dataset="tight", batch_size=256, fanouts=[5, 5, 5], seed=6,
                         device="cuda:0") as loader:
            for epoch in range(2):
                steps = 0
                for batch in loader:
                    assert_matches_reference(batch, data, tmp_path, epoch, batch_size=256, fanouts="5,5,5", seed=6)
                    steps += 1
                assert steps == len(loader)
        with gnnd.Loader(address=daemon.address, dataset="tightmag", node_type="paper", batch_size=128,
                         fanouts=[4, 3], seed=7, device="cuda:0") as loader:
            for batch in loader:
                ref = reference(mag, tmp_path, batch.step, 0, node_type="paper", batch_size=128, fanouts="4,3", seed=7)
                for name in ref.files:
                    np.testing.assert_array_equal(batch[name].cpu().numpy(), ref[name], err_msg=f"{batch.step} {name}")
        refills = daemon.output().count("filled again: it outgrew a fitted sort or a LABOR bound")
        assert refills >= 2, daemon.output()  # each session's first batch at least
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_typed_cuda_session_matches_the_cpu_reference(tmp_path):
    """A typed dataset (the mag preset, float16 paper features) served on cuda:0: every array of every batch of
    an epoch equals `gnnctl sample --device cpu` of the same step."""
    data = tmp_path / "mag"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--add-reverse", "--feature-dtype=float16",
                    "--seed=2", str(data)], check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=gpumag={data}", name="gpumag")
    try:
        with gnnd.Loader(address=daemon.address, dataset="gpumag", node_type="paper", batch_size=256,
                         fanouts=[6, -1], seed=4, device="cuda:0") as loader:
            steps = 0
            for batch in loader:
                out = tmp_path / f"ref-{batch.step}.npz"
                subprocess.run([GNNCTL, "sample", f"--dataset={data}", "--node-type=paper", "--batch-size=256",
                                "--fanouts=6,-1", "--seed=4", f"--step={batch.step}", "--device=cpu", f"--out={out}"],
                               check=True, capture_output=True)
                ref = np.load(out)
                assert sorted(ref.files) == sorted(batch.arrays)
                for name in ref.files:
                    assert batch[name].is_cuda, name
                    np.testing.assert_array_equal(batch[name].cpu().numpy(), ref[name], err_msg=f"step {batch.step} {name}")
                steps += 1
            assert steps == len(loader)
        # The same batches as PyG's HeteroData (every relation's int64 edge_index made on the GPU at once).
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[6, -1], batch_size=256, input_nodes=("paper", "train"),
                                     shuffle=True, dataset="gpumag", address=daemon.address, seed=4,
                                     device="cuda:0") as batches:
            for step, batch in enumerate(batches):
                assert batch["paper"].n_id.is_cuda
                assert_hetero_batch_equals(batch, np.load(tmp_path / f"ref-{step}.npz"))
    finally:
        assert daemon.stop() == 0, daemon.output()


@pytest.mark.parametrize("options", [
    dict(time_attr="time", seed_times=True),  # edge times, the seeds' times uploaded with them
    dict(time_attr="node_time", temporal_strategy="last"),  # node times, each seed's own
    dict(disjoint=True),
])
def test_temporal_and_disjoint_cuda_sessions_equal_the_cpu_sessions(tmp_path, options):
    """A typed temporal (or disjoint) session on cuda:0 gives the CPU session's batches, array for array."""
    data = tmp_path / "mag"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--add-reverse", "--temporal", "--seed=2",
                    str(data)], check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=tmag={data}", name="tmag")
    try:
        ids = np.arange(0, 3000, 3)
        extra = dict(options)
        if extra.pop("seed_times", False):
            extra["seed_times"] = (ids * 7919) % 3000
        got = {}
        for device in ("cpu", "cuda:0"):
            with gnnd.Loader(address=daemon.address, dataset="tmag", node_type="paper", seed_ids=ids, batch_size=128,
                             fanouts=[5, 3], seed=6, device=device, copy=True, **extra) as loader:
                got[device] = [{k: v.cpu().numpy() for k, v in b.arrays.items()} for b in loader]
        assert len(got["cpu"]) == len(got["cuda:0"]) > 0
        for step, (want, have) in enumerate(zip(got["cpu"], got["cuda:0"])):
            assert sorted(want) == sorted(have) and any(k.endswith(".batch") for k in want)
            for name in want:
                np.testing.assert_array_equal(have[name], want[name], err_msg=f"step {step} {name}")
    finally:
        assert daemon.stop() == 0, daemon.output()


@pytest.mark.parametrize("options", [
    dict(time_attr="node_time", neg_sampling="binary", neg_amount=2),  # temporal negatives too
    dict(time_attr="time", neg_sampling="triplet", temporal_strategy="last"),
    dict(disjoint=True, neg_sampling="binary", exclude="reverse"),
    dict(time_attr="node_time", neg_sampling="binary", neg_amount=0.5),  # a fraction of the positives
])
def test_temporal_and_disjoint_link_sessions_on_a_gpu_equal_the_cpu_ones(tmp_path, options):
    """A typed temporal (or disjoint) link session on cuda:0, over given pairs with their times, gives the CPU
    session's batches, array for array."""
    data = tmp_path / "mag"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--add-reverse", "--temporal", "--seed=2",
                    str(data)], check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=tmag={data}", name="tmaglink")
    try:
        rng = np.random.default_rng(4)
        authors, papers = (len(np.load(data / f"{t}.node_time.npy")) for t in ("author", "paper"))
        pairs = np.stack([rng.integers(0, authors, 700), rng.integers(0, papers, 700)])
        extra = dict(options)
        if "time_attr" in extra:
            extra["edge_label_time"] = rng.integers(0, papers, 700)
        got = {}
        for device in ("cpu", "cuda:0"):
            with gnnd.Loader(address=daemon.address, dataset="tmag", seed_edges=pairs, batch_size=128,
                             edge_type=("author", "writes", "paper"), fanouts=[4, 3], seed=6, device=device,
                             copy=True, **extra) as loader:
                got[device] = [{k: v.cpu().numpy() for k, v in b.arrays.items()} for b in loader]
        assert len(got["cpu"]) == len(got["cuda:0"]) > 1
        for step, (want, have) in enumerate(zip(got["cpu"], got["cuda:0"])):
            assert sorted(want) == sorted(have) and any(k.endswith(".batch") for k in want)
            for name in want:
                np.testing.assert_array_equal(have[name], want[name], err_msg=f"step {step} {name}")
    finally:
        assert daemon.stop() == 0, daemon.output()


@pytest.mark.parametrize("link", [False, True])
def test_labor_sessions_on_a_gpu_equal_the_cpu_ones(tmp_path, link):
    """Typed LABOR sessions (node seeds with batch_dependency, link pairs with exclusion and layer_dependency) on
    cuda:0 give the CPU sessions' batches, edge_weight included, array for array."""
    data = tmp_path / "mag"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--add-reverse", "--seed=2", str(data)],
                   check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=lmag={data}", name="lmag")
    try:
        rng = np.random.default_rng(5)
        if link:
            authors, papers = (len(np.load(data / f"{r}.indptr.npy")) - 1
                               for r in ("paper___rev_writes___author", "author___writes___paper"))
            options = dict(seed_edges=np.stack([rng.integers(0, authors, 500), rng.integers(0, papers, 500)]),
                           edge_type=("author", "writes", "paper"), neg_sampling="binary", exclude="reverse",
                           layer_dependency=True)
        else:
            options = dict(node_type="paper", seed_ids=np.arange(0, 3000, 3), batch_dependency=4)
        got = {}
        for device in ("cpu", "cuda:0"):
            with gnnd.Loader(address=daemon.address, dataset="lmag", batch_size=128, fanouts=[5, 3], seed=6,
                             device=device, copy=True, labor=True, **options) as loader:
                got[device] = [{k: v.cpu().numpy() for k, v in b.arrays.items()} for b in loader]
        assert len(got["cpu"]) == len(got["cuda:0"]) > 1
        for step, (want, have) in enumerate(zip(got["cpu"], got["cuda:0"])):
            assert sorted(want) == sorted(have) and any(k.endswith(".edge_weight") for k in want)
            for name in want:
                np.testing.assert_array_equal(have[name], want[name], err_msg=f"step {step} {name}")
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_closing_a_session_returns_its_gpu_memory(setup):
    daemon, _ = setup
    torch.cuda.init()
    before, _ = torch.cuda.mem_get_info()
    loader = gnnd.Loader(address=daemon.address, dataset="gputiny", batch_size=1024, fanouts=[15, 10, 5],
                         num_slots=4, device="cuda:0")
    next(iter(loader))
    during, _ = torch.cuda.mem_get_info()
    loader.close()
    for _ in range(100):  # the session ends asynchronously in gnnd
        after, _ = torch.cuda.mem_get_info()
        if after >= before - (8 << 20):
            break
        time.sleep(0.05)
    assert during < before, "the session took no GPU memory?"
    assert after >= before - (8 << 20), f"{(before - after) >> 20} MiB not returned"


def mps_running():
    """Whether an MPS control daemon answers: its socket file outlives `quit`, so only a connection tells."""
    import socket
    path = os.path.join(os.environ.get("CUDA_MPS_PIPE_DIRECTORY") or "/tmp/nvidia-mps", "control")
    for kind in (socket.SOCK_SEQPACKET, socket.SOCK_STREAM):
        with socket.socket(socket.AF_UNIX, kind) as s:
            try:
                s.connect(path)
                return True
            except OSError:
                pass
    return False


@pytest.mark.parametrize("sms", ["16", "auto"])
def test_producer_in_a_green_context(tmp_path, setup, sms):
    _, data = setup
    daemon = Daemon(tmp_path, f"--dataset=greentiny={data}", f"--producer-sms={sms}", name=f"green{sms}")
    try:
        with gnnd.Loader(address=daemon.address, dataset="greentiny", batch_size=1024, fanouts=[15, 10], seed=8,
                         device="cuda:0") as loader:
            batches = [(b.step, b.node_ids.cpu().numpy(), b.edge_src.cpu().numpy()) for b in loader]
            assert len(batches) == len(loader)
        for step, node_ids, edge_src in batches[:3]:  # the slice of SMs changes nothing in the batches
            ref = reference(data, tmp_path, step, 0, batch_size=1024, fanouts="15,10", seed=8)
            np.testing.assert_array_equal(node_ids, ref["node_ids"])
            np.testing.assert_array_equal(edge_src, ref["edge_src"])
    finally:
        assert daemon.stop() == 0, daemon.output()
    log = daemon.output()
    print(log)
    if sms == "16":
        assert "green context of 16 of" in log
    elif mps_running():  # MPS: the smallest slice first
        assert "producer_sms auto on cuda:0: producers start in a green context of 8 SMs" in log
    else:  # time-slicing: the whole GPU
        assert "producer_sms auto on cuda:0: CUDA MPS is not running" in log and "green context" not in log


def test_producer_slice_grows_while_the_trainer_waits(tmp_path):
    """producer_sms auto under MPS: a trainer that takes batches as fast as they come (every row read over PCIe)
    waits for an 8-SM producer, which then moves to 16 SMs; batches made after the move still equal the CPU
    reference. A trainer that takes its time leaves the producer on 8 SMs, and once the fast one is gone, takes
    the slice back down (unless the larger one made no batch faster, which sends it back down itself)."""
    if not mps_running():
        pytest.skip("CUDA MPS is not running: producer_sms auto keeps the whole GPU, no slices to test")
    data = tmp_path / "products"
    subprocess.run([GNNCTL, "generate", "--preset=products", "--scale=0.5", "--seed=5", str(data)], check=True,
                   capture_output=True)
    flags = dict(batch_size=1024, fanouts="15,10,5", seed=6)

    def loader(daemon):
        return gnnd.Loader(address=daemon.address, dataset="slices", batch_size=1024, fanouts=[15, 10, 5], seed=6,
                           device="cuda:0")

    def consume(source, epoch, pause, count=None):
        for i, batch in enumerate(source):
            time.sleep(pause)
            if batch.step == len(source) - 1:  # after any move: equal to the reference
                assert_matches_reference(batch, data, tmp_path, epoch, **flags)
            if i + 1 == count:
                return

    def serve(name, trainers):
        daemon = Daemon(tmp_path, f"--dataset=slices={data}", "--producer-sms=auto", "--gpu-cache=none", name=name)
        try:
            trainers(daemon)
        finally:
            assert daemon.stop() == 0, daemon.output()
        log = [line for line in daemon.output().splitlines() if "producer" in line]
        print("\n".join(log))
        return "\n".join(log)

    def fast(daemon):
        with loader(daemon) as source:
            consume(source, 0, 0)
            consume(source, 1, 0)

    log = serve("slicesfast", fast)
    assert "producer slice on cuda:0: 8 -> 16 of" in log

    def slow(daemon):
        with loader(daemon) as source:
            consume(source, 0, 0.05, count=40)

    log = serve("slicesslow", slow)
    assert "producers start in a green context of 8 SMs" in log and "producer slice on cuda:0" not in log

    def fast_then_slow(daemon):
        with loader(daemon) as slow_source:
            batches = iter(slow_source)
            next(batches)  # the slow trainer's session is open (and quiet) while the fast one runs
            with loader(daemon) as fast_source:
                consume(fast_source, 0, 0)
            for _ in range(40):
                time.sleep(0.05)
                next(batches)

    log = serve("slicesboth", fast_then_slow)
    down = max(log.find("its producers idled"), log.find("made batches no faster"))
    assert 0 < log.find("8 -> 16 of") < down, log
    assert "no sessions" not in log, log  # on 8 SMs again before the slow trainer's session ended


def test_metrics_of_a_gpu_session(tmp_path, setup):
    """The Prometheus endpoint for GPU sessions: fill times (GPU time) per batch, the GPU's memory and the
    CSC copy on it, the host memory registered for zero-copy reads."""
    import urllib.request
    from daemon_util import free_port
    _, data = setup
    port = free_port()
    daemon = Daemon(tmp_path, f"--dataset=meteredgpu={data}", f"--metrics-address=127.0.0.1:{port}", name="gpumetrics")
    try:
        with gnnd.Loader(address=daemon.address, dataset="meteredgpu", batch_size=512, fanouts=[10, 5],
                         device="cuda:0") as loader:
            steps = sum(1 for _ in loader)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            samples = dict(line.rsplit(" ", 1) for line in response.read().decode().splitlines()
                           if line and not line.startswith("#"))
        where = 'dataset="meteredgpu",device="cuda:0"'
        assert float(samples[f"gnnd_batches_total{{{where}}}"]) == steps
        assert float(samples[f'gnnd_stage_seconds_count{{stage="produce",{where}}}']) == steps
        assert 0 < float(samples[f'gnnd_stage_seconds_sum{{stage="produce",{where}}}']) < steps
        assert float(samples['gnnd_gpu_memory_used_bytes{gpu="0"}']) > 0
        assert float(samples['gnnd_gpu_placed_bytes{gpu="0"}']) > 0  # the CSC copy
        assert float(samples["gnnd_registered_bytes"]) > 0  # features and labels, zero-copy
    finally:
        assert daemon.stop() == 0, daemon.output()



@pytest.mark.parametrize("prepare", ["all", "none"])
def test_datasets_are_prepared_for_gpus_at_load(tmp_path, setup, prepare):
    """With prepare_gpus (default all) the registration and the CSC copy happen at load, not in the GPU's
    first session; with none, in the first session."""
    import time
    _, data = setup
    daemon = Daemon(tmp_path, f"--dataset=prep{prepare}={data}", f"--prepare-gpus={prepare}", name=f"prep{prepare}")
    try:
        time.sleep(0.5)
        assert ("event=dataset_prepared" in daemon.output()) == (prepare == "all"), daemon.output()
        with gnnd.Loader(address=daemon.address, dataset=f"prep{prepare}", batch_size=512, fanouts=[10, 5],
                         device="cuda:0") as loader:
            next(iter(loader))
        assert daemon.output().count("placed for cuda:0") == 1, daemon.output()
    finally:
        assert daemon.stop() == 0, daemon.output()

@pytest.mark.parametrize("prepare", ["all", "none"])
def test_hot_tier_serves_batches_equal_to_the_cpu_reference(tmp_path, prepare):
    """A dataset with a stored ranking (gnnctl hotness --write) gets a GPU hot tier of what gpu_cache allows
    (here half the rows), at load or at the GPU's first session; batches read through it are unchanged."""
    data = generate(tmp_path / "hot", "--seed", 6, "--feature-dtype", "float16")
    subprocess.run([GNNCTL, "hotness", f"--dataset={data}", "--fanouts=10,5", "--write"], check=True,
                   capture_output=True)
    features = np.load(data / "features.npy", mmap_mode="r")
    num_nodes, row_bytes = features.shape[0], features[0].nbytes
    cache = 4 * num_nodes + (num_nodes // 2) * (row_bytes + 8)  # the rank table, then rows and labels
    first_gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]  # the trainer's cuda:0; one GPU, no split
    daemon = Daemon(tmp_path, f"--dataset=hot={data}", f"--prepare-gpus={prepare}", f"--gpu-cache={cache}",
                    name=f"hot{prepare}", env={"CUDA_VISIBLE_DEVICES": first_gpu})
    try:
        with gnnd.Loader(address=daemon.address, dataset="hot", batch_size=256, fanouts=[10, 5], seed=2,
                         device="cuda:0") as loader:
            steps = 0
            for batch in loader:
                assert_matches_reference(batch, data, tmp_path, 0, batch_size=256, fanouts="10,5", seed=2)
                steps += 1
            assert steps == len(loader)
        assert "event=hot_tier_built" in daemon.output(), daemon.output()
        assert f"hot tier of {num_nodes // 2} rows" in daemon.output(), daemon.output()
    finally:
        assert daemon.stop() == 0, daemon.output()


@pytest.mark.parametrize("tier", ["half", "none"])
def test_features_on_storage_serve_gpu_sessions_equal_to_the_cpu_reference(tmp_path, tier):
    """Features on storage (feature_cache) serve GPU sessions: sampled and read through the host cache, staged
    and copied into the GPU slot. A GPU hot tier (half the rows, filled through the cache at load) stands in
    front: its rows are gathered on the GPU and never asked of the cache. Batches equal the CPU reference."""
    from test_metrics import scrape
    from daemon_util import free_port
    data = generate(tmp_path / "store", "--seed", 7, "--feature-dtype", "float16")
    subprocess.run([GNNCTL, "hotness", f"--dataset={data}", "--fanouts=4,2", "--write"], check=True,
                   capture_output=True)
    features = np.load(data / "features.npy", mmap_mode="r")
    num_nodes, row_bytes = features.shape[0], features[0].nbytes
    num_hot = num_nodes // 2 if tier == "half" else 0
    gpu_cache = 4 * num_nodes + num_hot * (row_bytes + 8) if num_hot else "none"
    cache = 2 * 832 * (row_bytes + 103)  # two batches' rows (64 seeds, fanouts 4,2): the cache must read
    port = free_port()
    first_gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    daemon = Daemon(tmp_path, f"--dataset=store={data}", f"--feature-cache=store={cache}", f"--gpu-cache={gpu_cache}",
                    "--prepare-gpus=all", f"--metrics-address=127.0.0.1:{port}", name=f"store{tier}",
                    env={"CUDA_VISIBLE_DEVICES": first_gpu})
    try:
        deadline = time.monotonic() + 60
        while num_hot and "event=hot_tier_built" not in daemon.output() and time.monotonic() < deadline:
            time.sleep(0.1)  # built at load, reading its rows through the cache: count the batches' rows after it
        before = scrape(port)
        asked = total = 0  # rows the batches ask of the host cache (those the tier does not hold), all rows
        held = set(np.load(data / "hot_order.npy")[:num_hot].tolist())
        with gnnd.Loader(address=daemon.address, dataset="store", batch_size=64, fanouts=[4, 2], seed=2,
                         device="cuda:0") as loader:
            for epoch in range(2):
                steps = 0
                for batch in loader:
                    assert batch.features.is_cuda
                    assert_matches_reference(batch, data, tmp_path, epoch, batch_size=64, fanouts="4,2", seed=2)
                    ids = batch.node_ids.cpu().tolist()
                    asked += sum(1 for i in ids if i not in held)
                    total += len(ids)
                    steps += 1
                assert steps == len(loader)
        after = scrape(port)
        rows = lambda samples: sum(samples[f'gnnd_feature_cache_rows_total{{dataset="store",outcome="{o}"}}']
                                   for o in ("hit", "miss"))
        assert rows(after) - rows(before) == asked, daemon.output()
        gpu_tier = 'gnnd_feature_cache_rows_total{dataset="store",outcome="gpu_tier"}'
        assert after[gpu_tier] - before[gpu_tier] == total - asked
        assert after['gnnd_feature_cache_rows_total{dataset="store",outcome="miss"}'] > 0
        if num_hot:
            assert f"hot tier of {num_hot} rows" in daemon.output(), daemon.output()
        assert asked < total if num_hot else asked == total
        assert f"{daemon.shm_prefix}.store.features" not in os.listdir("/dev/shm")
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_a_features_file_truncated_under_a_gpu_session_ends_it_naming_the_file(tmp_path):
    """A GPU session of a dataset on storage whose features file is truncated under it ends with an error naming
    the file; gnnd serves on (a GPU session of another dataset on storage reads its batches)."""
    import shutil
    data = generate(tmp_path / "intact", "--seed", 8, "--feature-dtype", "float16")
    broken = tmp_path / "broken"
    shutil.copytree(data, broken)
    row_bytes = np.load(data / "features.npy", mmap_mode="r")[0].nbytes
    cache = 832 * (row_bytes + 103)  # one batch's rows (64 seeds, fanouts 4,2): every batch reads
    daemon = Daemon(tmp_path, f"--dataset=broken={broken}", f"--dataset=healthy={data}",
                    f"--feature-cache=broken={cache}", f"--feature-cache=healthy={cache}", "--gpu-cache=none",
                    name="gpufault")
    try:
        features = broken / "features.npy"
        loader = gnnd.Loader(address=daemon.address, dataset="broken", batch_size=64, fanouts=[4, 2], seed=1,
                             device="cuda:0")
        with pytest.raises(gnnd.GnndError) as error:
            for epoch in range(100):
                for step, batch in enumerate(loader):
                    if epoch == 0 and step == 1:
                        os.truncate(features, features.stat().st_size // 2)
        assert str(features) in error.value.message and "changed under gnnd" in error.value.message, error.value
        loader.close()
        with gnnd.Loader(address=daemon.address, dataset="healthy", batch_size=64, fanouts=[4, 2], seed=1,
                         device="cuda:0") as healthy:
            for batch in healthy:
                assert_matches_reference(batch, data, tmp_path, 0, batch_size=64, fanouts="4,2", seed=1)
        assert daemon.proc.poll() is None
    finally:
        assert daemon.stop() == 0, daemon.output()


@pytest.mark.parametrize("mode", ["binary", "triplet", "labeled", "fixed"])
def test_link_sessions_on_a_gpu_equal_the_cpu_ones(tmp_path, mode):
    """Link sessions on cuda:0 (negatives, strictness, hop 0 and seed-edge exclusion on the GPU) give the CPU
    session's batches byte for byte: every array, binary and triplet negatives, a labeled split's edge labels;
    and PyG's LinkNeighborLoader on the GPU gives CUDA tensors."""
    rng = np.random.default_rng(5)
    nodes, edges = 400, 5000
    pairs = rng.integers(0, nodes, size=(2, edges))
    (tmp_path / "splits").mkdir()
    np.save(tmp_path / "edges.npy", pairs)
    np.save(tmp_path / "splits" / "train.npy", pairs[:, :3000])
    np.save(tmp_path / "splits" / "test.npy", pairs[:, 3000:3400])
    np.save(tmp_path / "splits" / "test_label.npy", rng.integers(0, 3, size=400))
    np.save(tmp_path / "splits" / "valid.npy", pairs[:, 3400:4000])
    np.save(tmp_path / "splits" / "valid_neg.npy", rng.integers(0, nodes, size=(600, 7)))
    np.save(tmp_path / "features.npy", rng.standard_normal((nodes, 5)).astype(np.float32))
    subprocess.run([GNNCTL, "import", "--format=edgelist", tmp_path / "edges.npy", tmp_path / "data",
                    f"--edge-splits={tmp_path / 'splits'}", f"--features={tmp_path / 'features.npy'}"], check=True,
                   capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=links={tmp_path / 'data'}", "--gpu-cache=none", name=f"gpulink{mode}")
    options = dict(address=daemon.address, dataset="links", batch_size=256, fanouts=[4, -1], seed=3, copy=True)
    if mode == "labeled":  # a fraction of the positives, too: ceil(P x 1.5) negatives by round
        options.update(edge_split="test", neg_sampling="binary", neg_amount=1.5, exclude="self")
    elif mode == "fixed":  # the valid split's 7 fixed negatives per edge, as triplets
        options.update(edge_split="valid", neg_sampling="fixed", exclude="reverse")
    else:
        options.update(edge_split="train", neg_sampling=mode, neg_amount=3, strict_negatives=True, exclude="reverse")
    names = ["node_ids", "num_nodes_per_hop", "edge_src", "edge_dst", "num_edges_per_hop", "features", "input_id"]
    triplets = mode in ("triplet", "fixed")
    names += ["src_index", "dst_pos_index", "dst_neg_index"] if triplets else ["edge_label_index", "edge_label"]
    try:
        for epoch in range(2):
            with gnnd.Loader(output="numpy", epoch=epoch, **options) as cpu:
                expected = [{n: getattr(b, n) for n in names} for b in cpu]
            with gnnd.Loader(device="cuda:0", epoch=epoch, **options) as gpu:
                got = []
                for b in gpu:
                    assert b.features.is_cuda and b.edge_src.is_cuda
                    got.append({n: getattr(b, n).cpu().numpy() for n in names})
            assert len(got) == len(expected) > 1
            for step, (a, e) in enumerate(zip(got, expected)):
                for n in names:
                    np.testing.assert_array_equal(a[n], e[n], err_msg=f"epoch {epoch} step {step} {n}")
        loader = gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[4, -1], edge_label_index="train", batch_size=256,
                                             neg_sampling="binary", exclude="self", dataset="links",
                                             address=daemon.address, device="cuda:0")
        batch = next(iter(loader))
        assert batch.edge_label_index.is_cuda and batch.edge_label_index.shape[0] == 2
        assert int(batch.edge_label.sum()) == 256
        loader.close()
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_every_gpu_of_a_split_hot_tier_serves_the_cpu_reference(tmp_path):
    """One gnnd prepares every GPU; with peer access the hot tier (half the rows) is split over them all, each
    GPU caching its share and reading the others' over NVLink. Sessions on every GPU at once read batches equal
    to the CPU backend's."""
    gpus = torch.cuda.device_count()
    if gpus < 2:
        pytest.skip(f"{gpus} CUDA device(s): the split hot tier needs two or more")
    data = generate(tmp_path / "split", "--seed", 8)
    features = np.load(data / "features.npy", mmap_mode="r")
    num_nodes, row_bytes = features.shape[0], features[0].nbytes
    cache = 4 * num_nodes + (num_nodes // (2 * gpus)) * (row_bytes + 8)  # the rank table, then a share of the rows
    daemon = Daemon(tmp_path, f"--dataset=split={data}", "--prepare-gpus=all", f"--gpu-cache={cache}", name="split")
    try:
        peers = all(torch.cuda.can_device_access_peer(a, b) for a in range(gpus) for b in range(gpus) if a != b)
        devices = ",".join(f"cuda:{d}" for d in range(gpus))
        built = [line for line in daemon.output().splitlines() if "event=hot_tier_built" in line]
        if peers:
            assert len(built) == 1 and f"devices={devices}" in built[0], daemon.output()
            assert "split over NVLink peers" in built[0], daemon.output()
        else:  # each GPU caches the same hottest rows on its own
            assert len(built) == gpus, daemon.output()
        current = torch.cuda.current_device()
        loaders = [gnnd.Loader(address=daemon.address, dataset="split", batch_size=256, fanouts=[10, 5], seed=3,
                               device=f"cuda:{d}") for d in range(gpus)]
        try:
            assert torch.cuda.current_device() == current, "opening sessions moved the trainer's current GPU"
            steps = 0
            for batches in zip(*loaders):  # every GPU's producer runs at once
                for d, batch in enumerate(batches):
                    assert batch.features.device == torch.device(f"cuda:{d}")
                    assert_matches_reference(batch, data, tmp_path, 0, batch_size=256, fanouts="10,5", seed=3)
                steps += 1
            assert steps == len(loaders[0]) > 0
        finally:
            for loader in loaders:
                loader.close()
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_csc_in_host_memory_serves_batches_equal_to_the_cpu_reference(tmp_path, setup):
    """gpu_csc_in_host_memory: neighbor lists read over PCIe, indptr in GPU memory (it fits); same batches."""
    _, data = setup
    config = tmp_path / "gnnd.textproto"
    config.write_text("gpu_csc_in_host_memory: true\n")
    daemon = Daemon(tmp_path, f"--dataset=hostcsc={data}", f"--config={config}", name="hostcsc")
    try:
        with gnnd.Loader(address=daemon.address, dataset="hostcsc", batch_size=512, fanouts=[10, 5], seed=3,
                         device="cuda:0") as loader:
            for batch in loader:
                assert_matches_reference(batch, data, tmp_path, 0, batch_size=512, fanouts="10,5", seed=3)
        assert "CSC indices in host memory, indptr in GPU memory" in daemon.output(), daemon.output()
    finally:
        assert daemon.stop() == 0, daemon.output()


DYING_TRAINER = """
import sys, gnnd, torch
loader = gnnd.Loader(address=sys.argv[1], dataset="dyingtiny", batch_size=512, fanouts=[10, 5], num_slots=2,
                     device="cuda:0")
batch = next(iter(loader))
torch.cuda._sleep(1 << 40)  # minutes of GPU work on the stream the release is recorded on
batch.release()  # `consumed` is now recorded behind that work, and gnnd is told the slot is free
print("released", flush=True)
sys.stdin.read()  # until killed
"""


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_typed_link_sessions_on_a_gpu_equal_the_cpu_ones(tmp_path, mode):
    """Typed link sessions on cuda:0 (the mag preset's author-writes-paper edge splits, rev_ relations): every
    array of every batch over two epochs equals the CPU session's; LinkNeighborLoader gives HeteroData of CUDA
    tensors with the pairs in the seed relation's store."""
    key = "author___writes___paper"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.003", "--seed=2", "--add-reverse",
                    f"--link-relation={key}", tmp_path / "mag"], check=True, capture_output=True)
    daemon = Daemon(tmp_path, f"--dataset=maglinks={tmp_path / 'mag'}", "--gpu-cache=none", name=f"gpumaglink{mode}")
    options = dict(address=daemon.address, dataset="maglinks", batch_size=300, fanouts=[4, -1], seed=3, copy=True,
                   edge_split="train", edge_type=key, neg_sampling=mode, neg_amount=2, strict_negatives=True,
                   exclude="reverse" if mode == "binary" else "self")
    try:
        for epoch in range(2):
            with gnnd.Loader(output="numpy", epoch=epoch, **options) as cpu:
                expected = [dict(b.arrays) for b in cpu]
            with gnnd.Loader(device="cuda:0", epoch=epoch, **options) as gpu:
                got = []
                for b in gpu:
                    assert b[f"{key}.input_id"].is_cuda and b["paper.features"].is_cuda
                    got.append({n: v.cpu().numpy() for n, v in b.arrays.items()})
            assert len(got) == len(expected) > 1
            for step, (a, e) in enumerate(zip(got, expected)):
                assert set(a) == set(e)
                for n in e:
                    np.testing.assert_array_equal(a[n], e[n], err_msg=f"epoch {epoch} step {step} {n}")
        loader = gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[4, -1], edge_label_index=(("author", "writes",
                                             "paper"), "train"), batch_size=300, neg_sampling="binary",
                                             exclude="reverse", dataset="maglinks", address=daemon.address,
                                             device="cuda:0")
        batch = next(iter(loader))
        store = batch[("author", "writes", "paper")]
        assert store.edge_label_index.is_cuda and store.edge_label_index.shape == (2, 600)
        assert int(store.edge_label.sum()) == 300 and batch["paper"].x.is_cuda
        loader.close()
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_every_batch_kind_on_storage_on_a_gpu_equals_the_cpu_in_memory_one(tmp_path):
    """Features on storage serve GPU sessions of every kind (typed node batches, homogeneous and typed link
    batches, LABOR node batches): staged on the host, each array's filled part copied to the GPU slot; every batch
    equals the CPU session's of the same dataset with its features in memory."""
    edgelist_link_dataset(tmp_path, "homogeneous", seed=5, nodes=3000, edges=24000, train=400, dim=16)
    key = "author___writes___paper"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--seed=2", "--add-reverse",
                    f"--link-relation={key}", tmp_path / "mag"], check=True, capture_output=True)
    config = "\n".join([
        f'datasets {{ name: "hmem" path: "{tmp_path / "homogeneous"}" }}',
        f'datasets {{ name: "hdisk" path: "{tmp_path / "homogeneous"}" feature_cache: "320KiB" look_ahead: 3 }}',
        f'datasets {{ name: "tmem" path: "{tmp_path / "mag"}" }}',
        f'datasets {{ name: "tdisk" path: "{tmp_path / "mag"}" feature_cache: "4MiB" look_ahead: 3 }}',
        f'datasets {{ name: "nmem" path: "{generate(tmp_path / "tiny", "--seed", 3)}" }}',
        f'datasets {{ name: "ndisk" path: "{tmp_path / "tiny"}" feature_cache: "128KiB" look_ahead: 3 }}',
    ])
    daemon = Daemon(tmp_path, "--gpu-cache=none", config=config, name="gpustorekinds")
    link = dict(edge_split="train", neg_amount=2, strict_negatives=True)
    cases = [("tmem", "tdisk", dict(node_type="paper")),
             ("hmem", "hdisk", dict(neg_sampling="binary", exclude="reverse", **link)),
             ("hmem", "hdisk", dict(neg_sampling="triplet", **link)),
             ("tmem", "tdisk", dict(neg_sampling="binary", exclude="reverse", edge_type=key, **link)),
             ("tmem", "tdisk", dict(node_type="paper", labor=True, batch_dependency=4)),
             ("nmem", "ndisk", dict(labor=True))]
    names = {"binary": ["input_id", "edge_label_index", "edge_label"],
             "triplet": ["input_id", "src_index", "dst_pos_index", "dst_neg_index"], None: ["edge_weight"]}

    def arrays(batch):
        if isinstance(batch, gnnd.TypedBatch):
            return dict(batch.arrays)
        return {n: batch[n] for n in ["node_ids", "edge_src", "edge_dst", "features", "num_nodes_per_hop",
                                      "num_edges_per_hop"] + names[options.get("neg_sampling")]}
    try:
        for memory, storage, options in cases:
            shape = dict(address=daemon.address, batch_size=32, fanouts=[3, 2], seed=6, copy=True, **options)
            with gnnd.Loader(dataset=memory, output="numpy", **shape) as cpu, \
                    gnnd.Loader(dataset=storage, device="cuda:0", **shape) as gpu:
                steps = 0
                for expected, got in zip(cpu, gpu):
                    if steps == 6:
                        break
                    e, g = arrays(expected), arrays(got)
                    assert set(e) == set(g)
                    for n in e:
                        assert g[n].is_cuda, n
                        np.testing.assert_array_equal(g[n].cpu().numpy(), e[n], err_msg=f"{storage} {options} {n}")
                    steps += 1
                assert steps == min(6, len(cpu)) > 1
        listing = daemon.gnnctl("datasets").stdout
        for name in ("hdisk", "tdisk"):  # rows were read from storage for the batches, not only at the warm start
            line = listing.split(f"{name}\t", 1)[1].splitlines()[1]
            assert int(line.split(" misses ")[1].split()[0]) > 0, listing
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_slots_added_on_a_gpu_hold_the_batches_the_cpu_makes(tmp_path):
    """Slots sized by the batches on a GPU (test_slot_growth's star graphs): the star's batch does not fit the
    slots sized at open; larger GPU slots are added (CUDA IPC, their own events) and every batch, before and
    after, equals the CPU session's: typed node batches with features in memory and on storage (staged), and
    homogeneous link batches."""
    from test_slot_growth import SEEDS, STAR, homogeneous_star, times_added, typed_star
    (tmp_path / "h").mkdir()
    (tmp_path / "t").mkdir()
    homogeneous, typed = homogeneous_star(tmp_path / "h"), typed_star(tmp_path / "t")
    config = "\n".join([f'datasets {{ name: "star" path: "{homogeneous}" }}',
                        f'datasets {{ name: "tmem" path: "{typed}" }}',
                        f'datasets {{ name: "tdisk" path: "{typed}" feature_cache: "1MiB" look_ahead: 3 }}'])
    daemon = Daemon(tmp_path, "--gpu-cache=none", config=config, name="gpugrowth")
    cases = [("tmem", "tmem", dict(node_type="paper")), ("tmem", "tdisk", dict(node_type="paper")),
             ("star", "star", dict(edge_split="train"))]
    try:
        for memory, on_gpu, options in cases:
            shape = dict(address=daemon.address, batch_size=1, fanouts=[-1], shuffle=False, copy=True, **options)
            with gnnd.Loader(dataset=memory, output="numpy", **shape) as cpu, \
                    gnnd.Loader(dataset=on_gpu, device="cuda:0", **shape) as gpu:
                steps = 0
                for expected, got in zip(cpu, gpu):
                    assert expected.step == got.step == steps
                    if isinstance(expected, gnnd.TypedBatch):
                        e, g = dict(expected.arrays), dict(got.arrays)
                    else:
                        names = ["node_ids", "edge_src", "edge_dst", "features", "edge_label_index", "input_id"]
                        e, g = {n: expected[n] for n in names}, {n: got[n] for n in names}
                    assert set(e) == set(g)
                    for n in e:
                        assert g[n].is_cuda, n
                        np.testing.assert_array_equal(g[n].cpu().numpy(), e[n], err_msg=f"{on_gpu} step {steps} {n}")
                    steps += 1
                assert times_added(daemon) == [1, 1]
            assert steps == SEEDS > STAR
    finally:
        assert daemon.stop() == 0, daemon.output()


@pytest.mark.parametrize("typed", [False, True])
def test_gnnctl_sample_of_a_link_batch_on_a_gpu_equals_the_cpus(tmp_path, typed):
    """`gnnctl sample --edge-split ... --device=cuda:0` writes the CPU backend's link batch byte for byte."""
    if typed:
        subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.003", "--seed=2", "--add-reverse",
                        "--link-relation=author___writes___paper", tmp_path / "data"], check=True,
                       capture_output=True)
    else:
        rng = np.random.default_rng(3)
        pairs = rng.integers(0, 300, size=(2, 4000))
        (tmp_path / "splits").mkdir()
        np.save(tmp_path / "edges.npy", pairs)
        np.save(tmp_path / "splits" / "train.npy", pairs[:, :2500])
        np.save(tmp_path / "splits" / "valid.npy", pairs[:, 2500:3000])
        np.save(tmp_path / "splits" / "valid_neg.npy", rng.integers(0, 300, size=(500, 20)))
        subprocess.run([GNNCTL, "import", "--format=edgelist", tmp_path / "edges.npy", tmp_path / "data",
                        f"--edge-splits={tmp_path / 'splits'}"], check=True, capture_output=True)
    cases = [["--edge-split=train", "--neg-sampling=binary", "--neg-amount=2", "--strict-negatives",
              "--exclude=reverse"], ["--edge-split=train", "--neg-sampling=triplet", "--neg-amount=3", "--exclude=self"]]
    if not typed:  # fixed negatives: the valid split's 20 per edge
        cases.append(["--edge-split=valid", "--neg-sampling=fixed", "--exclude=self"])
    for flags in cases:
        batches = []
        for device in ("cpu", "cuda:0"):
            out = tmp_path / f"{device.replace(':', '')}.npz"
            subprocess.run([GNNCTL, "sample", f"--dataset={tmp_path / 'data'}", "--step=1",
                            "--batch-size=200", "--fanouts=4,-1", "--seed=9", f"--device={device}", *flags,
                            f"--out={out}"], check=True, capture_output=True)
            batches.append(np.load(out))
        cpu, gpu = batches
        assert set(cpu.files) == set(gpu.files) and any(n.endswith("input_id") for n in cpu.files)
        for name in cpu.files:
            np.testing.assert_array_equal(gpu[name], cpu[name], err_msg=f"{flags} {name}")


def test_link_sessions_on_every_gpu_at_once_equal_the_cpu_ones(tmp_path):
    """One gnnd prepares every GPU; a homogeneous and a typed link session on each GPU at once (binary strict
    negatives, reverse exclusion) read batches equal, array for array, to the CPU sessions'."""
    gpus = torch.cuda.device_count()
    if gpus < 2:
        pytest.skip(f"{gpus} CUDA device(s): this test is for several")
    key = "author___writes___paper"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.003", "--seed=2", "--add-reverse",
                    f"--link-relation={key}", tmp_path / "mag"], check=True, capture_output=True)
    edgelist_link_dataset(tmp_path, "links", seed=5, nodes=400, edges=5000, train=3000, dim=5)
    daemon = Daemon(tmp_path, f"--dataset=maglinks={tmp_path / 'mag'}", f"--dataset=links={tmp_path / 'links'}",
                    "--prepare-gpus=all", "--gpu-cache=none", name="everygpulink")
    common = dict(address=daemon.address, batch_size=300, fanouts=[4, -1], seed=3, edge_split="train",
                  neg_sampling="binary", neg_amount=2, strict_negatives=True, exclude="reverse")
    sessions = [dict(dataset="links"), dict(dataset="maglinks", edge_type=key)]
    try:
        expected = []
        for options in sessions:
            with gnnd.Loader(output="numpy", copy=True, **common, **options) as cpu:
                expected.append([dict(b.arrays) if isinstance(b, gnnd.TypedBatch) else
                                 {n: getattr(b, n) for n in ("node_ids", "edge_src", "edge_dst", "features",
                                                             "input_id", "edge_label_index", "edge_label")}
                                 for b in cpu])
        loaders = [(s, gnnd.Loader(device=f"cuda:{d}", **common, **options))
                   for d in range(gpus) for s, options in enumerate(sessions)]
        try:
            steps = 0
            for batches in zip(*(loader for _, loader in loaders)):  # every GPU's sessions run at once
                for (s, _), batch in zip(loaders, batches):
                    want = expected[s][batch.step]
                    got = dict(batch.arrays) if isinstance(batch, gnnd.TypedBatch) else \
                        {n: getattr(batch, n) for n in want}
                    assert set(got) == set(want)
                    for n, value in got.items():
                        np.testing.assert_array_equal(value.cpu().numpy(), want[n], err_msg=f"session {s} {n}")
                steps += 1
            assert steps == min(len(e) for e in expected) > 1
        finally:
            for _, loader in loaders:
                loader.close()
    finally:
        assert daemon.stop() == 0, daemon.output()


def test_input_id_and_every_node_of_a_type_on_a_gpu_equal_the_cpus(tmp_path, setup):
    """PyG's input_id (each seed's position in its split, sent with the batch) and input_nodes of a node type
    alone (every node of it) on cuda:0, as on the CPU."""
    daemon, data = setup
    train = np.load(data / "train.npy")
    got = {}
    for device in ("cpu", "cuda:0"):
        with gnnd.pyg.NeighborLoader(None, num_neighbors=[4, 2], input_nodes="train", batch_size=64, shuffle=True,
                                     dataset="gputiny", address=daemon.address, device=device) as loader:
            got[device] = []
            for b in loader:
                assert np.array_equal(train[b.input_id.numpy()], b.n_id[:b.batch_size].cpu().numpy())
                got[device].append((b.input_id.clone(), b.x.cpu().clone(), b.edge_index.cpu().clone()))
    assert len(got["cpu"]) == len(got["cuda:0"]) > 0
    for cpu, gpu in zip(got["cpu"], got["cuda:0"]):
        assert all(torch.equal(a, b) for a, b in zip(cpu, gpu))
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.001", "--seed=2", str(tmp_path / "mag")], check=True,
                   capture_output=True)
    typed = Daemon(tmp_path, f"--dataset=gpumag={tmp_path / 'mag'}")
    try:
        seeds = {}
        for device in ("cpu", "cuda:0"):
            with gnnd.pyg.NeighborLoader(None, num_neighbors=[3, 2], input_nodes="paper", batch_size=128,
                                         dataset="gpumag", address=typed.address, device=device) as loader:
                seeds[device] = []
                for b in loader:
                    papers = b["paper"]
                    assert torch.equal(papers.input_id, papers.n_id[:papers.batch_size].cpu().long())  # all: id
                    seeds[device] += papers.n_id[:papers.batch_size].cpu().tolist()
        assert seeds["cpu"] == seeds["cuda:0"] and sorted(seeds["cpu"]) == list(range(len(seeds["cpu"])))
    finally:
        assert typed.stop() == 0, typed.output()


def test_a_trainer_dying_with_gpu_work_pending_does_not_stall_gnnd(tmp_path, setup):
    """The dead trainer's `consumed` event never completes: gnnd must end its session, keep serving the
    GPU, and stop on SIGTERM (its streams never wait on a trainer's work). Under MPS, killing a client while
    its kernels run breaks every client's context on that GPU (MPS's error containment): gnnd must then
    refuse that GPU's sessions with UNAVAILABLE saying so, and still stop promptly. Last in this file: under
    MPS the GPU stays unusable for every client until they all exit."""
    import signal
    import sys
    import time
    _, data = setup
    daemon = Daemon(tmp_path, f"--dataset=dyingtiny={data}", name="dying")
    try:
        trainer = subprocess.Popen([sys.executable, "-c", DYING_TRAINER, daemon.address], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, env=os.environ)
        assert trainer.stdout.readline().strip() == "released"
        time.sleep(0.2)
        trainer.send_signal(signal.SIGKILL)
        trainer.wait(timeout=60)
        deadline = time.time() + 20
        while any(line.startswith("session ") for line in daemon.gnnctl("stats").stdout.splitlines()):
            assert time.time() < deadline, "the dead trainer's session did not end: " + daemon.output()
            time.sleep(0.1)
        mps = "MPS is not running" not in daemon.output()
        try:
            with gnnd.Loader(address=daemon.address, dataset="dyingtiny", batch_size=512, fanouts=[10, 5],
                             device="cuda:0") as loader:
                assert sum(1 for _ in loader) == len(loader)
        except gnnd.GnndError as e:
            if not mps:
                raise
            assert e.code == "UNAVAILABLE" and "unusable for gnnd until it restarts" in e.message, e
    finally:
        start = time.time()
        assert daemon.stop() == 0, daemon.output()
        assert time.time() - start < 10, "gnnd took long to stop"




def test_gpu_sessions_on_a_part_equal_the_whole_datasets_cpu_ones(tmp_path):
    """A part of a partitioned dataset (part 0 of 2, the other part another gnnd on this host, rows over UCX)
    serves GPU sessions of every kind (node, typed node, LABOR, homogeneous and typed link batches) through the
    staged producer; every batch equals the CPU session's of one gnnd over the whole dataset."""
    from test_partitioned_serving import Parts
    edgelist_link_dataset(tmp_path, "homogeneous", seed=5, nodes=3000, edges=24000, train=400, dim=16)
    key = "author___writes___paper"
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--seed=2", "--add-reverse",
                    f"--link-relation={key}", tmp_path / "mag"], check=True, capture_output=True)
    generate(tmp_path / "tiny", "--seed", 3)
    link = dict(edge_split="train", neg_amount=2, strict_negatives=True)
    cases = {"tiny": [dict(), dict(labor=True)],
             "homogeneous": [dict(neg_sampling="binary", exclude="reverse", **link),
                             dict(neg_sampling="triplet", **link)],
             "mag": [dict(node_type="paper"), dict(neg_sampling="binary", exclude="reverse", edge_type=key, **link)]}
    names = {"binary": ["input_id", "edge_label_index", "edge_label"],
             "triplet": ["input_id", "src_index", "dst_pos_index", "dst_neg_index"], None: []}

    def arrays(batch, options):
        if isinstance(batch, gnnd.TypedBatch):
            return dict(batch.arrays)
        return {n: batch[n] for n in ["node_ids", "edge_src", "edge_dst", "features", "num_nodes_per_hop",
                                      "num_edges_per_hop"] + names[options.get("neg_sampling")]}

    for name, options_list in cases.items():
        subprocess.run([GNNCTL, "partition", "--parts", "2", "--method", "random", tmp_path / name,
                        tmp_path / f"{name}-parts"], check=True, capture_output=True)
        whole = Daemon(tmp_path, f"--dataset=d={tmp_path / name}", "--gpu-cache=none")
        parts = Parts(tmp_path, tmp_path / f"{name}-parts", 2, flags=["--gpu-cache=none", "--peer-shared-memory"])
        try:
            for options in options_list:
                shape = dict(dataset="d", batch_size=32, fanouts=[3, 2], seed=6, copy=True, **options)
                with gnnd.Loader(address=whole.address, output="numpy", **shape) as cpu, \
                        gnnd.Loader(address=parts.daemons[0].address, device="cuda:0", **shape) as gpu:
                    steps = 0
                    for expected, got in zip(cpu, gpu):
                        e, g = arrays(expected, options), arrays(got, options)
                        assert set(e) == set(g)
                        for n in e:
                            assert g[n].is_cuda, n
                            np.testing.assert_array_equal(g[n].cpu().numpy(), e[n], err_msg=f"{name} {options} {n}")
                        steps += 1
                        if steps == 6:
                            break
                    assert steps == min(6, len(cpu)) > 1
            listing = parts.daemons[0].gnnctl("datasets").stdout
            assert int(listing.split(" own, ", 1)[1].split(" fetched")[0]) > 0, listing
        finally:
            parts.stop()
            assert whole.stop() == 0, whole.output()
