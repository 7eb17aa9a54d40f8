#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 30) from its seed corpus (tests/fuzz/corpus/<target>/), all at
# once (each bounded by time, sharing the cores), and prints each one's executions; any crash, leak or undefined behavior fails
# the run, its input kept in BUILD_DIR/fuzz-findings/.
# Usage: bash tests/fuzz/run.sh BUILD_DIR [SECONDS]     (BUILD_DIR configured with -DGNND_SANITIZE=fuzz)
set -uo pipefail
build=$(realpath "$1")
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/fuzz-findings"
fuzz() {  # fuzz TARGET: its log in $work/TARGET.log, its status in $work/TARGET.status
  local target=$1
  mkdir -p "$work/$target"
  "$build/tests/fuzz/$target" "$work/$target" "$here/corpus/$target" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/fuzz-findings/$target-" \
    >"$work/$target.log" 2>&1
  echo $? >"$work/$target.status"
}
targets=(npy_fuzz text_proto_fuzz npz_fuzz csv_fuzz session_request_fuzz peer_message_fuzz)
for target in "${targets[@]}"; do
  fuzz "$target" &
done
wait
passed=0
failed=0
for target in "${targets[@]}"; do
  if [ "$(cat "$work/$target.status")" = 0 ]; then
    echo "$target: $(awk '/stat::number_of_executed_units/ {print $2}' "$work/$target.log") executions in ${seconds} s," \
      "$(ls "$work/$target" | wc -l) new corpus entries, no findings"
    passed=$((passed + 1))
  else
    echo "$target: FINDING"
    tail -40 "$work/$target.log"
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
