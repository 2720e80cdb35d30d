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
  # Never take over a link of that name: it belongs to another run on this host. All or nothing:
  # the names are checked first, and a failure part-way removes the pairs made so far.
  for ((i = 0; i < n; i++)); do
    if ip link show "$prefix-sw$i" >/dev/null 2>&1 || ip link show "$prefix-tb$i" >/dev/null 2>&1; then
      echo "veth.sh: $prefix-sw$i or $prefix-tb$i exists (another run's?); choose another prefix" >&2
      exit 1
    fi
  done
  made=0
  trap 'for ((j = 0; j < made; j++)); do ip link del "$prefix-sw$j" 2>/dev/null || true; done' ERR
  for ((i = 0; i < n; i++)); do
    sw="$prefix-sw$i" tb="$prefix-tb$i"
    ip link add "$sw" type veth peer name "$tb"
    made=$((i + 1))
    for dev in "$sw" "$tb"; do
      quiet_ipv6_off "$dev"
      ip link set dev "$dev" mtu 9500
      ip link set dev "$dev" up
    done
  done
  trap - ERR
  ;;
delete)
  for ((i = 0; i < n; i++)); do
    ip link del "$prefix-sw$i" 2>/dev/null || true
  done
  ;;
*) usage ;;
esac
