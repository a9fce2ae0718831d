#!/usr/bin/env bash
# Installs the web frameworks whose parsers tests/tests/framework_differentials.rs runs on the bytes
# the app behind the gateway received (tests/frameworks/README.md), pinned, and only what is
# missing: safe to run again and again (scripts/install-deps.sh runs it for `make test`).
#
#   Debian 12   golang-go (1.19), ruby-rack (2.2), php-cli (8.2), ruby-mail (2.7): apt, bookworm's
#   npm         Express 5, multer, busboy, formidable 3, and the email validators validator.js,
#               express-validator, zod, joi, class-validator; for the protocol matrix
#               (tests/tests/protocols.rs) @connectrpc/connect-node with @bufbuild/protobuf and
#               graphql-yoga on graphql 16: `npm ci` from tests/frameworks/node's lockfile
#   PyPI        Django, FastAPI (Starlette), python-multipart, Flask, and the email validators
#               email-validator, pydantic, WTForms, marshmallow; grpcio and grpcio-tools (with
#               protobuf) for the protocol matrix, opentelemetry-proto for the OTLP receiver of
#               tests/traces.rs (tests/otlp/receiver.py): pinned, in the project's .venv
#   Go          target/frameworks/go-readers, built from tests/frameworks/go (standard library only)
#   protoc      target/frameworks/acme.binpb: tests/frameworks/proto compiled by grpcio-tools'
#               protoc into a descriptor set, which the Node protocol app loads (no code generation)
#
# Prints one line per thing found or installed. Debian/Ubuntu; sudo when not root.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
frameworks=$root/tests/frameworks
export DEBIAN_FRONTEND=noninteractive

# Pinned on PyPI (Werkzeug comes with schemathesis; Flask 3.1 uses it).
PIP_PINS=("Django==5.2.19" "fastapi==0.165.0" "starlette==1.10.0" "python-multipart==0.0.34" "Flask==3.1.3"
  "email-validator==2.4.0" "pydantic==2.14.4" "idna==3.20" "WTForms==3.3.2" "marshmallow==4.4.0"
  "grpcio==1.85.1" "grpcio-tools==1.85.1" "protobuf==7.36.2" "opentelemetry-proto==1.45.2")

# Debian packages: command:package (their versions are bookworm's: see the README's table).
missing=()
for entry in go:golang-go ruby:ruby-rack php:php-cli ruby:ruby-mail; do
  cmd=${entry%%:*} pkg=${entry#*:}
  if [[ $pkg == ruby-* ]]; then
    ok() { command -v ruby >/dev/null 2>&1 && ruby -e "require '${pkg#ruby-}'" 2>/dev/null; }
  else
    ok() { command -v "$cmd" >/dev/null 2>&1; }
  fi
  if ok; then echo "found      $pkg"; else missing+=("$pkg"); fi
done
if ((${#missing[@]} > 0)); then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
  if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then "${apt[@]}" update -qq; fi
  "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
  echo "installed  ${missing[*]} (apt)"
fi

# Node: from the lockfile, again only when the lockfile changed.
node_lock=$(sha256sum "$frameworks/node/package-lock.json" | cut -d' ' -f1)
node_stamp=$frameworks/node/node_modules/.installed-from-lock
if [[ -f $node_stamp && $(cat "$node_stamp") == "$node_lock" ]]; then
  echo "found      Node frameworks (tests/frameworks/node/node_modules)"
else
  (cd "$frameworks/node" && npm ci --no-audit --no-fund --loglevel=error >/dev/null </dev/null)
  echo "$node_lock" >"$node_stamp"
  echo "installed  Node frameworks (npm ci in tests/frameworks/node)"
fi

# Python: into the project's .venv (scripts/install-deps.sh made it).
python=$root/.venv/bin/python3
if [[ ! -x $python ]]; then
  echo "error: $root/.venv is missing: run scripts/install-deps.sh first" >&2
  exit 1
fi
if "$python" - "${PIP_PINS[@]}" <<'PY' 2>/dev/null; then
import importlib.metadata as m, sys
sys.exit(0 if all(m.version(p.split("==")[0]) == p.split("==")[1] for p in sys.argv[1:]) else 1)
PY
  echo "found      Python frameworks (${PIP_PINS[*]})"
else
  "$python" -m pip install --quiet --disable-pip-version-check "${PIP_PINS[@]}" </dev/null
  echo "installed  Python frameworks (${PIP_PINS[*]}, PyPI, in .venv)"
fi

# Go: the readers' binary, rebuilt when its source changed; Go's caches stay under target/.
out=$root/target/frameworks
go_src=$(cat "$frameworks/go/go.mod" "$frameworks/go/"*.go | sha256sum | cut -d' ' -f1)
go_stamp=$out/go-readers.built-from
if [[ -x $out/go-readers && -f $go_stamp && $(cat "$go_stamp") == "$go_src" ]]; then
  echo "found      Go readers ($out/go-readers)"
else
  mkdir -p "$out/gotmp"
  (cd "$frameworks/go" && GOCACHE=$out/gocache GOPATH=$out/gopath GOTMPDIR=$out/gotmp GOFLAGS=-mod=mod \
    go build -o "$out/go-readers" .)
  echo "$go_src" >"$go_stamp"
  echo "installed  Go readers ($out/go-readers, $(go version | cut -d' ' -f3))"
fi

# The protocol matrix's descriptor set, recompiled when the .proto changed.
proto_src=$(cat "$frameworks/proto/acme/v1/"*.proto | sha256sum | cut -d' ' -f1)
proto_stamp=$out/acme.binpb.built-from
if [[ -f $out/acme.binpb && -f $proto_stamp && $(cat "$proto_stamp") == "$proto_src" ]]; then
  echo "found      protocol descriptor set ($out/acme.binpb)"
else
  mkdir -p "$out"
  "$python" -m grpc_tools.protoc -I "$frameworks/proto" --include_imports \
    --descriptor_set_out="$out/acme.binpb" acme/v1/accounts.proto
  echo "$proto_src" >"$proto_stamp"
  echo "installed  protocol descriptor set ($out/acme.binpb, grpcio-tools' protoc)"
fi
