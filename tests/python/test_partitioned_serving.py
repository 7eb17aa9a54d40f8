"""A partitioned dataset served by one gnnd per part (gnnd --peers, UCX on loopback, over shared memory and over
TCP): every batch kind (node, LABOR, disjoint, link, typed, weighted, temporal) a trainer gets from a part's gnnd
equals, byte for byte, the batch of one gnnd serving the
whole dataset with the same options; a part whose peer dies fails its sessions with UNAVAILABLE naming the peer
within the timeout, keeps serving, and finds the peer again once it is back; a part without the token, or of
another partition, is refused naming which. Run by ctest with GNND and GNNCTL set."""
import os
import signal
import subprocess
import time

import numpy as np
import pytest

import gnnd
from daemon_util import GNNCTL, Daemon, edgelist_link_dataset, free_port, generate, run_gnnctl
from temporal_util import timed_edge_list
from test_metrics import scrape

TOKEN = "a-shared-secret-of-the-partition-tests"
KEY = "author___writes___paper"


def token_file(tmp_path, token=TOKEN):
    path = tmp_path / f"token-{abs(hash(token)) % 10**8}"
    path.write_text(token + "\n")
    os.chmod(path, 0o600)
    return path


class Parts:
    """One gnnd per part of PARTS_DIR (its part-R serves as dataset NAME), on loopback ports."""

    def __init__(self, tmp_path, parts_dir, num_parts, name="d", env=None, tokens=None, dirs=None, extra=None,
                 flags=()):
        self.ports = [free_port() for _ in range(num_parts)]
        self.peers = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        self.tmp_path, self.name, self.env = tmp_path, name, env
        self.dirs = dirs or [parts_dir / f"part-{r}" for r in range(num_parts)]
        self.tokens = tokens or [token_file(tmp_path)] * num_parts
        self.extra, self.flags = extra or {}, list(flags)
        self.daemons = [self.start(r) for r in range(num_parts)]

    def start(self, part):
        return Daemon(self.tmp_path, f"--dataset={self.name}={self.dirs[part]}", f"--peers={self.peers}",
                      f"--peer-token-file={self.tokens[part]}", "--peer-timeout=3s", "--threads=2",
                      *self.flags, *self.extra.get(part, []), env=self.env)

    def stop(self):
        for daemon in self.daemons:
            if daemon is not None and daemon.proc.poll() is None:
                assert daemon.stop() == 0, daemon.output()


def wait_connected(daemon, peers, within=10.0):
    """Waits until DAEMON's listing shows PEERS connected peers. A part started before its peers found them down
    and tries again a second later: a part that had no session of its own may not have yet."""
    deadline = time.monotonic() + within
    while True:
        listing = daemon.gnnctl("datasets").stdout
        if listing.count("\tconnected\t") == peers:
            return
        assert time.monotonic() < deadline, listing
        time.sleep(0.1)


def arrays(batch):
    """Every array of a numpy batch, by name."""
    if isinstance(batch, gnnd.TypedBatch):
        return {name: np.array(value) for name, value in batch.arrays.items()}
    return {name: np.array(getattr(batch, name)) for name in batch._loader._views.names}


def assert_same_batches(whole, part, options, steps=4):
    shape = dict(batch_size=32, fanouts=[3, 2], seed=6, output="numpy", copy=True, **options)
    with gnnd.Loader(address=whole.address, dataset="d", **shape) as expected, \
            gnnd.Loader(address=part.address, dataset="d", **shape) as got:
        seen = 0
        for e, g in zip(expected, got):
            e, g = arrays(e), arrays(g)
            assert set(e) == set(g)
            for name in e:
                np.testing.assert_array_equal(g[name], e[name], err_msg=f"{options} {name} step {seen}")
            seen += 1
            if seen == steps:
                break
        assert seen == min(steps, len(expected)) > 1


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("partitioned")
    generate(root / "tiny", "--seed", 3)
    edgelist_link_dataset(root, "homogeneous", seed=5, nodes=3000, edges=24000, train=400, dim=16)
    subprocess.run([GNNCTL, "generate", "--preset=mag", "--scale=0.01", "--seed=2", "--add-reverse",
                    f"--link-relation={KEY}", root / "mag"], check=True, capture_output=True)
    generate(root / "magt", "--preset", "mag", "--scale", "0.002", "--seed", "5", "--add-reverse", "--temporal")
    (root / "src").mkdir()  # edge weights and times, node times, splits with times (as test_temporal.py's)
    timed_edge_list(root / "src", root / "timed", nodes=600, edges=6000)
    return root


CASES = {
    "tiny": [dict(), dict(labor=True), dict(disjoint=True)],
    "homogeneous": [dict(edge_split="train", neg_sampling="binary", neg_amount=2, exclude="reverse"),
                    dict(edge_split="train", neg_sampling="triplet", neg_amount=2)],
    "mag": [dict(node_type="paper"), dict(node_type="paper", labor=True, batch_dependency=4),
            dict(edge_split="train", edge_type=KEY, neg_sampling="binary", neg_amount=2, exclude="reverse")],
    "timed": [dict(weight_attr="w"), dict(time_attr="time"), dict(time_attr="node_time", temporal_strategy="last")],
    "magt": [dict(node_type="paper", time_attr="node_time")],
}


@pytest.mark.parametrize("method,transport", [("random", "shm"), ("metis", "tcp")])
def test_every_batch_kind_from_any_part_equals_the_whole_datasets(datasets, tmp_path, method, transport):
    # UCX logs each connection's transports at level info ("ep_cfg[1]: am(tcp/lo)"): the test checks them.
    env = {"UCX_LOG_LEVEL": "info", **({"UCX_TLS": "tcp"} if transport == "tcp" else {})}
    flags = ["--peer-shared-memory"] if transport == "shm" else []
    for dataset, cases in CASES.items():
        run_gnnctl("partition", "--parts", 3, "--method", method, "--seed", 4, datasets / dataset,
                   tmp_path / dataset)
        whole = Daemon(tmp_path, f"--dataset=d={datasets / dataset}", "--threads=2")
        parts = Parts(tmp_path, tmp_path / dataset, 3, env=env, flags=flags)
        try:
            for index, options in enumerate(cases):
                assert_same_batches(whole, parts.daemons[index % 3], options)
            for part, daemon in enumerate(parts.daemons):  # rows did come from the peers
                listing = daemon.gnnctl("datasets").stdout
                assert f"part {part} of 3 of partition " in listing, listing
                fetched = int(listing.split(" own, ", 1)[1].split(" fetched")[0])
                served = int(listing.split("served ", 1)[1].split(" rows")[0])
                ran = {index % 3 for index in range(len(cases))}  # the parts that had sessions
                assert (fetched > 0) == (part in ran) and (served > 0) == bool(ran - {part}), listing
                wait_connected(daemon, 2)
        finally:
            parts.stop()
            assert whole.stop() == 0, whole.output()
        for daemon in parts.daemons:  # UCX's log (to stdout, flushed at exit): rows moved over the transport asked
            lanes = [line for line in daemon.output().splitlines() if "ep_cfg" in line and "am(" in line]
            data = [line for line in lanes if "tcp/" not in line]  # shm's connections carry the wireup over tcp
            assert lanes and (data if transport == "shm" else not data), lanes


@pytest.mark.parametrize("cache", ["2MiB", "4KiB"])  # every remote row, and a cache that evicts
def test_a_remote_cache_serves_rows_fetched_before_and_the_batches_do_not_change(datasets, tmp_path, cache):
    run_gnnctl("partition", "--parts", 3, "--method", "random", "--seed", 1, datasets / "tiny", tmp_path / "p")
    metrics = free_port()
    whole = Daemon(tmp_path, f"--dataset=d={datasets / 'tiny'}", "--threads=2")
    parts = Parts(tmp_path, tmp_path / "p", 3,
                  extra={0: [f"--remote-cache={cache}", f"--metrics-address=127.0.0.1:{metrics}"]})
    try:
        shape = dict(batch_size=64, fanouts=[3, 2], seed=9, output="numpy", copy=True)
        with gnnd.Loader(address=whole.address, dataset="d", **shape) as expected, \
                gnnd.Loader(address=parts.daemons[0].address, dataset="d", **shape) as got:
            for epoch in range(2):
                steps = 0
                for e, g in zip(expected, got):
                    e, g = arrays(e), arrays(g)
                    for name in e:
                        np.testing.assert_array_equal(g[name], e[name], err_msg=f"epoch {epoch} {name}")
                    steps += 1
                assert steps == len(expected)
        listing = parts.daemons[0].gnnctl("datasets").stdout
        fetched = int(listing.split(" own, ", 1)[1].split(" fetched")[0])
        cached = int(listing.split("), ", 1)[1].split(" from the remote cache")[0])
        held, capacity = (int(x) for x in listing.split("from the remote cache (", 1)[1].split(" rows held")[0]
                          .split(" of "))
        evicted = int(listing.split("rows held, ", 1)[1].split(" evicted")[0])
        assert fetched > 0 and cached > 0 and 0 < held <= capacity, listing
        if cache == "2MiB":  # every row owned elsewhere fits: kept once fetched (batches sampled ahead together
            # may fetch a row twice), then read from the cache
            elsewhere = int((np.load(tmp_path / "p" / "part-0" / "owner.npy") != 0).sum())
            assert held <= fetched < cached and evicted == 0 and capacity >= elsewhere, listing
        else:
            assert held == capacity and evicted > 0, listing
        samples = scrape(metrics)
        assert samples['gnnd_partition_batch_rows_total{dataset="d",source="remote_cache"}'] == cached
        assert samples['gnnd_partition_remote_cache_rows{dataset="d"}'] == held
    finally:
        parts.stop()
        assert whole.stop() == 0, whole.output()


def test_a_dead_peer_fails_the_sessions_needing_it_and_is_found_again(datasets, tmp_path):
    run_gnnctl("partition", "--parts", 3, "--method", "random", datasets / "tiny", tmp_path / "p")
    metrics = free_port()
    parts = Parts(tmp_path, tmp_path / "p", 3, extra={0: [f"--metrics-address=127.0.0.1:{metrics}"]})
    try:
        loader = gnnd.Loader(address=parts.daemons[0].address, dataset="d", batch_size=16, fanouts=[3, 2], seed=1,
                             output="numpy")
        batches = iter(loader)
        next(batches)
        parts.daemons[1].proc.send_signal(signal.SIGKILL)
        parts.daemons[1].proc.wait()
        start = time.time()
        with pytest.raises(RuntimeError) as failed:
            for _ in batches:  # the batches made ahead, then the one that needs the dead peer's rows
                pass
        assert time.time() - start < 20
        assert "UNAVAILABLE" in str(failed.value) or "unavailable" in str(failed.value).lower(), failed.value
        assert f"peer 1 (127.0.0.1:{parts.ports[1]})" in str(failed.value), failed.value
        loader.close()
        assert "d" in parts.daemons[0].gnnctl("datasets").stdout  # still serving
        status = parts.daemons[0].gnnctl("status").stdout
        assert "dataset d: part 0 of 3, 1 of 2 peers connected; peer 1 (127.0.0.1:" in status, status
        deadline = time.time() + 10
        while "down\tfetched" not in (listing := parts.daemons[0].gnnctl("datasets").stdout) or \
                "cannot connect (" not in listing:  # its tries since: a connection never made, not one lost
            assert time.time() < deadline, listing
            time.sleep(0.2)
        samples = scrape(metrics)
        peer1 = f'dataset="d",peer="1",address="127.0.0.1:{parts.ports[1]}"'
        assert samples[f"gnnd_peer_up{{{peer1}}}"] == 0 and samples[f"gnnd_peer_fetch_failures_total{{{peer1}}}"] >= 1
        assert samples['gnnd_partition_batch_rows_total{dataset="d",source="remote"}'] > 0
        parts.daemons[1] = parts.start(1)
        deadline = time.time() + 20
        while True:  # reconnected within a few seconds
            try:
                with gnnd.Loader(address=parts.daemons[0].address, dataset="d", batch_size=16, fanouts=[3, 2],
                                 seed=1, output="numpy") as again:
                    assert sum(1 for _ in again) == len(again)
                break
            except RuntimeError:
                assert time.time() < deadline
                time.sleep(0.5)
    finally:
        parts.stop()


def test_a_part_without_the_token_or_of_another_partition_is_refused(datasets, tmp_path):
    data = datasets / "tiny"
    run_gnnctl("partition", "--parts", 3, "--method", "range", data, tmp_path / "a")
    run_gnnctl("partition", "--parts", 3, "--method", "range", data, tmp_path / "b")  # another dataset id
    good = token_file(tmp_path)
    cases = [("token", [good, good, token_file(tmp_path, "another-secret-of-16-bytes")], None, "wrong peer token"),
             ("id", [good] * 3, [tmp_path / "a" / "part-0", tmp_path / "a" / "part-1", tmp_path / "b" / "part-2"],
              "another dataset")]
    for what, tokens, dirs, words in cases:
        parts = Parts(tmp_path, tmp_path / "a", 3, tokens=tokens, dirs=dirs)
        try:
            with pytest.raises(RuntimeError) as refused:
                with gnnd.Loader(address=parts.daemons[2].address, dataset="d", batch_size=16, fanouts=[3, 2],
                                 output="numpy") as loader:
                    for _ in loader:
                        pass
            assert words in str(refused.value), (what, refused.value)
            assert "refused" in parts.daemons[0].output() and words in parts.daemons[0].output()
        finally:
            parts.stop()


def test_a_truncated_part_or_map_is_refused_at_load_naming_the_file(datasets, tmp_path):
    run_gnnctl("partition", "--parts", 2, "--method", "range", datasets / "tiny", tmp_path / "p")
    peers = f"--peers=127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    for name in ("features.npy", "owner_row.npy"):
        part = tmp_path / f"cut-{name}"
        subprocess.run(["cp", "-r", tmp_path / "p" / "part-0", part], check=True)
        path = part / name
        path.unlink()  # a copy, not the hard link the parts share
        data = (tmp_path / "p" / "part-0" / name).read_bytes()
        path.write_bytes(data[:len(data) - 24])
        proc = subprocess.run([os.environ.get("GNND", "gnnd"), f"--listen=unix:{tmp_path}/cut.sock",
                               f"--dataset=d={part}", peers, f"--peer-token-file={token_file(tmp_path)}"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and name in proc.stderr, (name, proc.stderr)
    mixed = tmp_path / "mixed"  # a map whose node 0 points past its part's rows
    subprocess.run(["cp", "-r", tmp_path / "p" / "part-1", mixed], check=True)
    (mixed / "owner_row.npy").unlink()
    values = np.load(tmp_path / "p" / "part-1" / "owner_row.npy")
    values[0] = values.max() + 5
    np.save(mixed / "owner_row.npy", values)
    proc = subprocess.run([os.environ.get("GNND", "gnnd"), f"--listen=unix:{tmp_path}/mixed.sock",
                           f"--dataset=d={mixed}", peers, f"--peer-token-file={token_file(tmp_path)}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "owner_row.npy: owner_row[0]" in proc.stderr, proc.stderr


def test_bad_peer_settings_are_refused_at_start_naming_them(datasets, tmp_path):
    run_gnnctl("partition", "--parts", 2, "--method", "range", datasets / "homogeneous", tmp_path / "p")
    part = tmp_path / "p" / "part-0"
    loose = tmp_path / "loose-token"
    loose.write_text(TOKEN)
    os.chmod(loose, 0o644)
    short = token_file(tmp_path, "short")
    peers = f"--peers=127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    for flags, words in [([peers, f"--peer-token-file={loose}"], "chmod 600"),
                         ([peers, f"--peer-token-file={short}"], "at least 16"),
                         ([peers], "peer_token_file"),
                         ([f"--peers=127.0.0.1:{free_port()}", f"--peer-token-file={token_file(tmp_path)}"],
                          "2 parts or more"),
                         ([f"--peers=127.0.0.1:1,nowhere", f"--peer-token-file={token_file(tmp_path)}"], "HOST:PORT"),
                         ([peers, f"--peer-token-file={token_file(tmp_path)}", "--remote-cache=2XB"],
                          "remote_cache: '2XB'"),
                         (["--remote-cache=1GiB"], "set peers too"),
                         ([], "serve it with --peers")]:
        proc = subprocess.run([os.environ.get("GNND", "gnnd"), f"--listen=unix:{tmp_path}/bad.sock",
                               f"--dataset=d={part}", *flags], capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and words in proc.stderr, (flags, proc.stderr)
