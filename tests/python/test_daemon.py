"""gnnd end to end on the CPU backend: trainers in other processes (C++ and Python) read whole epochs and
check every batch against the reference sampler; failures (killed trainers, a killed daemon, bad requests)
end in clear errors, never hangs. Run by ctest with GNND, GNNCTL, TRAINER_CHECK, GNND_CLIENT_LIBRARY set."""
import ctypes
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

import gnnd
from daemon_util import GNNCTL, Daemon, generate

# Flag and config parsing, log formatting: no concurrency or lifetimes for the sanitizers to find there (the
# parsers are fuzzed); the plain build runs them (tests/README.md, "Where a new test goes").
plain_only = pytest.mark.skipif(bool(os.environ.get("GNND_SANITIZE")), reason="the plain build runs it")

TRAINER_CHECK = os.environ.get("TRAINER_CHECK", "trainer_check")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    return {"tiny": generate(root / "tiny", "--seed", 1),
            "bf16": generate(root / "bf16", "--seed", 2, "--scale", 0.2, "--feature-dtype", "bfloat16"),
            "fp8": generate(root / "fp8", "--seed", 3, "--scale", 0.2, "--feature-dtype", "float8_e4m3fn")}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, data):
    d = Daemon(tmp_path_factory.mktemp("daemon"), config=f"""
        datasets {{ name: "tiny" path: "{data['tiny']}" }}
        datasets {{ name: "bf16" path: "{data['bf16']}" }}
        datasets {{ name: "fp8" path: "{data['fp8']}" }}
        max_session_bytes: 20000000
        producer_threads: 2
        dataset_roots: "{data['tiny'].parent}"
    """)
    yield d
    assert d.stop() == 0, d.output()


def checks_reference(step, steps):
    """Whether a test checks step `step` of `steps` against gnnctl's reference batch: every step in the plain build;
    the first two and the last under a sanitizer, where each reference is an instrumented gnnctl run of a second
    and more, and what the build is for is gnnd's threads and lifetimes, not the batches' contents."""
    return not os.environ.get("GNND_SANITIZE") or step < 2 or step == steps - 1


def reference_batch(dataset_dir, tmp_path, step, epoch=0, **flags):
    out = tmp_path / f"ref-{epoch}-{step}.npz"
    args = [GNNCTL, "sample", f"--dataset={dataset_dir}", f"--step={step}", f"--epoch={epoch}", f"--out={out}"]
    args += [f"--{k.replace('_', '-')}={v}" for k, v in flags.items()]
    subprocess.run(args, check=True, capture_output=True)
    return np.load(out)


def sessions(daemon):
    return [line for line in daemon.gnnctl("stats").stdout.splitlines() if line.startswith("session ")]


def test_cpp_and_python_trainers_read_checked_epochs_at_once(daemon, data, tmp_path):
    cpp = subprocess.Popen([TRAINER_CHECK, f"--address={daemon.address}", "--dataset=tiny", f"--dir={data['tiny']}",
                            "--batch-size=200", "--fanouts=6,3", "--seed=5", "--epochs=2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    loader = gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=300, fanouts=[4, -1], seed=9, epoch=0,
                         output="numpy")
    steps = 0
    for batch in loader:
        steps += 1
        if not checks_reference(batch.step, len(loader)):
            continue
        ref = reference_batch(data["tiny"], tmp_path, batch.step, batch_size=300, fanouts="4,-1", seed=9)
        for name in gnnd.ARRAY_NAMES:
            np.testing.assert_array_equal(batch[name], ref[name], err_msg=f"step {batch.step} {name}")
    train = len(np.load(data["tiny"] / "train.npy"))
    assert steps == len(loader) == -(-train // 300)
    loader.close()
    out, err = cpp.communicate(timeout=120)
    assert cpp.returncode == 0, err
    assert f"checked {2 * -(-train // 200)} batches" in out


def test_ranks_split_the_epoch(daemon, data):
    train = np.load(data["tiny"] / "train.npy")
    seen = []
    for rank in range(3):
        with gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=512, fanouts=[2], seed=3, rank=rank,
                         world_size=3, output="numpy", copy=True) as loader:
            batches = list(loader)
            assert len(batches) == len(loader) == -(-(-(-len(train) // 3)) // 512)
            seen += [b.node_ids[:len(b.labels)] for b in batches]
    ids = np.concatenate(seen)
    padding = (3 - len(train) % 3) % 3  # DistributedSampler-style: ranks get equal counts
    assert len(ids) == len(train) + padding
    np.testing.assert_array_equal(np.unique(ids), np.sort(train))


def test_killed_trainer_frees_its_session_within_a_second_and_others_go_on(daemon, data):
    holder = subprocess.Popen([TRAINER_CHECK, f"--address={daemon.address}", "--dataset=tiny",
                               f"--dir={data['tiny']}", "--hold-after=2"], stdout=subprocess.PIPE, text=True)
    assert "holding after 2 batches" in holder.stdout.readline()
    assert any(f"pid {holder.pid} " in s for s in sessions(daemon))
    # A trainer that never releases blocks only itself: another reads a whole epoch meanwhile.
    with gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=1000, fanouts=[3], output="numpy") as other:
        assert sum(1 for _ in other) == -(-len(np.load(data["tiny"] / "train.npy")) // 1000)
    holder.kill()
    holder.wait()
    killed = time.time()
    while any(f"pid {holder.pid} " in s for s in sessions(daemon)):
        assert time.time() - killed < 1.0, "the killed trainer's session outlived it by a second"
        time.sleep(0.02)
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.slots.{daemon.proc.pid}.")]


@pytest.mark.parametrize("kwargs,code,message", [
    (dict(dataset="nope"), "NOT_FOUND", "open.dataset: 'nope' is not loaded"),
    (dict(split="dev"), "INVALID_ARGUMENT", "open.split = 'dev' (must be train, valid, test, or all: every node of the type)"),
    (dict(fanouts=[]), "INVALID_ARGUMENT", "open.fanouts has 0 entries"),
    (dict(fanouts=[5, -2]), "INVALID_ARGUMENT", "open.fanouts[1] = -2"),
    (dict(batch_size=0), "INVALID_ARGUMENT", "open.batch_size = 0"),
    (dict(batch_size=2**63 - 1), "INVALID_ARGUMENT", "open.batch_size = 9223372036854775807 (must be 1 to 2147483647)"),
    (dict(rank=2, world_size=2), "INVALID_ARGUMENT", "open.rank = 2 (must be in [0, world_size = 2))"),
    (dict(num_slots=65), "INVALID_ARGUMENT", "open.num_slots = 65"),
    (dict(num_slots=64), "INVALID_ARGUMENT", "over the limit of 20000000 (max_session_bytes)"),
    (dict(device="tpu:0"), "INVALID_ARGUMENT", "open.device = 'tpu:0'"),
    # A peer's names are cut: the whole would not fit in the status's metadata (8 KiB).
    (dict(dataset="n" * 10240), "NOT_FOUND", "open.dataset: '" + "n" * 100 + "...' (10240 bytes) is not loaded"),
    (dict(device="d" * 20000), "INVALID_ARGUMENT", "open.device = '" + "d" * 100 + "...' (20000 bytes) (cpu or"),
])
def test_bad_session_requests_name_the_field(daemon, kwargs, code, message):
    options = dict(address=daemon.address, dataset="tiny", output="numpy")
    options.update(kwargs)
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(**options)
    assert error.value.code == code
    assert message in error.value.message


def test_dataset_rpcs(daemon, data):
    assert "SERVING" in daemon.gnnctl("status").stdout
    listing = daemon.gnnctl("datasets").stdout
    assert "tiny\t" in listing and "bf16\t" in listing
    load = daemon.gnnctl("load", "tiny2", data["tiny"])
    assert "loaded 'tiny2'" in load.stdout
    assert daemon.gnnctl("load", "tiny2", data["tiny"], check=False).stderr.strip().endswith(
        "dataset 'tiny2' is already loaded (or loading)")
    assert "(not a dataset directory?)" in daemon.gnnctl("load", "x", "/nonexistent", check=False).stderr
    assert "dataset name 'a.b' is invalid" in daemon.gnnctl("load", "a.b", data["tiny"], check=False).stderr
    with gnnd.Loader(address=daemon.address, dataset="tiny2", output="numpy") as busy:
        refused = daemon.gnnctl("unload", "tiny2", check=False)
        assert refused.returncode != 0 and "used by 1 session(s)" in refused.stderr
    deadline = time.time() + 5
    while daemon.gnnctl("unload", "tiny2", check=False).returncode != 0:
        assert time.time() < deadline
        time.sleep(0.05)
    assert "dataset 'tiny2' is not loaded" in daemon.gnnctl("unload", "tiny2", check=False).stderr


def test_torch_tensors_without_copies(daemon, data):
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    loader = gnnd.Loader(address=daemon.address, dataset="bf16", batch_size=128, fanouts=[3, 2], output="torch")
    batch = next(iter(loader))
    assert batch.features.dtype == torch.bfloat16 and batch.node_ids.dtype == torch.int64
    assert batch.edge_src.dtype == torch.int32 and batch.features.shape[1] == 32
    expected = np.load(data["bf16"] / "features.npy")[batch.node_ids.numpy()]
    np.testing.assert_array_equal(batch.features.view(torch.int16).numpy().view(np.uint16), expected)
    loader.close()
    # Zero copy: with 2 slots, the batches of an epoch live at no more than 2 addresses (the slots).
    with gnnd.Loader(address=daemon.address, dataset="bf16", batch_size=64, fanouts=[3, 2], output="torch",
                     num_slots=2) as shared:
        held = [b.features for b in shared]  # kept alive, so copies could not share an address
        assert len(held) > 4 and len({t.data_ptr() for t in held}) <= 2
    owned = gnnd.Loader(address=daemon.address, dataset="bf16", batch_size=128, fanouts=[3, 2], output="torch",
                        copy=True)
    batches = list(owned)
    assert len({b.labels.data_ptr() for b in batches}) == len(batches)  # each batch its own memory
    owned.close()


def test_float8_features_arrive_as_stored(daemon, data):
    # numpy has no float8: the rows come as their uint8 bits; torch views them as float8_e4m3fn where it has
    # the dtype (2.1 on), else as the same uint8 bits.
    assert "FEATURE_DTYPE_FLOAT8_E4M3FN" in (data["fp8"] / "manifest.textproto").read_text()
    stored = np.load(data["fp8"] / "features.npy")
    assert stored.dtype == np.uint8
    with gnnd.Loader(address=daemon.address, dataset="fp8", batch_size=64, fanouts=[3, 2], output="numpy") as loader:
        batch = next(iter(loader))
        assert batch.features.dtype == np.uint8
        np.testing.assert_array_equal(batch.features, stored[batch.node_ids])
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    with gnnd.Loader(address=daemon.address, dataset="fp8", batch_size=64, fanouts=[3, 2], output="torch") as loader:
        batch = next(iter(loader))
        features = batch.features
        if hasattr(torch, "float8_e4m3fn"):
            assert features.dtype == torch.float8_e4m3fn
            features = features.view(torch.uint8)
        assert features.dtype == torch.uint8
        np.testing.assert_array_equal(features.numpy(), stored[batch.node_ids.numpy()])
    assert "float8_e4m3fn" in daemon.gnnctl("validate", data["fp8"]).stdout


def test_torch_batches_reusing_a_slot_have_their_own_lengths_and_values(daemon, data, tmp_path):
    # The loader keeps each slot's views and slices them per batch: every batch of an epoch through 2 slots
    # (the last one shorter) must still equal the reference, in torch as in numpy.
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    train = len(np.load(data["bf16"] / "train.npy"))
    assert train % 100 != 0
    with gnnd.Loader(address=daemon.address, dataset="bf16", batch_size=100, fanouts=[3, 2], seed=4, output="torch",
                     num_slots=2) as loader:
        for batch in loader:
            if not checks_reference(batch.step, len(loader)):
                continue
            ref = reference_batch(data["bf16"], tmp_path, batch.step, batch_size=100, fanouts="3,2", seed=4)
            for name in gnnd.ARRAY_NAMES:
                value = batch[name]
                if value.dtype == torch.bfloat16:
                    value = value.view(torch.int16)
                np.testing.assert_array_equal(value.numpy().view(ref[name].dtype), ref[name],
                                              err_msg=f"step {batch.step} {name}")
        assert batch.step == len(loader) - 1 and len(batch.labels) == train % 100


def test_daemon_killed_gives_an_error_not_a_hang(tmp_path, data):
    daemon = Daemon(tmp_path, f"--dataset=victim={data['tiny']}", name="victim")
    loader = gnnd.Loader(address=daemon.address, dataset="victim", batch_size=64, fanouts=[2], output="numpy")
    batches = iter(loader)
    next(batches)
    daemon.proc.kill()
    daemon.proc.wait()
    outcome = {}

    def read_on():
        try:
            for _ in batches:
                pass
            outcome["error"] = None
        except gnnd.GnndError as e:
            outcome["error"] = e

    reader = threading.Thread(target=read_on, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "the client hung after gnnd died"
    assert outcome["error"] is not None and outcome["error"].code == "UNAVAILABLE", outcome
    loader.close()
    # Restart on the same socket (the dead one's socket file is stale): the dataset the killed gnnd left
    # complete in shared memory is its instance's, but nothing asked to keep it (keep_segments): it is removed
    # and loaded afresh, and served again.
    assert [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.victim.")]
    restarted = Daemon(tmp_path, f"--dataset=victim={data['tiny']}", name="victim")
    with gnnd.Loader(address=restarted.address, dataset="victim", batch_size=2000, fanouts=[2], output="numpy") as l:
        assert sum(1 for _ in l) == -(-len(np.load(data["tiny"] / "train.npy")) // 2000)
    assert restarted.stop() == 0
    assert "removing the copy an earlier gnnd of instance 'victim' left in shared memory" in restarted.output()
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.victim.")]


def test_sigterm_tells_sessions_and_cleans_up(tmp_path, data):
    daemon = Daemon(tmp_path, f"--dataset=tiny9={data['tiny']}", name="term")
    loader = gnnd.Loader(address=daemon.address, dataset="tiny9", batch_size=64, fanouts=[2], output="numpy")
    batches = iter(loader)
    next(batches)
    assert daemon.stop(signal.SIGTERM) == 0, daemon.output()
    with pytest.raises(gnnd.GnndError) as error:
        for _ in batches:
            pass
    assert error.value.code == "UNAVAILABLE"
    loader.close()
    assert not os.path.exists(daemon.socket)
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.tiny9.")]
    assert "shutting down" in daemon.output()


def test_peer_allowlist(tmp_path, data):
    daemon = Daemon(tmp_path, config=f'allowed_uids: {os.getuid() + 1}\n datasets {{ name: "t" path: "{data["tiny"]}" }}',
                    name="strict")
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(address=daemon.address, dataset="t", output="numpy")
    assert error.value.code == "PERMISSION_DENIED"
    assert f"uid {os.getuid()} " in error.value.message
    assert daemon.stop() == 0


@pytest.mark.parametrize("config,message", [
    ("listen: 'unix:/tmp/x.sock'\n bogus_field: 3\n", "line 2"),
    ("datasets { name: 'a.b' path: '/x' }", "datasets[0].name: dataset name 'a.b' is invalid"),
    ("datasets { name: 'a' }", "datasets[0].path: missing"),
    ("default_slots: 100", "default_slots: 100 (must be 1 to 64)"),
    ("prepare_gpus: '0,x'", "prepare_gpus: '0,x' (all, none, or GPU numbers: 0,1)"),
    ("producer_threads: 5000", "producer_threads: 5000 (must be 1 to 1024, or 0 for every core)"),
    ("producer_threads: -1", "producer_threads: -1 (must be 1 to 1024, or 0 for every core)"),
    ("max_sessions: 9223372036854775808", "max_sessions: 9223372036854775808 (must be 1 to 1048576, or 0 for 256)"),
])
@plain_only
def test_bad_config_is_named(tmp_path, config, message):
    path = tmp_path / "bad.textproto"
    path.write_text(config)
    proc = subprocess.run([os.environ.get("GNND", "gnnd"), f"--config={path}",
                           f"--listen=unix:{tmp_path}/s{os.getpid()}.sock"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert message in proc.stderr


@plain_only
def test_a_peers_control_bytes_cannot_forge_log_lines(daemon):
    forged = "dev\r\ntime=2026-01-01T00:00:00.000Z level=error msg=forged"
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(address=daemon.address, dataset="tiny", split=forged, output="numpy")
    assert error.value.code == "INVALID_ARGUMENT"
    log = daemon.output()
    assert "\r" not in log
    assert not [line for line in log.splitlines() if line.startswith("time=2026-01-01")], "a forged line"
    assert "open.split = 'dev\\r\\ntime=2026-01-01T00:00:00.000Z level=error msg=forged' (must be" in log


@plain_only
def test_a_tcp_port_0_is_logged_as_the_port_bound(tmp_path):
    proc = subprocess.Popen([os.environ.get("GNND", "gnnd"), "--listen=127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if "event=serving" in line:
                break
        port = int(line.split("listen=127.0.0.1:")[1].split()[0])
        assert port > 0, line
        status = subprocess.run([GNNCTL, f"--address=127.0.0.1:{port}", "status"], capture_output=True, text=True)
        assert status.returncode == 0 and "SERVING" in status.stdout, status.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@plain_only
def test_exit_after_load_checks_the_metrics_address(tmp_path):
    proc = subprocess.run([os.environ.get("GNND", "gnnd"), "--exit-after-load", "--metrics-address=nonsense",
                           f"--listen=unix:{tmp_path}/s{os.getpid()}.sock"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "metrics_address = 'nonsense' (HOST:PORT)" in proc.stderr


@pytest.mark.parametrize("seconds", ["1e-9", "0.05", "1e30", "-1", "nan"])
@plain_only
def test_stats_watch_takes_a_sane_interval(daemon, seconds):
    proc = subprocess.run([GNNCTL, f"--address={daemon.address}", "stats", "--watch", seconds], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode != 0
    assert "refresh every 0.1 to 86400 seconds (0: once)" in proc.stderr, proc.stderr


@pytest.mark.parametrize("threads", ["1000000", "-1", "1025"])
@plain_only
def test_threads_flag_out_of_range_is_named(tmp_path, threads):
    proc = subprocess.run([os.environ.get("GNND", "gnnd"), f"--threads={threads}",
                           f"--listen=unix:{tmp_path}/s{os.getpid()}.sock"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert f"--threads {threads} (must be 1 to 1024, or 0 for every core)" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run gnnd as a second uid under a process limit "
                                               "(root is exempt from RLIMIT_NPROC)")
def test_a_thread_the_system_refuses_is_an_error_not_an_abort(tmp_path):
    def limited():  # uid 65534 may have 64 threads in all
        resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
        os.setgid(65534)
        os.setuid(65534)

    where = tempfile.mkdtemp(prefix="gnnd-nproc-")
    os.chmod(where, 0o777)
    try:
        proc = subprocess.run([os.environ.get("GNND", "gnnd"), "--threads=1000",
                               f"--listen=unix:{where}/s{os.getpid()}.sock"],
                              capture_output=True, text=True, timeout=60, preexec_fn=limited)
    except PermissionError as e:
        pytest.skip(f"uid 65534 cannot run gnnd from this checkout: {e}")
    finally:
        shutil.rmtree(where, ignore_errors=True)
    assert proc.returncode == 1, proc.stderr
    assert "cannot start thread" in proc.stderr and "for the CPU producers (producer_threads)" in proc.stderr, \
        proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second uid")
def test_slot_names_cannot_be_squatted(daemon):
    # Another uid pre-creates every name of the old "gnnd.slots.<pid>.<session id>" scheme.
    squatted = [f"/dev/shm/{daemon.shm_prefix}.slots.{daemon.proc.pid}.{n}" for n in range(1, 300)]
    for path in squatted:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.fchown(fd, 65534, 65534)
        os.close(fd)
    try:
        for _ in range(3):
            with gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=1000, fanouts=[2],
                             output="numpy") as loader:
                assert sum(1 for _ in loader) == len(loader) > 0
    finally:
        for path in squatted:
            os.unlink(path)


def test_protocol_errors_reach_the_trainer_with_their_code(daemon):
    from gnnd import _native
    loader = gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=100, fanouts=[2], output="numpy")
    lib, batch = loader._native.lib, loader._native.Batch()
    _native.check(lib.gnnd_next_batch_on_stream(loader._session, None, ctypes.byref(batch)))
    _native.check(lib.gnnd_release_batch_on_stream(loader._session, 7, None))  # a slot never given out
    with pytest.raises(gnnd.GnndError) as error:
        for _ in range(2):  # at most the other slot's batch comes first
            _native.check(lib.gnnd_next_batch_on_stream(loader._session, None, ctypes.byref(batch)))
    assert error.value.code == "INVALID_ARGUMENT"
    assert error.value.message == "release.slot = 7 (not a batch this trainer holds)"
    loader.close()


def test_one_call_per_batch_over_slot_arrays_viewed_once(daemon, data, tmp_path):
    """gnnd_next_batch_counts releases the last batch and takes the next; every batch lies at the start of its
    slot's arrays as gnnd_slot_arrays gave them, with the counts' lengths."""
    from gnnd import _native
    loader = gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=300, fanouts=[4, -1], seed=9,
                         num_slots=2, output="numpy")
    lib, session = loader._native.lib, loader._session
    assert lib.gnnd_session_slots(session) == 2 and lib.gnnd_session_slots(None) == -1
    slots = [(_native.Array * 7)() for _ in range(2)]
    for slot, arrays in enumerate(slots):
        _native.check(lib.gnnd_slot_arrays(session, slot, arrays))
    with pytest.raises(gnnd.GnndError) as error:
        _native.check(lib.gnnd_slot_arrays(session, 2, slots[0]))
    assert (error.value.code, error.value.message) == ("OUT_OF_RANGE", "slot 2: the session has 2 slots")
    with pytest.raises(gnnd.GnndError, match="INVALID_ARGUMENT: out: NULL"):
        _native.check(lib.gnnd_slot_arrays(session, 0, None))

    counts, release, steps = _native.BatchCounts(), -1, 0
    while _native.check(lib.gnnd_next_batch_counts(session, release, None, ctypes.byref(counts))) == _native.GNND_OK:
        release, steps = counts.slot, steps + 1  # with 2 slots, the epoch ends only if releases happen
        if not checks_reference(counts.step, len(loader)):
            continue
        ref = reference_batch(data["tiny"], tmp_path, counts.step, batch_size=300, fanouts="4,-1", seed=9)
        assert counts.num_hops == 2
        assert counts.num_nodes_per_hop[:3] == ref["num_nodes_per_hop"].tolist()
        assert counts.num_edges_per_hop[:2] == ref["num_edges_per_hop"].tolist()
        rows = {"node_ids": counts.num_nodes, "num_nodes_per_hop": 3, "edge_src": counts.num_edges,
                "edge_dst": counts.num_edges, "num_edges_per_hop": 2, "features": counts.num_nodes,
                "labels": counts.num_seeds}
        for array in slots[counts.slot]:
            name = array.name.decode()
            assert rows[name] <= array.shape[0], name  # the slot's capacity holds the batch
            array = _native.Array.from_buffer_copy(array)
            array.shape[0] = rows[name]
            np.testing.assert_array_equal(_numpy_view_of(array), ref[name], err_msg=f"step {counts.step} {name}")
    assert steps == len(loader) > 2
    with pytest.raises(gnnd.GnndError) as error:  # a bad release: gnnd ends the session, the call says why
        _native.check(lib.gnnd_start_epoch(session, 1))
        # Up to one batch per slot (2) may be on its way before gnnd reads the bad release; no more can come.
        for _ in range(3):
            _native.check(lib.gnnd_next_batch_counts(session, 7, None, ctypes.byref(counts)))
    assert error.value.message == "release.slot = 7 (not a batch this trainer holds)"
    loader.close()


def test_the_batch_schema_describes_every_array_and_count(daemon, data, tmp_path):
    """C API 1.3: the session's batch schema (names, dtypes, the count sizing each array) and one call per batch
    with every count give the reference batch, in host memory, without the library's fixed layout."""
    from gnnd import _native
    loader = gnnd.Loader(address=daemon.address, dataset="bf16", batch_size=150, fanouts=[3, 2], seed=3, num_slots=2,
                         output="numpy")
    lib, session = loader._native.lib, loader._session
    count_names = [lib.gnnd_session_count_name(session, i).decode() for i in range(lib.gnnd_session_counts(session))]
    assert count_names == ["nodes", "edges", "seeds", "node_hops", "edge_hops", "nodes_hop0", "nodes_hop1",
                           "nodes_hop2", "edges_hop0", "edges_hop1"]
    assert lib.gnnd_session_count_name(session, len(count_names)) is None
    infos = []
    for index in range(lib.gnnd_session_arrays(session)):
        info = _native.ArrayInfo()
        _native.check(lib.gnnd_session_array_info(session, index, ctypes.byref(info)))
        infos.append((info.name.decode(), _native.DTYPE_NAMES[info.dtype], info.ndim, info.row_width,
                      count_names[info.count]))
    assert infos == [("node_ids", "int64", 1, 1, "nodes"), ("num_nodes_per_hop", "int32", 1, 1, "node_hops"),
                     ("edge_src", "int32", 1, 1, "edges"), ("edge_dst", "int32", 1, 1, "edges"),
                     ("num_edges_per_hop", "int32", 1, 1, "edge_hops"), ("features", "bfloat16", 2, 32, "nodes"),
                     ("labels", "int64", 1, 1, "seeds")]
    with pytest.raises(gnnd.GnndError, match="OUT_OF_RANGE: array 7: the batch has 7"):
        _native.check(lib.gnnd_session_array_info(session, 7, ctypes.byref(_native.ArrayInfo())))
    short = _native.ArrayInfo()
    short.size = 8
    with pytest.raises(gnnd.GnndError, match="INVALID_ARGUMENT: out.size = 8"):
        _native.check(lib.gnnd_session_array_info(session, 0, ctypes.byref(short)))
    slots = []
    for slot in range(2):
        arrays = []
        for index in range(len(infos)):
            array = _native.Array()
            _native.check(lib.gnnd_slot_array(session, slot, index, ctypes.byref(array)))
            arrays.append(array)
        slots.append(arrays)
    with pytest.raises(gnnd.GnndError, match="OUT_OF_RANGE: slot 2: the session has 2 slots"):
        _native.check(lib.gnnd_slot_array(session, 2, 0, ctypes.byref(_native.Array())))
    values, release, steps = _native.BatchValues(), -1, 0
    while _native.check(lib.gnnd_next_batch_values(session, release, None, ctypes.byref(values))) == _native.GNND_OK:
        release, steps = values.slot, steps + 1
        if not checks_reference(values.step, len(loader)):
            continue
        ref = reference_batch(data["bf16"], tmp_path, values.step, batch_size=150, fanouts="3,2", seed=3)
        counts = dict(zip(count_names, values.counts[:values.num_counts]))
        assert values.num_counts == len(count_names)
        assert [counts[f"nodes_hop{h}"] for h in range(3)] == ref["num_nodes_per_hop"].tolist()
        assert [counts[f"edges_hop{h}"] for h in range(2)] == ref["num_edges_per_hop"].tolist()
        for (name, _, _, _, count), array in zip(infos, slots[values.slot]):
            array = _native.Array.from_buffer_copy(array)
            array.shape[0] = counts[count]
            np.testing.assert_array_equal(_numpy_view_of(array), ref[name], err_msg=f"step {values.step} {name}")
    assert steps == len(loader)
    values.size = 16
    with pytest.raises(gnnd.GnndError, match="INVALID_ARGUMENT: out.size = 16"):
        _native.check(lib.gnnd_next_batch_values(session, -1, None, ctypes.byref(values)))
    loader.close()


def test_the_1_0_batch_call_gives_the_reference_arrays(daemon, data, tmp_path):
    """gnnd_next_batch (API 1.0) hands out gnnd_batch's seven arrays, each with the batch's own rows."""
    from gnnd import _native
    loader = gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=200, fanouts=[3, 2], seed=8,
                         output="numpy")
    lib, batch = loader._native.lib, loader._native.Batch()
    for _ in range(2):
        _native.check(lib.gnnd_next_batch_on_stream(loader._session, None, ctypes.byref(batch)))
        ref = reference_batch(data["tiny"], tmp_path, batch.step, batch_size=200, fanouts="3,2", seed=8)
        for array in batch.arrays:
            name = array.name.decode()
            np.testing.assert_array_equal(_numpy_view_of(array), ref[name], err_msg=f"step {batch.step} {name}")
        _native.check(lib.gnnd_release_batch_on_stream(loader._session, batch.slot, None))
    loader.close()


def _numpy_view_of(array):
    """A numpy array over a gnnd_array's memory as the C calls give it (no copy; valid while its slot is)."""
    import math
    from gnnd import _native
    name = _native.DTYPE_NAMES[array.dtype]
    dtype = np.dtype({"bfloat16": np.uint16, "float8_e4m3fn": np.uint8}.get(name, name))
    shape = tuple(array.shape[:array.ndim])
    if math.prod(shape) == 0:
        return np.empty(shape, dtype)
    buffer = (ctypes.c_char * (math.prod(shape) * dtype.itemsize)).from_address(array.data)
    return np.frombuffer(buffer, dtype).reshape(shape)


def test_a_release_after_gnnd_ended_the_session_names_gnnds_reason(daemon):
    """A release whose write fails because gnnd ended the call reports why gnnd ended it, not CANCELLED."""
    from gnnd import _native
    loader = gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=100, fanouts=[2], output="numpy")
    lib = loader._native.lib
    _native.check(lib.gnnd_release_batch_on_stream(loader._session, 7, None))  # gnnd ends the session
    with pytest.raises(gnnd.GnndError) as error:
        for _ in range(200):  # queued releases succeed until the writer finds the call over
            _native.check(lib.gnnd_release_batch_on_stream(loader._session, 0, None))
            time.sleep(0.01)
    assert error.value.code == "INVALID_ARGUMENT", error.value.message
    assert error.value.message == "release.slot = 7 (not a batch this trainer holds)"
    loader.close()
