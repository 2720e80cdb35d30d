#!/usr/bin/env bash
# Runs the PTF conformance suite (test/ptf) against a switch on veth pairs.
#   SWITCH=auto (default): BMv2 if simple_switch_grpc is on PATH, else the reference switch
#   SWITCH=bmv2 | ref
#   SWITCH=tofino-model: the TNA build (make p4-tna) on open-p4studio's tofino-model, driven by
#     bf_switchd's P4Runtime server (built with -DP4RT=ON); both from $SDE_INSTALL/bin or PATH.
#     Untested here: p4src/README.md says which open-p4studio files could not be had to build them.
# Extra arguments go to ptf (e.g. a test name: scripts/ptf.sh ina_vectors.Vector_claim).
# Prints one line per test and a total ("ptf: 34 passed, 0 failed"), with the failures' tracebacks;
# ptf's full output goes to build/ptf/ptf.out. Exits with ptf's status; prints one SKIP line and
# succeeds where root, BMv2 or p4c is missing.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
# Veth names unique to this run: other checkouts and engineers run PTF on the same host.
PREFIX="${PTF_VETH_PREFIX:-pt$(printf %04x $((RANDOM)))}"
cd "$ROOT"

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: make ptf needs root for veths"
  exit 0
fi

SWITCH="${SWITCH:-auto}"
if [ "$SWITCH" = auto ]; then
  if command -v simple_switch_grpc >/dev/null; then SWITCH=bmv2; else SWITCH=ref; fi
fi

P4INFO="$ROOT/p4src/ina.p4info.txtpb"
CONFIG=""
case "$SWITCH" in
bmv2)
  if ! command -v simple_switch_grpc >/dev/null; then
    echo "SKIP: SWITCH=bmv2 needs simple_switch_grpc on PATH (github.com/p4lang/behavioral-model)"
    exit 0
  fi
  if ! command -v p4c-bm2-ss >/dev/null; then
    echo "SKIP: SWITCH=bmv2 needs p4c-bm2-ss on PATH to build the pipeline (github.com/p4lang/p4c)"
    exit 0
  fi
  scripts/p4.sh v1model >/dev/null
  P4INFO="$BUILD/ina.p4info.txtpb"
  CONFIG="$BUILD/ina.json"
  ;;
ref)
  if [ ! -x "$BUILD/bin/refswitch" ]; then
    echo "ptf.sh: $BUILD/bin/refswitch missing; run make build first" >&2
    exit 1
  fi
  # The reference switch accepts any device config; send the BMv2 JSON where it was built.
  [ -f "$BUILD/ina.json" ] && CONFIG="$BUILD/ina.json"
  ;;
tofino-model)
  sde_tool() { command -v "$1" || { [ -x "${SDE_INSTALL:-/nonexistent}/bin/$1" ] && echo "$SDE_INSTALL/bin/$1"; } || true; }
  MODEL="$(sde_tool tofino-model)" SWITCHD="$(sde_tool bf_switchd)"
  if [ -z "$MODEL" ] || [ -z "$SWITCHD" ] || [ -z "${SDE_INSTALL:-}" ]; then
    echo "SKIP: SWITCH=tofino-model needs tofino-model and bf_switchd (open-p4studio, SDE_INSTALL set); see p4src/README.md"
    exit 0
  fi
  if ! command -v bf-p4c >/dev/null; then
    echo "SKIP: SWITCH=tofino-model needs bf-p4c on PATH to build the TNA program"
    exit 0
  fi
  scripts/p4.sh tna tofino >/dev/null
  P4INFO="$BUILD/tna/ina.p4info.txtpb"
  CONFIG="$BUILD/tna" # p4runtime_test.py packs bf_switchd's PI device config from bf-p4c's output
  ;;
*)
  echo "ptf.sh: SWITCH must be auto, bmv2, ref or tofino-model, not '$SWITCH'" >&2
  exit 2
  ;;
esac

PY="$(scripts/pyenv.sh)"
VENV_BIN="$(dirname "$PY")"

# One veth pair per switch port the vectors use (ports 0..max).
NPORTS="$("$PY" - "$ROOT/test/vectors" <<'PYEOF'
import glob, json, os, sys
ports = {0}
def walk(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k == "port" and isinstance(v, int):
                ports.add(v)
            elif k == "ports" and isinstance(v, list):
                ports.update(p for p in v if isinstance(p, int))
            else:
                walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    with open(path) as f:
        walk(json.load(f))
print(max(max(ports) + 1, 8))
PYEOF
)"

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

OUT="$BUILD/ptf"
mkdir -p "$OUT"
SWITCH_PID="" MODEL_PID="" VETHS=0
cleanup() {
  for pid in $SWITCH_PID $MODEL_PID; do
    kill -0 "$pid" 2>/dev/null || continue
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ "$VETHS" = 1 ]; then scripts/veth.sh delete "$PREFIX" "$NPORTS"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

VETHS=0
scripts/veth.sh create "$PREFIX" "$NPORTS" # all or nothing: on failure it removes what it made
VETHS=1

GRPC_PORT="$(free_port)"
GRPC_ADDR="127.0.0.1:$GRPC_PORT"
SW_IFACES=() PTF_IFACES=()
for ((i = 0; i < NPORTS; i++)); do
  SW_IFACES+=(-i "$i@$PREFIX-sw$i")
  PTF_IFACES+=(-i "$i@$PREFIX-tb$i")
done

case "$SWITCH" in
bmv2)
  THRIFT_PORT="$(free_port)"
  DEVICE_ID=1
  simple_switch_grpc --no-p4 --device-id "$DEVICE_ID" --thrift-port "$THRIFT_PORT" \
    "${SW_IFACES[@]}" \
    -- --grpc-server-addr "$GRPC_ADDR" --cpu-port 255 >"$OUT/switch.log" 2>&1 &
  ;;
ref)
  DEVICE_ID=1
  "$BUILD/bin/refswitch" --grpc-addr "$GRPC_ADDR" --device-id "$DEVICE_ID" "${SW_IFACES[@]}" \
    >"$OUT/switch.log" 2>&1 &
  ;;
tofino-model)
  # Device port i is the switch end of veth pair i (the model's PortToIf map); the model loads
  # the program from bf-p4c's .conf, bf_switchd (device 0) serves P4Runtime on GRPC_ADDR.
  DEVICE_ID="${TOFINO_DEVICE_ID:-0}"
  "$PY" - "$PREFIX" "$NPORTS" >"$OUT/ports.json" <<'PYEOF'
import json, sys
prefix, n = sys.argv[1], int(sys.argv[2])
print(json.dumps({"PortToIf": [{"device_port": i, "if": "%s-sw%d" % (prefix, i)} for i in range(n)]}, indent=2))
PYEOF
  export LD_LIBRARY_PATH="$SDE_INSTALL/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  "$MODEL" --chip-type 2 -f "$OUT/ports.json" --p4-target-config "$BUILD/tna/ina.conf" \
    --install-dir "$SDE_INSTALL" --log-dir "$OUT" >"$OUT/model.log" 2>&1 &
  MODEL_PID=$!
  "$SWITCHD" --install-dir "$SDE_INSTALL" --conf-file "$BUILD/tna/ina.conf" --background \
    --status-port "$(free_port)" --p4rt-server="$GRPC_ADDR" >"$OUT/switch.log" 2>&1 &
  ;;
esac
SWITCH_PID=$!

# Wait for the gRPC port; fail early if the switch died.
ready=0
for _ in $(seq 300); do
  if ! kill -0 "$SWITCH_PID" 2>/dev/null; then
    echo "ptf.sh: $SWITCH switch exited during start-up; $OUT/switch.log:" >&2
    tail -20 "$OUT/switch.log" >&2
    exit 1
  fi
  if "$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' \
      "$GRPC_PORT" 2>/dev/null; then
    ready=1
    break
  fi
  sleep 0.1
done
if [ "$ready" != 1 ]; then
  echo "ptf.sh: $SWITCH switch did not open $GRPC_ADDR within 30 s; $OUT/switch.log:" >&2
  tail -20 "$OUT/switch.log" >&2
  exit 1
fi

echo "ptf: $SWITCH switch on $GRPC_ADDR, $NPORTS ports ($PREFIX-sw*), log $OUT/switch.log"
set +e
# ptf runs each test under its own unittest runner (a "Ran 1 test" block each): show the per-test
# lines as they come, then one total.
"$VENV_BIN/ptf" --test-dir test/ptf --pypath "$ROOT/test/ptf" "${PTF_IFACES[@]}" \
  --log-file "$OUT/ptf.log" \
  --test-params="grpcaddr='$GRPC_ADDR';device_id=$DEVICE_ID;p4info='$P4INFO';config='$CONFIG'" "$@" 2>&1 |
  tee "$OUT/ptf.out" | grep --line-buffered -E ' \.\.\. |^(ok|FAIL|ERROR)$'
status=${PIPESTATUS[0]}
set -e
# Totals from each runner's closing lines: "Ran N test(s)", then "OK [(skipped=S)]" or
# "FAILED (failures=F, errors=E, skipped=S)".
read -r passed failed skipped < <(awk '
  /^Ran [0-9]+ tests? in/ { n = $2; next }
  n && /^(OK|FAILED)/ {
    f = e = k = 0
    if (match($0, /failures=[0-9]+/)) f = substr($0, RSTART + 9, RLENGTH - 9)
    if (match($0, /errors=[0-9]+/)) e = substr($0, RSTART + 7, RLENGTH - 7)
    if (match($0, /skipped=[0-9]+/)) k = substr($0, RSTART + 8, RLENGTH - 8)
    pass += n - f - e - k; fail += f + e; skip += k; n = 0
  }
  END { print pass + 0, fail + 0, skip + 0 }' "$OUT/ptf.out")
if [ "$failed" != 0 ]; then
  # unittest's report of each failure: from its ==== rule to the runner's "Ran" line.
  awk '/^=====+$/ { show = 1 } /^Ran [0-9]+ tests? in/ { show = 0 } show' "$OUT/ptf.out"
elif [ "$status" != 0 ]; then
  tail -20 "$OUT/ptf.out"
fi
echo "ptf: $SWITCH switch; full output $OUT/ptf.out, log $OUT/ptf.log"
echo "ptf: $passed passed, $failed failed$([ "$skipped" = 0 ] || echo ", $skipped skipped")"
exit $status
