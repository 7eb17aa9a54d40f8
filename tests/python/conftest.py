"""Stops the gnnd daemons a test started in its body and left running (an assertion failed before its stop()):
they would hold their instance names, shared memory and ports, and the next tests (or the next run) would fail
for that instead of their own reasons. Daemons that fixtures start are theirs to stop."""
import pytest

from daemon_util import STARTED


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    first = len(STARTED)
    yield
    for daemon in STARTED[first:]:
        if daemon.proc.poll() is None:
            daemon.stop(timeout=60)
