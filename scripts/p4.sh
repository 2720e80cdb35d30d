#!/usr/bin/env bash
# Compiles the P4 program: `p4.sh v1model` (BMv2, p4c-bm2-ss) or `p4.sh tna [tofino|tofino2]`
# (Tofino, bf-p4c; build/tna or build/t2na, with bf_switchd's ina.conf).
# Outputs go to $BUILD (default build/). Where the compiler is missing this prints one SKIP line
# and succeeds. P4FLAGS adds compiler flags (e.g. P4FLAGS='-g --verbose 2' for bf-p4c's resource
# logs under build/tna/pipe/logs).
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
  # Tofino 1 by default; `p4.sh tna tofino2` (or TOFINO=tofino2) builds for Tofino 2 (t2na).
  target="${2:-${TOFINO:-tofino}}"
  case "$target" in
  tofino) arch=tna out="$BUILD/tna" ;;
  tofino2) arch=t2na out="$BUILD/t2na" ;;
  *) echo "p4.sh: Tofino target must be tofino or tofino2, not '$target'" >&2; exit 2 ;;
  esac
  if ! command -v bf-p4c >/dev/null; then
    echo "SKIP: bf-p4c not found on PATH; the TNA build needs the Tofino compiler (p4lang/p4c with the Tofino backend, or open-p4studio)"
    exit 0
  fi
  mkdir -p "$out"
  start=$SECONDS
  # shellcheck disable=SC2086 # P4FLAGS is a list of flags
  bf-p4c --std p4-16 --arch "$arch" --target "$target" -I p4src -o "$out" ${P4FLAGS:-} \
    --bf-rt-schema "$out/bf-rt.json" \
    --p4runtime-files "$out/ina.p4info.txtpb,$out/ina.p4info.bin" p4src/tna/ina.p4
  # bf_switchd's .conf, written by the compiler's own tool (next to bf-p4c, or in $SDE_INSTALL/bin).
  gen=""
  for g in "$(command -v p4c-gen-bfrt-conf || true)" /opt/bf-p4c/bin/p4c-gen-bfrt-conf \
      "${SDE_INSTALL:-/nonexistent}/bin/p4c-gen-bfrt-conf"; do
    if [ -n "$g" ] && [ -x "$g" ]; then gen=$g; break; fi
  done
  if [ -n "$gen" ]; then
    "$gen" --testdir "$out" --installdir "$out" --name ina --device "$target" --pipe pipe
  else
    echo "p4.sh: p4c-gen-bfrt-conf not found: $out/ina.conf (bf_switchd --conf-file) not written" >&2
  fi
  echo "built $out in $((SECONDS - start)) s: bf-rt.json, ina.p4info.{txtpb,bin}, pipe/context.json, pipe/$target.bin, ina.conf"
  ;;
*)
  echo "usage: $0 v1model | tna [tofino|tofino2]" >&2
  exit 2
  ;;
esac
