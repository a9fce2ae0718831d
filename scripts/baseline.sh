#!/usr/bin/env bash
# `make baseline COMMIT=<rev>`: an older build to measure beside this one with
# `make bench BASELINE=<dir>` (BENCHMARKS.md, "How to compare two builds").
#
#   scripts/baseline.sh COMMIT [DIR]      DIR defaults to target/baseline/<short commit>
#
# Checks COMMIT out in a temporary worktree (target/baseline-build/worktree, removed afterwards),
# builds its release sidecar and its filter there (`cargo build --release -p email-verdict`, its
# own scripts/build-filter.sh), then copies into DIR what the runner needs, in the layout of a
# checkout: target/release/email-verdict, target/email_verdict_filter.wasm, envoy/ (its plugin
# configuration and templates: an older filter refuses a newer configuration), scripts/render-envoy.py
# and COMMIT (the commit id). Prints DIR on the last line.
#
# The build directories stay in target/baseline-build/ (the next baseline rebuilds only what
# changed); the first use seeds them from this checkout's target/ so that only the workspace's
# own crates are built. `make clean` removes them.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
if (($# < 1 || $# > 2)); then
  echo "usage: scripts/baseline.sh COMMIT [DIR]" >&2
  exit 2
fi
commit=$(git rev-parse --verify --quiet "$1^{commit}") || {
  echo "error: $1 is not a commit of this repository" >&2
  exit 2
}
short=$(git rev-parse --short "$commit")
dir=${2:-$root/target/baseline/$short}
cache=$root/target/baseline-build
wt=$cache/worktree

if [[ ! -d $cache/target ]]; then
  mkdir -p "$cache/target"
  for part in release wasm32-wasip1; do
    if [[ -d target/$part ]]; then
      echo "baseline: seeding $cache/target/$part from target/$part" >&2
      cp -a "target/$part" "$cache/target/$part"
    fi
  done
fi
mkdir -p "$cache/target-wasm"

# A worktree left by an interrupted run goes first.
git worktree remove --force "$wt" 2>/dev/null || true
rm -rf "$wt"
git worktree prune
cleanup() {
  git -C "$root" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
  git -C "$root" worktree prune
}
trap cleanup EXIT
git worktree add -q --detach "$wt" "$commit"
ln -s "$cache/target" "$wt/target"
ln -s "$cache/target-wasm" "$wt/target-wasm"

echo "baseline: building $short in $wt" >&2
(
  cd "$wt"
  unset CARGO_TARGET_DIR
  cargo build --release -p email-verdict
  scripts/build-filter.sh
) >&2

tmp=$dir.partial
rm -rf "$tmp"
mkdir -p "$tmp/target/release" "$tmp/scripts"
cp "$wt/target/release/email-verdict" "$tmp/target/release/"
cp "$wt/target/email_verdict_filter.wasm" "$tmp/target/"
cp -R "$wt/envoy" "$tmp/envoy"
cp "$wt/scripts/render-envoy.py" "$tmp/scripts/"
echo "$commit" >"$tmp/COMMIT"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "baseline: $short ready in $dir (make bench BASELINE=$dir)" >&2
echo "$dir"
