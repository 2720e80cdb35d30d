#!/usr/bin/env bash
# make torch-demo: PyTorch DDP training of a small CNN on scikit-learn's digits under torchrun, one
# torchrun agent and one process per emulated host, 4 hosts, with the torch.distributed backend
# "inapack" (python/inapack/torch.py); root. Runs, all from the same seeds:
#   gloo     the reference: backend gloo, no switch
#   ref      backend inapack through the reference switch
#   faults   ... with 5% loss, 5% duplication and 5% reordering on the reference switch
#   preempt  ... while a second torch job (2 hosts, priority 5) preempts the job's slots
#   bmv2     ... through BMv2 (where simple_switch_grpc and make p4's JSON exist; SWITCH=ref skips it)
# and python -m inapack.demo.torchtrain --summary compares each with gloo's loss curve (exit 1 on a
# mismatch). ref runs DDP as users do; the other switch runs check every bucket's sum on every rank
# (--check), and every switch run must end with the same parameters, bit for bit.
# `scripts/torch-demo.sh bench` (make bench-torch) runs python -m inapack.torchbench the same way
# instead: all_reduce of 1, 16 and 64 MiB (BENCH_ARGS), inapack through the reference switch against
# gloo in the same processes.
#
# ina-demo -exec starts each worker in its host's network namespace; the command re-enters this
# script's namespace (nsenter) with INAPACK_NETNS naming the host's, so the INAPack worker's socket
# is on the host's eth0 while torchrun's store and gloo use this machine's loopback (the hosts'
# IP stacks are switched off: internal/ipdrop).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
if [ "$(id -u)" != 0 ]; then
  echo "torch-demo: needs root: it creates network namespaces and opens AF_PACKET sockets in them" >&2
  exit 1
fi
for c in ip nsenter "${GO:-go}"; do
  command -v "$c" >/dev/null || { echo "torch-demo: $c not found on PATH" >&2; exit 1; }
done
"${GO:-go}" build -o "$BUILD/bin/" ./cmd/...
"${GO:-go}" build -buildmode=c-shared -o "$BUILD/lib/libinapack.so" ./worker/cabi
PY="$(scripts/pyenv.sh)"
"$PY" -c 'import torch, sklearn' || { echo "torch-demo: build/pyenv lacks torch or scikit-learn (scripts/pyenv.sh)"; exit 1; }
export PYTHONPATH="$ROOT/python" INAPACK_LIB="$BUILD/lib/libinapack.so" OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo

OUT="$BUILD/torch-demo"
rm -rf "$OUT"
mkdir -p "$OUT"
EPOCHS=${EPOCHS:-20}
HOME_NS=/proc/$$/ns/net
port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# torchrun for one host: NODES agents rendezvous at 127.0.0.1:PORT; RANK (ina-demo's, or the
# loop's below) is the node rank.
torchrun() { # NODES PORT OUTDIR [training flags]
  echo "$PY -m torch.distributed.run --nnodes $1 --nproc-per-node 1 --node-rank \$RANK --master-addr 127.0.0.1 \
--master-port $2 -m inapack.demo.torchtrain --epochs $EPOCHS --out $3 ${TRAIN_ARGS:-} ${*:4}"
}
# As an -exec command: back to this namespace, the host's named in INAPACK_NETNS.
onhost() { echo "nsenter --net=$HOME_NS env INAPACK_NETNS=\$(ip netns identify) $*"; }

if [ "${1:-}" = bench ]; then
  p=$(port)
  "$BUILD/bin/ina-demo" -bin "$BUILD/bin" -dir "$OUT/bench" -switch ref -timeout 900s -job 1:4:1 -exec "1=$(onhost \
    "$PY -m torch.distributed.run --nnodes 4 --nproc-per-node 1 --node-rank \$RANK --master-addr 127.0.0.1 \
--master-port $p -m inapack.torchbench ${BENCH_ARGS:-}")" >"$OUT/bench.log" 2>&1 || { tail -20 "$OUT/bench.log"; exit 1; }
  grep -h '^torch-bench:' "$OUT"/bench/worker-j1-r0.log
  exit 0
fi

echo "torch-demo: gloo run (4 torchrun agents on loopback)"
p=$(port)
pids=()
for r in 0 1 2 3; do
  RANK=$r sh -c "$(torchrun 4 "$p" "$OUT/gloo" --check) --backend gloo" >"$OUT/gloo.rank$r.log" 2>&1 &
  pids+=($!)
done
failed=()
for pid in "${pids[@]}"; do wait "$pid" || failed+=(gloo); done
grep -h '^worker-summary' "$OUT"/gloo.rank*.log | sed 's/^/  /' || true

run() { # NAME SWITCH TRAINING-FLAGS [ina-demo flags...]
  local name=$1 sw=$2 flags=$3
  shift 3
  echo "torch-demo: $name run (switch $sw)"
  if ! "$BUILD/bin/ina-demo" -bin "$BUILD/bin" -dir "$OUT/$name" -switch "$sw" -timeout 900s \
    -exec "1=$(onhost "$(torchrun 4 "$(port)" "$OUT/$name/result" $flags)")" "$@" >"$OUT/$name.log" 2>&1; then
    failed+=("$name")
  fi
  grep -E '^(demo|demo-summary|demo-job):' "$OUT/$name.log" | sed 's/^/  /'
}
runs=()
# DDP as users run it (no hook): checked against the checked runs' parameters, bit for bit.
run ref ref "" -job 1:4:1
runs+=("ref=$OUT/ref/result")
run faults ref --check -job 1:4:1 -loss 0.05 -dup 0.05 -reorder 0.05
runs+=("faults=$OUT/faults/result")
run preempt ref --check -job 1:4:1 -job 2:2:5 \
  -exec "2=$(onhost "$(torchrun 2 "$(port)" "$OUT/preempt/job2" --seed 2 --check)")"
runs+=("preempt=$OUT/preempt/result")
if [ "${SWITCH:-auto}" != ref ] && command -v simple_switch_grpc >/dev/null \
  && { [ -f "$BUILD/p4/ina.json" ] || [ -f "$BUILD/ina.json" ]; }; then
  run bmv2 bmv2 --check -job 1:4:1
  runs+=("bmv2=$OUT/bmv2/result")
elif [ "${SWITCH:-auto}" = bmv2 ]; then
  echo "torch-demo: FAIL: SWITCH=bmv2 but simple_switch_grpc or make p4's JSON is missing"
  failed+=(bmv2)
else
  echo "torch-demo: bmv2 run skipped: simple_switch_grpc or make p4's build/p4/ina.json missing (or SWITCH=ref)"
fi

rc=0
"$PY" -m inapack.demo.torchtrain --summary "$OUT/gloo" "${runs[@]}" || rc=1
if [ ${#failed[@]} -gt 0 ]; then
  echo "torch-demo: FAIL: these runs failed: ${failed[*]} (logs in $OUT)"
  rc=1
fi
[ $rc = 0 ] && echo "torch-demo: OK"
exit $rc
