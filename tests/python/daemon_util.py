"""Starting and stopping gnnd for the end-to-end tests."""
import itertools
import os
import random
import signal
import socket
import subprocess
import time

GNNCTL = os.environ.get("GNNCTL", "gnnctl")
GNND = os.environ.get("GNND", "gnnd")
_instances = itertools.count()


def run_gnnctl(*args, ok=True):
    """Runs gnnctl with ARGS (any values, made strings); unless ok=False, asserts it succeeded."""
    proc = subprocess.run([GNNCTL, *map(str, args)], capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


STARTED = []  # every Daemon this process started: conftest.py stops those a failed test left running


class Daemon:
    def __init__(self, tmp_path, *args, config=None, name=None, env=None):
        """gnnd on the socket TMP_PATH/NAME.sock, so its instance is NAME: its shared-memory names start with
        shm_prefix ("gnnd" for the default instance, "gnnd-NAME" otherwise). NAME defaults to one no other
        test process uses (shared-memory names and instance locks are host-wide)."""
        if name is None:
            name = f"t{os.getpid()}n{next(_instances)}"
        self.socket = str(tmp_path / f"{name}.sock")
        self.address = f"unix:{self.socket}"
        self.instance = name if name == "gnnd" or not name.startswith("gnnd-") else name[len("gnnd-"):]
        self.shm_prefix = "gnnd" if self.instance == "gnnd" else f"gnnd-{self.instance}"
        self.log_path = tmp_path / f"{name}.log"
        command = [GNND, f"--listen={self.address}", *args]
        if config is not None:
            path = tmp_path / f"{name}.textproto"
            path.write_text(config)
            command.append(f"--config={path}")
        # gnnd writes through its own file description: reading the log through a shared one (seek, read)
        # would move the offset gnnd writes at, and its next line would overwrite the start of the log.
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(command, stderr=log, stdout=log, env={**os.environ, **(env or {})})
        STARTED.append(self)
        # Ready once gnnd logs `event=serving`: the socket file appears earlier, before the metrics
        # endpoint and the gRPC server are up.
        deadline = time.time() + 30
        while " event=serving " not in self.output():
            if self.proc.poll() is not None:
                raise RuntimeError(f"gnnd exited with {self.proc.returncode}: {self.output()}")
            if time.time() > deadline:
                raise RuntimeError(f"gnnd did not start: {self.output()}")
            time.sleep(0.02)

    def output(self):
        return self.log_path.read_text()

    def gnnctl(self, *args, check=True):
        proc = subprocess.run([GNNCTL, f"--address={self.address}", *map(str, args)], capture_output=True, text=True)
        if check:
            assert proc.returncode == 0, proc.stderr
        return proc

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=timeout)
        return self.proc.returncode


def generate(path, *flags):
    subprocess.run([GNNCTL, "generate", "--preset", "tiny", *map(str, flags), str(path)], check=True,
                   capture_output=True)
    return path


def edgelist_link_dataset(root, name, seed, nodes, edges, train, dim):
    """An edge-list dataset at root/name: `edges` random pairs over `nodes` nodes (numpy's generator with `seed`),
    the first `train` of them its train edge split, `dim` float32 features per node. Returns its directory."""
    import numpy as np
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, nodes, size=(2, edges))
    (root / "splits").mkdir()
    np.save(root / "edges.npy", pairs)
    np.save(root / "splits" / "train.npy", pairs[:, :train])
    np.save(root / "features.npy", rng.standard_normal((nodes, dim)).astype(np.float32))
    subprocess.run([GNNCTL, "import", "--format=edgelist", root / "edges.npy", root / name,
                    f"--edge-splits={root / 'splits'}", f"--features={root / 'features.npy'}"], check=True,
                   capture_output=True)
    return root / name


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now (for torch.distributed's rendezvous, a part's peer port):
    below the kernel's ephemeral range, where the ports of other processes' outgoing connections (the peers' own,
    UCX's) are taken from, so none takes it between this call and the listener's bind."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral = int(f.read().split()[0])
    low = max(1024, ephemeral - 12000)
    for _ in range(200):
        port = random.randrange(low, ephemeral)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return str(port)
    raise RuntimeError(f"no free port in [{low}, {ephemeral})")


NOBODY = 65534  # the second uid of the tests that run as root


def as_nobody():
    """A child process's preexec_fn: it runs as uid and gid 65534, without supplementary groups."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
