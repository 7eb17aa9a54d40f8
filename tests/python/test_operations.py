"""What gnnd and gnnctl say is true: `gnnctl datasets` counts the open sessions, link sessions report their
gather time, a session on a dataset gnnd does not serve names the address asked and what it serves, a socket
nobody answers on fails at once, --help lists each program's own flags, and `gnnd --dataset-roots DIR` lets
`gnnctl load` load from DIR. Run by ctest with GNND and GNNCTL set."""
import os
import re
import socket
import subprocess
import time

import pytest

import gnnd
from daemon_util import GNNCTL, GNND, Daemon, edgelist_link_dataset, generate


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("operations")
    edgelist_link_dataset(root, "link", seed=3, nodes=200, edges=3000, train=2000, dim=16)
    d = Daemon(root, f"--dataset=tiny={generate(root / 'tiny', '--seed', 4)}", f"--dataset=link={root / 'link'}")
    yield d
    assert d.stop() == 0, d.output()


def sessions_of(daemon, name):
    line = next(line for line in daemon.gnnctl("datasets").stdout.splitlines() if line.startswith(f"{name}\t"))
    return int(re.search(r"\t(\d+) session\(s\)\t", line).group(1))


def test_datasets_count_the_open_sessions(daemon):
    assert sessions_of(daemon, "tiny") == 0
    with gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=100, fanouts=[3], output="numpy") as a, \
            gnnd.Loader(address=daemon.address, dataset="tiny", batch_size=100, fanouts=[3], output="numpy") as b:
        next(iter(a)), next(iter(b))
        assert sessions_of(daemon, "tiny") == 2
        assert sessions_of(daemon, "link") == 0
    assert sessions_of(daemon, "tiny") == 0  # close() returns once gnnd has ended the session


def test_link_sessions_report_their_gather_time(daemon):
    with gnnd.Loader(address=daemon.address, dataset="link", edge_split="train", neg_sampling="binary",
                     batch_size=200, fanouts=[10, 10], output="numpy") as loader:
        assert sum(1 for _ in loader) == len(loader) > 0
    stages = {m.group(1): float(m.group(2)) for m in re.finditer(r"stage (\w+)\tlink on cpu\t\d+ batches\tmean ([\d.]+) ms",
                                                                 daemon.gnnctl("stats").stdout)}
    assert stages["gather"] > 0, stages
    assert stages["sample"] > 0 and stages["produce"] >= stages["gather"], stages


def test_an_unknown_dataset_names_the_address_asked_and_the_datasets_served(daemon):
    with pytest.raises(gnnd.GnndError) as error:
        gnnd.Loader(address=daemon.address, dataset="tinny", batch_size=10, fanouts=[2])
    assert error.value.code == "NOT_FOUND"
    assert f"gnnd at {daemon.address}: open.dataset: 'tinny' is not loaded (this gnnd serves 'link', 'tiny')" \
        in error.value.message


def test_a_socket_nobody_answers_on_fails_at_once(tmp_path):
    missing = tmp_path / "missing.sock"
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as s:  # bound, never listening: as a gnnd that is gone leaves it
        s.bind(str(stale))
    for path, said in ((missing, f"there is no socket {missing}"), (stale, f"nothing listens on {stale}")):
        start = time.monotonic()
        with pytest.raises(gnnd.GnndError) as error:
            gnnd.Loader(address=f"unix:{path}", dataset="tiny", batch_size=10, fanouts=[2], timeout_ms=20000)
        assert time.monotonic() - start < 2, "waited for a socket nobody answers on"
        assert error.value.code == "UNAVAILABLE" and said in error.value.message, error.value.message
        proc = subprocess.run([GNNCTL, f"--address=unix:{path}", "datasets"], capture_output=True, text=True,
                              timeout=10)
        assert proc.returncode != 0 and said in proc.stderr, proc.stderr


@pytest.mark.parametrize("program, own_flag", [(GNND, "--listen"), (GNNCTL, "--address")])
def test_help_lists_the_programs_own_flags(program, own_flag):
    proc = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=30)
    said = proc.stdout + proc.stderr
    assert own_flag in said, said
    assert "No flags matched" not in said, said


def test_dataset_roots_flag_lets_gnnctl_load_from_it(tmp_path):
    roots = tmp_path / "roots"
    data = generate(roots / "tiny", "--seed", 5)
    elsewhere = generate(tmp_path / "elsewhere", "--seed", 5)
    daemon = Daemon(tmp_path, f"--dataset-roots={roots}")
    try:
        loaded = daemon.gnnctl("load", "mine", data, check=False)
        assert loaded.returncode == 0, loaded.stderr
        assert sessions_of(daemon, "mine") == 0
        refused = daemon.gnnctl("load", "other", elsewhere, check=False)
        assert refused.returncode != 0 and f"is not under any of dataset_roots ({roots})" in refused.stderr, \
            refused.stderr
    finally:
        assert daemon.stop() == 0, daemon.output()
    plain = Daemon(tmp_path, name=f"plain{os.getpid()}")
    try:
        refused = plain.gnnctl("load", "mine", data, check=False)
        assert refused.returncode != 0 and "gnnd --dataset-roots DIR" in refused.stderr, refused.stderr
    finally:
        assert plain.stop() == 0, plain.output()
