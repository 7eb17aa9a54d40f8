#!/usr/bin/env bash
# Rows fetched from a peer per second (bench/peer_bench.cc) beside ucx_perftest's active-message bandwidth at the
# message size gnnd's row answers have (up to 1 MiB of rows each, server/peers/peer_network.cc), per transport
# (tcp: UCX_TLS=tcp, TCP on loopback; shm: --shared_memory, which lets UCX pick its shared-memory transports, as
# gnnd --peer-shared-memory does), in one run on one host.
# Usage: bash bench/peer_bench.sh [PEER_BENCH]   (default: peer_bench on PATH; needs ucx-utils' ucx_perftest)
set -euo pipefail
peer_bench=${1:-peer_bench}
port=$((20000 + RANDOM % 20000))
echo "| transport | row bytes | rows a fetch | fetches in flight | gnnd rows/s | gnnd GB/s | ucx_perftest ucp_am_bw GB/s (1 MiB, 4 outstanding) | ratio |"
echo "|---|---|---|---|---|---|---|---|"
for tls in tcp shm; do
  # ucx_perftest's bandwidth at 1 MiB messages, 4 outstanding: the transport's ceiling for messages this size.
  UCX_TLS=$tls,self ucx_perftest -p "$port" >/dev/null 2>&1 &
  server=$!
  sleep 1
  perf=$(UCX_TLS=$tls,self ucx_perftest 127.0.0.1 -p "$port" -t ucp_am_bw -s 1048576 -n 3000 -w 200 -O 4 2>/dev/null |
         awk '/Final:/ {print $(NF-2)}')  # MB/s (2^20) of the final line's average bandwidth
  wait "$server" || true
  port=$((port + 1))
  perf_gbs=$(awk -v m="$perf" 'BEGIN {printf "%.2f", m * 1048576 / 1e9}')
  for row_bytes in 512 4096; do
    if [ "$tls" = tcp ]; then pick=(env UCX_TLS=tcp,self); else pick=(env); fi
    shared=$([ "$tls" = shm ] && echo true || echo false)
    line=$("${pick[@]}" "$peer_bench" --shared_memory="$shared" --row_bytes="$row_bytes" --table_rows=$((512 * 1048576 / row_bytes)) \
           --batch_rows=65536 --in_flight=4 --fetches=20 --repetitions=3 --port="$port" 2>/dev/null | grep rows/s)
    port=$((port + 2))
    rows=$(echo "$line" | sed -E 's/.*: ([0-9.e+]+) rows\/s.*/\1/')
    gbs=$(echo "$line" | sed -E 's/.*rows\/s, ([0-9.e+]+) GB\/s.*/\1/')
    ratio=$(awk -v a="$gbs" -v b="$perf_gbs" 'BEGIN {printf "%.2f", a / b}')
    echo "| $tls | $row_bytes | 65536 | 4 | $rows | $gbs | $perf_gbs | $ratio |"
  done
done
