// node pages.mjs BASE_URL SCREENSHOT_DIR
// Every language: the pages of a disposable, a free, a business, a no-MX domain, a domain that
// does not exist and a typo of a popular provider (with its "Did you mean ...?" link) show the
// verdict (or, neutrally, that the domain cannot receive mail), the provider (a free provider by
// its own name first) and (with MX) the MX table with address, country, ASN and reverse DNS; the
// footer links the API's description. The bare URL picks the language from the browser's
// Accept-Language; a language we do not have gets a page, not JSON.
import { LANGS, messages, fill, check, equal, launch, screenshots, run } from "./lib.mjs";

const [base, shots] = process.argv.slice(2);
const CASES = [
  { domain: "mailinator.com", verdict: "disposable", state: "disposable", service: "disposable", mx: { ip: "192.0.2.10", ptr: "smtp10.burner-hosting.example", asn: "AS64500", country: "(US)" } },
  { domain: "gmail.com", verdict: "safe", state: "safe", service: "free", provider: "gmail.com", infrastructure: "Google Workspace", mx: { ip: "2001:db8::11", ptr: "gmail-smtp-in.l.google.com", asn: "AS64501", country: "(DE)" } },
  { domain: "shopco.example", verdict: "safe", state: "safe", service: "business", provider: "Microsoft 365", mx: { ip: "192.0.2.30", ptr: "mail-protection.outlook.com", asn: "AS64500", country: "(US)" } },
  { domain: "nomx.example", verdict: "safe", state: "no_mail", service: "other", queued: "no_mx" },
  { domain: "does-not-exist.example", verdict: "safe", state: "no_domain", service: "other", queued: "no_mx" },
  { domain: "yhaoo.com", verdict: "safe", state: "no_mail", service: "other", queued: "no_mx", suggestion: "yahoo.com" },
];
/** The text of a message as a page shows it (`[...]` marks a link's text). */
const shown = (text) => text.replaceAll("[", "").replaceAll("]", "");

async function checkPage(page, lang, c) {
  const t = messages(lang);
  const resp = await page.goto(`${base}/${lang}/domain/${c.domain}`);
  equal(resp.status(), 200, `${lang} ${c.domain}: status`);
  equal(await page.getAttribute("html", "lang"), lang, `${lang} ${c.domain}: html lang`);
  equal(await page.textContent("h1"), fill(t.heading, { domain: c.domain }), `${lang} ${c.domain}: heading`);
  const verdict = page.locator(".verdict-value");
  equal(await verdict.getAttribute("data-verdict"), c.verdict, `${lang} ${c.domain}: verdict`);
  equal(await verdict.getAttribute("data-state"), c.state, `${lang} ${c.domain}: what the box shows`);
  equal((await verdict.textContent()).trim(), t[`verdict_${c.state}`], `${lang} ${c.domain}: verdict text`);
  if (c.state.startsWith("no_")) {
    // Neutral: not the green of "safe" (nor the red of "disposable").
    const bg = await page.locator("section.verdict").evaluate((e) => getComputedStyle(e).backgroundColor);
    equal(bg, "rgb(244, 245, 247)", `${lang} ${c.domain}: neutral colours`);
    const note = page.locator('tr[data-flag="review_required"] [data-note="no_mx"]');
    equal((await note.textContent()).trim(), t.flag_review_required_no_mx, `${lang} ${c.domain}: the review flag explained`);
  }
  equal(await page.getAttribute("[data-service]", "data-service"), c.service, `${lang} ${c.domain}: service`);
  if (c.provider) equal((await page.textContent("[data-provider]")).trim(), c.provider, `${lang} ${c.domain}: provider`);
  const infrastructure = page.locator("[data-infrastructure]");
  equal(await infrastructure.count(), c.infrastructure ? 1 : 0, `${lang} ${c.domain}: infrastructure named or not`);
  if (c.infrastructure) equal((await infrastructure.textContent()).trim(), c.infrastructure, `${lang} ${c.domain}: infrastructure`);
  equal((await page.textContent("footer.site")).trim(), shown(t.footer_api), `${lang} ${c.domain}: footer`);
  equal(await page.getAttribute("footer.site a", "href"), "/api/v1/openapi.yaml", `${lang} ${c.domain}: the footer's link`);
  equal(await page.locator('link[rel="alternate"][hreflang]').count(), 7, `${lang} ${c.domain}: hreflang alternates`);
  const suggestion = page.locator("[data-suggestion]");
  equal(await suggestion.count(), c.suggestion ? 1 : 0, `${lang} ${c.domain}: a suggestion or none`);
  if (c.suggestion) {
    equal((await suggestion.textContent()).trim(), fill(t.did_you_mean, { domain: c.suggestion }), `${lang} ${c.domain}: did you mean`);
    equal(await suggestion.getAttribute("href"), `/${lang}/domain/${c.suggestion}`, `${lang} ${c.domain}: the provider's page`);
  }
  if (c.queued) {
    equal((await page.textContent(`[data-queued="${c.queued}"]`)).trim(), t.queued_no_mx, `${lang} ${c.domain}: queued for review`);
    equal(await page.locator("table.mx").count(), 0, `${lang} ${c.domain}: no MX table`);
    return;
  }
  const row = page.locator("table.mx tr.mx-ip", { has: page.locator("td.ip", { hasText: c.mx.ip }) });
  equal(await row.count(), 1, `${lang} ${c.domain}: an MX table row for ${c.mx.ip}`);
  equal((await row.locator("td.ptr").textContent()).trim(), c.mx.ptr, `${lang} ${c.domain}: reverse DNS`);
  check((await row.locator("td.asn").textContent()).startsWith(c.mx.asn), `${lang} ${c.domain}: ASN ${c.mx.asn}`);
  check((await row.locator("td.country").textContent()).includes(c.mx.country), `${lang} ${c.domain}: country ${c.mx.country}`);
  const headers = await page.locator("table.mx thead th").allTextContents();
  equal(headers.join("|"), [t.mx_host, t.mx_ip, t.mx_country, t.mx_asn, t.mx_ptr].join("|"), `${lang} ${c.domain}: MX table headers`);
}

await run("pages", async () => {
  const browser = await launch();
  const page = await browser.context.newPage();
  for (const lang of LANGS) {
    for (const c of CASES) {
      await checkPage(page, lang, c);
      await screenshots(page, shots, `page-${lang}-${c.domain}`);
    }
  }
  // The footer's "JSON API" leads to the API's description.
  await page.goto(`${base}/fr/domain/gmail.com`);
  await Promise.all([page.waitForNavigation(), page.locator("footer.site a").click()]);
  equal(new URL(page.url()).pathname, "/api/v1/openapi.yaml", "the footer link is followed");
  check((await page.textContent("body")).startsWith("openapi: 3.1.0"), "the API's description is shown, not saved");
  await screenshots(page, shots, "page-footer-api-description");
  await browser.close();
  // A language we do not have: a page in the browser's language, not the API's JSON.
  for (const [accept, lang] of [["de-DE,de;q=0.9", "de"], ["ja", "ja"]]) {
    const b = await launch({ extraHTTPHeaders: { "Accept-Language": accept } });
    const p = await b.context.newPage();
    const resp = await p.goto(`${base}/xx/domain/gmail.com`);
    const t = messages(lang);
    equal(resp.status(), 404, `/xx/ (${accept}): status`);
    equal(resp.headers()["content-type"], "text/html; charset=utf-8", `/xx/ (${accept}): a page`);
    equal(await p.getAttribute("html", "lang"), lang, `/xx/ (${accept}): html lang`);
    equal(await p.textContent("h1"), t.not_found_title, `/xx/ (${accept}): heading`);
    const link = p.getByRole("link", { name: fill(t.not_found_domain_link, { domain: "gmail.com" }) });
    equal(await link.getAttribute("href"), `/${lang}/domain/gmail.com`, `/xx/ (${accept}): the domain's page`);
    await screenshots(p, shots, `page-404-unknown-language-${lang}`);
    await b.close();
  }
  for (const [accept, lang] of [["de-DE,de;q=0.9", "de"], ["ja", "ja"], ["pt-BR", "pt"], ["zh-CN", "en"]]) {
    const b = await launch({ extraHTTPHeaders: { "Accept-Language": accept } });
    const p = await b.context.newPage();
    await p.goto(`${base}/domain/gmail.com`);
    equal(new URL(p.url()).pathname, `/${lang}/domain/gmail.com`, `Accept-Language ${accept}: redirected`);
    await b.close();
  }
});
