#!/usr/bin/env bash
# Builds and runs every test; tests/README.md says what runs where, and how long each part takes.
#   plain      RelWithDebInfo (CUDA compiled where nvcc is, for sm_90): every C++ and Python test
#   asan       ASan+UBSan (Debug): every C++ test, the Python tests of gnnd's concurrency and lifetimes
#   tsan       TSan: the same
#   fuzz       clang + libFuzzer: every fuzz target for GNND_FUZZ_SECONDS (default 20) each
# Tests run side by side (ctest -j, one entry per Python file); builds are unity builds of only what the
# tests run. A table of each stage's seconds comes last.
# Usage: bash tests/run_all.sh            everything (what CI runs)
#        bash tests/run_all.sh --quick    the developer's loop: a CPU-only plain build and its tests
#        (GNND_SKIP_SANITIZERS=1: the plain build with CUDA and its tests only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
jobs=$(nproc)
timings=()
stage() {  # stage NAME COMMAND...: runs it, records its seconds
  local name=$1 start=$SECONDS
  shift
  echo "=== $name ==="
  "$@"
  timings+=("$name $((SECONDS - start))")
}
build() {  # build DIR [cmake args...] [-- targets...]
  local dir=$1 args=() targets=()
  shift
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
  [ "${1:-}" = "--" ] && { shift; targets=("$@"); }
  # Line tables are all the test builds need (sanitizer reports, gdb backtraces): -g1 compiles a quarter faster.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_UNITY_BUILD=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    "-DCMAKE_CXX_FLAGS_DEBUG=-g1" "-DCMAKE_CUDA_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" "${args[@]}" >/dev/null
  if [ ${#targets[@]} -gt 0 ]; then
    cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
  else
    cmake --build "$dir" -j "$jobs"
  fi
}
test_build() { ctest --test-dir "$1" --output-on-failure -j "$jobs"; }
report() {
  echo "=== seconds per stage ==="
  local total=0
  for t in "${timings[@]}"; do
    printf '%-12s %5d\n' ${t}
    total=$((total + ${t##* }))
  done
  printf '%-12s %5d\n' total "$total"
}
trap report EXIT

stage apt bash deploy/install-deps.sh
if [ $quick = 1 ]; then
  stage build build build-quick -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNND_CUDA=OFF
  stage test test_build build-quick
  exit 0
fi
stage build build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNND_CUDA=ON -DGNND_CUDA_ARCHITECTURES=90
stage test test_build build
[ "${GNND_SKIP_SANITIZERS:-0}" = 1 ] && exit 0
# What the sanitizer builds' tests run (no benchmarks, no GPU code: sanitizer builds are CPU-only).
tested=(unit_tests server_tests client_abi_tests trainer_check gnnd gnnctl gnnd_client)
stage asan-build build build-asan -DCMAKE_BUILD_TYPE=Debug -DGNND_SANITIZE=address -- "${tested[@]}"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 stage asan-test test_build build-asan
stage tsan-build build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNND_SANITIZE=thread -- "${tested[@]}"
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" stage tsan-test test_build build-tsan
CC=clang CXX=clang++ stage fuzz-build build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNND_SANITIZE=fuzz -- fuzz_targets
stage fuzz bash tests/fuzz/run.sh build-fuzz "${GNND_FUZZ_SECONDS:-20}"
