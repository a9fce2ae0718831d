#!/usr/bin/env bash
# Builds the filter as an Envoy dynamic module (crate email-verdict-filter, feature
# dynamic-module): the native cdylib target/release/libemail_verdict_filter.so, copied to
# target/libemail_verdict_filter.so (the stable path envoy/module.yaml names). `make module` runs
# this. Prints the path and size, and the Envoy it is built for (scripts/module-version.sh: the
# proxy that loads it must be that Envoy release or the next one). Then checks the module's interface: every
# envoy_dynamic_module_on_* hook the bindings list is exported, and no Rust panic machinery
# reaches Envoy (the hooks catch every panic; see filter/src/module/mod.rs and stream.rs).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

CRATE=email-verdict-filter
FEATURE=dynamic-module
BUILT=target/release/libemail_verdict_filter.so
OUT=target/libemail_verdict_filter.so

echo "module: $(rustc --version)"
cargo build --release -p "$CRATE" --features "$FEATURE" --lib

[[ -f $BUILT ]] || {
  echo "error: the build succeeded but $BUILT is missing (is $CRATE a cdylib?)" >&2
  exit 1
}
cp -f "$BUILT" "$OUT.tmp"
mv -f "$OUT.tmp" "$OUT"

# The hooks Envoy resolves: all exported (a missing one fails the filter's configuration).
if command -v nm >/dev/null 2>&1; then
  exported=$(nm -D --defined-only "$OUT" | awk '{print $3}' | grep -c '^envoy_dynamic_module_on_' || true)
  if ((exported == 0)); then
    echo "error: $OUT exports no envoy_dynamic_module_on_* hook (built without --features $FEATURE?)" >&2
    exit 1
  fi
  echo "module: $exported envoy_dynamic_module_on_* hooks exported"
fi

size=$(wc -c <"$OUT")
echo "module: built $root/$OUT ($size bytes)"

# Which Envoy it needs: the bindings' release and the ABI version string it hands Envoy at load
# (which must be in the module: Envoy logs it).
read -r _ envoy_version < <(scripts/module-version.sh | grep '^envoy ')
read -r _ abi_version < <(scripts/module-version.sh | grep '^abi ')
read -r _ loads_in < <(scripts/module-version.sh | grep '^loads-in ')
grep -q -a -F "$abi_version" "$OUT" || {
  echo "error: $OUT does not hold the ABI version $abi_version that filter/src/module/abi.rs names" >&2
  exit 1
}
echo "module: built for Envoy $envoy_version (dynamic-module ABI $abi_version): loads in Envoy ${loads_in// /.x and }.x only;"
echo "        check the proxy's with \`envoy --version\` (docs/gateway.md, \"Which Envoy the module needs\")"
