#!/usr/bin/env bash
# `make bench`: the benchmarks of BENCHMARKS.md. Installs wrk when missing (Debian package; the
# other tools come from scripts/install-deps.sh, which `make bench` runs first), builds the release
# sidecar, the benchmark runner and the filter, then runs
#   1. cargo bench -p email-verdict-core --bench classify   (criterion; leaves target/bench/classify.md)
#   2-7. target/release/email-verdict-bench                 (wrk against the sidecar and Envoy;
#        7: cached lookups during a new-name flood, the review queue full)
# The tables go to stdout and target/bench/results.md. Arguments are passed to the runner, e.g.
#   scripts/bench.sh --seconds 5 --rounds 1
# BASELINE=<dir> (`make bench BASELINE=<dir>`): an older build measured beside this one in
# section 4 (the runner's --baseline); a commit instead of a directory is built first with
# scripts/baseline.sh (into target/baseline/<short commit>, reused by the next run).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

for tool in wrk dnsperf; do
  command -v "$tool" >/dev/null 2>&1 && continue
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$tool" </dev/null ||
    { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$tool" </dev/null; }
  echo "installed  $tool ($(command -v "$tool"))"
done

baseline=()
if [[ -n ${BASELINE:-} ]]; then
  dir=$BASELINE
  if [[ ! -d $dir ]]; then
    git rev-parse --verify --quiet "$dir^{commit}" >/dev/null || {
      echo "error: BASELINE=$dir is neither a directory nor a commit" >&2
      exit 2
    }
    short=$(git rev-parse --short "$dir^{commit}")
    if [[ -f target/baseline/$short/COMMIT ]]; then
      dir=target/baseline/$short
    else
      dir=$(scripts/baseline.sh "$dir" | tail -n 1)
    fi
  fi
  baseline=(--baseline "$dir")
fi

cargo build --release -p email-verdict -p email-verdict-bench
scripts/build-filter.sh
scripts/build-module.sh # section 4 runs the dynamic module beside the Wasm filter (--filters)
cargo bench -p email-verdict-core --bench classify
target/release/email-verdict-bench "${baseline[@]}" "$@"
