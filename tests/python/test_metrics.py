"""The Prometheus endpoint (--metrics-address): the counters and stage histograms move with the batches a
trainer reads; other paths are 404; a bad address stops gnnd at start, naming it. `gnnctl stats --watch`
shows the same live, with rates."""
import os
import re
import resource
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

import gnnd
from daemon_util import GNNCTL, GNND, Daemon, free_port, generate


def scrape(port, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        samples = {}
        for line in response.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
        return samples


def scrape_until(port, condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(port)
        if condition(samples) or time.monotonic() > deadline:
            assert condition(samples), samples
            return samples
        time.sleep(0.02)


def test_counters_and_histograms_move_with_the_batches(tmp_path):
    data = generate(tmp_path / "g", "--seed", 6)
    port = free_port()
    daemon = Daemon(tmp_path, f"--dataset=metered={data}", f"--metrics-address=127.0.0.1:{port}", name="metrics")
    where = 'dataset="metered",device="cpu"'
    try:
        before = scrape(port)
        assert before["gnnd_info{gnnd_instance=\"metrics\"}"] == 1  # the instance, named after the socket
        assert before["gnnd_dataset_bytes{dataset=\"metered\"}"] > 0
        assert f"gnnd_batches_total{{{where}}}" not in before  # nothing served yet
        with gnnd.Loader(address=daemon.address, dataset="metered", batch_size=300, fanouts=[4, 2],
                         output="numpy") as loader:
            steps = sum(1 for _ in loader)
            assert steps == len(loader)
            during = scrape(port)
            assert during[f"gnnd_sessions{{{where}}}"] == 1
        # Closing the loader returns once gnnd has retired the session.
        after = scrape(port)
        assert after[f"gnnd_sessions{{{where}}}"] == 0
        assert after[f"gnnd_batches_total{{{where}}}"] == steps
        assert after[f"gnnd_bytes_total{{{where}}}"] > 0
        assert after[f"gnnd_sessions_opened_total{{{where}}}"] == 1
        for stage in ("produce", "sample", "gather"):
            assert after[f'gnnd_stage_seconds_count{{stage="{stage}",{where}}}'] == steps
            assert after[f'gnnd_stage_seconds_bucket{{stage="{stage}",{where},le="+Inf"}}'] == steps
        assert after[f'gnnd_stage_seconds_count{{stage="release_wait",{where}}}'] >= steps - 1
        with pytest.raises(urllib.error.HTTPError) as error:
            scrape(port, "/")
        assert error.value.code == 404

        watch = subprocess.run(["timeout", "1.5", GNNCTL, f"--address={daemon.address}", "stats", "--watch", "0.3"],
                               capture_output=True, text=True)
        assert watch.stdout.count("uptime ") >= 3, watch.stdout + watch.stderr
        assert "now: 0.0 batches/s" in watch.stdout
        assert f"stage produce\tmetered on cpu\t{steps} batches" in watch.stdout
    finally:
        assert daemon.stop() == 0, daemon.output()
    # The log is logfmt, one event per line, the lifecycle events with their fields.
    events = [parse_logfmt(line) for line in daemon.output().splitlines()]
    assert all({"time", "level", "msg"} <= set(e) for e in events), events
    opened = [e for e in events if e.get("event") == "session_opened"]
    assert opened and opened[0]["dataset"] == "metered" and opened[0]["device"] == "cpu"
    ended = [e for e in events if e.get("event") == "session_ended"]
    assert ended and ended[0]["batches"] == str(steps) and ended[0]["code"] == "OK"


def parse_logfmt(line):
    pairs = re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)', line)
    assert " ".join(f"{k}={v}" for k, v in pairs) == line, line  # nothing outside key=value pairs
    return {k: v[1:-1].replace('\\"', '"').replace("\\\\", "\\") if v.startswith('"') else v for k, v in pairs}


def test_a_bad_metrics_address_stops_gnnd_at_start(tmp_path):
    proc = subprocess.run([GNND, f"--listen=unix:{tmp_path}/s{os.getpid()}.sock", "--metrics-address=nonsense"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2  # a config error, found before anything starts
    assert "metrics_address = 'nonsense' (HOST:PORT)" in proc.stderr


def open_descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def settle(pid, descriptors):
    """Until gnnd has closed its end of connections the test closed."""
    deadline = time.time() + 10
    while open_descriptors(pid) > descriptors:
        assert time.time() < deadline, f"{open_descriptors(pid)} descriptors open, {descriptors} before"
        time.sleep(0.05)


def flood(port, count):
    """`count` idle TCP connections to the metrics port (the kernel completes them whether gnnd accepts or not)."""
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


def test_a_connection_flood_neither_closes_the_metrics_port_nor_starves_sessions(tmp_path):
    data = generate(tmp_path / "g", "--seed", 6)
    port = int(free_port())
    daemon = Daemon(tmp_path, f"--dataset=metered={data}", f"--metrics-address=127.0.0.1:{port}", name="flood")
    pid = daemon.proc.pid
    try:
        scrape(port)
        rest = open_descriptors(pid)
        # Room for the bounded metrics connections and the sessions' own, not for 300 more.
        limit = rest + 64
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
        held = flood(port, 300)
        time.sleep(0.5)  # gnnd accepts what it will
        assert open_descriptors(pid) <= limit - 20, "the metrics port took the descriptors"
        with gnnd.Loader(address=daemon.address, dataset="metered", batch_size=300, fanouts=[4, 2],
                         output="numpy", timeout_ms=3000) as loader:
            assert sum(1 for _ in loader) == len(loader)
        for s in held:
            s.close()
        settle(pid, rest)

        # Out of descriptors outright (another process's doing, say): accepting pauses, and serves again after.
        # The limit bounds descriptor numbers: 4 past the highest in use.
        highest = max(int(fd) for fd in os.listdir(f"/proc/{pid}/fd"))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (highest + 5, limit))
        held = flood(port, 40)
        deadline = time.time() + 30  # until gnnd has tried (a sanitized build on a busy machine is slow to)
        while f"metrics: accepting on port {port} failed" not in daemon.output() and time.time() < deadline:
            time.sleep(0.05)
        for s in held:
            s.close()
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
        assert scrape(port)["gnnd_uptime_seconds"] > 0

        # A request that does not parse is answered 400.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(b"GET /metrics NOT-HTTP\r\n\r\n")
            assert raw.recv(100).startswith(b"HTTP/1.1 400 Bad Request"), "no 400"
    finally:
        assert daemon.stop() == 0, daemon.output()
    log = daemon.output()
    # Each episode of failing accepts is logged once, and its end once: not every 100 ms retry. (A slow build
    # may also run out in the first flood, beside the session's descriptors: one more episode.)
    failed = log.count(f"metrics: accepting on port {port} failed")
    again = log.count(f"metrics: accepting on port {port} again")
    assert 1 <= failed <= 3 and again == failed, log
    assert "refusing more until some end" in log
