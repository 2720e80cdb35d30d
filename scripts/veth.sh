#!/usr/bin/env bash
# Creates or deletes N veth pairs for a software switch and a test harness:
#   veth.sh create PREFIX N   ->  PREFIX-sw<i> (switch end) <-> PREFIX-tb<i> (test end), i = 0..N-1
#   veth.sh delete PREFIX N
# Both ends: MTU 9500, IPv6 disabled (no router solicitations or MLD reports on test ports), up.
set -euo pipefail

usage() { echo "usage: $0 create|delete PREFIX N" >&2; exit 2; }
[ $# -eq 3 ] || usage
op=$1 prefix=$2 n=$3
case "$n" in ''|*[!0-9]*) usage ;; esac
if [ ${#prefix} -gt 9 ]; then
  echo "veth.sh: prefix '$prefix' too long (interface names are at most 15 characters)" >&2
  exit 2
fi

quiet_ipv6_off() { sysctl -q -w "net.ipv6.conf.$1.disable_ipv6=1" >/dev/null 2>&1 || true; }

case "$op" in
create)
  for ((i = 0; i < n; i++)); do
    sw="$prefix-sw$i" tb="$prefix-tb$i"
    # Never take over a link of that name: it belongs to another run on this host.
    if ip link show "$sw" >/dev/null 2>&1; then
      echo "veth.sh: $sw exists (another run's?); choose another prefix" >&2
      exit 1
    fi
    ip link add "$sw" type veth peer name "$tb"
    for dev in "$sw" "$tb"; do
      quiet_ipv6_off "$dev"
      ip link set dev "$dev" mtu 9500
      ip link set dev "$dev" up
    done
  done
  ;;
delete)
  for ((i = 0; i < n; i++)); do
    ip link del "$prefix-sw$i" 2>/dev/null || true
  done
  ;;
*) usage ;;
esac
