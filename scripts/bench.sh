#!/usr/bin/env bash
# make bench: all-reduce goodput with INA vs the same job with INA disabled through the same
# rate-limited switch (the PS link is the bottleneck; ideal ratio = number of workers), the PS's
# merge throughput and the worker's packet rate (Go benchmarks).
# Knobs: BENCH_WORKERS (4), BENCH_RATE (Mbit/s per port, 8: low enough that the links, not the CPU
# of a 2-core machine running switch and agents, are the bottleneck), BENCH_SIZE (values, 32768),
# BENCH_ITERS (6). The goodput ceiling is RATE x 256/314 (INA payload over frame bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
GO=${GO:-go}
N=${BENCH_WORKERS:-4}
RATE=${BENCH_RATE:-8}
SIZE=${BENCH_SIZE:-32768}
ITERS=${BENCH_ITERS:-6}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

rows=()
if [ "$(id -u)" != 0 ]; then
  rows+=("SKIP: all-reduce goodput INA vs no INA: needs root (network namespaces, veth pairs, AF_PACKET)")
else
  run() { # $1 = on|off
    "$BUILD/bin/ina-demo" -bin "$BUILD/bin" -dir "$out/$1" -prefix inab -switch ref -job "1:$N:1:$1" \
      -active-slots 64 -window 64 -size "$SIZE" -iters "$ITERS" -compute 0 -rate "$RATE" -ecn-threshold 16 >"$out/$1.txt" 2>&1 || {
      { echo "bench: the INA-$1 run failed:"; tail -5 "$out/$1.txt"; } >&2; return 1; }
    grep -o 'goodput_mbps=[0-9.]*' "$out/$1.txt" | head -1 | cut -d= -f2
  }
  on=$(run on)
  off=$(run off)
  ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }')
  rows+=("$(printf '%-44s %12s %12s %8s %6s' "all-reduce goodput, $N workers, links ${RATE} Mbit/s" "$on Mbit/s" "$off Mbit/s" "${ratio}x" "${N}x")")
fi

merge=$($GO test -run '^$' -bench '^BenchmarkMerge$' -benchtime 2s ./ps | awk '/^BenchmarkMerge/ { for (i = 1; i <= NF; i++) if ($(i) == "MB/s") printf "%.2f", $(i-1) / 1000 }')
rate=$($GO test -run '^$' -bench '^BenchmarkPacketRate$' -benchtime 2s ./worker | awk '/^BenchmarkPacketRate/ { for (i = 1; i <= NF; i++) if ($(i) == "chunks/s") printf "%.0f", $(i-1) }')

printf '%-44s %12s %12s %8s %6s\n' "benchmark" "INA" "no INA" "ratio" "ideal"
for r in "${rows[@]}"; do echo "$r"; done
printf '%-44s %12s\n' "PS merge throughput (8 workers, no INA)" "$merge GB/s"
printf '%-44s %12s\n' "worker packet rate (echo peer, in memory)" "$rate pkt/s"
