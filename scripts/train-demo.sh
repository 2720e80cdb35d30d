#!/usr/bin/env bash
# make train-demo: data-parallel training of an MLP on scikit-learn's digits, 4 workers in network
# namespaces through the switch (the reference switch; BMv2 with SWITCH=bmv2 after make p4), using
# the Python package (pip install ./python into build/pyenv, which builds libinapack.so with Go):
#   local    the same training with an exact local all-reduce, same seeds
#   switch   through the switch
#   faults   through the reference switch with 5% loss, 5% duplication and 5% reordering (for the
#            first FAULT_EPOCHS of the EPOCHS if given; default all 30)
#   preempt  through the switch while a second training job of higher priority takes its slots
# then python/inapack/demo/report.py checks and plots them (build/train-demo/train-demo.png) and
# prints a summary; exit status 1 if a check fails. Needs root. TRAIN_ARGS: extra training flags
# (python -m inapack.demo.train -h).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
if [ "$(id -u)" != 0 ]; then
  echo "train-demo: needs root: it creates network namespaces and veth pairs and opens AF_PACKET sockets" >&2
  echo "train-demo: run it as root, or with sudo env \"PATH=\$PATH\" make train-demo (sudo's own PATH lacks Go)" >&2
  exit 1
fi
command -v ip >/dev/null || { echo "train-demo: ip not found (Debian: apt-get install iproute2)" >&2; exit 1; }
command -v "${GO:-go}" >/dev/null || { echo "train-demo: ${GO:-go} not found on PATH: it builds the commands and libinapack.so" >&2; exit 1; }
"${GO:-go}" build -o "$BUILD/bin/" ./cmd/...

PY="$(scripts/pyenv.sh)"
echo "train-demo: pip install ./python (builds libinapack.so with Go)"
"$PY" -m pip install -q --disable-pip-version-check --no-input --no-deps ./python >&2
"$PY" -c 'import inapack, sklearn, matplotlib' || { echo "train-demo: build/pyenv lacks inapack, scikit-learn or matplotlib"; exit 1; }

OUT="$BUILD/train-demo"
rm -rf "$OUT"
mkdir -p "$OUT"
export OPENBLAS_NUM_THREADS=1 # one thread per worker: 4 workers share 2 cores; same summation order everywhere
EPOCHS=${EPOCHS:-30}
# The training command for some epochs (a string: ina-demo runs it with sh -c).
train() { echo "$PY -m inapack.demo.train --epochs $1 ${TRAIN_ARGS:-}"; }
SW=ref # the reference switch unless SWITCH=bmv2 asks for BMv2 (auto means ref here: BMv2 is slow)
if [ "${SWITCH:-auto}" = bmv2 ]; then SW=bmv2; fi

echo "train-demo: local run (exact all-reduce)"
$(train "$EPOCHS") --mode local --out "$OUT/local.json"

failed=()
run() { # NAME EPOCHS SWITCH [ina-demo flags...]
  local name=$1 epochs=$2 sw=$3
  shift 3
  echo "train-demo: $name run"
  if ! "$BUILD/bin/ina-demo" -bin "$BUILD/bin" -dir "$OUT/$name" -switch "$sw" -timeout 600s \
    -exec "1=$(train "$epochs") --mode switch --out $OUT/$name/result" "$@" >"$OUT/$name.log" 2>&1; then
    failed+=("$name")
  fi
  grep -E '^(demo|demo-summary|demo-job):' "$OUT/$name.log" | sed 's/^/  /'
}
run switch "$EPOCHS" "$SW" -job 1:4:1
# A shorter run (FAULT_EPOCHS) must equal the start of the clean run, bit for bit.
run faults "${FAULT_EPOCHS:-$EPOCHS}" ref -job 1:4:1 -loss 0.05 -dup 0.05 -reorder 0.05
# Job 2 (priority 5, its slots overlapping 8 of the training job's 12) is a second training job
# of 2 workers, checked the same way: started together and about as long (half the epochs of twice
# the steps), it competes for the slots during the whole training.
run preempt "$EPOCHS" "$SW" -job 1:4:1 -job 2:2:5 \
  -exec "2=$(train $(((EPOCHS + 1) / 2))) --seed 2 --mode switch --out $OUT/preempt/job2"

rc=0
"$PY" -m inapack.demo.report --local "$OUT/local.json" --png "$OUT/train-demo.png" --faults faults --preempt preempt \
  --run "switch=$OUT/switch/result,$OUT/switch.log" --run "faults=$OUT/faults/result,$OUT/faults.log" \
  --run "preempt=$OUT/preempt/result,$OUT/preempt.log" || rc=1
if [ ${#failed[@]} -gt 0 ]; then
  echo "train-demo: FAIL: ina-demo failed for: ${failed[*]} (logs in $OUT)"
  rc=1
fi
exit $rc
