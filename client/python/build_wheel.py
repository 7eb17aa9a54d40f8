"""Builds the wheel of the package in the working directory into DIR with setuptools (PEP 517), quietly:
setuptools' log is shown only if the build fails. Run by client/python/CMakeLists.txt."""
import contextlib
import io
import sys

from setuptools import build_meta

log = io.StringIO()
try:
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        build_meta.build_wheel(sys.argv[1])
except BaseException:
    sys.stderr.write(log.getvalue())
    raise
