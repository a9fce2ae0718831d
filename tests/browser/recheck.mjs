// node recheck.mjs BASE_URL LANG DOMAIN SCREENSHOT_DIR
// The re-check button runs a fresh lookup and lands back on the page; a second re-check of the
// same domain the same day answers 429 with a page saying when the next one is possible.
import { messages, fill, check, equal, launch, screenshots, run } from "./lib.mjs";

const [base, lang, domain, shots] = process.argv.slice(2);
const t = messages(lang);

await run("recheck", async () => {
  const browser = await launch();
  const page = await browser.context.newPage();
  await page.goto(`${base}/${lang}/domain/${domain}`);
  const button = page.getByRole("button", { name: t.recheck_button });
  const [first] = await Promise.all([page.waitForNavigation(), button.click()]);
  equal(first.status(), 200, "first re-check: the page after the redirect");
  check(page.url().endsWith(`/${lang}/domain/${domain}?rechecked=1`), `first re-check: redirected to the page (${page.url()})`);
  equal((await page.textContent("p.notice")).trim(), t.rechecked_notice, "first re-check: notice");
  await screenshots(page, shots, `recheck-${lang}-done`);

  const before = Date.now();
  const [second] = await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: t.recheck_button }).click()]);
  equal(second.status(), 429, "second re-check: refused");
  equal(await page.textContent("h1"), t.recheck_refused_title, "second re-check: title");
  const nextAt = Date.parse(await page.getAttribute("p.message", "data-next-at"));
  const day = 24 * 3600 * 1000;
  check(Math.abs(nextAt - (before + day)) < 10 * 60 * 1000, `second re-check: next one in about 24 hours (${new Date(nextAt).toISOString()})`);
  const shown = new Date(nextAt).toISOString().slice(0, 19).replace("T", " ") + " UTC";
  const body = fill(t.recheck_refused_body, { domain, hours: 24, time: shown });
  equal((await page.textContent("p.message")).trim(), body, "second re-check: says when the next one is possible");
  equal(await page.getAttribute("html", "lang"), lang, "second re-check: in the page's language");
  await screenshots(page, shots, `recheck-${lang}-refused`);
  await browser.close();
});
