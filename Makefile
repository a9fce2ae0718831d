# Entry points of the workspace (docs: README.md "Set up"; names fixed by the operator contract).
#
#   make build   release build of the sidecar: target/release/email-verdict
#   make test    every check CI runs: installs system deps, builds, tests, fmt, clippy
#   make lint    fmt check + clippy
#   make data    regenerates data/ from the named upstream packages
#   make demo    the sidecar in the foreground on embedded state, with a fresh demo key
#   make clean   removes build output and demo state

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
BIN := target/release/email-verdict

.PHONY: all build deps test lint fmt-check clippy data demo clean

all: build

build:
	$(CARGO) build --release

# System packages (cmake for Pingora, nsd and redis-server for the end-to-end tests, ...);
# installs only what is missing.
deps:
	scripts/install-deps.sh

test: deps
	$(CARGO) build --release --workspace
	$(CARGO) test --release --workspace
	$(MAKE) --no-print-directory lint

lint: fmt-check clippy

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --release --all-targets -- -D warnings

data:
	python3 scripts/update-data.py

# For now the sidecar alone. Still to come (issue 4): Envoy on 127.0.0.1:10000 with the filter
# and the demo signup app behind it, all stopped together on Ctrl-C / SIGTERM.
# EMAIL_VERDICT_* variables from the environment reach the sidecar unchanged (e.g.
# EMAIL_VERDICT_DNS); EMAIL_VERDICT_STATE, when set, replaces the demo state.
demo: build
	@state="$${EMAIL_VERDICT_STATE:-sqlite:demo.db}"; \
	listen="$${EMAIL_VERDICT_LISTEN:-127.0.0.1:8080}"; \
	key="$$($(BIN) keys create --plan pro --name demo --state "$$state" | tail -n 1)"; \
	echo; \
	echo "Demo API key (plan pro): $$key"; \
	echo; \
	echo "Try, in another terminal:"; \
	echo "  curl -s 'http://$$listen/api/v1/domain/mailinator.com?key=$$key'"; \
	echo "  curl -s -H 'Authorization: Bearer $$key' 'http://$$listen/api/v1/domain/John.Doe%40gmail.com'"; \
	echo "  curl -s -H 'Authorization: Bearer $$key' 'http://$$listen/api/v1/domain/b%C3%BCcher.example'"; \
	echo; \
	echo "Stop with Ctrl-C."; \
	exec $(BIN) serve --state "$$state"

clean:
	$(CARGO) clean
	rm -rf target-wasm target-tests "$${TMPDIR:-/tmp}/email-verdict-tests"
	rm -f demo.db demo.db-journal demo.db-wal demo.db-shm
