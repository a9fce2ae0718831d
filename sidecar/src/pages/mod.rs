//! The public lookup pages on the public listener, without an API key (spec rule 5;
//! operations.md fixes the URLs):
//!
//! | method | path | answer |
//! |---|---|---|
//! | GET | `/{lang}/domain/{domain}` | the domain's page (`{domain}` may be an email address) |
//! | GET | `/domain/{domain}` | redirect to the best language for `Accept-Language` |
//! | POST | `/{lang}/domain/{domain}/recheck` | fresh lookup, then 303 to the page; 429 page when refused |
//! | GET | `/{lang}/domain?q=…` | the lookup form: redirect to the page of `q` |
//! | GET | `/`, `/{lang}/` | the home page (redirect by `Accept-Language` at `/`) |
//! | GET | `/static/site.css` | the stylesheet |
//! | GET | `/api/v1/openapi.yaml` | the API's description (`docs/openapi.yaml`), linked from every page |
//! | GET | any other path but `/api/…` | an HTML 404 in the browser's language, when it asks for HTML |
//!
//! Invariants: everything shown is escaped by the templates; the local part of an email address
//! is never shown, and pages whose URL holds one are never cached; page views and re-checks are
//! limited per client IP, re-checks per domain through the state store (one per interval,
//! whatever the replica).

pub(crate) mod client_limit;
mod domain_page;
pub mod i18n;
pub mod ipdata;
pub mod lang;
mod rdns;
pub(crate) mod respond;
pub mod templates;
mod view;

use std::sync::Arc;
use std::time::Duration;

use http::{Method, Response, StatusCode};

use crate::clock::Clock;
use crate::dns::HickoryResolver;
use crate::request::{LogFields, Request};
use crate::state::StateStore;
use crate::verdicts::Verdicts;
pub use client_limit::ClientLimit;
use ipdata::{IpData, IpDataSettings};
use lang::Lang;
pub use respond::{CSP, security_headers};
use templates::Templates;

/// Operator settings of the pages.
#[derive(Debug, Clone)]
pub struct PageSettings {
    /// Shortest time between two re-checks of one domain (spec default: 24 h).
    pub recheck_interval: Duration,
    /// Page views per minute per client IP (0: unlimited).
    pub views_per_minute: u32,
    /// Re-checks per hour per client IP (0: unlimited).
    pub rechecks_per_hour: u32,
    /// `https://host` prefix of canonical and alternate links; empty: paths only.
    pub public_url: String,
    pub ipdata: IpDataSettings,
    /// Bound on one reverse-DNS lookup.
    pub reverse_timeout: Duration,
}

pub struct Pages {
    pub settings: PageSettings,
    pub templates: Arc<Templates>,
    pub ipdata: IpData,
    rdns: rdns::ReverseDns,
    store: Arc<dyn StateStore>,
    clock: Arc<dyn Clock>,
    views: ClientLimit,
    rechecks: ClientLimit,
}

impl Pages {
    pub fn new(
        settings: PageSettings,
        templates: Arc<Templates>,
        resolver: Arc<HickoryResolver>,
        store: Arc<dyn StateStore>,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            ipdata: IpData::open(&settings.ipdata)?,
            rdns: rdns::ReverseDns::new(resolver, settings.reverse_timeout),
            views: ClientLimit::new(settings.views_per_minute, Duration::from_secs(60)),
            rechecks: ClientLimit::new(settings.rechecks_per_hour, Duration::from_secs(3600)),
            settings,
            templates,
            store,
            clock,
        })
    }
}

/// The answer when `request` is for a public page; `None` leaves it to the JSON API.
pub async fn serve(
    pages: &Pages,
    verdicts: &Verdicts,
    request: &Request,
    log: &mut LogFields,
) -> Option<Response<Vec<u8>>> {
    let path = request.path.as_str();
    if path == "/static/site.css" {
        return Some(respond::stylesheet());
    }
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    let get = matches!(request.method, Method::GET | Method::HEAD);
    let post = request.method == Method::POST;
    let negotiated = || lang::negotiate(request.accept_language.as_deref());
    let answer = match segments.as_slice() {
        [""] if get => home_redirect(negotiated()),
        ["domain", segment] if get => language_redirect(negotiated(), segment),
        ["api", "v1", "openapi.yaml"] if get => respond::api_description(),
        // The API's paths answer JSON, whoever asks; any other unknown path is a page a browser
        // followed (a language we do not have: `/xx/domain/…`) and gets a page.
        [code, ..] if *code != "api" && Lang::parse(code).is_none() && get && wants_html(request) => {
            domain_page::unknown_path(pages, negotiated(), &segments)
        }
        [code, rest @ ..] => {
            let lang = Lang::parse(code)?;
            match (rest, get, post) {
                ([] | [""], true, _) => domain_page::home(pages, lang),
                (["domain"], true, _) => domain_page::lookup_form(pages, lang, request.query.as_deref()),
                (["domain", segment], true, _) => {
                    domain_page::page(pages, verdicts, request, (lang, segment), log).await
                }
                (["domain", segment, "recheck"], _, true) => {
                    domain_page::recheck(pages, verdicts, request, (lang, segment), log).await
                }
                (["domain", _, "recheck"], ..) => not_allowed("POST"),
                (["domain", ..], ..) => not_allowed("GET, HEAD"),
                _ => domain_page::not_found(pages, lang),
            }
        }
        _ => return None,
    };
    Some(answer)
}

/// Whether the client asks for HTML (`Accept` names `text/html` with a q-value above 0), as a
/// browser does; API clients (`*/*`, `application/json`, no header) keep the JSON answers.
fn wants_html(request: &Request) -> bool {
    request.accept.as_deref().is_some_and(accepts_html)
}

fn accepts_html(accept: &str) -> bool {
    accept.split(',').take(32).any(|item| {
        let mut parts = item.split(';');
        let range = parts.next().unwrap_or_default().trim();
        let q = parts.find_map(|p| p.trim().strip_prefix("q=")).map_or(1.0, |q| q.trim().parse().unwrap_or(0.0));
        (range.eq_ignore_ascii_case("text/html") || range.eq_ignore_ascii_case("application/xhtml+xml")) && q > 0.0
    })
}

fn home_redirect(lang: Lang) -> Response<Vec<u8>> {
    let vary = vec![("Vary", "Accept-Language".to_owned())];
    respond::redirect(StatusCode::FOUND, &format!("/{}/", lang.code()), respond::CACHE_REDIRECT, vary)
}

/// `/domain/{segment}` → `/{lang}/domain/{segment}`; the segment is passed on as sent (it is
/// checked when the page is asked for).
fn language_redirect(lang: Lang, segment: &str) -> Response<Vec<u8>> {
    let location = format!("/{}/domain/{}", lang.code(), safe_segment(segment));
    let vary = vec![("Vary", "Accept-Language".to_owned())];
    let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
    let personal = email_verdict_core::input::may_hold_local_part(&decoded);
    let cache = if personal { respond::CACHE_NONE } else { respond::CACHE_REDIRECT };
    respond::redirect(StatusCode::FOUND, &location, cache, vary)
}

/// A path segment re-encoded so that only unreserved characters, `%` escapes and `@` remain
/// (a `Location` header must not carry raw bytes or anything a browser would read as a path).
fn safe_segment(segment: &str) -> String {
    encode_segment(&percent_encoding::percent_decode_str(segment).collect::<Vec<u8>>())
}

/// Bytes as a path segment: unreserved characters and `@` as they are, the rest `%XX`.
fn encode_segment(bytes: &[u8]) -> String {
    const KEEP: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'.').remove(b'-').remove(b'_').remove(b'~').remove(b'@');
    percent_encoding::percent_encode(bytes, KEEP).to_string()
}

fn not_allowed(allow: &str) -> Response<Vec<u8>> {
    let mut headers = security_headers();
    headers.push(("Allow", allow.to_owned()));
    headers.push(("Cache-Control", respond::CACHE_NONE.to_owned()));
    headers.push(("Content-Type", "text/plain; charset=utf-8".to_owned()));
    respond::build(StatusCode::METHOD_NOT_ALLOWED, headers, b"method not allowed\n".to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_reencoded_for_location() {
        assert_eq!(safe_segment("gmail.com"), "gmail.com");
        assert_eq!(safe_segment("a%40b.example"), "a@b.example");
        assert_eq!(safe_segment("x%0d%0aSet-Cookie:%20a"), "x%0D%0ASet-Cookie%3A%20a");
        assert_eq!(safe_segment("b%C3%BCcher.example"), "b%C3%BCcher.example");
        assert_eq!(safe_segment("..%2F..%2Fadmin"), "..%2F..%2Fadmin");
    }

    #[test]
    fn browsers_ask_for_html_api_clients_do_not() {
        let chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";
        assert!(accepts_html(chromium));
        assert!(accepts_html("application/xhtml+xml"));
        assert!(accepts_html("TEXT/HTML; charset=utf-8"));
        for api in ["*/*", "application/json", "text/html;q=0", "application/json, text/*;q=0.5", ""] {
            assert!(!accepts_html(api), "{api}");
        }
    }
}
