#!/usr/bin/env bash
# make bench: BENCH_REPS (5) rounds; each round takes one sample of every measurement, in the same
# order, so the rounds interleave them (A, B, C, A, B, C, ...) and a ratio is the median of the
# ratios within a round (paired, as benchstat compares). Every row is the median with its
# distribution-free confidence interval (for 5 rounds their range, 94%, as benchstat's); a ratio
# with a target is met or missed only when its whole interval lies on one side of the target (else
# OPEN), and only while the interval is within 50% of its median (else SPREAD). ina-bench table
# computes the rows; ina-bench agree A.md B.md says which figures of two runs (BENCH_OUT files)
# have overlapping intervals, and whether the host itself changed speed between them.
#   - forwarding: the same closed-loop ring sender (64-byte IPv4, 64 in flight per host) through a
#     bare ring forwarder (this machine's veth limit), the reference switch and BMv2 (the fast build
#     in /opt/p4-perf where installed), 1 port hairpin and 4 ports (ina-bench forward): the raw
#     forwarding rate;
#   - the all-reduce path's limit: ina-bench path moves the frames of a 4-worker job (INA frames,
#     a send and a receive per chunk at each worker, 4 in and 1 out at the switch, 1 in and 1 out at
#     the PS, 4 out at the switch) through the same veths and processes, doing nothing else; the
#     mean of two runs, one just before and one just after the 4-worker job it is the limit of
#     (runs of 2 s alone swung 93-134 Mbit/s in a row, runs of 6 s 110-115, and the host's speed
#     drifts over minutes: the pair should see the same host);
#   - all-reduce goodput per worker, one job of 2, 4 and 8 workers, 1 MiB tensors, no rate limit,
#     through the reference switch, and 4 workers through BMv2 with 256 KiB tensors (it forwards an
#     order of magnitude slower; goodput is a rate) (ina-demo; every result checked exact);
#   - INA vs no INA with 4 workers where the PS link binds (every port rate-limited), ideal ratio 4;
#   - the tail: a training loop of 4 workers, a 1 MiB gradient all-reduced 200 times with 2 ms of
#     compute between, the job given 128 slots (room for the window's floor under loss, a quarter
#     of them: worker/README.md, "Window and AIMD"), clean and with 1% and 5% loss on every switch
#     port (seeded by the round), the iteration all-reduce time (slowest worker) p50, p90, p99 and
#     max, and how many slow iterations (over 1.5x p50) waited on the retransmission timer, a fast
#     retransmission or a window cut
#     (ina-bench tail over the workers' per-iteration lines);
#   - the PS merge rate against copy() of the same bytes (Go benchmarks, per second of CPU time);
#   - the agents' CPU per chunk (ina-bench agents, medians of 3 interleaved pairs a round): one worker
#     and the PS against the switch model in memory, the thread's CPU clock read around the switch's
#     and the PS's batches (docs/agents.md), on one thread and two (32 timed calls of 1 MiB after
#     300 ms of calls in which the kernel spreads the threads over the cores; chunks per second of
#     wall time; and for each, the process's CPU per chunk and the cores it kept busy, with a spin loop's 2/1
#     on the same host at the same moments as the most two threads could gain: a 2/1 target the
#     spin loop's whole interval lies under is the host's, verdict HOST);
#     as root, the worker agent over AF_PACKET rings on veths beside the bare ring loop on the same
#     path (ina-bench path -workers 1, with and without -agent: the kernel's floor per chunk), and
#     the agent on two threads (-threads 2) beside one: goodput and CPU per chunk.
# Knobs: BENCH_REPS (5), BENCH_SIZE (values, 262144 = 1 MiB), BENCH_ITERS (20: the first, which
# waits for the peers to start, is left out, and the window has long reached its size),
# BENCH_BMV2_SIZE (65536), BENCH_BMV2_ITERS (4), BENCH_RATE (Mbit/s per port for INA vs no INA,
# 20), BENCH_FWD_SECONDS (1), BENCH_PATH_SECONDS (3, each half), BENCH_TAIL_SIZE (262144),
# BENCH_TAIL_ITERS (200), BENCH_TAIL_SLOTS (128), BENCH_OUT (also write the table there, e.g.
# docs/bench.md), BENCH_SAMPLES (also keep every round's samples there), BENCH_LOGS (keep the tail
# runs' logs in that directory, one per round and loss: their workers log every backoff of the
# retransmission timer, ina-worker -trace, which is where a slow round's tail is read).
set -euo pipefail
# The whole script is one block, read before any of it runs: bash otherwise reads a script as it
# goes, and an edit to this file during the quarter of an hour a bench takes broke the run at its end.
{
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
GO=${GO:-go}
REPS=${BENCH_REPS:-5}
SIZE=${BENCH_SIZE:-262144}
ITERS=${BENCH_ITERS:-20}
BMV2_ITERS=${BENCH_BMV2_ITERS:-4}
BMV2_SIZE=${BENCH_BMV2_SIZE:-65536}
RATE=${BENCH_RATE:-20}
FWD=${BENCH_FWD_SECONDS:-1}
PATHS=${BENCH_PATH_SECONDS:-3}
TAIL_SIZE=${BENCH_TAIL_SIZE:-262144}
TAIL_ITERS=${BENCH_TAIL_ITERS:-200}
TAIL_SLOTS=${BENCH_TAIL_SLOTS:-128}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
samples=$out/samples
: >"$samples"
began=$(date +%s)

BMV2_BIN=""
if [ -x /opt/p4-perf/bin/simple_switch_grpc ]; then BMV2_BIN=/opt/p4-perf/bin/simple_switch_grpc; BMV2_NAME="BMv2 fast build"
elif command -v simple_switch_grpc >/dev/null; then BMV2_BIN=$(command -v simple_switch_grpc); BMV2_NAME="BMv2"; fi
BMV2_SKIP=""
# A fresh checkout with BMv2 installed has no compiled program yet: build it where p4c is found
# (scripts/p4.sh prints one SKIP line where it is not), rather than leave the BMv2 rows out.
if [ -n "$BMV2_BIN" ] && [ ! -f "$BUILD/ina.json" ]; then BUILD="$BUILD" scripts/p4.sh v1model >&2; fi
if [ -z "$BMV2_BIN" ]; then BMV2_SKIP="simple_switch_grpc is not installed"
elif [ ! -f "$BUILD/ina.json" ]; then BMV2_SKIP="no compiled program $BUILD/ina.json (make p4 needs p4c)"; fi

notes=()
header="make bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $REPS rounds, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
busy=$(ps -eo pcpu=,comm= --sort=-pcpu | awk 'NR <= 6 && $1 > 5 { printf "%s%s %s%%", sep, $2, $1; sep = ", " }')
if [ -n "$busy" ]; then header="$header; busiest processes at start: $busy"; fi

sample() { echo "$1 $rep $2" >>"$samples"; } # key value, for this round
progress() { echo "bench: round $rep/$REPS, $(($(date +%s) - began)) s: $*" >&2; }
demo() { # $1 = name, then ina-demo flags; leaves the run's output in $out/$name.txt, logs in $out/$name
  local name=$1 n; shift
  rm -rf "${out:?}/$name"
  if ! "$BUILD/bin/ina-demo" -bin "$BUILD/bin" -dir "$out/$name" -timeout 300s "$@" >"$out/$name.txt" 2>&1; then
    { echo "bench: the $name run failed:"; tail -5 "$out/$name.txt"; } >&2
    return 1
  fi
  n=$(grep -rhoE 'kernel_drops=[0-9]+' "$out/$name" 2>/dev/null | awk -F= '{ s += $2 } END { print s + 0 }')  # every worker prints kernel_drops=
  if [ "$n" != 0 ]; then notes+=("kernel receive-ring drops in round $rep's $name run: $n"); fi
}
goodput() { grep -o 'goodput_mbps=[0-9.]*' "$out/$1.txt" | head -1 | cut -d= -f2; }
limit() { # $1 = before or after the job: one run of the 4-worker path's limit, its Mbit/s on stdout
  progress "the all-reduce path's limit, 4 workers ($1)"
  "$BUILD/bin/ina-bench" path -workers 4 -window 64 -duration "${PATHS}s" |
    awk '$1 == "path:" { sub("goodput_mbps=", "", $3); print $3 }'
}

# The PS merge benchmark, built once, run once per round.
$GO test -c -o "$out/ps.test" ./ps

for rep in $(seq 1 "$REPS"); do
  if [ "$(id -u)" = 0 ]; then
    progress "forwarding"
    "$BUILD/bin/ina-bench" forward -bin "$BUILD/bin" ${BMV2_BIN:+-bmv2 "$BMV2_BIN"} -bmv2-json "$BUILD/ina.json" \
      -duration "${FWD}s" >"$out/fwd.txt" 2>&1 || { cat "$out/fwd.txt" >&2; exit 1; }
    awk -v rep="$rep" '$1 == "forward:" { split($2, s, "="); split($3, p, "="); split($4, v, "="); print "fwd_" s[2] "_" p[2], rep, v[2] }' \
      "$out/fwd.txt" >>"$samples"
    if [ "$rep" = 1 ] && grep -q '^SKIP' "$out/fwd.txt"; then notes+=("$(grep '^SKIP' "$out/fwd.txt")"); fi

    common=(-seed 1 -iters "$ITERS" -compute 0 -active-slots 64 -window 64)
    for n in 4 2 8; do
      if [ "$n" = 4 ]; then before=$(limit before); fi
      progress "all-reduce goodput, $n workers, reference switch"
      demo "ref$n" -switch ref -job "1:$n:1" -size "$SIZE" "${common[@]}" && sample "gp_ref$n" "$(goodput "ref$n")"
      if [ "$n" = 4 ]; then
        after=$(limit after)
        sample path4 "$(awk -v a="$before" -v b="$after" 'BEGIN { if (a != "" && b != "") print (a + b) / 2 }')"
        if [ -z "$BMV2_SKIP" ]; then
          progress "all-reduce goodput, 4 workers, $BMV2_NAME"
          PATH="$(dirname "$BMV2_BIN"):$PATH" demo bmv2 -switch bmv2 -bmv2-json "$BUILD/ina.json" -job 1:4:1 \
            -size "$BMV2_SIZE" "${common[@]}" -iters "$BMV2_ITERS" && sample gp_bmv24 "$(goodput bmv2)"
        fi
      fi
    done

    progress "INA vs no INA"
    # Rate-limited, the window settles within the first iteration: 4 are enough (and 20 would
    # add a minute to the bench).
    lim=(-switch ref -size 65536 -iters 4 -compute 0 -active-slots 64 -window 64 -rate "$RATE" -ecn-threshold 16)
    demo inaon -job 1:4:1:on "${lim[@]}" && sample ina_on "$(goodput inaon)"
    demo inaoff -job 1:4:1:off "${lim[@]}" && sample ina_off "$(goodput inaoff)"

    for loss in 0 0.01 0.05; do
      progress "the tail, loss $loss"
      # A seed per round: the switch's losses, seeded, would otherwise fall alike in every round.
      if demo "tail$loss" -switch ref -job 1:4:1 -seed "$rep" -size "$TAIL_SIZE" -iters "$TAIL_ITERS" -compute 2ms \
        -active-slots "$TAIL_SLOTS" -window "$TAIL_SLOTS" -loss "$loss" -trace; then
        "$BUILD/bin/ina-bench" tail "$out/tail$loss" | tr ' ' '\n' | awk -F= -v k="tail$loss" -v rep="$rep" 'NF == 2 { print k "_" $1, rep, $2 }' >>"$samples"
        sample "tail${loss}_goodput" "$(goodput "tail$loss")"
      fi
      if [ -n "${BENCH_LOGS:-}" ]; then
        mkdir -p "$BENCH_LOGS" && rm -rf "$BENCH_LOGS/round$rep-tail$loss" && mv "$out/tail$loss" "$BENCH_LOGS/round$rep-tail$loss"
      else
        rm -rf "${out:?}/tail$loss"
      fi
    done
  elif [ "$rep" = 1 ]; then
    notes+=("SKIP: forwarding, path, all-reduce and tail rows: need root (veth pairs, network namespaces, AF_PACKET)")
  fi

  # PS merge vs copy(), in GB per second of CPU time (waiting for a core on a shared machine does
  # not count).
  progress "PS merge vs copy()"
  (cd ps && "$out/ps.test" -test.run '^$' -test.bench '^Benchmark(Merge|Copy)$' -test.benchmem -test.benchtime 1s) >"$out/merge.txt"
  awk -v rep="$rep" '$1 ~ /^Benchmark(Merge|Copy)-/ { k = ($1 ~ /Merge/) ? "merge" : "copy"
    for (i = 1; i <= NF; i++) { if ($(i) == "cpu-GB/s") print k, rep, $(i-1); if ($(i) == "allocs/op" && k == "merge") print "merge_allocs", rep, $(i-1) } }' \
    "$out/merge.txt" >>"$samples"

  progress "the agents' CPU per chunk"
  "$BUILD/bin/ina-bench" agents -pairs 3 >"$out/agents.txt" 2>&1 || { cat "$out/agents.txt" >&2; exit 1; }
  awk -v rep="$rep" '$1 == "agents:" { for (i = 2; i <= NF; i++) { split($(i), kv, "="); print "agents_" kv[1], rep, kv[2] } }' \
    "$out/agents.txt" >>"$samples"
done
if [ -n "$BMV2_SKIP" ]; then notes+=("SKIP: BMv2 all-reduce rows: $BMV2_SKIP"); fi

B=${BMV2_NAME:-BMv2}
T="4 workers, $TAIL_SLOTS slots, 1 MiB x $TAIL_ITERS"
cat >"$out/rows" <<ROWS
forwarding, 1 port: reference switch|fwd_ref_1|pkt/s|bare ring forwarder|fwd_ring_1|>= 0.80
forwarding, 1 port: $B|fwd_bmv2_1|pkt/s|bare ring forwarder|fwd_ring_1|
forwarding, 1 port: ref / $B|fwd_ref_1|pkt/s|$B|fwd_bmv2_1|
forwarding, 4 ports: reference switch|fwd_ref_4|pkt/s|bare ring forwarder|fwd_ring_4|>= 0.80
forwarding, 4 ports: $B|fwd_bmv2_4|pkt/s|bare ring forwarder|fwd_ring_4|
forwarding, 4 ports: ref / $B|fwd_ref_4|pkt/s|$B|fwd_bmv2_4|
all-reduce goodput/worker, 4 workers: ref|gp_ref4|Mbit/s|the path's limit|path4|>= 0.90
all-reduce goodput/worker, 4 workers: ref|gp_ref4|Mbit/s|$B|gp_bmv24|>= 30
all-reduce goodput/worker, 4 workers: ref|gp_ref4|Mbit/s|target|=150|>= 1.00
all-reduce goodput/worker, 2 workers: ref|gp_ref2|Mbit/s|4 workers|gp_ref4|
all-reduce goodput/worker, 8 workers: ref|gp_ref8|Mbit/s|4 workers|gp_ref4|
INA vs no INA, 4 workers, ports at $RATE Mbit/s|ina_on|Mbit/s|no INA|ina_off|
iteration all-reduce, $T, clean: p90|tail0_p90_ms|ms|p50|tail0_p50_ms|
iteration all-reduce, $T, clean: p99|tail0_p99_ms|ms|p50|tail0_p50_ms|<= 1.50
iteration all-reduce, $T, clean: max|tail0_max_ms|ms|p50|tail0_p50_ms|
iteration all-reduce, $T, 1% loss: p90|tail0.01_p90_ms|ms|p50|tail0.01_p50_ms|
iteration all-reduce, $T, 1% loss: p99|tail0.01_p99_ms|ms|p50|tail0.01_p50_ms|<= 3.00
iteration all-reduce, $T, 1% loss: max|tail0.01_max_ms|ms|p50|tail0.01_p50_ms|
iteration all-reduce, $T, 5% loss: p90|tail0.05_p90_ms|ms|p50|tail0.05_p50_ms|
iteration all-reduce, $T, 5% loss: p99|tail0.05_p99_ms|ms|p50|tail0.05_p50_ms|
iteration all-reduce, $T, 5% loss: max|tail0.05_max_ms|ms|p50|tail0.05_p50_ms|
iteration goodput/worker, $T, 1% loss|tail0.01_goodput|Mbit/s|clean|tail0_goodput|
iteration goodput/worker, $T, 5% loss|tail0.05_goodput|Mbit/s|clean|tail0_goodput|
result frames a worker receives per chunk, $T, 1% loss|tail0.01_result_frames|frames|clean|tail0_result_frames|
PS merge, 8 workers, no INA|merge|GB/s (CPU)|copy()|copy|>= 0.25
worker CPU per chunk, in memory|agents_worker_ns|ns|target|=250|<= 1.00
PS CPU per chunk, in memory|agents_ps_ns|ns|target|=150|<= 1.00
worker CPU per chunk, AF_PACKET|agents_af_worker_ns|ns|the path's floor|agents_af_floor_ns|<= 1.50
worker, 2 threads / 1 thread, in memory|agents_t2_cps|chunk/s|1 thread|agents_t1_cps|>= 1.80||the host's spin loop 2/1:agents_host_t2/agents_host_t1
host, 2 threads / 1 thread (a spin loop)|agents_host_t2|step/s|1 thread|agents_host_t1|
worker, 2 threads / 1 thread, in memory, cores kept busy|agents_t2_cores|cores|1 thread|agents_t1_cores|
worker, 2 threads / 1 thread, in memory, CPU per chunk (all parts)|agents_t2_proc_ns|ns|1 thread|agents_t1_proc_ns|
worker, 2 threads / 1 thread, AF_PACKET|agents_af_t2_mbps|Mbit/s|1 thread|agents_af_t1_mbps|
worker, 2 threads / 1 thread, AF_PACKET, CPU per chunk|agents_af_t2_ns|ns|1 thread|agents_af_worker_ns|
note|The path's limit: ina-bench path, the 4-worker job's frames and ring operations through the same veths and processes with nothing else done, ${PATHS} s just before the job and ${PATHS} s just after it.
note|slow iterations (over 1.5x p50) of $TAIL_ITERS, per round: clean {tail0_slow}, of which waited on the timer {tail0_slow_timer}, on a fast retransmission {tail0_slow_fast}, on a window cut {tail0_slow_cut}, on none of them {tail0_slow_none}
note|  1% loss {tail0.01_slow}: timer {tail0.01_slow_timer}, fast retransmission {tail0.01_slow_fast}, window cut {tail0.01_slow_cut}, none {tail0.01_slow_none}
note|  5% loss {tail0.05_slow}: timer {tail0.05_slow_timer}, fast retransmission {tail0.05_slow_fast}, window cut {tail0.05_slow_cut}, none {tail0.05_slow_none}
note|PS merge: {merge_allocs} allocs/op
note|agents in memory, CPU per chunk: the switch model {agents_switch_ns} ns (docs/agents.md has the breakdown)
ROWS

{
  echo "$header"
  "$BUILD/bin/ina-bench" table "$samples" "$out/rows"
  for n in "${notes[@]}"; do echo "$n"; done
  echo "took $(($(date +%s) - began)) s; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/table.txt"
if [ -n "${BENCH_SAMPLES:-}" ]; then cp "$samples" "$BENCH_SAMPLES"; fi
if [ -n "${BENCH_OUT:-}" ]; then
  {
    echo "# make bench"
    echo
    echo "Written by \`BENCH_OUT=$BENCH_OUT make bench\` (\`scripts/bench.sh\` says what each row measures and"
    echo "how): the median and its confidence interval over $REPS interleaved rounds on a machine shared with"
    echo "other work (its first and last lines say how busy it was)."
    echo
    echo '```'
    cat "$out/table.txt"
    echo '```'
  } >"$BENCH_OUT"
fi
exit
}
