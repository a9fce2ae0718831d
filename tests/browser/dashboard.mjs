// node dashboard.mjs ADMIN_URL ADMIN_TOKEN REVIEW_DOMAIN SCREENSHOT_DIR
// The operator logs in with the admin token, creates a key (shown once), revokes it, and
// decides a domain of the review queue. Prints {"key", "id"} of the key for the caller to check.
import { check, equal, launch, screenshots, run } from "./lib.mjs";

const [admin, token, domain, shots] = process.argv.slice(2);

await run("dashboard", async () => {
  const browser = await launch();
  const page = await browser.context.newPage();
  await page.goto(`${admin}/dashboard`);
  await screenshots(page, shots, "dashboard-login");
  await page.getByLabel("Admin token").fill("not-the-token");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Log in" }).click()]);
  check(await page.getByRole("alert").isVisible(), "a wrong token is refused");
  await page.getByLabel("Admin token").fill(token);
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Log in" }).click()]);
  equal(await page.textContent("h1"), "API keys", "logged in");

  await page.getByLabel("Name").fill("browser-test");
  await page.locator('form[action="/dashboard/keys"]').getByLabel("Plan").selectOption("premium");
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
  equal(await page.locator(`svg[data-usage="${id}"] rect`).count(), 30, "thirty days in the usage chart");
  check((await page.locator("svg[data-usage] rect[height]:not([height='0'])").count()) > 0, "a used key shows a bar");
  const keys = await page.locator("table.keys").evaluate((t) => [t.scrollWidth, t.clientWidth]);
  check(keys[0] <= keys[1], `the keys table fits a desktop page without scrolling: ${keys}`);
  await screenshots(page, shots, "dashboard-plans-and-usage");

  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: `Revoke key ${id}` }).click()]);
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
