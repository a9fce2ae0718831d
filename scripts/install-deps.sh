#!/usr/bin/env bash
# Installs the system tools that building and testing email-verdict need, and only those that are
# missing: safe to run again and again (`make test` runs it every time).
#
#   cmake         Pingora's build (zlib-ng)
#   nsd           the authoritative DNS server the end-to-end tests run on fixture zones
#   redis-server  the shared-state backend's tests
#   pkg-config    native builds
#   python3       scripts/update-data.py
#
# Debian/Ubuntu (apt-get); sudo when not root. Also adds the rustfmt and clippy components when
# rustup is there and they are missing. Prints one line per thing found or installed.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

# command:package
REQUIRED=(
  "cmake:cmake"
  "nsd:nsd"
  "redis-server:redis-server"
  "pkg-config:pkg-config"
  "python3:python3"
)

# Where a tool is, also looking in the sbin directories that a user's PATH often lacks.
locate() {
  command -v "$1" 2>/dev/null && return 0
  local d
  for d in /usr/sbin /sbin /usr/local/sbin; do
    if [[ -x "$d/$1" ]]; then echo "$d/$1"; return 0; fi
  done
  return 1
}

missing_pkgs=()
missing_cmds=()
for entry in "${REQUIRED[@]}"; do
  cmd=${entry%%:*}
  pkg=${entry#*:}
  if path=$(locate "$cmd"); then
    echo "found      $cmd ($path)"
  else
    missing_cmds+=("$cmd")
    missing_pkgs+=("$pkg")
  fi
done

if ((${#missing_pkgs[@]} > 0)); then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing ${missing_pkgs[*]} and no apt-get here: install them with your package manager" >&2
    exit 1
  fi
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "error: missing ${missing_pkgs[*]}: run as root or install sudo" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  # Keep apt from starting the packages' system services (nsd on port 53, redis on 6379): the
  # tests start their own instances on free ports, and a container may have no init at all.
  policy=/usr/sbin/policy-rc.d
  added_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    added_policy=1
  fi
  cleanup() { if ((added_policy)); then "${sudo[@]}" rm -f "$policy"; fi; }
  trap cleanup EXIT
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" </dev/null
  for i in "${!missing_cmds[@]}"; do
    cmd=${missing_cmds[$i]}
    if path=$(locate "$cmd"); then
      echo "installed  $cmd ($path, package ${missing_pkgs[$i]})"
    else
      echo "error: installed ${missing_pkgs[$i]} but $cmd is still not found" >&2
      exit 1
    fi
  done
fi

# cargo fmt / cargo clippy, for `make lint` (a minimal rustup profile lacks them).
for comp in rustfmt clippy; do
  sub=${comp/rustfmt/fmt}
  if cargo "$sub" --version >/dev/null 2>&1; then
    echo "found      cargo $sub"
  elif command -v rustup >/dev/null 2>&1; then
    rustup component add "$comp" >/dev/null
    echo "installed  cargo $sub (rustup component $comp)"
  else
    echo "error: cargo $sub is missing and there is no rustup to add it" >&2
    exit 1
  fi
done
