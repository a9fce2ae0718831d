//! Issue 6 over plain HTTP: the public lookup pages (URLs, languages, escaping, caching, the
//! re-check limit, page-only data kept out of the API) and the dashboard's CSRF defences. The
//! same pages in a real headless Chromium: `pages/browser.rs`.

#[path = "pages/browser.rs"]
mod browser;
#[path = "pages/dashboard.rs"]
mod dashboard;

use std::time::Duration;

use email_verdict_tests::dns::qtype;
use email_verdict_tests::verdict::check_ok;
use email_verdict_tests::{
    DnsCounter, Nsd, Request, Response, Sidecar, SidecarBuilder, fixtures_dir, start_with, wait_for,
};

const LANGS: [&str; 6] = ["en", "de", "fr", "es", "pt", "ja"];

/// The test IP databases (documentation addresses) on top of `configure`.
pub fn with_test_ipdb(b: SidecarBuilder) -> SidecarBuilder {
    let dir = fixtures_dir().join("ipdb");
    let (city, asn) = (dir.join("test-city.mmdb"), dir.join("test-asn.mmdb"));
    b.args(&["--geoip-country-db", city.to_str().unwrap(), "--geoip-asn-db", asn.to_str().unwrap()])
}

fn start_pages(extra: &[&str]) -> (Sidecar, Nsd) {
    let (sc, nsd) = start_with(|b| with_test_ipdb(b).args(extra));
    public_listener_up(&sc);
    (sc, nsd)
}

/// The harness waits for the admin listener; the public one starts on its own thread.
pub fn public_listener_up(sc: &Sidecar) {
    wait_for("the public listener", Duration::from_secs(5), || std::net::TcpStream::connect(sc.addr()).ok());
}

fn get(sc: &Sidecar, target: &str, accept_language: Option<&str>) -> Response {
    let mut req = Request::get(target);
    if let Some(al) = accept_language {
        req = req.header("Accept-Language", al);
    }
    sc.send(&req)
}

fn post(sc: &Sidecar, target: &str) -> Response {
    sc.send(&Request::new("POST", target))
}

fn page_ok(sc: &Sidecar, target: &str) -> String {
    let resp = get(sc, target, None);
    assert_eq!(resp.status, 200, "GET {target}\n{resp}");
    resp.text()
}

#[test]
fn every_language_has_its_url_with_alternates_and_an_x_default() {
    let (sc, _nsd) = start_pages(&[]);
    for lang in LANGS {
        let resp = get(&sc, &format!("/{lang}/domain/gmail.com"), None);
        assert_eq!(resp.status, 200, "{resp}");
        assert_eq!(resp.header("content-language"), Some(lang));
        let html = resp.text();
        assert!(html.contains(&format!("<html lang=\"{lang}\">")), "{lang}: lang attribute");
        assert!(html.contains(&format!("<link rel=\"canonical\" href=\"/{lang}/domain/gmail.com\">")), "{lang}");
        for alt in LANGS {
            let link = format!("<link rel=\"alternate\" hreflang=\"{alt}\" href=\"/{alt}/domain/gmail.com\">");
            assert!(html.contains(&link), "{lang}: missing {link}");
        }
        assert!(html.contains("<link rel=\"alternate\" hreflang=\"x-default\" href=\"/domain/gmail.com\">"), "{lang}");
    }
    let titles: std::collections::HashSet<String> = LANGS
        .iter()
        .map(|l| page_ok(&sc, &format!("/{l}/domain/gmail.com")).split("<title>").nth(1).unwrap_or("").to_owned())
        .collect();
    assert_eq!(titles.len(), LANGS.len(), "each language has its own text");
}

#[test]
fn the_bare_url_redirects_by_accept_language() {
    let (sc, _nsd) = start_pages(&[]);
    for (accept, lang) in [
        (None, "en"),
        (Some("de-CH, fr;q=0.8"), "de"),
        (Some("fr;q=0.2, pt-BR;q=0.9"), "pt"),
        (Some("ja-JP,ja;q=0.9,en;q=0.8"), "ja"),
        (Some("zh-CN, es;q=0.1"), "es"),
        (Some("zh-CN"), "en"),
        (Some("es;q=0, *;q=0.5"), "en"),
    ] {
        let resp = get(&sc, "/domain/gmail.com", accept);
        assert!(matches!(resp.status, 302 | 303), "{accept:?}: {resp}");
        assert_eq!(resp.header("location"), Some(format!("/{lang}/domain/gmail.com").as_str()), "{accept:?}");
        assert!(resp.header("vary").is_some_and(|v| v.contains("Accept-Language")), "{resp}");
    }
    let email = get(&sc, "/domain/ana%40gmail.com", Some("fr"));
    assert_eq!(email.header("location"), Some("/fr/domain/ana@gmail.com"));
    assert_eq!(email.header("cache-control"), Some("no-store"), "an email address in the URL is never cached");
    let crlf = get(&sc, "/domain/x%0d%0aSet-Cookie:%20a=b", None);
    assert!(crlf.header("set-cookie").is_none(), "no header injection: {crlf}");
    assert_eq!(crlf.header("location"), Some("/en/domain/x%0D%0ASet-Cookie%3A%20a%3Db"));
}

#[test]
fn hostile_input_is_escaped_and_the_local_part_never_shown() {
    let (sc, _nsd) = start_pages(&[]);
    let resp = get(&sc, "/fr/domain/%3Cscript%3Ealert(1)%3C%2Fscript%3E.example", None);
    assert_eq!(resp.status, 400, "{resp}");
    let html = resp.text();
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;.example"), "shown escaped:\n{html}");
    assert!(!html.contains("<script"), "{html}");
    // A valid address whose quoted local part is markup: the page is about gmail.com only.
    let resp = get(&sc, "/en/domain/%22%3Cscript%3Ealert(1)%3C%2Fscript%3E%22%40gmail.com", None);
    assert_eq!(resp.status, 200, "{resp}");
    let html = resp.text();
    assert!(!html.contains("<script") && !html.contains("alert("), "the local part is never echoed:\n{html}");
    assert!(html.contains("<h1>Email domain gmail.com</h1>"), "{html}");
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    let resp = get(&sc, "/en/domain/j.doe%40Mailinator.COM", None);
    assert!(!resp.text().contains("j.doe"), "{resp}");
    // Data from the IP database is escaped too.
    let html = page_ok(&sc, "/en/domain/mailinator.com");
    assert!(html.contains("AS64500 · Example Mail &lt;Networks&gt; &amp; Co"), "{html}");
}

#[test]
fn invalid_input_gets_a_friendly_400_page_in_its_language() {
    let (sc, _nsd) = start_pages(&[]);
    for (target, lang, title) in [
        ("/de/domain/a..b", "de", "Keine gültige Domain oder E-Mail-Adresse"),
        ("/ja/domain/localhost", "ja", "有効なドメインまたはメールアドレスではありません"),
        ("/es/domain/%FF%FE", "es", "No es un dominio ni una dirección de correo válidos"),
        ("/pt/domain/user%40", "pt", "Não é um domínio nem um endereço de e-mail válido"),
        ("/en/domain/192.0.2.1", "en", "Not a valid domain or email address"),
    ] {
        let resp = get(&sc, target, None);
        assert_eq!(resp.status, 400, "{target}: {resp}");
        assert_eq!(resp.header("content-type"), Some("text/html; charset=utf-8"));
        let html = resp.text();
        assert!(
            html.contains(&format!("<html lang=\"{lang}\">")) && html.contains(&format!("<h1>{title}</h1>")),
            "{html}"
        );
    }
    assert!(!get(&sc, "/pt/domain/user%40", None).text().contains("user@"), "no local part echoed");
}

#[test]
fn public_pages_carry_caching_and_security_headers() {
    let (sc, _nsd) = start_pages(&[]);
    let page = get(&sc, "/en/domain/ownmail.example", None);
    assert_eq!(page.header("cache-control"), Some("public, max-age=300"));
    let csp = page.header("content-security-policy").unwrap_or_default();
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline") && !csp.contains("script-src"), "no script may run: {csp}");
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    assert!(!page.text().contains("<script") && !page.text().contains("style="), "no inline script or style");
    let css = get(&sc, "/static/site.css", None);
    assert_eq!((css.status, css.header("content-type")), (200, Some("text/css; charset=utf-8")));
    let recheck = post(&sc, "/en/domain/ownmail.example/recheck");
    assert_eq!((recheck.status, recheck.header("cache-control")), (303, Some("no-store")), "{recheck}");
    let refused = post(&sc, "/en/domain/ownmail.example/recheck");
    assert_eq!((refused.status, refused.header("cache-control")), (429, Some("no-store")), "{refused}");
    let wrong_method = post(&sc, "/en/domain/ownmail.example");
    assert_eq!((wrong_method.status, wrong_method.header("allow")), (405, Some("GET, HEAD")));
}

#[test]
fn page_only_data_never_reaches_the_json_api() {
    let (sc, _nsd) = start_pages(&[]);
    let html = page_ok(&sc, "/en/domain/mailinator.com");
    let page_only = ["smtp10.burner-hosting.example", "AS64500", "Example Mail", "Springfield", "United States"];
    for item in page_only {
        assert!(html.contains(item), "the page shows {item}");
    }
    let body = check_ok(&sc.lookup("mailinator.com"), "GET /api/v1/domain/mailinator.com");
    let json = body.to_string();
    for item in page_only.iter().chain(["asn", "country", "ptr", "Google"].iter()) {
        assert!(!json.contains(item), "{item} leaked into the API: {json}");
    }
    let gmail = check_ok(&sc.lookup("gmail.com"), "GET /api/v1/domain/gmail.com").to_string();
    assert!(!gmail.contains("Google Workspace") && !gmail.contains("mail-yw1-f11"), "{gmail}");
    assert!(page_ok(&sc, "/en/domain/gmail.com").contains("Google Workspace"));
}

/// The messages of one language, as the server has them (`sidecar/locales/<lang>.toml`, flat
/// `key = "text"`); `[` `]` (a link's text) left out, as a page's text shows them.
fn messages(lang: &str) -> std::collections::HashMap<String, String> {
    let path = email_verdict_tests::workspace_root().join(format!("sidecar/locales/{lang}.toml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.split_once(" = \""))
        .filter_map(|(k, v)| Some((k.to_owned(), v.strip_suffix('"')?.replace(['[', ']'], ""))))
        .collect()
}

fn fill(template: &str, args: &[(&str, &str)]) -> String {
    args.iter().fold(template.to_owned(), |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
}

/// The text of the first element carrying `attribute` (`data-x` or `data-x="v"`), tags dropped.
fn text_at(html: &str, attribute: &str) -> Option<String> {
    let rest = html.split(attribute).nth(1)?;
    let (_, after) = rest.split_once('>')?;
    let mut out = String::new();
    let mut depth = 0; // inside an element opened within this one
    let mut chars = after.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '<' {
            out.push(c);
            continue;
        }
        let tag: String = chars.by_ref().take_while(|&c| c != '>').collect();
        match tag.strip_prefix('/') {
            Some(_) if depth == 0 => break,
            Some(_) => depth -= 1,
            None if !tag.ends_with('/') => depth += 1,
            None => {}
        }
    }
    Some(out.trim().to_owned())
}

/// Issue 25 §3: a domain without mail servers (none, null MX, no such domain) was shown as a
/// green "Safe" whose box said "queued for manual review" above a flag row saying "Waiting for
/// manual review: No". Now the box says what it is, neutrally, and the row says why it is No;
/// the API's answer is unchanged (spec: the no-MX row, `review_required` false).
#[test]
fn a_domain_that_cannot_receive_mail_says_so_without_contradiction() {
    let (sc, _nsd) = start_pages(&[]);
    for lang in LANGS {
        let t = messages(lang);
        for (domain, state) in
            [("nomx.example", "no_mail"), ("nullmx.example", "no_mail"), ("does-not-exist.example", "no_domain")]
        {
            let html = page_ok(&sc, &format!("/{lang}/domain/{domain}"));
            let what = format!("{lang} {domain}");
            assert!(html.contains(&format!("class=\"verdict verdict-{state}\"")), "{what}: neutral box\n{html}");
            assert!(!html.contains("verdict-safe"), "{what}: not shown as a green Safe");
            assert!(html.contains(&format!("data-verdict=\"safe\" data-state=\"{state}\"")), "{what}");
            let box_text = text_at(&html, "data-state=").unwrap_or_default();
            assert_eq!(box_text, t[&format!("verdict_{state}")], "{what}: the box says what it is");
            assert_eq!(text_at(&html, "data-queued=\"no_mx\"").as_deref(), Some(t["queued_no_mx"].as_str()), "{what}");
            let row = html.split("data-flag=\"review_required\"").nth(1).unwrap_or_default();
            assert!(row.starts_with(" data-value=\"false\""), "{what}: the flag stays the API's");
            assert_eq!(
                text_at(row, "data-note=\"no_mx\"").as_deref(),
                Some(t["flag_review_required_no_mx"].as_str()),
                "{what}: the row says why it is No"
            );
        }
        assert!(!page_ok(&sc, &format!("/{lang}/domain/ownmail.example")).contains("data-note="), "{lang}");
    }
    assert!(!page_ok(&sc, "/en/domain/nomx.example").contains("manual review"), "the old contradiction is gone");
    for domain in ["nomx.example", "does-not-exist.example"] {
        let v = sc.lookup_ok(domain);
        let r = &v["result"];
        assert_eq!((r["verdict"].as_str(), r["review_required"].as_bool()), (Some("safe"), Some(false)), "{v}");
    }
    wait_for("nomx.example in the review queue", Duration::from_secs(5), || {
        sc.cli().run(&["review", "list"]).stdout.contains("nomx.example\tno_mx").then_some(())
    });
}

/// Issue 25 §3: gmail.com's provider was "Google Workspace" (the name of its MX hosts' suffix
/// in the shared-MX table); a free provider's own name comes first, its infrastructure second.
#[test]
fn a_free_provider_is_named_by_its_own_name_first() {
    let (sc, _nsd) = start_pages(&[]);
    for lang in LANGS {
        let t = messages(lang);
        let html = page_ok(&sc, &format!("/{lang}/domain/gmail.com"));
        assert_eq!(text_at(&html, "data-provider").as_deref(), Some("gmail.com"), "{lang}");
        assert_eq!(text_at(&html, "data-infrastructure").as_deref(), Some("Google Workspace"), "{lang}");
        assert!(html.contains(&format!("<dt>{}</dt>", t["infrastructure_label"])), "{lang}");
        // A business on shared infrastructure: the provider is that infrastructure.
        let shop = page_ok(&sc, &format!("/{lang}/domain/shopco.example"));
        assert_eq!(text_at(&shop, "data-provider").as_deref(), Some("Microsoft 365"), "{lang}");
        assert!(!shop.contains("data-infrastructure"), "{lang}");
    }
}

/// Issue 25 §3: the shipped IP data's credit was English on every page. It is in the page's
/// language now, with the names its licences ask to credit (NRO, RouteViews, DB-IP), a link to
/// the licence, and DB-IP's link in DB-IP's words.
#[test]
fn the_ip_data_credit_is_in_the_page_language() {
    let (sc, _nsd) = start_with(|b| b);
    public_listener_up(&sc);
    for lang in LANGS {
        let t = messages(lang);
        let html = page_ok(&sc, &format!("/{lang}/domain/gmail.com"));
        let credit = text_at(&html, "data-attribution=\"shipped\"").unwrap_or_else(|| panic!("{lang}: no credit"));
        let args = [
            ("country_db", "ip-location-db geo-whois-asn-country"),
            ("country_holders", "NRO"),
            ("asn_db", "ip-location-db asn"),
            ("asn_holders", "RouteViews, DB-IP, NRO"),
        ];
        let want = format!("{}: {} IP Geolocation by DB-IP", t["ip_data_label"], fill(&t["ip_data_shipped"], &args));
        assert_eq!(credit, want, "{lang}");
        assert!(html.contains("<a href=\"https://db-ip.com\">IP Geolocation by DB-IP</a>"), "{lang}: DB-IP's link");
        assert!(html.contains("<a href=\"https://creativecommons.org/licenses/by/4.0/\">CC BY 4.0</a>"), "{lang}");
        if lang != "en" {
            assert!(!html.contains("Country: ip-location-db"), "{lang}: the English credit is gone");
        }
    }
    // An operator's own databases keep the operator's credit.
    let (own, _nsd2) = start_pages(&["--geoip-attribution", "IP data by Example <Geo>"]);
    let html = page_ok(&own, "/fr/domain/gmail.com");
    assert!(
        html.contains("data-attribution=\"operator\"") && html.contains("IP data by Example &lt;Geo&gt;"),
        "{html}"
    );
    assert!(!html.contains("db-ip.com"), "DB-IP is credited only for its data");
    // With the shipped databases the flag is not used, and the operator is told so at start.
    let (shipped, _nsd3) = start_with(|b| b.args(&["--geoip-attribution", "IP data by Example"]));
    public_listener_up(&shipped);
    let html = page_ok(&shipped, "/en/domain/gmail.com");
    assert!(html.contains("db-ip.com") && !html.contains("IP data by Example"), "the shipped credit stays");
    let log = shipped.stderr_text();
    assert!(log.contains("--geoip-attribution is not shown with the shipped IP databases"), "{log}");
}

/// Issue 25 §3: a path in no language of ours gave a browser the API's JSON 404. A browser
/// (`Accept: text/html`) now gets a page in its language, leading to the domain's page; API
/// clients keep the JSON answer, and the API's own paths answer JSON whoever asks.
#[test]
fn an_unknown_language_path_gives_a_browser_a_page_and_an_api_client_json() {
    let (sc, _nsd) = start_pages(&[]);
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let req = Request::get("/xx/domain/gmail.com").header("Accept", browser).header("Accept-Language", "de-CH");
    let resp = sc.send(&req);
    assert_eq!(resp.status, 404, "{resp}");
    assert_eq!(resp.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    let html = resp.text();
    assert!(html.contains("<html lang=\"de\">") && html.contains("<h1>Seite nicht gefunden</h1>"), "{html}");
    assert!(html.contains("<a href=\"/de/domain/gmail.com\">Die Seite für gmail.com</a>"), "{html}");
    let email = sc.send(&Request::get("/zz/domain/zyxlocal%40gmail.com").header("Accept", browser));
    assert_eq!((email.status, email.header("cache-control")), (404, Some("no-store")));
    assert!(!email.text().contains("zyxlocal"), "never the local part");
    for target in ["/xx/", "/en-US/domain/gmail.com", "/nope"] {
        let resp = sc.send(&Request::get(target).header("Accept", browser));
        assert_eq!((resp.status, resp.header("content-type")), (404, Some("text/html; charset=utf-8")), "{target}");
    }
    for accept in [None, Some("*/*"), Some("application/json")] {
        let mut req = Request::get("/xx/domain/gmail.com");
        if let Some(a) = accept {
            req = req.header("Accept", a);
        }
        email_verdict_tests::verdict::check_error(&sc.send(&req), 404, "not_found", &format!("Accept {accept:?}"));
    }
    let api = sc.send(&Request::get("/api/v1/nope").header("Accept", browser));
    email_verdict_tests::verdict::check_error(&api, 404, "not_found", "an API path stays JSON");
}

/// Issue 25 §3: the footer's "JSON API" was not a link. It links the API's description, served
/// beside the pages; no key is ever in a page.
#[test]
fn the_footer_links_the_api_description_and_no_page_holds_a_key() {
    let (sc, _nsd) = start_pages(&[]);
    let link = "<a href=\"/api/v1/openapi.yaml\">";
    for lang in LANGS {
        let t = messages(lang);
        for target in [format!("/{lang}/domain/gmail.com"), format!("/{lang}/"), format!("/{lang}/domain/a..b")] {
            let html = get(&sc, &target, None).text();
            let footer = html.split("<footer").nth(1).unwrap_or_default();
            assert!(footer.contains(link), "{target}: {footer}");
            let text = text_at(&html, "<footer class=\"site\"").unwrap_or_default();
            assert_eq!(text, t["footer_api"], "{target}");
            assert!(!html.contains(sc.key()) && !html.contains("key="), "{target}: no key in a page");
        }
    }
    let doc = get(&sc, "/api/v1/openapi.yaml", None);
    assert_eq!((doc.status, doc.header("content-type")), (200, Some("text/plain; charset=utf-8")), "{doc}");
    let shipped = std::fs::read_to_string(email_verdict_tests::workspace_root().join("docs/openapi.yaml")).unwrap();
    assert_eq!(doc.text(), shipped, "the description in the repository");
}

#[test]
fn a_recheck_resolves_afresh_once_per_interval() {
    let nsd = Nsd::start();
    let counter = DnsCounter::start(nsd.addr());
    let sc = with_test_ipdb(Sidecar::builder().dns(counter.addr())).args(&["--recheck-interval", "2"]).start();
    public_listener_up(&sc);
    page_ok(&sc, "/en/domain/ownmail.example");
    page_ok(&sc, "/en/domain/ownmail.example");
    assert_eq!(counter.count("ownmail.example", qtype::MX), 1, "the second view is cached");
    let done = post(&sc, "/de/domain/ana%40ownmail.example/recheck");
    assert_eq!(done.status, 303, "{done}");
    assert_eq!(done.header("location"), Some("/de/domain/ownmail.example?rechecked=1"), "PRG, without the local part");
    assert_eq!(counter.count("ownmail.example", qtype::MX), 2, "a fresh DNS lookup");
    assert!(page_ok(&sc, "/de/domain/ownmail.example?rechecked=1").contains("class=\"notice\""));
    let refused = post(&sc, "/de/domain/ownmail.example/recheck");
    assert_eq!(refused.status, 429, "{refused}");
    let wait: u64 = refused.header("retry-after").and_then(|s| s.parse().ok()).unwrap_or(0);
    assert!((1..=2).contains(&wait), "Retry-After {wait}");
    let html = refused.text();
    assert!(html.contains("<h1>Neue Prüfung noch nicht möglich</h1>") && html.contains("data-next-at=\""), "{html}");
    assert_eq!(counter.count("ownmail.example", qtype::MX), 2, "a refused re-check asks no DNS");
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(post(&sc, "/de/domain/ownmail.example/recheck").status, 303, "allowed again after the interval");
}

/// Issue 13, item 10: a re-check while the nameserver is down dropped the cached answer (the
/// API then answered 500 and the filter failed open for that domain) and spent the slot.
#[test]
fn a_recheck_during_a_dns_outage_keeps_the_answer_and_the_slot() {
    let (sc, mut nsd) = start_pages(&["--dns-timeout-ms", "200"]);
    page_ok(&sc, "/en/domain/ownmail.example");
    nsd.stop();
    let failed = post(&sc, "/en/domain/ownmail.example/recheck");
    assert_eq!(failed.status, 503, "the re-check could not be done:\n{failed}");
    page_ok(&sc, "/en/domain/ownmail.example");
    let api = sc.lookup("ownmail.example");
    check_ok(&api, "the API still has the last good answer");
    assert_eq!(api.json()["result"]["cached"], true);
    nsd.restart();
    let done = post(&sc, "/en/domain/ownmail.example/recheck");
    assert_eq!(done.status, 303, "the failed re-check did not spend the day's slot:\n{done}");
    assert_eq!(post(&sc, "/en/domain/ownmail.example/recheck").status, 429, "the completed one did");
}

#[test]
fn page_views_and_rechecks_are_limited_per_client() {
    let (sc, _nsd) = start_pages(&["--page-rate-limit", "3", "--recheck-rate-limit", "1"]);
    for i in 0..3 {
        assert_eq!(get(&sc, "/en/domain/gmail.com", None).status, 200, "view {i}");
    }
    // X-Forwarded-For from an untrusted peer changes nothing.
    let req = Request::get("/en/domain/gmail.com").header("X-Forwarded-For", "198.51.100.9");
    let limited = sc.send(&req);
    assert_eq!(limited.status, 429, "{limited}");
    assert!(limited.header("retry-after").is_some() && limited.text().contains("<h1>Too many requests</h1>"));
    assert_eq!(post(&sc, "/en/domain/gmail.com/recheck").status, 303);
    let second = post(&sc, "/en/domain/ownmail.example/recheck");
    assert!(second.status == 429 && second.text().contains("<h1>Too many requests</h1>"), "{second}");
    assert_eq!(sc.lookup("gmail.com").status, 200, "the API has its own limits");
}
