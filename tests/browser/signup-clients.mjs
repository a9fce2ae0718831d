// The browser as a real signup client, for tests/tests/framework_differentials.rs: Chromium
// submits a urlencoded form, a multipart form, and `fetch`es JSON and FormData to /signup with
// email=ann@gmail.com, from a page of the gateway's own origin (no CORS preflight).
//
//   node signup-clients.mjs http://127.0.0.1:PORT
//
// Prints one line per client: `<client> <HTTP status>`.
import { launch, run } from "./lib.mjs";

const base = process.argv[2];

await run("signup-clients", async () => {
  const browser = await launch();
  try {
    const page = await browser.context.newPage();
    for (const enctype of ["application/x-www-form-urlencoded", "multipart/form-data"]) {
      await page.goto(`${base}/start`);
      const client = `browser-form-${enctype.split("/")[1]}`;
      const [resp] = await Promise.all([
        page.waitForNavigation(),
        page.evaluate(
          ([enctype, client]) => {
            const form = document.createElement("form");
            Object.assign(form, { method: "post", action: `/signup?client=${client}`, enctype });
            for (const [name, value] of [["email", "ann@gmail.com"], ["name", "Ann"]]) {
              const input = Object.assign(document.createElement("input"), { name, value });
              form.appendChild(input);
            }
            document.body.appendChild(form);
            form.submit();
          },
          [enctype, client],
        ),
      ]);
      console.log(`${client} ${resp.status()}`);
    }
    await page.goto(`${base}/start`);
    const statuses = await page.evaluate(async () => {
      const json = await fetch("/signup?client=browser-fetch-json", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "ann@gmail.com", name: "Ann" }),
      });
      const data = new FormData();
      data.append("email", "ann@gmail.com");
      data.append("avatar", new Blob(["\r\n--x\r\n\r"], { type: "application/octet-stream" }), "a.bin");
      const form = await fetch("/signup?client=browser-fetch-formdata", { method: "POST", body: data });
      return [json.status, form.status];
    });
    console.log(`browser-fetch-json ${statuses[0]}`);
    console.log(`browser-fetch-formdata ${statuses[1]}`);
  } finally {
    await browser.close();
  }
});
