// node dashboard.mjs ADMIN_URL ADMIN_TOKEN REVIEW_DOMAIN USED_KEY_ID SCREENSHOT_DIR
// The operator opens the admin listener's root (which leads to the dashboard), logs in with the
// admin token, has a key creation refused (the form keeps what was typed), creates a key (shown
// once), reads the 30-day usage chart of a key used on one day (USED_KEY_ID), revokes the new
// key after a confirmation step, and decides a domain of the review queue. Prints {"key", "id"}
// of the key for the caller to check.
import { join } from "node:path";
import { check, equal, launch, screenshots, run } from "./lib.mjs";

const [admin, token, domain, usedKey, shots] = process.argv.slice(2);

await run("dashboard", async () => {
  const browser = await launch();
  const page = await browser.context.newPage();
  await page.goto(`${admin}/`);
  equal(new URL(page.url()).pathname, "/dashboard", "the admin listener's root leads to the dashboard");
  await screenshots(page, shots, "dashboard-login");
  await page.getByLabel("Admin token").fill("not-the-token");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Log in" }).click()]);
  check(await page.getByRole("alert").isVisible(), "a wrong token is refused");
  await page.getByLabel("Admin token").fill(token);
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Log in" }).click()]);
  equal(await page.textContent("h1"), "API keys", "logged in");

  // A wrong network: refused, and the form keeps what was typed (name, plan, networks).
  const create = page.locator('form[action="/dashboard/keys"]');
  await page.getByLabel("Name").fill("browser-test");
  await create.getByLabel("Plan").selectOption("premium");
  await page.getByLabel(/Allowed IPs/).fill("192.0.2.0/24, 2001:db8::/129");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Create key" }).click()]);
  check((await page.getByRole("alert").textContent()).includes("2001:db8::/129"), "the refusal says why");
  equal(await page.getByLabel("Name").inputValue(), "browser-test", "the name is kept");
  equal(await create.getByLabel("Plan").inputValue(), "premium", "the plan is kept");
  equal(await page.getByLabel(/Allowed IPs/).inputValue(), "192.0.2.0/24, 2001:db8::/129", "the networks are kept");
  await screenshots(page, shots, "dashboard-refused-form-kept");
  await page.getByLabel(/Allowed IPs/).fill("192.0.2.0/24, 2001:db8::/32");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Create key" }).click()]);
  const secret = (await page.textContent("[data-new-key]")).trim();
  check(/^ev_[0-9a-f]{40}$/.test(secret), `a new key is shown (${secret})`);
  const id = (await page.textContent("#new-key-heading")).replace("New key", "").trim();
  const row = page.locator(`tr[data-key="${id}"]`);
  equal(await row.getAttribute("data-status"), "active", "the new key is listed as active");
  const cells = await row.locator("td").allTextContents();
  check(cells.includes("premium") && cells.some((c) => c.includes("192.0.2.0/24")), `plan and allowlist listed: ${cells}`);
  await screenshots(page, shots, "dashboard-new-key");
  await page.reload();
  equal(await page.locator("[data-new-key]").count(), 0, "the key is shown only once");

  // The plan changes in place; every key has its 30-day usage chart, one bar per day.
  await page.getByLabel(`Plan of key ${id}`, { exact: true }).selectOption("basic");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: `Change the plan of key ${id}` }).click()]);
  check((await page.textContent("p.notice")).includes("plan basic"), "the plan change is confirmed");
  check((await row.locator("td").allTextContents()).includes("basic"), "the new plan is listed");
  equal(await page.locator(`svg[data-usage="${id}"] rect.bar`).count(), 30, "thirty days in the usage chart");
  equal(await page.textContent(`[data-usage-summary="${id}"]`), "not used", "an unused key says so");
  // One day of data: a bar on a 30-day baseline, and the chart says what it shows.
  const used = page.locator(`svg[data-usage="${usedKey}"]`);
  const bars = await used.locator("rect.bar").evaluateAll((rs) => rs.map((r) => [r.getAttribute("height"), r.getBBox().width]));
  equal(bars.length, 30, "thirty days for the used key");
  const drawn = bars.filter(([h]) => h !== "0");
  equal(drawn.length, 1, `one day of data, one bar: ${bars}`);
  check(drawn[0][1] >= 4, `the bar is wide enough to see: ${drawn[0]}`);
  equal(await used.locator("rect.baseline").count(), 1, "a baseline spans the 30 days");
  const today = new Date().toISOString().slice(0, 10);
  check(new RegExp(`^\\d+ lookups? on ${today} only$`).test(await page.textContent(`[data-usage-summary="${usedKey}"]`)), "the day is named");
  const keys = await page.locator("table.keys").evaluate((t) => [t.scrollWidth, t.clientWidth]);
  check(keys[0] <= keys[1], `the keys table fits a desktop page without scrolling: ${keys}`);
  await screenshots(page, shots, "dashboard-plans-and-usage");
  await page.locator("table.keys").screenshot({ path: join(shots, "dashboard-usage-one-day-desktop.png") });

  // Revoking asks first, on a page of its own (no script): cancel keeps the key.
  const revoke = () => Promise.all([page.waitForNavigation(), page.getByRole("button", { name: `Revoke key ${id}…` }).click()]);
  await revoke();
  equal(await page.textContent("h1"), `Revoke key ${id}?`, "a confirmation step");
  await screenshots(page, shots, "dashboard-revoke-confirm");
  await Promise.all([page.waitForNavigation(), page.getByRole("link", { name: "Cancel: keep the key" }).click()]);
  equal(await page.locator(`tr[data-key="${id}"]`).getAttribute("data-status"), "active", "cancelled: still active");
  await revoke();
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: `Revoke key ${id}`, exact: true }).click()]);
  check((await page.textContent("p.notice")).includes(`Key ${id} revoked.`), "the revocation is confirmed");
  equal(await page.locator(`tr[data-key="${id}"]`).getAttribute("data-status"), "revoked", "the key is revoked");

  const item = page.locator(`tr[data-domain="${domain}"]`);
  equal(await item.count(), 1, `${domain} waits in the review queue`);
  await page.getByLabel(`Note for ${domain}`).fill("decided in the browser test");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: `Mark ${domain} disposable` }).click()]);
  check((await page.textContent("p.notice")).includes(`${domain}: disposable`), "the decision is confirmed");
  equal(await page.locator(`tr[data-domain="${domain}"]`).count(), 0, `${domain} left the queue`);
  await screenshots(page, shots, "dashboard-decided");
  await browser.close();
  console.log(JSON.stringify({ key: secret, id }));
});
