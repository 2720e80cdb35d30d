#!/usr/bin/env bash
# make stop: end the run that make run started from this checkout (recorded in build/mininet/run.json)
# and remove exactly what it owns: its Mininet hosts, switches, controller, agents and links. Other
# runs on the host (other checkouts, demos, tests) are not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 bmv2/owned.py stop "${INA_STATE:-build/mininet}"
