"""The README's commands run as written: every `sh` and `python` block, in order, as one shell session from a
directory laid out as the repository's root (build/ is the build under test; examples/, client/ and deploy/
are the sources), the python blocks by the virtual environment's interpreter the README makes. gnnd listens
where $GNND_ADDRESS says (a socket of this test's own), as the README's clients do. Two blocks are checked
rather than run: the set-up commands (what CI runs: .ci/run runs the second) and the Install section's build
(CI's own first step; this test runs on its result). Run by ctest with GNND set."""
import os
import pathlib
import re
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GNND", "")).resolve().parents[1] if os.environ.get("GNND") else None
SETUP = ("bash deploy/quickstart.sh", "bash tests/run_all.sh")


def blocks():
    """(language, text) of every fenced sh and python block of the README, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(sh|python)\n(.*?)^```$", (REPO / "README.md").read_text(),
                                                          re.S | re.M)]


def test_the_set_up_commands_are_what_ci_runs():
    first = blocks()[0][1].splitlines()
    assert [line.split("#")[0].strip() for line in first] == list(SETUP)
    assert "bash tests/run_all.sh" in (REPO / ".ci/run").read_text()
    build = blocks()[1][1]
    assert "deploy/install-deps.sh" in build and "cmake --build build" in build


@pytest.mark.skipif(BUILD is None or not any((BUILD / "python").glob("gnnd-*.whl")),
                    reason="needs a build with the Python package's wheel (GNND set, build/python/gnnd-*.whl)")
def test_every_command_block_runs(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    os.symlink(BUILD, root / "build")
    for source in ("examples", "client", "deploy"):
        os.symlink(REPO / source, root / source)
    script = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT  # a gnnd left by a failed block"]
    for i, (language, text) in enumerate(blocks()[2:], start=2):
        if language == "sh":
            script.append(text)
        else:
            (tmp_path / f"block{i}.py").write_text(text)
            script.append(f".venv/bin/python {tmp_path / f'block{i}.py'}")
    (tmp_path / "readme.sh").write_text("\n".join(script) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("GNND_CLIENT_LIBRARY", "PYTHONPATH", "GNNCTL")}
    env.update(GNND_ADDRESS=f"unix:{tmp_path}/readme{os.getpid()}.sock", PATH=f"/usr/bin:{env['PATH']}")
    proc = subprocess.run(["bash", str(tmp_path / "readme.sh")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = proc.stdout
    assert "epoch 1: " in out and "steps, loss" in out
    assert "(['" in out and "paper" in out  # the typed batch's metadata
    assert "torch.Size([2, 1024])" in out  # 512 positives and as many binary negatives
    assert "batches with the features read from storage" in out
    assert not (root / "data" / "mine.partial").exists() and (root / "data" / "mine" / "manifest.textproto").exists()
