#!/usr/bin/env bash
# make demo: two jobs with different priorities share one switch (the reference switch, or BMv2
# with SWITCH=bmv2 when simple_switch_grpc and the compiled program exist), each all-reducing
# through the switch and one PS, in network namespaces. Prints a per-job summary and "demo: OK"
# only if every result was exact. Needs root. Extra flags for build/bin/ina-demo: DEMO_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ "$(id -u)" != 0 ]; then
  echo "demo: needs root: it creates network namespaces and veth pairs and opens AF_PACKET sockets (run: sudo make demo)"
  exit 1
fi
for tool in ip sysctl; do
  command -v "$tool" >/dev/null || { echo "demo: $tool not found (Debian: apt-get install iproute2 procps)"; exit 1; }
done
# shellcheck disable=SC2086
exec "$BUILD/bin/ina-demo" -bin "$BUILD/bin" -dir "$BUILD/demo" -switch "${SWITCH:-auto}" ${DEMO_ARGS:-}
