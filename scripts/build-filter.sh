#!/usr/bin/env bash
# Builds the proxy-wasm filter (crate email-verdict-filter) into target/email_verdict_filter.wasm.
# `make filter` runs this; it fails when the module is over 1 MiB (the end of this file).
# Two routes, the first that works:
#
#   1. rustup: the wasm32-wasip1 target is installed (or `rustup target add wasm32-wasip1`
#      succeeds): cargo build --profile wasm --target wasm32-wasip1 -p email-verdict-filter
#   2. Debian's Rust (where no wasm32 std can be downloaded): installs rustc-web cargo-web
#      rust-web-src lld wasi-libc when missing, then builds std from source with /usr/bin/cargo
#      (-Zbuild-std, RUSTC_BOOTSTRAP=1, linker wasm-ld) into target-wasm/.
#
# EMAIL_VERDICT_FILTER_ROUTE=rustup|debian forces a route (default: auto).
# Afterwards it checks that tokio is not in the filter's dependency tree for the wasm target
# (a proxy-wasm module has no async runtime; tokio pulled in by accident would not build or run).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

TARGET=wasm32-wasip1
CRATE=email-verdict-filter
ARTIFACT=email_verdict_filter.wasm
OUT=target/$ARTIFACT
route=${EMAIL_VERDICT_FILTER_ROUTE:-auto}

case $route in
  auto | rustup | debian) ;;
  *)
    echo "error: EMAIL_VERDICT_FILTER_ROUTE must be auto, rustup or debian (got '$route')" >&2
    exit 2
    ;;
esac

# Route 1 is possible when rustup has (or can add) the target.
rustup_has_target() {
  command -v rustup >/dev/null 2>&1 || return 1
  if rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
    return 0
  fi
  echo "filter: adding the rustup target $TARGET ..."
  # Bounded: where the download cannot work (no route to the rustup dist server) fall back soon.
  if command -v timeout >/dev/null 2>&1; then
    timeout 180 rustup target add "$TARGET" >/dev/null 2>&1
  else
    rustup target add "$TARGET" >/dev/null 2>&1
  fi
}

DEBIAN_PKGS=(rustc-web cargo-web rust-web-src lld wasi-libc)

debian_install() {
  local missing=() p
  for p in "${DEBIAN_PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} == 0)); then
    echo "found      ${DEBIAN_PKGS[*]}"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: no rustup target $TARGET and no apt-get to install ${missing[*]}:" >&2
    echo "       install a Rust toolchain with the $TARGET target (rustup target add $TARGET)" >&2
    exit 1
  fi
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "error: missing ${missing[*]}: run as root or install sudo" >&2
      exit 1
    }
    sudo=(sudo)
  fi
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get) updated=0
  # apt-get update at most once: first when apt does not know a package yet (a fresh machine),
  # else only when installing from the lists it has fails (they may be stale).
  if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
    "${apt[@]}" update -qq
    updated=1
  fi
  echo "filter: installing ${missing[*]} (Debian's Rust for the wasm build) ..."
  if ! "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" </dev/null; then
    ((updated == 0)) || exit 1
    "${apt[@]}" update -qq
    "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" </dev/null
  fi
  echo "installed  ${missing[*]}"
}

use_rustup=0
if [[ $route != debian ]]; then
  if rustup_has_target; then
    use_rustup=1
  elif [[ $route == rustup ]]; then
    echo "error: EMAIL_VERDICT_FILTER_ROUTE=rustup but rustup has no $TARGET target" >&2
    exit 1
  fi
fi

wasm_out=""
if ((use_rustup)); then
  echo "filter: route 1 (rustup target $TARGET, $(rustc --version))"
  cargo build --profile wasm --target "$TARGET" -p "$CRATE"
  wasm_out=target/$TARGET/wasm/$ARTIFACT
  tree_cmd=(cargo tree)
else
  echo "filter: route 2 (Debian's Rust with -Zbuild-std: no rustup target $TARGET here)"
  debian_install
  [[ -x /usr/bin/cargo && -x /usr/bin/rustc ]] || {
    echo "error: /usr/bin/cargo or /usr/bin/rustc missing after installing ${DEBIAN_PKGS[*]}" >&2
    exit 1
  }
  # rustup's proxies usually come first on PATH: name Debian's tools explicitly.
  export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
  echo "filter: $(/usr/bin/rustc --version)"
  RUSTC_BOOTSTRAP=1 \
    CARGO_TARGET_WASM32_WASIP1_LINKER=wasm-ld \
    RUSTFLAGS="-L /usr/lib/wasm32-wasi" \
    /usr/bin/cargo build --profile wasm --target "$TARGET" -Zbuild-std=std,panic_abort \
    -p "$CRATE" --target-dir target-wasm
  wasm_out=target-wasm/$TARGET/wasm/$ARTIFACT
  tree_cmd=(/usr/bin/cargo tree)
fi

[[ -f $wasm_out ]] || {
  echo "error: the build succeeded but $wasm_out is missing (is $CRATE a cdylib?)" >&2
  exit 1
}
mkdir -p target
cp -f "$wasm_out" "$OUT.tmp"
mv -f "$OUT.tmp" "$OUT"

# No tokio in the module: `cargo tree -i tokio` must find nothing for the filter on wasm.
if tree=$("${tree_cmd[@]}" -i tokio -p "$CRATE" --target "$TARGET" -e normal 2>&1); then
  if [[ -n $tree ]]; then
    echo "error: tokio is in $CRATE's dependency tree for $TARGET:" >&2
    echo "$tree" >&2
    exit 1
  fi
elif ! grep -q "did not match any packages" <<<"$tree"; then
  echo "error: cargo tree -i tokio failed:" >&2
  echo "$tree" >&2
  exit 1
fi
echo "filter: no tokio in $CRATE for $TARGET"

size=$(wc -c <"$OUT")
echo "filter: built $root/$OUT ($size bytes)"

# The module's size is a target (under 1 MiB, BENCHMARKS.md "Footprint"): Envoy loads it into
# every worker's VM, and a dependency linked by accident (the Public Suffix List, twice now)
# doubles it without a test noticing. Over the target, the build fails.
MAX_BYTES=1048576
if ((size > MAX_BYTES)); then
  echo "error: $OUT is $size bytes, over 1 MiB ($MAX_BYTES): see BENCHMARKS.md, Footprint, for what grew it last time" >&2
  exit 1
fi
