#!/usr/bin/env bash
# Creates build/pyenv: a virtual environment from Debian's /usr/bin/python3 with its site-packages
# visible (Mininet lives there), plus ptf, scapy and the p4runtime bindings from PyPI, and what the
# Python package (python/) needs for its tests, make train-demo and make torch-demo (torch).
# Idempotent and quiet: prints the venv's python path on stdout, nothing else on success.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
VENV="$BUILD/pyenv"
BASE_PY="${PYENV_BASE_PYTHON:-/usr/bin/python3}"

# Pins that work together (checked by importing them below): p4runtime 1.4.1's generated code
# predates protoc 3.19 and needs protobuf 3.20.x; grpcio does not depend on protobuf.
REQS=(
  "ptf==0.10.0"
  "scapy==2.6.1"
  "p4runtime==1.4.1"
  "protobuf==3.20.3"
  "grpcio==1.66.2"
  "googleapis-common-protos==1.65.0"
  # python/ (inapack): numpy; pytest for its tests (make test); scikit-learn and matplotlib for
  # make train-demo.
  "numpy==2.4.6"
  "pytest==9.2.0"
  "scikit-learn==1.9.1"
  "scipy==1.17.1"
  "matplotlib==3.11.2"
  # inapack.torch (the torch.distributed backend), its tests and make torch-demo. PyPI's Linux
  # wheel pulls the CUDA libraries too (about 5 GB, 1m42s to install here); it runs on CPU.
  "torch==2.15.0"
)
STAMP="$VENV/.inapack-reqs"
WANT="$(printf '%s\n' "${REQS[@]}")"

if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  echo "$VENV/bin/python"
  exit 0
fi

if ! "$BASE_PY" -c 'import venv, ensurepip' 2>/dev/null; then
  if [ "$BASE_PY" = /usr/bin/python3 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get -qq update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -qq install -y python3-venv python3-pip >/dev/null
  else
    echo "pyenv.sh: $BASE_PY lacks venv/ensurepip (Debian: apt-get install python3-venv python3-pip)" >&2
    exit 1
  fi
fi

mkdir -p "$BUILD"
if [ ! -x "$VENV/bin/python" ]; then
  "$BASE_PY" -m venv --system-site-packages "$VENV" >/dev/null
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input "${REQS[@]}" >&2
"$VENV/bin/python" -c 'import ptf, scapy, grpc, p4.v1.p4runtime_pb2, p4.config.v1.p4info_pb2, numpy, pytest, sklearn, matplotlib, torch' >&2
printf '%s\n' "$WANT" >"$STAMP"
echo "$VENV/bin/python"
