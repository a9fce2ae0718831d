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

#[test]
fn a_domain_without_mx_says_it_is_queued_for_review() {
    let (sc, _nsd) = start_pages(&[]);
    for domain in ["nomx.example", "nullmx.example", "does-not-exist.example"] {
        let html = page_ok(&sc, &format!("/en/domain/{domain}"));
        assert!(html.contains("data-verdict=\"safe\""), "{domain}");
        assert!(
            html.contains("data-queued=\"no_mx\"") && html.contains("queued for manual review"),
            "{domain}:\n{html}"
        );
    }
    wait_for("nomx.example in the review queue", Duration::from_secs(5), || {
        sc.cli().run(&["review", "list"]).stdout.contains("nomx.example\tno_mx").then_some(())
    });
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
