#!/usr/bin/env bash
# Compiles the P4 program: `p4.sh v1model` (BMv2, p4c-bm2-ss) or `p4.sh tna` (Tofino, bf-p4c).
# Outputs go to $BUILD (default build/). Where the compiler is missing this prints one SKIP line
# and succeeds.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
cd "$ROOT"

case "${1:-v1model}" in
v1model)
  if ! command -v p4c-bm2-ss >/dev/null; then
    echo "SKIP: p4c-bm2-ss not found on PATH; the v1model build needs p4c (github.com/p4lang/p4c)"
    exit 0
  fi
  mkdir -p "$BUILD"
  p4c-bm2-ss --p4v 16 -I p4src --p4runtime-files "$BUILD/ina.p4info.txtpb" \
    -o "$BUILD/ina.json" p4src/v1model/ina.p4
  echo "built $BUILD/ina.json and $BUILD/ina.p4info.txtpb"
  ;;
tna)
  if ! command -v bf-p4c >/dev/null; then
    echo "SKIP: bf-p4c not found on PATH; the TNA build needs the Tofino compiler (open-p4studio)"
    exit 0
  fi
  out="$BUILD/tna"
  mkdir -p "$out"
  # --arch tna --target tofino: Tofino 1. For Tofino 2 use --arch t2na --target tofino2.
  bf-p4c --std p4-16 --arch tna --target tofino -I p4src -o "$out" \
    --bf-rt-schema "$out/bfrt.json" \
    --p4runtime-files "$out/ina.p4info.txtpb" p4src/tna/ina.p4
  echo "built $out (bfrt.json, pipe/context.json, pipe/tofino.bin) and $out/ina.p4info.txtpb"
  ;;
*)
  echo "usage: $0 v1model|tna" >&2
  exit 2
  ;;
esac
