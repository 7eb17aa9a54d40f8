"""deploy/bundle.sh makes a relocatable archive: unpacked in a fresh directory and used with nothing but its
env.sh (a clean environment: no build tree on any path), it generates a dataset, serves it with gnnd and
feeds a Python trainer from the bundle's own package and client library, and from its wheel installed into a
virtual environment."""
import os
import pathlib
import subprocess
import tarfile

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GNND", "build/server/gnnd")).resolve().parents[1]

TRAINER = """
import gnnd, gnnd._native as native, sys
assert native.bound().path.startswith(sys.argv[1]), native.bound().path
with gnnd.Loader(address=sys.argv[2], dataset="bundled", batch_size=500, fanouts=[5, 3], output="numpy") as loader:
    steps = sum(1 for batch in loader)
    assert steps == len(loader) > 0
print("epoch of", steps, "batches")
"""


def test_unpacked_bundle_serves_a_trainer(tmp_path):
    archive = subprocess.run(["bash", str(REPO / "deploy/bundle.sh"), str(BUILD), str(tmp_path / "out")],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert pathlib.Path(archive).name.startswith("gnnd-") and archive.endswith(".tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "unpacked")
    (root,) = (tmp_path / "unpacked").iterdir()
    assert {p.name for p in root.iterdir()} == {"bin", "lib", "python", "env.sh"}
    sanitizer = {k: v for k, v in os.environ.items() if k in ("LD_PRELOAD", "ASAN_OPTIONS", "TSAN_OPTIONS")}
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **sanitizer}
    socket = tmp_path / "bundle.sock"
    script = f"""
set -e
source {root}/env.sh
gnnctl generate --preset tiny --seed 5 {tmp_path}/data > /dev/null 2>&1
gnnd --listen=unix:{socket} --dataset=bundled={tmp_path}/data 2> {tmp_path}/gnnd.log &
daemon=$!
for i in $(seq 300); do [ -S {socket} ] && break; sleep 0.1; done
/usr/bin/python3 -c '{TRAINER}' {root} unix:{socket}
/usr/bin/python3 -m venv --system-site-packages {tmp_path}/venv
{tmp_path}/venv/bin/pip install -q --no-index --find-links {root}/python gnnd
env -u PYTHONPATH -u GNND_CLIENT_LIBRARY {tmp_path}/venv/bin/python -c '{TRAINER}' {tmp_path}/venv unix:{socket}
kill $daemon
wait $daemon
"""
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr + (tmp_path / "gnnd.log").read_text()
    assert "epoch of" in proc.stdout
