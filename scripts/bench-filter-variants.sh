#!/usr/bin/env bash
# Where the filter's cost in Envoy goes (BENCHMARKS.md, section 4, "Where the cached signup's
# cost is"): builds each scratch variant of the filter in bench/filter-variants/*.patch (each
# leaves out one piece of the work), runs section 4 of the benchmark runner with it and with
# the shipped filter, and prints the Envoy CPU per request each adds over the same run's POST
# without the filter. Arguments go to the runner (default: --seconds 5 --rounds 2).
#
# The patches are against filter/src; one that no longer applies fails the run: refresh it.
# Needs what `make bench` needs (run that once first); about 8 minutes in all.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
args=("$@")
((${#args[@]})) || args=(--seconds 5 --rounds 2)

make --no-print-directory filter >/dev/null
cargo build --release -p email-verdict -p email-verdict-bench
out=$root/target/bench/variants
mkdir -p "$out" "$root/target-variants" "$root/target-variants-wasm"
cp -f target/email_verdict_filter.wasm "$out/shipped.wasm"

# The variants build in a worktree of HEAD whose build directories are shared between them.
tmp=$(mktemp -d)
wt=$tmp/worktree
git worktree add -q --detach "$wt" HEAD
trap 'git worktree remove --force "$wt"; rm -rf "$tmp"' EXIT
ln -s "$root/target-variants" "$wt/target"
ln -s "$root/target-variants-wasm" "$wt/target-wasm"
for patch in bench/filter-variants/*.patch; do
  name=$(basename "$patch" .patch)
  git -C "$wt" checkout -q -- filter
  git -C "$wt" apply "$root/$patch"
  echo "building variant $name"
  (cd "$wt" && scripts/build-filter.sh >/dev/null 2>&1) || {
    echo "error: variant $name does not build" >&2
    exit 1
  }
  cp -f "$wt/target/email_verdict_filter.wasm" "$out/$name.wasm"
done

# "| 4 | ... | 40.8 µs | ..." -> 40.8: the Envoy CPU per request of a row of section 4.
cpu() { awk -F'|' -v row="$2" '$2 ~ "^ " row " $" { gsub(/[^0-9.]/, "", $8); print $8 }' "$1"; }

printf '\n%-18s %22s %22s\n' "filter build" "cached signup (row 4)" "email in header (row 7)"
for wasm in "$out/shipped.wasm" "$out"/[a-z]-*.wasm; do
  name=$(basename "$wasm" .wasm)
  EMAIL_VERDICT_FILTER_WASM=$wasm target/release/email-verdict-bench --sections 4 "${args[@]}" \
    --out "$out/$name.md" >"$out/$name.log" 2>&1 || {
    echo "error: section 4 with $name failed: $out/$name.log" >&2
    exit 1
  }
  awk -v name="$name" -v b="$(cpu "$out/$name.md" 3)" -v r4="$(cpu "$out/$name.md" 4)" \
    -v r7="$(cpu "$out/$name.md" 7)" 'BEGIN { printf "%-18s %+19.1f µs %+20.1f µs\n", name, r4 - b, r7 - b }'
done
