#!/usr/bin/env bash
# make stop: stop everything make run started: the controller, the switches, Mininet's hosts and links.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -f build/mininet/pids ]; then
  xargs -r kill <build/mininet/pids 2>/dev/null
  rm -f build/mininet/pids
fi
pkill -f "^build/bin/refswitch --grpc-addr" 2>/dev/null
pkill -f "^simple_switch_grpc --no-p4" 2>/dev/null
pkill -f "^build/bin/inactl run --config build/mininet/" 2>/dev/null
if command -v mn >/dev/null; then mn -c >/dev/null 2>&1; fi
echo "stopped"
