"""The Python client as a trainer installs and loads it: `pip install --no-index --find-links build/python
gnnd` in a virtual environment (offline, the README's line) gives a working package with the library inside
it; the library is bound at first use (a missing one is a clear error then, not at import), its ABI version is
checked, and the batch's array names come from it. Run by ctest with GNND, GNNCTL and
GNND_CLIENT_LIBRARY set."""
import ctypes
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import gnnd
from daemon_util import Daemon, generate

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_python(code, env_changes, cwd, python=sys.executable):
    env = {k: v for k, v in os.environ.items() if k not in ("GNND_CLIENT_LIBRARY", "PYTHONPATH")}
    env.update(env_changes)
    return subprocess.run([python, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("package")
    d = Daemon(root, f"--dataset=tiny={generate(root / 'tiny', '--seed', 6)}")
    yield d
    assert d.stop() == 0, d.output()


def test_import_needs_no_library_and_first_use_says_what_is_missing(tmp_path):
    code = ("import gnnd\n"
            "try:\n"
            "    gnnd.Loader(dataset='x')\n"
            "except gnnd.LibraryError as e:\n"
            "    print('LibraryError:', e)\n")
    proc = run_python(code, {"PYTHONPATH": str(REPO / "client/python"),
                             "GNND_CLIENT_LIBRARY": str(tmp_path / "libgnnd_client.so")}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "LibraryError: libgnnd_client.so not found" in proc.stdout
    assert "GNND_CLIENT_LIBRARY" in proc.stdout and str(tmp_path / "libgnnd_client.so") in proc.stdout


def bind_refusal(tmp_path, change):
    """What binding the library says after `change` (a line of Python) to what the package expects of it."""
    code = ("import gnnd._native as native\n"
            f"{change}\n"
            "try:\n"
            "    native.bound()\n"
            "except native.LibraryError as e:\n"
            "    print('LibraryError:', e)\n")
    proc = run_python(code, {"PYTHONPATH": str(REPO / "client/python"),
                             "GNND_CLIENT_LIBRARY": os.environ["GNND_CLIENT_LIBRARY"]}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_library_of_another_abi_version_is_refused(tmp_path):
    said = bind_refusal(tmp_path, "native.API_VERSION_MINOR = 999")
    header = (REPO / "client/include/gnnd_client.h").read_text()
    minor = header.split("#define GNND_API_VERSION_MINOR ")[1].split()[0]  # the library's own
    assert f"implements the gnnd client API 1.{minor}; this package needs 1.999" in said


def test_a_library_with_other_batch_arrays_is_refused(tmp_path):
    said = bind_refusal(tmp_path, "native.ARRAY_NAMES = native.ARRAY_NAMES[1:]")
    assert "names the batch arrays ['node_ids', 'num_nodes_per_hop'" in said
    assert "this package knows ['num_nodes_per_hop'" in said


def test_array_names_come_from_the_library():
    lib = ctypes.CDLL(os.environ["GNND_CLIENT_LIBRARY"])
    lib.gnnd_batch_array_name.restype = ctypes.c_char_p
    names = []
    while (name := lib.gnnd_batch_array_name(len(names))) is not None:
        names.append(name.decode())
    assert gnnd.ARRAY_NAMES == tuple(names)
    assert len(names) == 7 and names[0] == "node_ids" and names[5] == "features"


def test_options_of_an_unknown_size_are_refused(daemon):
    from gnnd import _native
    bound = _native.bound()
    client = ctypes.c_void_p()
    _native.check(bound.lib.gnnd_connect(daemon.address.encode(), 5000, ctypes.byref(client)))
    try:
        fanouts = (ctypes.c_int32 * 1)(3)
        for size in (0, ctypes.sizeof(_native.SessionOptions) + 8):
            options = _native.SessionOptions(dataset=b"tiny", batch_size=100, fanouts=fanouts, num_fanouts=1)
            options.size = size
            session = ctypes.c_void_p()
            with pytest.raises(gnnd.GnndError) as error:
                _native.check(bound.lib.gnnd_open_session(client, ctypes.byref(options), ctypes.byref(session)))
            assert error.value.code == "INVALID_ARGUMENT"
            assert f"options.size = {size} (start from GNND_SESSION_OPTIONS_INIT" in error.value.message
    finally:
        bound.lib.gnnd_client_free(client)


def install_and_read_an_epoch(wheels, daemon, tmp_path):
    """pip install --no-index --find-links WHEELS gnnd in a fresh virtual environment, then an epoch read with
    nothing set (no GNND_CLIENT_LIBRARY, no PYTHONPATH): the package and its library both in the venv."""
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True,
                   capture_output=True)
    pip = subprocess.run([str(venv / "bin/pip"), "install", "--no-index", "--find-links", str(wheels), "gnnd"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    code = ("import gnnd, gnnd._native as native\n"
            f"loader = gnnd.Loader(address={daemon.address!r}, dataset='tiny', batch_size=300, fanouts=[4], "
            "output='numpy')\n"
            "steps = sum(1 for _ in loader)\n"
            "print(gnnd.__file__, native.bound().path, steps, len(loader))\n")
    proc = run_python(code, {}, tmp_path, python=str(venv / "bin/python"))
    assert proc.returncode == 0, proc.stderr
    where, library, steps, expected = proc.stdout.split()
    assert where.startswith(str(venv)) and library.startswith(str(venv)), (where, library)
    assert int(steps) == int(expected) > 0


BUILD = pathlib.Path(os.environ.get("GNND", "build/server/gnnd")).resolve().parents[1]
needs_wheel = pytest.mark.skipif(not list((BUILD / "python").glob("gnnd-*.whl")),
                                 reason=f"no wheel in {BUILD / 'python'} (the build makes it where /usr/bin/python3 "
                                        "has setuptools and wheel)")


@needs_wheel
def test_pip_install_as_the_readme_says_reads_an_epoch_with_nothing_set(daemon, tmp_path):
    """The README's one line, offline, from the wheel the build made: the library comes inside the package."""
    install_and_read_an_epoch(BUILD / "python", daemon, tmp_path)
    # the source tree stays clean: the wheel was made in the build tree
    assert not list((REPO / "client/python").glob("*.egg-info")) and not (REPO / "client/python/build").exists()


@needs_wheel
def test_cmake_install_puts_the_same_wheel_beside_the_programs(daemon, tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], check=True, capture_output=True)
    assert (prefix / "bin/gnnd").is_file() and (prefix / "lib/libgnnd_client.so").is_file()
    install_and_read_an_epoch(prefix / "share/gnnd/python", daemon, tmp_path)
