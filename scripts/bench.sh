#!/usr/bin/env bash
# make bench: one run, one table, every figure beside its reference and the ratio between them.
#   - forwarding: the same closed-loop ring sender (64-byte IPv4, 64 in flight per host) through a
#     bare ring forwarder (this machine's veth limit), the reference switch and BMv2 (the fast build
#     in /opt/p4-perf where installed), 1 port hairpin and 4 ports (cmd/ina-bench);
#   - all-reduce goodput per worker, one job of 2, 4 and 8 workers, 1 MiB tensors, no rate limit,
#     through the reference switch and through BMv2 (ina-demo; every result checked exact);
#   - INA vs no INA with 4 workers where the PS link binds (every port rate-limited), ideal ratio 4;
#   - the PS merge rate against copy() of the same bytes (Go benchmarks, per second of CPU time).
# The 4-worker goodput is also compared with this run's ring limit: a chunk of 4 workers costs 10
# ring sends and 10 ring receives (4 in and 1 out at the switch, 1 in and out at the PS, 4 results
# out), and the hairpin ring forwarder measures one send+receive pair per 1/R s of the two cores,
# so the limit is R/5 chunks/s, R*409.6 bit/s of goodput per worker.
# Knobs: BENCH_SIZE (values, 262144 = 1 MiB), BENCH_ITERS (4), BENCH_RATE (Mbit/s per port for INA
# vs no INA, 20), BENCH_FWD_SECONDS (3), BENCH_OUT (also write the table there, e.g. docs/bench.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
GO=${GO:-go}
SIZE=${BENCH_SIZE:-262144}
ITERS=${BENCH_ITERS:-4}
RATE=${BENCH_RATE:-20}
FWD=${BENCH_FWD_SECONDS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

BMV2_BIN=""
if [ -x /opt/p4-perf/bin/simple_switch_grpc ]; then BMV2_BIN=/opt/p4-perf/bin/simple_switch_grpc; BMV2_NAME="BMv2 fast build"
elif command -v simple_switch_grpc >/dev/null; then BMV2_BIN=$(command -v simple_switch_grpc); BMV2_NAME="BMv2"; fi
BMV2_SKIP=""
if [ -z "$BMV2_BIN" ]; then BMV2_SKIP="simple_switch_grpc is not installed"
elif [ ! -f "$BUILD/ina.json" ]; then BMV2_SKIP="no compiled program $BUILD/ina.json (make p4 needs p4c)"; fi

rows=()   # name|value|reference|ratio|target|verdict
notes=()
row() { rows+=("$1|$2|$3|$4|$5|$6"); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
meets() { awk -v r="$1" -v t="$2" 'BEGIN { if (r == "-") print "-"; else if (r + 0 >= t + 0) print "met"; else print "MISSED" }'; }
k() { awk -v v="$1" 'BEGIN { printf "%.1fk", v / 1000 }'; }

header="make bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
busy=$(ps -eo pcpu=,comm= --sort=-pcpu | awk 'NR <= 6 && $1 > 5 { printf "%s%s %s%%", sep, $2, $1; sep = ", " }')
if [ -n "$busy" ]; then header="$header; busiest processes at start: $busy"; fi

if [ "$(id -u)" != 0 ]; then
  notes+=("SKIP: forwarding and all-reduce rows: need root (veth pairs, network namespaces, AF_PACKET)")
else
  # ---- forwarding
  "$BUILD/bin/ina-bench" forward -bin "$BUILD/bin" ${BMV2_BIN:+-bmv2 "$BMV2_BIN"} -bmv2-json "$BUILD/ina.json" \
    -duration "${FWD}s" >"$out/fwd.txt" 2>&1 || { cat "$out/fwd.txt" >&2; exit 1; }
  fwd() { awk -v s="$1" -v p="$2" '$1 == "forward:" && $2 == "switch=" s && $3 == "ports=" p { sub("pkts_per_s=", "", $4); print $4 }' "$out/fwd.txt"; }
  for p in 1 4; do
    ring=$(fwd ring $p) ref=$(fwd ref $p) bm=$(fwd bmv2 $p)
    r=$(ratio "$ref" "$ring")
    row "forwarding, $p port(s): reference switch" "$(k "$ref") pkt/s" "bare ring forwarder $(k "$ring") pkt/s" "$r" ">= 0.80" "$(meets "$r" 0.80)"
    if [ -n "$bm" ]; then
      row "forwarding, $p port(s): $BMV2_NAME" "$(k "$bm") pkt/s" "bare ring forwarder $(k "$ring") pkt/s" "$(ratio "$bm" "$ring")" "" ""
      row "forwarding, $p port(s): ref / $BMV2_NAME" "$(k "$ref") pkt/s" "$BMV2_NAME $(k "$bm") pkt/s" "$(ratio "$ref" "$bm")" "" ""
    fi
  done
  notes+=("the bare ring forwarder receives and sends on one goroutine per port in turn; the reference switch receives and sends on different goroutines, so it can pass it when two cores are free")
  if grep -q '^SKIP' "$out/fwd.txt"; then notes+=("$(grep '^SKIP' "$out/fwd.txt")"); fi
  ring1=$(fwd ring 1)

  # ---- all-reduce goodput
  demo() { # $1 = name, then ina-demo flags; prints the job's goodput_mbps
    local name=$1; shift
    if ! "$BUILD/bin/ina-demo" -bin "$BUILD/bin" -dir "$out/$name" -timeout 300s "$@" >"$out/$name.txt" 2>&1; then
      { echo "bench: the $name run failed:"; tail -5 "$out/$name.txt"; } >&2
      echo 0
      return
    fi
    grep -o 'goodput_mbps=[0-9.]*' "$out/$name.txt" | head -1 | cut -d= -f2
  }
  common=(-seed 1 -size "$SIZE" -iters "$ITERS" -compute 0 -active-slots 64 -window 64)
  for n in 2 4 8; do
    ref=$(demo "ref$n" -switch ref -job "1:$n:1" "${common[@]}")
    if [ -z "$BMV2_SKIP" ]; then
      bm=$(PATH="$(dirname "$BMV2_BIN"):$PATH" demo "bmv2$n" -switch bmv2 -bmv2-json "$BUILD/ina.json" -job "1:$n:1" "${common[@]}")
      r=$(ratio "$ref" "$bm")
      target="" verdict=""
      if [ "$n" = 4 ]; then target=">= 50" verdict=$(meets "$r" 50); fi
      row "all-reduce goodput/worker, $n workers: ref" "$ref Mbit/s" "$BMV2_NAME $bm Mbit/s" "$r" "$target" "$verdict"
    else
      row "all-reduce goodput/worker, $n workers: ref" "$ref Mbit/s" "" "" "" ""
    fi
    if [ "$n" = 4 ]; then
      r=$(ratio "$ref" 150)
      row "all-reduce goodput/worker, 4 workers: ref" "$ref Mbit/s" "target 150 Mbit/s" "$r" ">= 1.00" "$(meets "$r" 1)"
      if [ -n "$ring1" ]; then
        limit=$(awk -v r="$ring1" 'BEGIN { printf "%.1f", r * 409.6 / 1e6 }')
        r=$(ratio "$ref" "$limit")
        row "all-reduce goodput/worker, 4 workers: ref" "$ref Mbit/s" "this run's ring limit $limit Mbit/s" "$r" ">= 0.80" "$(meets "$r" 0.80)"
      fi
    fi
  done
  if [ -n "$BMV2_SKIP" ]; then notes+=("SKIP: BMv2 all-reduce columns: $BMV2_SKIP"); fi

  # ---- INA vs no INA where the PS link binds
  lim=(-switch ref -size 65536 -iters "$ITERS" -compute 0 -active-slots 64 -window 64 -rate "$RATE" -ecn-threshold 16)
  on=$(demo inaon -job 1:4:1:on "${lim[@]}")
  off=$(demo inaoff -job 1:4:1:off "${lim[@]}")
  row "INA vs no INA, 4 workers, ports at $RATE Mbit/s" "INA $on Mbit/s" "no INA $off Mbit/s" "$(ratio "$on" "$off")" "ideal 4" ""
  for d in "$out"/*/; do # receive-ring drops the kernel reported to the agents and the switch
    n=$(grep -rhoE 'kernel_drops=[0-9]+' "$d" 2>/dev/null | awk -F= '{ s += $2 } END { print s + 0 }')
    if [ "$n" != 0 ]; then notes+=("kernel receive-ring drops in the $(basename "$d") run: $n"); fi
  done
fi

# ---- PS merge vs copy(), in GB per second of CPU time (waiting for a core on a shared machine
# does not count), the best of three interleaved rounds
bench=$($GO test -run '^$' -bench '^Benchmark(Merge|Copy)$' -benchmem -benchtime 1s -count 3 ./ps)
gbs() { echo "$bench" | awk -v b="$1" '$1 ~ "^"b"-" { for (i = 1; i <= NF; i++) if ($(i) == "cpu-GB/s" && $(i-1) > m) m = $(i-1) } END { printf "%.2f", m }'; }
merge=$(gbs BenchmarkMerge) cp=$(gbs BenchmarkCopy)
allocs=$(echo "$bench" | awk '$1 ~ /^BenchmarkMerge-/ { for (i = 1; i <= NF; i++) if ($(i) == "allocs/op") a = $(i-1) } END { print a }')
r=$(ratio "$merge" "$cp")
row "PS merge, 8 workers, no INA ($allocs allocs/op)" "$merge GB/s (CPU)" "copy() $cp GB/s (CPU)" "$r" ">= 0.25" "$(meets "$r" 0.25)"

{
  echo "$header"
  printf '%s\n' "${rows[@]}" | awk -F'|' '
    { for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR }
    END {
      split("measurement|value|reference|ratio|target|", h, "|")
      for (i = 1; i <= 6; i++) if (length(h[i]) > w[i]) w[i] = length(h[i])
      line = ""; for (i = 1; i <= 6; i++) line = line sprintf(i < 6 ? "%-" w[i] "s  " : "%s", h[i]); print line
      for (r = 1; r <= n; r++) { line = ""; for (i = 1; i <= 6; i++) line = line sprintf(i < 6 ? "%-" w[i] "s  " : "%s", c[r, i]); print line }
    }'
  for n in "${notes[@]}"; do echo "$n"; done
} | tee "$out/table.txt"
if [ -n "${BENCH_OUT:-}" ]; then
  {
    echo "# make bench"
    echo
    echo "Written by \`BENCH_OUT=$BENCH_OUT make bench\` (\`scripts/bench.sh\` says what each row measures and"
    echo "how). One run on a machine shared with other work: its first line says how busy it was."
    echo
    echo '```'
    cat "$out/table.txt"
    echo '```'
  } >"$BENCH_OUT"
fi
