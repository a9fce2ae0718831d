// node reviews.mjs ADMIN_URL SCREENSHOT_DIR
// Issue 24: a reviewer with ten minutes. From the dashboard's home page to the whole queue
// (highest priority first: near-matches to disposable infrastructure, then a weak listing), filtered by reason, decided from the filtered page
// (it comes back to it), then by mail server: the server's page says who taught the index about
// it and what marking it does; marking it disposable settles its queued domains at once.
// The caller queued: firemail.cc (weak listing), shared-backup.test and upper-case.test (both
// on mx.burnmail.test), victimco.test, nomx.example.
import { check, equal, launch, screenshots, run } from "./lib.mjs";

const [admin, shots] = process.argv.slice(2);

await run("reviews", async () => {
  const browser = await launch();
  const page = await browser.context.newPage();
  await page.goto(`${admin}/dashboard`);
  const link = page.locator("[data-queue-link] a");
  check((await link.textContent()).includes("All 5 waiting"), `the home page links the whole queue: ${await link.textContent()}`);
  await Promise.all([page.waitForNavigation(), link.click()]);
  equal(new URL(page.url()).pathname, "/dashboard/reviews", "the queue's own page");
  const domains = async () => page.locator("table.reviews tbody tr[data-domain]").evaluateAll((rs) => rs.map((r) => r.dataset.domain));
  const order = await domains();
  // Near-matches first (four disposable domains known on their server, under the bar), then a
  // weak listing: the most likely to be disposable.
  equal(JSON.stringify(order.slice(0, 2).sort()), JSON.stringify(["shared-backup.test", "upper-case.test"]), "near-matches first");
  equal(order[2], "firemail.cc", "then the weak listing");
  equal((await domains()).length, 5, "five waiting");
  await screenshots(page, shots, "reviews-queue");

  // Filtered by reason, decided from there: back on the filtered page.
  await page.getByLabel("Reason").selectOption("no_mx");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Show" }).click()]);
  equal(JSON.stringify(await domains()), JSON.stringify(["nomx.example"]), "only the name without mail");
  await page.getByLabel("Note for nomx.example").fill("parked domain");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Mark nomx.example disposable" }).click()]);
  equal(new URL(page.url()).search, "?reason=no_mx", "back on the filtered page");
  check((await page.textContent("p.notice")).includes("nomx.example: disposable"), "the decision is confirmed");
  equal((await domains()).length, 0, "decided: off the queue");

  // By mail server: mx.burnmail.test carries two of them.
  await page.goto(`${admin}/dashboard/reviews?view=servers`);
  const group = page.locator('table.servers tr[data-server="mx.burnmail.test"]');
  equal(await group.locator("td").first().textContent(), "2", "two queued domains on mx.burnmail.test");
  await screenshots(page, shots, "reviews-by-server");
  await Promise.all([page.waitForNavigation(), group.getByRole("link", { name: "mx.burnmail.test" }).click()]);
  equal(await page.textContent("h1"), "Mail server mx.burnmail.test", "the server's page");
  const effect = await page.textContent('[data-effect="disposable"]');
  check(effect.includes("blocks the 2 queued domains on mx.burnmail.test"), `what marking it does: ${effect}`);
  equal(await page.locator("table.taught tr[data-taught]").count(), 4, "the four listed domains that taught it");
  await screenshots(page, shots, "reviews-server");
  await page.getByLabel("Note for mx.burnmail.test").fill("a burner network");
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Mark mx.burnmail.test disposable" }).click()]);
  check((await page.textContent("p.notice")).includes("blocks the 2 queued domains"), "the mark says what it did");
  equal(await page.textContent("[data-mark]"), "disposable", "marked");
  equal(await page.textContent("[data-queued]"), "0", "its queued domains are settled");
  await screenshots(page, shots, "reviews-server-marked");
  await page.goto(`${admin}/dashboard/reviews`);
  equal(JSON.stringify((await domains()).sort()), JSON.stringify(["firemail.cc", "victimco.test"]), "what is left");
  await browser.close();
});
