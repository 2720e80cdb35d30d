#!/usr/bin/env bash
# make run: start a topology in Mininet (BMv2 where installed, else the reference switch; SWITCH=
# overrides) with the controller, and leave a Mininet prompt whose `job ID` command runs a job.
# TOPO= picks the topology (a name in bmv2/topologies, a directory or a topology.json); JOB= runs
# that job's PS and workers once before the prompt opens. make stop ends it from another shell.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ "$(id -u)" != 0 ]; then
  echo "run: Mininet needs root: run as root, or with sudo env \"PATH=\$PATH\" make run" >&2
  exit 1
fi
if ! /usr/bin/python3 -c 'import mininet' 2>/dev/null; then
  echo "run: Mininet is not installed for /usr/bin/python3 (Debian: apt-get install mininet)" >&2
  exit 1
fi
command -v "${GO:-go}" >/dev/null || { echo "run: ${GO:-go} not found on PATH (under sudo: sudo env \"PATH=\$PATH\" make run)" >&2; exit 1; }
"${GO:-go}" build -o "$BUILD/bin/" ./cmd/...
args=(--topology "${TOPO:-one-rack}" --switch "${SWITCH:-auto}")
[ -n "${JOB:-}" ] && args+=(--job "$JOB")
INA_BIN="$BUILD/bin" exec /usr/bin/python3 bmv2/run.py "${args[@]}" "$@"
