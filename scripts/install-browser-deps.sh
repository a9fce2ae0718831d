#!/usr/bin/env bash
# What the browser tests of the public pages and the dashboard need (tests/browser/, driven by
# tests/tests/pages.rs): Debian's Chromium, and playwright-core from tests/browser/package-lock.json.
# Idempotent; uses sudo when not root. No browser is downloaded by npm: playwright-core drives
# /usr/bin/chromium (`npx playwright install` does not work on our machines).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
    echo "install-browser-deps: installing chromium (apt)"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk >/dev/null
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "install-browser-deps: node and npm are needed (apt-get install nodejs npm)" >&2
    exit 1
fi

cd "$root/tests/browser"
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.installed-from-lock"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_hash" ]; then
    echo "install-browser-deps: npm ci in tests/browser"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
    echo "$lock_hash" > "$stamp"
fi
echo "install-browser-deps: chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}'), playwright-core $(node -p 'require("playwright-core/package.json").version')"
