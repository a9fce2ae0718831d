#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 30 s each): `scripts/fuzz.sh [SECONDS]`.
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
# A crash leaves its input under <crate>/fuzz/artifacts/ and fails the run: turn it into a
# regression test named after the bug.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-30}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for dir in core/fuzz filter/fuzz; do
  [ -d "$dir" ] || continue
  crate="$(dirname "$dir")"
  for target in $(cd "$crate" && cargo fuzz list); do
    echo "== fuzz $crate/$target for ${seconds}s"
    corpus=("fuzz/corpus/$target")
    # Hand-written seeds (kept in git; libFuzzer only reads them) give the structured targets a start.
    [ -d "$dir/seeds/$target" ] && corpus+=("fuzz/seeds/$target")
    mkdir -p "$crate/fuzz/corpus/$target"
    log="$crate/fuzz/target/$target.log"
    mkdir -p "$(dirname "$log")"
    if (cd "$crate" && cargo fuzz run "$target" "${corpus[@]}" -- -max_total_time="$seconds" -rss_limit_mb=2048) >"$log" 2>&1; then
      tail -n 2 "$log"
    else
      tail -n 60 "$log"
      echo "fuzz: $crate/$target failed; the input is under $crate/fuzz/artifacts/$target/" >&2
      exit 1
    fi
  done
done
