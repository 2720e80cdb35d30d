#!/usr/bin/env bash
# Regenerates docs/evaluation.md and docs/img/* from the ITP week trace with the trace-driven
# simulator (sim). The trace is not shipped with the project: it is read from
# ../shared/traces/ beside the clone (override with TRACE=...). Without it this says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

TRACE="${TRACE:-../shared/traces/itp-cluster04-week.csv}"
BIN="${BUILD:-build}/bin/netpack"
SIZES="${SIZES:-100,300,1000,3000,10000}"

if [[ ! -f "$TRACE" ]]; then
	echo "SKIP: trace $TRACE not found (put the shared/ directory beside the clone, or set TRACE=...); docs/evaluation.md left as it is"
	exit 0
fi
if [[ ! -x "$BIN" ]]; then
	go build -o "$(dirname "$BIN")/" ./cmd/netpack
fi

echo "== headline: every policy on the trace, 16 racks, network-constrained links"
"$BIN" compare --trace "$TRACE" --uniform 16x8x8 --nic-gbps 25 --oversub 4
echo "== full evaluation (sizes $SIZES) -> docs/evaluation.md, docs/img/"
"$BIN" evaluate --trace "$TRACE" --out docs/evaluation.md --img docs/img --img-link img --sizes "$SIZES"
echo "wrote docs/evaluation.md"
