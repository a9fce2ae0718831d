//! The handlers behind the routes of [`super::serve`]: a domain's page, its re-check, the
//! lookup form, the home page, and the message pages (400, 404, 429, 503) in the page's language.

use email_verdict_core::LookupInput;
use http::{Response, StatusCode};
use percent_encoding::percent_decode_str;
use serde::Serialize;

use super::client_limit::ClientLimit;
use super::lang::Lang;
use super::respond::{self, CACHE_NONE, CACHE_PUBLIC, Headers};
use super::view::{Chrome, Facts, domain_view, page_path};
use super::{Pages, i18n};
use crate::clock::rfc3339;
use crate::dns::DnsFailure;
use crate::request::{LogFields, Request};
use crate::state::Recheck;
use crate::verdicts::{LookupError, Verdicts};

/// Seconds a client should wait after a failed lookup.
const RETRY_AFTER_FAILURE: u64 = 5;

type Page = Response<Vec<u8>>;

pub fn home(pages: &Pages, lang: Lang) -> Page {
    let body = pages.templates.render("home.html", &Chrome::plain(lang, false));
    respond::html(StatusCode::OK, lang, body, CACHE_PUBLIC, Vec::new())
}

/// `GET /{lang}/domain?q=…` (the form in the header) → the page of `q`.
pub fn lookup_form(pages: &Pages, lang: Lang, query: Option<&str>) -> Page {
    // A form's GET query: `+` is a space there, unlike in the API's `?key=`.
    let q = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "q")
        .map(|(_, v)| v.trim().to_owned());
    match q.filter(|q| !q.is_empty()) {
        Some(q) => {
            let location = format!("/{}/domain/{}", lang.code(), super::encode_segment(q.as_bytes()));
            respond::redirect(StatusCode::SEE_OTHER, &location, CACHE_NONE, Vec::new())
        }
        None => home(pages, lang),
    }
}

pub async fn page(
    pages: &Pages,
    verdicts: &Verdicts,
    request: &Request,
    (lang, segment): (Lang, &str),
    log: &mut LogFields,
) -> Page {
    let input = match admit(pages, &pages.views, request, (lang, segment), log) {
        Ok(input) => input,
        Err(refused) => return *refused,
    };
    let (result, suggestion, mx, why, catalog, age) = match verdicts.verdict_explained(&input).await {
        Ok(found) => (found.result, found.suggestion, found.mx, found.why, found.catalog, found.age),
        Err(e) => return lookup_failed(pages, lang, &input, e),
    };
    log.cached = Some(result.cached);
    let is_email = matches!(input, LookupInput::Email(_));
    let rechecked = request.query.as_deref().is_some_and(|q| crate::auth::query_param(q, "rechecked").is_some());
    let suggestion = suggestion.as_ref();
    let facts = Facts {
        lang,
        domain: input.domain(),
        is_email,
        rechecked,
        result: &result,
        suggestion,
        mx: &mx,
        why: &why,
        age,
    };
    let view = domain_view(pages, &catalog, facts).await;
    let body = pages.templates.render("domain.html", &view);
    // An email address in the URL is personal: keep it out of shared caches.
    let cache = if is_email || rechecked { CACHE_NONE } else { CACHE_PUBLIC };
    respond::html(StatusCode::OK, lang, body, cache, Vec::new())
}

/// A fresh DNS lookup of the domain, at most once per interval per domain (state store) and a
/// few times per hour per client; then POST-redirect-GET to the page.
pub async fn recheck(
    pages: &Pages,
    verdicts: &Verdicts,
    request: &Request,
    (lang, segment): (Lang, &str),
    log: &mut LogFields,
) -> Page {
    let input = match admit(pages, &pages.rechecks, request, (lang, segment), log) {
        Ok(input) => input,
        Err(refused) => return *refused,
    };
    let domain = input.domain();
    let now = pages.clock.now_ms().div_euclid(1000);
    let interval = pages.settings.recheck_interval.as_secs() as i64;
    match pages.store.try_recheck(domain.as_str(), now, interval).await {
        Ok(Recheck::Allowed) => {}
        Ok(Recheck::Refused { next_at }) => return recheck_refused(pages, lang, domain.as_str(), now, next_at),
        Err(e) => return lookup_failed(pages, lang, &input, e.into()),
    }
    verdicts.invalidate(domain);
    // After `invalidate`, a `cached` answer is the last good one, kept because DNS failed.
    let outcome = verdicts.verdict_with_mx(&input).await;
    if let Ok((result, mx)) = &outcome
        && !result.cached
    {
        log.cached = Some(false);
        pages.rdns.forget(&mx.addresses());
    } else {
        // Not completed: the slot is given back, and the page keeps showing the last answer.
        if let Err(e) = pages.store.give_back_recheck(domain.as_str(), now).await {
            tracing::warn!(domain = %domain, error = %e, "could not give a re-check slot back");
        }
        let failure = outcome.err().unwrap_or_else(|| DnsFailure("the nameservers did not answer".into()).into());
        return lookup_failed(pages, lang, &input, failure);
    }
    let location = format!("{}?rechecked=1", page_path(lang, domain.as_str()));
    respond::redirect(StatusCode::SEE_OTHER, &location, CACHE_NONE, Vec::new())
}

pub fn not_found(pages: &Pages, lang: Lang) -> Page {
    let m = Message::new(StatusCode::NOT_FOUND, "not_found_title", i18n::text(lang, "not_found_body", &[]));
    message(pages, lang, m, Vec::new())
}

/// A path in no language of ours (`/xx/domain/gmail.com`), asked for by a browser: a 404 page
/// in its language, leading to the domain's page when the path names one.
pub fn unknown_path(pages: &Pages, lang: Lang, segments: &[&str]) -> Page {
    let mut m = Message::new(StatusCode::NOT_FOUND, "not_found_title", i18n::text(lang, "not_found_body", &[]));
    if let [_, "domain", segment, ..] = segments
        && let Ok(input) = parse(segment)
    {
        let domain = input.domain().as_str();
        m.back_href = Some(page_path(lang, domain));
        m.back_text = Some(i18n::text(lang, "not_found_domain_link", &[("domain", domain)]));
    }
    message(pages, lang, m, Vec::new())
}

/// What a domain's page and its re-check do first: count the client against `limit`, then read
/// and log the domain of the path segment. `Err`: the page that answers instead (boxed: a
/// response is large, and this is the rare path).
fn admit(
    pages: &Pages,
    limit: &ClientLimit,
    request: &Request,
    (lang, segment): (Lang, &str),
    log: &mut LogFields,
) -> Result<LookupInput, Box<Page>> {
    limit.check(request.client).map_err(|wait| Box::new(too_many(pages, lang, wait)))?;
    let input = parse(segment).map_err(|raw| Box::new(invalid(pages, lang, &raw)))?;
    log.domain = Some(input.domain().to_string());
    Ok(input)
}

/// The input of a path segment; `Err` with the decoded text when it is not valid.
fn parse(segment: &str) -> Result<LookupInput, String> {
    let raw = percent_decode_str(segment).decode_utf8().map_err(|_| String::new())?;
    LookupInput::parse(&raw).map_err(|_| raw.into_owned())
}

fn invalid(pages: &Pages, lang: Lang, raw: &str) -> Page {
    let mut m = Message::new(StatusCode::BAD_REQUEST, "invalid_title", i18n::text(lang, "invalid_body", &[]));
    // Shown to help with a typo, escaped like everything else; never when it may hold the
    // local part of an address.
    if !email_verdict_core::input::may_hold_local_part(raw) && !raw.trim().is_empty() {
        m.input = Some(raw.chars().take(100).collect());
    }
    message(pages, lang, m, Vec::new())
}

fn too_many(pages: &Pages, lang: Lang, wait: u64) -> Page {
    let body = i18n::text(lang, "rate_body", &[("seconds", &wait.to_string())]);
    let m = Message::new(StatusCode::TOO_MANY_REQUESTS, "rate_title", body);
    message(pages, lang, m, vec![("Retry-After", wait.to_string())])
}

fn recheck_refused(pages: &Pages, lang: Lang, domain: &str, now: i64, next_at: i64) -> Page {
    let hours = (pages.settings.recheck_interval.as_secs() / 3600).max(1).to_string();
    let time = rfc3339(next_at).replacen('T', " ", 1).replace('Z', " UTC");
    let body = i18n::text(lang, "recheck_refused_body", &[("domain", domain), ("hours", &hours), ("time", &time)]);
    let mut m = Message::new(StatusCode::TOO_MANY_REQUESTS, "recheck_refused_title", body);
    m.next_at = Some(rfc3339(next_at));
    m.back_href = Some(page_path(lang, domain));
    m.back_text = Some(i18n::text(lang, "back_link", &[("domain", domain)]));
    message(pages, lang, m, vec![("Retry-After", (next_at - now).max(1).to_string())])
}

fn lookup_failed(pages: &Pages, lang: Lang, input: &LookupInput, e: LookupError) -> Page {
    tracing::warn!(domain = %input.domain(), error = %e, "page lookup failed");
    let m = Message::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "lookup_failed_title",
        i18n::text(lang, "lookup_failed_body", &[]),
    );
    message(pages, lang, m, vec![("Retry-After", RETRY_AFTER_FAILURE.to_string())])
}

#[derive(Serialize)]
struct Message {
    #[serde(skip)]
    status_code: StatusCode,
    status: u16,
    #[serde(skip)]
    title_key: &'static str,
    title: String,
    body: String,
    input: Option<String>,
    back_href: Option<String>,
    back_text: Option<String>,
    next_at: Option<String>,
}

impl Message {
    fn new(status: StatusCode, title_key: &'static str, body: String) -> Self {
        Message {
            status_code: status,
            status: status.as_u16(),
            title_key,
            title: String::new(),
            body,
            input: None,
            back_href: None,
            back_text: None,
            next_at: None,
        }
    }
}

#[derive(Serialize)]
struct MessageView {
    #[serde(flatten)]
    chrome: Chrome,
    #[serde(flatten)]
    message: Message,
}

/// A message page; never cached (it answers one request, not a resource).
fn message(pages: &Pages, lang: Lang, mut m: Message, headers: Headers) -> Page {
    m.title = i18n::text(lang, m.title_key, &[]);
    let status = m.status_code;
    let body = pages.templates.render("message.html", &MessageView { chrome: Chrome::plain(lang, true), message: m });
    respond::html(status, lang, body, CACHE_NONE, headers)
}
