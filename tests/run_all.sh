#!/usr/bin/env bash
# Builds and runs every test: a release build (CUDA code compiled when nvcc is present; GPU tests skip
# without a GPU), then ASan+UBSan and TSan builds of the same suite, then every fuzz target (clang,
# libFuzzer) for GNND_FUZZ_SECONDS (default 30) each.
# Usage: bash tests/run_all.sh            (set GNND_SKIP_SANITIZERS=1 for the plain build only)
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
jobs=$(nproc)

run_suite() {  # build dir, extra cmake args...
  local dir=$1; shift
  echo "=== $dir ==="
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}

run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${GNND_SKIP_SANITIZERS:-0}" != 1 ]; then
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DGNND_SANITIZE=address
  TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" run_suite build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNND_SANITIZE=thread
  echo "=== build-fuzz ==="
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNND_SANITIZE=fuzz >/dev/null
  cmake --build build-fuzz --target fuzz_targets -j "$jobs"
  bash tests/fuzz/run.sh build-fuzz "${GNND_FUZZ_SECONDS:-30}"
fi
