#!/usr/bin/env bash
# make run: start a topology in Mininet (BMv2 where installed, else the reference switch; SWITCH=
# overrides) with the controller, and leave a Mininet prompt. TOPO= picks the topology directory.
set -euo pipefail
cd "$(dirname "$0")/.."
topo=${TOPO:-bmv2/topologies/one-rack}
[ -d "$topo" ] || topo=bmv2/topologies/$topo
if [ "$(id -u)" != 0 ]; then echo "SKIP: make run needs root (Mininet)"; exit 0; fi
if ! /usr/bin/python3 -c 'import mininet' 2>/dev/null; then
  echo "SKIP: Mininet is not installed (apt-get install mininet)"; exit 0
fi
exec /usr/bin/python3 bmv2/run.py --topology "$topo/topology.json" --switch "${SWITCH:-auto}" "$@"
