#!/usr/bin/env bash
# make demo: two jobs with different priorities share one switch (BMv2 where simple_switch_grpc and
# the compiled program exist, else the reference switch; SWITCH= overrides), each all-reducing
# through the switch and one PS, in network namespaces. Prints a per-job summary and "demo: OK"
# only if every result was exact. Needs root, checked before anything is built. Extra flags for
# build/bin/ina-demo: DEMO_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ "$(id -u)" != 0 ]; then
  echo "demo: needs root: it creates network namespaces and veth pairs and opens AF_PACKET sockets" >&2
  echo "demo: run it as root, or with sudo env \"PATH=\$PATH\" make demo (sudo's own PATH lacks Go)" >&2
  exit 1
fi
for tool in ip sysctl; do
  command -v "$tool" >/dev/null || { echo "demo: $tool not found (Debian: apt-get install iproute2 procps)" >&2; exit 1; }
done
command -v "${GO:-go}" >/dev/null || { echo "demo: ${GO:-go} not found on PATH (under sudo: sudo env \"PATH=\$PATH\" make demo)" >&2; exit 1; }
"${GO:-go}" build -o "$BUILD/bin/" ./cmd/...
# shellcheck disable=SC2086
exec "$BUILD/bin/ina-demo" -bin "$BUILD/bin" -dir "$BUILD/demo" -switch "${SWITCH:-auto}" ${DEMO_ARGS:-}
