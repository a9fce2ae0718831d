#!/usr/bin/env bash
# `make bench`: the benchmarks of BENCHMARKS.md. Installs wrk when missing (Debian package; the
# other tools come from scripts/install-deps.sh, which `make bench` runs first), builds the release
# sidecar, the benchmark runner and the filter, then runs
#   1. cargo bench -p email-verdict-core --bench classify   (criterion; leaves target/bench/classify.md)
#   2-7. target/release/email-verdict-bench                 (wrk against the sidecar and Envoy;
#        7: cached lookups during a new-name flood, the review queue full)
# The tables go to stdout and target/bench/results.md. Arguments are passed to the runner, e.g.
#   scripts/bench.sh --seconds 5 --rounds 1
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

cargo build --release -p email-verdict -p email-verdict-bench
scripts/build-filter.sh
cargo bench -p email-verdict-core --bench classify
target/release/email-verdict-bench "$@"
