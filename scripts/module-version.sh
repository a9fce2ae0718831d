#!/usr/bin/env bash
# Prints which Envoy the dynamic module (`make module`) is built for, read from the bindings
# (filter/src/module/abi.rs: the Envoy release whose abi.h they follow, and the ABI version string
# the module hands Envoy at load):
#
#   envoy 1.40.0
#   abi v0.2.0
#   loads-in 1.40 1.41
#
# A module built for Envoy X.Y loads in X.Y and X.(Y+1) (Envoy's promise since 1.38). Used by
# scripts/build-module.sh and scripts/module-image.sh; docs/gateway.md, "Which Envoy the module
# needs".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
abi_rs=$root/filter/src/module/abi.rs
[[ -f $abi_rs ]] || {
  echo "error: $abi_rs is missing" >&2
  exit 1
}
envoy=$(grep -o -m1 'Envoy [0-9]\+\.[0-9]\+\.[0-9]\+' "$abi_rs" | cut -d' ' -f2 || true)
abi=$(sed -n 's/^pub const ABI_VERSION: &std::ffi::CStr = c"\(v[0-9.]*\)";$/\1/p' "$abi_rs")
if [[ -z $envoy || -z $abi ]]; then
  echo "error: no Envoy release or ABI_VERSION found in $abi_rs" >&2
  exit 1
fi
major=${envoy%%.*}
minor=${envoy#*.}
minor=${minor%%.*}
echo "envoy $envoy"
echo "abi $abi"
echo "loads-in $major.$minor $major.$((minor + 1))"
