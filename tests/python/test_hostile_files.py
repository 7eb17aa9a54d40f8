"""Files another uid made, treated as hostile: a typed OGB download whose type names would walk out of the
output writes nothing outside it; a FIFO or link in /dev/shm where gnnd expects a segment is refused at
once (no hang, SIGTERM always ends gnnd); a lock file another uid made does not keep gnnd from starting.
The hostile side is uid 65534 where the tests run as root (as CI does); the rest runs without."""
import gzip
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

import numpy as np
import pytest

from daemon_util import GNNCTL, Daemon, generate

NOBODY = 65534
as_root = os.geteuid() == 0


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def hostile(fn, *args):
    """Runs fn(*args) as uid 65534 (in a child process) where the tests run as root; else as ourselves."""
    if not as_root:
        fn(*args)
        return
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            as_nobody()
            fn(*args)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def shared():
    """A directory the hostile uid can reach and write (pytest's own tmp_path is root's alone)."""
    root = tempfile.mkdtemp(prefix="gnnd-hostile-")
    os.chmod(root, 0o777)
    yield pathlib.Path(root)
    shutil.rmtree(root)


def write_gz(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write(text)


def escaping_ogb_csv(root, bad):
    """OGB's typed raw layout with a node type named `bad`, features and splits for it."""
    types = {"paper": 3, bad: 2}
    raw = root / "raw"
    write_gz(raw / "num-node-dict.csv.gz", ",".join(types) + "\n" + ",".join(map(str, types.values())) + "\n")
    write_gz(raw / "triplet-type-list.csv.gz", "paper,cites,paper\n")
    write_gz(raw / "relations/paper___cites___paper/edge.csv.gz", "0,1\n1,2\n")
    write_gz(raw / "nodetype-has-label.csv.gz", "paper\nFalse\n")


def escaping_ogb_npz(root, bad):
    raw = root / "raw"
    raw.mkdir(parents=True)
    np.savez(raw / "num_nodes_dict.npz", **{"paper": np.array([3]), bad: np.array([2])})
    np.savez(raw / "edge_index_dict.npz", paper___cites___paper=np.array([[0, 1], [1, 2]], np.int64))
    np.savez(raw / "node_feat.npz", **{bad: np.ones((2, 2), np.float32)})


@pytest.mark.parametrize("form", ["ogb", "ogb-bin"])
def test_type_names_that_would_leave_the_output_write_nothing_outside_it(shared, form):
    tmp_path = shared
    src, out = tmp_path / "download", tmp_path / "a" / "b" / "c" / "out"
    out.parent.mkdir(parents=True)
    bad = "../../../escape"
    hostile(escaping_ogb_csv if form == "ogb" else escaping_ogb_npz, src, bad)
    before = {p for p in tmp_path.rglob("*")}
    proc = subprocess.run([GNNCTL, "import", f"--format={form}", str(src), str(out)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0
    origin = "raw/num-node-dict.csv.gz" if form == "ogb" else "raw/num_nodes_dict.npz"
    assert f"{origin}: node type '{bad}' is not a name" in proc.stderr, proc.stderr
    assert {p for p in tmp_path.rglob("*")} == before  # no escape.*, no OUT, no OUT.partial-*


def make_fifos(paths):
    for path in paths:
        os.mkfifo(path, 0o666)


def test_a_fifo_where_a_segment_belongs_never_hangs_gnnd_or_gnnctl(shared, tmp_path):
    instance = f"fifo{os.getpid()}"
    prefix = f"/dev/shm/gnnd-{instance}"
    fifos = [f"{prefix}.ds.meta", f"{prefix}.late.meta"]
    hostile(make_fifos, fifos)
    data = generate(tmp_path / "tiny", "--seed", 2)
    try:
        listing = subprocess.run([GNNCTL, "shm", "list"], capture_output=True, text=True, timeout=30)
        assert listing.returncode == 0 and f"ds\tunreadable" in listing.stdout, listing.stdout + listing.stderr
        attach = subprocess.run([GNNCTL, "shm", "attach", "ds", f"--instance={instance}"], capture_output=True,
                                text=True, timeout=30)
        assert attach.returncode != 0 and f"gnnd-{instance}.ds.meta: not a segment (file type 10000" in attach.stderr, \
            attach.stderr
        # gnnd starts (the FIFO is not its set: it replaces it), and a load in a running gnnd does the same
        daemon = Daemon(shared, f"--dataset=ds={data}", name=instance, config=f'dataset_roots: "{tmp_path}"')
        try:
            assert "replacing the shared-memory set 'ds'" in daemon.output()
            proc = daemon.gnnctl("load", "late", data)
            assert "replacing the shared-memory set 'late'" in daemon.output(), proc.stdout
            listed = daemon.gnnctl("datasets").stdout
            assert "ds" in listed and "late" in listed, listed
        finally:
            assert daemon.stop(timeout=30) == 0, daemon.output()
    finally:
        for path in fifos:
            if os.path.lexists(path):
                os.unlink(path)


def test_sigterm_during_start_up_ends_gnnd_at_once(shared, tmp_path):
    data = generate(tmp_path / "big", "--preset", "products", "--scale", "0.05", "--hot-order=false")
    instance = f"start{os.getpid()}"
    log = tmp_path / "gnnd.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([os.environ.get("GNND", "gnnd"), f"--listen=unix:{shared}/{instance}.sock",
                                 f"--dataset=big={data}"], stdout=out, stderr=out)
    try:
        # Loading: its segments appear once gnnd has set up its signal handling (a fixed sleep could come
        # before that on a loaded machine, and the default action would end gnnd instead).
        deadline = time.time() + 20
        while time.time() < deadline and proc.poll() is None and \
                not [f for f in os.listdir("/dev/shm") if f.startswith(f"gnnd-{instance}.")]:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    if " event=serving " not in text:  # the signal came during start-up: the load stopped, nothing is left
        assert proc.returncode == 1 and "signal 15 during start-up: stopping before serving" in text, text
        assert "signal 15: stopped before serving" in text, text
        assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"gnnd-{instance}.")]
    else:
        assert proc.returncode == 0, text


def lock_directory(uid):
    return "/run/gnnd" if uid == 0 else f"/tmp/gnnd-{uid}"


def start_gnnd(socket, uid=None, env=None):
    """gnnd on `socket` (no datasets), as `uid` where given; returns the process once it serves, or exits."""
    log = tempfile.NamedTemporaryFile(prefix="gnnd-lock-", suffix=".log", delete=False)
    os.chmod(log.name, 0o666)
    proc = subprocess.Popen([os.environ.get("GNND", "gnnd"), f"--listen=unix:{socket}"], stdout=log, stderr=log,
                            preexec_fn=as_nobody if uid == NOBODY else None, env=env)
    deadline = time.time() + 30
    while " event=serving " not in open(log.name).read() and proc.poll() is None:
        assert time.time() < deadline, open(log.name).read()
        time.sleep(0.02)
    proc.log = log.name
    return proc


def stop_gnnd(proc):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, open(proc.log).read()
    os.unlink(proc.log)


@pytest.mark.skipif(not as_root, reason="needs root to act as a second uid")
def test_no_other_uid_can_keep_gnnd_from_starting_and_its_lock_goes_at_a_clean_stop(shared):
    instance = f"lock{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k not in ("RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR")}
    # Another uid makes the lock files where gnnd once kept them, and where its own would be.
    hostile(make_fifos, [f"/dev/shm/gnnd-{instance}.lock"])
    hostile(os.makedirs, f"/tmp/gnnd-{os.getpid()}-squat", 0o777)
    try:
        first = start_gnnd(shared / f"{instance}.sock", env=env)
        lock = f"{lock_directory(0)}/gnnd-{instance}.lock"
        assert first.poll() is None, open(first.log).read()
        assert open(lock).read() == f"{first.pid} 0\n"
        assert os.stat(lock_directory(0)).st_mode & 0o022 == 0
        second = subprocess.run([os.environ.get("GNND", "gnnd"), f"--listen=unix:{shared}/other.sock",
                                 f"--instance={instance}"], capture_output=True, text=True, timeout=60, env=env)
        assert second.returncode == 1
        assert f"gnnd instance '{instance}' is already running on this host (pid {first.pid}, uid 0)" in second.stderr
        stop_gnnd(first)
        assert not os.path.exists(lock)  # removed at the clean stop
        # A gnnd of another uid, same instance name, after root's: its lock is its own, it starts.
        other = start_gnnd(shared / f"{instance}.sock", uid=NOBODY, env=env)
        assert other.poll() is None, open(other.log).read()
        assert os.path.exists(f"{lock_directory(NOBODY)}/gnnd-{instance}.lock")
        stop_gnnd(other)
        assert not os.path.exists(f"{lock_directory(NOBODY)}/gnnd-{instance}.lock")
    finally:
        os.unlink(f"/dev/shm/gnnd-{instance}.lock")
        shutil.rmtree(f"/tmp/gnnd-{os.getpid()}-squat")


def test_a_lock_directory_others_may_write_is_refused_naming_it(shared):
    """A lock in a directory others may write could be made or removed by them: gnnd says so instead."""
    runtime = shared / "runtime"
    runtime.mkdir()
    os.chmod(runtime, 0o777)
    proc = subprocess.run([os.environ.get("GNND", "gnnd"), f"--listen=unix:{shared}/open.sock"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "RUNTIME_DIRECTORY": str(runtime)})
    assert proc.returncode == 1
    assert (f"{runtime}: not a directory of uid {os.geteuid()} that only it may write (a directory of uid "
            f"{os.geteuid()}, mode 0777)") in proc.stderr, proc.stderr
    assert os.listdir(runtime) == []


@pytest.mark.parametrize("where", ["edges", "features", "node_time", "split", "split_time", "edges_txt", "npz"])
def test_a_fifo_as_any_import_input_is_refused_at_once(tmp_path, where):
    """Every input of gnnctl import is read only as a regular file: a FIFO (no writer) is refused at once, naming
    it, where opening it blocked the import for ever."""
    n = 20
    np.save(tmp_path / "edges.npy", np.stack([np.arange(n), (np.arange(n) + 1) % n]))
    np.save(tmp_path / "x.npy", np.ones((n, 2), np.float32))
    np.save(tmp_path / "t.npy", np.arange(n))
    (tmp_path / "splits").mkdir()
    (tmp_path / "times").mkdir()
    for split, ids in (("train", np.arange(10)), ("valid", np.arange(10, 15)), ("test", np.arange(15, 20))):
        np.save(tmp_path / "splits" / f"{split}.npy", ids)
        np.save(tmp_path / "times" / f"{split}.npy", ids)
    np.save(tmp_path / "y.npy", np.zeros(n, np.int64))
    fifo = {"edges": tmp_path / "edges.npy", "features": tmp_path / "x.npy", "node_time": tmp_path / "t.npy",
            "split": tmp_path / "splits" / "valid.npy", "split_time": tmp_path / "times" / "valid.npy",
            "edges_txt": tmp_path / "edges.txt", "npz": tmp_path / "ogb" / "raw" / "data.npz"}[where]
    fifo.parent.mkdir(parents=True, exist_ok=True)
    if fifo.exists():
        fifo.unlink()
    os.mkfifo(fifo)
    if where == "edges_txt":
        command = ["--format", "edgelist", fifo]
    elif where == "npz":
        command = ["--format", "ogb-bin", tmp_path / "ogb"]
    else:
        command = ["--format", "edgelist", "--num-nodes", n, "--features", tmp_path / "x.npy", "--labels",
                   tmp_path / "y.npy", "--splits", tmp_path / "splits", "--node-time", tmp_path / "t.npy",
                   "--split-time", tmp_path / "times", tmp_path / "edges.npy"]
    proc = subprocess.run([GNNCTL, "import", *map(str, command), str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0, proc.stdout
    assert "a FIFO, not a regular file" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("out.partial-*"))


def test_a_killed_imports_work_directory_goes_with_the_next_import(tmp_path):
    """A killed import leaves OUT.partial-PID (nothing can remove it then); the next import of OUT removes those
    of pids that no longer run, and leaves a running one's."""
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n2 0\n")
    sleeper = subprocess.Popen(["sleep", "30"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        for pid in (dead.pid, sleeper.pid):
            (tmp_path / f"out.partial-{pid}").mkdir()
            (tmp_path / f"out.partial-{pid}" / "edges.npy").write_text("half")
        (tmp_path / "other.partial-1").mkdir()
        subprocess.run([GNNCTL, "import", "--format", "edgelist", str(tmp_path / "edges.txt"), str(tmp_path / "out")],
                       check=True, capture_output=True, timeout=60)
        assert (tmp_path / "out" / "manifest.textproto").exists()
        assert not (tmp_path / f"out.partial-{dead.pid}").exists()
        assert (tmp_path / f"out.partial-{sleeper.pid}").exists()  # its import may still be running
        assert (tmp_path / "other.partial-1").exists()  # another output's
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_import_ended_by_a_signal_leaves_no_work_directory(tmp_path, sig):
    """Ctrl-C or SIGTERM in the middle of writing a dataset: the signal ends gnnctl as it would, and its
    OUT.partial-PID goes with it."""
    proc = subprocess.Popen([GNNCTL, "generate", "--preset", "products", "--scale", "0.05", "--hot-order=false",
                             str(tmp_path / "out")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not list(tmp_path.glob("out.partial-*")):  # writing has begun
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
        time.sleep(0.01)
    time.sleep(0.2)
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == -sig
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("out.partial-*")), os.listdir(tmp_path)
