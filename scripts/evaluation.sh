#!/usr/bin/env bash
# Regenerates docs/evaluation.md and docs/img/* with the trace-driven simulator (sim/eval). The
# trace is not shipped with the project: it is read from ../shared/traces/ beside the clone, or
# from TRACE=... (any trace in the same CSV format: job_id,submit_time_s,num_gpus,duration_s;
# Philly and PAI logs work too). Without it this says so and exits 0. The report holds no timing;
# the wall time of each experiment and of the whole run goes to this script's output.
# Every experiment runs under 5 seeds (netpack evaluate --seeds), on every CPU. Section 11.1 comes
# from docs/packets-summary.json (ina-cluster demo --policies all --summary) when present.
set -euo pipefail
cd "$(dirname "$0")/.."

TRACE="${TRACE:-../shared/traces/itp-cluster04-week.csv}"
BIN="${BUILD:-build}/bin/netpack"
OUT="${OUT:-docs/evaluation.md}"
IMG="${IMG:-docs/img}"

if [[ ! -f "$TRACE" ]]; then
	echo "SKIP: trace $TRACE not found (put the shared/ directory beside the clone, or set TRACE=...); $OUT left as it is"
	exit 0
fi
if [[ ! -x "$BIN" ]]; then
	go build -o "$(dirname "$BIN")/" ./cmd/netpack
fi

echo "== evaluation of $TRACE -> $OUT, $IMG/ ($(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg))"
start=$(date +%s)
"$BIN" evaluate --trace "$TRACE" --out "$OUT" --img "$IMG" --img-link "$(realpath --relative-to="$(dirname "$OUT")" "$IMG")"
echo "wrote $OUT in $(($(date +%s) - start)) s (load average now $(cut -d' ' -f1-3 /proc/loadavg))"
