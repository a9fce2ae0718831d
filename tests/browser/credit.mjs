// node credit.mjs BASE_URL SCREENSHOT_DIR
// With the shipped IP databases, every language's page credits them in its own language: the
// names the licences ask to credit (NRO, RouteViews, DB-IP) as they are, a link to the licence,
// and DB-IP's link in DB-IP's words.
import { LANGS, messages, fill, check, equal, launch, screenshots, run } from "./lib.mjs";

const [base, shots] = process.argv.slice(2);
const NAMES = {
  country_db: "ip-location-db geo-whois-asn-country",
  country_holders: "NRO",
  asn_db: "ip-location-db asn",
  asn_holders: "RouteViews, DB-IP, NRO",
};

await run("credit", async () => {
  const browser = await launch();
  const page = await browser.context.newPage();
  for (const lang of LANGS) {
    const t = messages(lang);
    await page.goto(`${base}/${lang}/domain/gmail.com`);
    const credit = page.locator('p.attribution[data-attribution="shipped"]');
    const text = fill(t.ip_data_shipped, NAMES).replaceAll("[", "").replaceAll("]", "");
    equal((await credit.textContent()).trim(), `${t.ip_data_label}: ${text} IP Geolocation by DB-IP`, `${lang}: the credit`);
    equal(await credit.getByRole("link", { name: "CC BY 4.0" }).getAttribute("href"), "https://creativecommons.org/licenses/by/4.0/", `${lang}: licence link`);
    equal(await credit.getByRole("link", { name: "IP Geolocation by DB-IP" }).getAttribute("href"), "https://db-ip.com", `${lang}: DB-IP's link`);
    if (lang !== "en") check(!(await credit.textContent()).includes("Country:"), `${lang}: not the English credit`);
    await screenshots(page, shots, `page-credit-${lang}`);
  }
  await browser.close();
});
