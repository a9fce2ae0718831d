// node waves.mjs ADMIN_URL SCREENSHOT_DIR
// Issue 32, item 4: a wave is one reviewer's step. The dashboard's home page shows the hour's
// waves and the day's busiest mailboxes (keyed hash, shortened), clients and servers; the queue
// by mail server leads with the wave and its count, though another server has more queued
// domains looked up more often; one mark on the server settles the wave.
// The caller looked up twenty names under mx.flood.example twice each, and signed up twelve
// never-seen domains on mx.wavemail.waves (three mailboxes, four clients).
import { check, equal, launch, screenshots, run } from "./lib.mjs";

const [admin, shots] = process.argv.slice(2);
const SERVER = "mx.wavemail.waves";

await run("waves", async () => {
  const browser = await launch();
  const page = await browser.context.newPage();
  await page.goto(`${admin}/dashboard`);
  const rows = (board) => page.locator(`table[data-board="${board}"] tbody tr[data-value]`);
  equal(await rows("waves").count(), 1, "one wave in the last hour");
  equal(await rows("waves").first().getAttribute("data-value"), SERVER, "on the wave's server");
  equal(await rows("waves").first().locator("[data-count]").textContent(), "12", "twelve new domains");
  equal(await rows("mailboxes").count(), 3, "three mailboxes");
  equal(await rows("mailboxes").first().locator("th").textContent(), "a1a1a1a1a1a1…", "a mailbox as its hash, shortened");
  equal(await rows("mailboxes").first().locator("[data-count]").textContent(), "4", "its signups today");
  equal(await rows("clients").count(), 4, "four clients");
  equal(await rows("servers").first().getAttribute("data-value"), SERVER, "the busiest server");
  await screenshots(page, shots, "dashboard-signups");

  await page.goto(`${admin}/dashboard/reviews?view=servers`);
  const groups = page.locator("table.servers tbody tr");
  equal(await groups.first().getAttribute("data-server"), SERVER, "the wave leads the queue");
  equal(await groups.first().locator("[data-new-domains]").textContent(), "12: a wave", "with its count");
  equal(await groups.nth(1).getAttribute("data-server"), "mx.flood.example", "then the heavier group");
  equal(await groups.nth(1).locator("[data-new-domains]").textContent(), "0", "no signups there");
  await screenshots(page, shots, "reviews-wave");

  await Promise.all([page.waitForNavigation(), groups.first().getByRole("link", { name: SERVER }).click()]);
  equal(await page.textContent("h1"), `Mail server ${SERVER}`, "the server's page");
  await page.getByLabel(`Note for ${SERVER}`).fill("a wave of new domains");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: `Mark ${SERVER} disposable` }).click()]);
  const notice = await page.textContent("p.notice");
  check(notice.includes("blocks the 12 queued domains"), `one step settles the wave: ${notice}`);
  await browser.close();
});
