// Shared by the browser checks: Debian's Chromium through playwright-core, the page messages
// (read from sidecar/locales/*.toml, so the checks follow the translations), assertions that
// say what failed, and screenshots at phone and desktop widths.
import { readFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const LANGS = ["en", "de", "fr", "es", "pt", "ja"];
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 900 };

/** The flat `key = "text"` messages of one language. */
export function messages(lang) {
  const text = readFileSync(join(here, "../../sidecar/locales", `${lang}.toml`), "utf8");
  const out = {};
  for (const line of text.split("\n")) {
    const m = line.match(/^([a-z_]+) = "(.*)"$/);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/** `{name}` placeholders filled in, as the server does. */
export function fill(template, args) {
  return Object.entries(args).reduce((s, [k, v]) => s.replaceAll(`{${k}}`, String(v)), template);
}

export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

export function equal(got, want, what) {
  if (got !== want) throw new Error(`check failed: ${what}\n  got:  ${JSON.stringify(got)}\n  want: ${JSON.stringify(want)}`);
}

/** Chromium with the flags that work on our machines (no sandbox as root, no background network). */
export async function launch(options = {}) {
  const profile = mkdtempSync(join(tmpdir(), "ev-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    viewport: DESKTOP,
    ...options,
  });
  return {
    context: browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Full-page screenshots of the current page at both widths, named `<name>-phone|desktop.png`. */
export async function screenshots(page, dir, name) {
  mkdirSync(dir, { recursive: true });
  for (const [label, size] of [["phone", PHONE], ["desktop", DESKTOP]]) {
    await page.setViewportSize(size);
    await page.screenshot({ path: join(dir, `${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize(DESKTOP);
}

/** Runs `main`, printing a clear failure and exiting non-zero on any error. */
export async function run(name, main) {
  try {
    await main();
    console.log(`${name}: ok`);
  } catch (e) {
    console.error(`${name}: FAILED\n${e.stack || e}`);
    process.exit(1);
  }
}
