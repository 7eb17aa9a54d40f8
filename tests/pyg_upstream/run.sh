#!/usr/bin/env bash
# PyG's own loader tests through gnnd's loaders (README.md beside this file).
#   tests/pyg_upstream/run.sh PYG_TEST_DIR [DEVICE] [pytest arguments...]
# PYG_TEST_DIR: PyG's test/ directory at the version installed (its conftest.py and loader/), e.g. from
# `git archive 2.8.0.post1 test` of PyG's repository. DEVICE: where gnnd samples, cpu (default) or cuda:N.
# GNND, GNNCTL and GNND_CLIENT_LIBRARY name the build's binaries (as for tests/python). PyG is imported as
# installed, or from PYG_SOURCE (a checkout) when that is set.
set -euo pipefail
tests=$(cd "$1" && pwd)
device=${2:-cpu}
shift $(($# >= 2 ? 2 : 1))
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$tests"
GNND_DEVICE=$device PYTHONPATH="$here:$repo/client/python${PYG_SOURCE:+:$PYG_SOURCE}${PYTHONPATH:+:$PYTHONPATH}" \
  "${PYTHON:-/usr/bin/python3}" -m pytest -p gnnd_pyg_adapter -p no:cacheprovider -q -rs -m "not rag" \
  loader/test_neighbor_loader.py loader/test_link_neighbor_loader.py "$@"
