//! What the templates are given: the page chrome (languages, `hreflang` alternates, canonical
//! URL) and a domain page's model — the verdict and its flags as the API computes them, plus
//! the page-only data (provider, and per MX host its addresses with country, network and
//! reverse DNS), which never reaches the JSON API (spec rule 5), and the registered domain's
//! age when RDAP told it (the API's `details.domain_age_days`).

use std::net::IpAddr;

use email_verdict_core::details::provider_names;
use email_verdict_core::{Catalog, Domain, MxInfo, VerdictResult};
use serde::Serialize;
pub use why::{WhyLine, why_lines};

use super::Pages;
use super::i18n;
use super::ipdata::IpInfo;
use super::lang::Lang;
use crate::rdap::DomainAge;
use crate::verdicts::Why;

mod why;

/// What every public page shows around its content.
#[derive(Debug, Serialize)]
pub struct Chrome {
    pub lang: Lang,
    pub langs: Vec<LangLink>,
    pub alternates: Vec<Alternate>,
    pub canonical: Option<String>,
    pub lookup_action: String,
    pub noindex: bool,
}

#[derive(Debug, Serialize)]
pub struct LangLink {
    code: &'static str,
    name: String,
    href: String,
    current: bool,
}

#[derive(Debug, Serialize)]
pub struct Alternate {
    hreflang: &'static str,
    href: String,
}

/// `/{lang}/domain/{domain}`; `domain` is normalized ASCII (`[a-z0-9.-]`), safe in a path.
pub fn page_path(lang: Lang, domain: &str) -> String {
    format!("/{}/domain/{domain}", lang.code())
}

impl Chrome {
    /// A domain page: alternates in every language, `x-default` on the negotiating URL.
    pub fn for_domain(lang: Lang, domain: &str, base: &str) -> Self {
        let mut alternates: Vec<Alternate> = Lang::ALL
            .iter()
            .map(|l| Alternate { hreflang: l.code(), href: format!("{base}{}", page_path(*l, domain)) })
            .collect();
        alternates.push(Alternate { hreflang: "x-default", href: format!("{base}/domain/{domain}") });
        Chrome {
            lang,
            langs: links(lang, |l| page_path(l, domain)),
            alternates,
            canonical: Some(format!("{base}{}", page_path(lang, domain))),
            lookup_action: format!("/{}/domain", lang.code()),
            noindex: false,
        }
    }

    /// Any other page (home, errors): the switcher leads to each language's home page.
    pub fn plain(lang: Lang, noindex: bool) -> Self {
        Chrome {
            lang,
            langs: links(lang, |l| format!("/{}/", l.code())),
            alternates: Vec::new(),
            canonical: None,
            lookup_action: format!("/{}/domain", lang.code()),
            noindex,
        }
    }
}

fn links(current: Lang, href: impl Fn(Lang) -> String) -> Vec<LangLink> {
    Lang::ALL
        .iter()
        .map(|l| LangLink {
            code: l.code(),
            name: i18n::text(*l, "lang_name", &[]),
            href: href(*l),
            current: *l == current,
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub struct DomainView {
    #[serde(flatten)]
    pub chrome: Chrome,
    pub domain: String,
    pub is_email: bool,
    pub rechecked: bool,
    /// The popular provider this domain is very probably a typo of (a domain, never an email),
    /// and its page.
    pub suggestion: Option<String>,
    pub suggestion_href: Option<String>,
    /// The API's verdict (`disposable` or `safe`).
    pub verdict: &'static str,
    /// What the verdict box shows: the verdict, or for a `safe` domain that cannot receive mail
    /// what it is instead (`no_mail`, `no_domain`), in neutral colours ([`page_state`]).
    pub state: &'static str,
    /// `no_mx` or `ambiguous` when the lookup queued the domain for review.
    pub queued: Option<&'static str>,
    /// The provider's name: a free provider's own (its entry in the free list), else the
    /// shared-MX provider's; `None`: `provider_key` names a message.
    pub provider: Option<String>,
    pub provider_key: &'static str,
    /// A free provider's shared-MX infrastructure (its name comes second, after the provider's).
    pub infrastructure: Option<String>,
    pub service: &'static str,
    /// The registered domain's registration day (`YYYY-MM-DD`, UTC) and age in whole days,
    /// when known (`--rdap`), and the message that says it (`age_today`, `age_one`, `age_days`).
    pub registered_on: Option<String>,
    pub age_days: Option<u32>,
    pub age_key: &'static str,
    pub flags: Vec<Flag>,
    pub mx: Vec<MxView>,
    /// MX hosts of the answer past those kept (not shown, not judged).
    pub mx_more_hosts: usize,
    /// MX hosts whose addresses a lookup resolves ([`crate::dns::MX_HOSTS_RESOLVED`]).
    pub mx_resolved_bound: usize,
    /// The operator's credit line for their IP databases; `None` with the shipped ones, whose
    /// credit the template writes in the page's language.
    pub attribution: Option<String>,
    pub ipdata_shipped: bool,
    pub cached: bool,
    pub recheck_action: String,
    pub recheck_hours: u64,
    /// Why the verdict is what it is, one message per fact.
    pub why: Vec<WhyLine>,
}

#[derive(Debug, Serialize)]
pub struct Flag {
    name: &'static str,
    value: bool,
    /// A message explaining the value where it could be misread (`flag_<name>_<note>`).
    note: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct MxView {
    name: String,
    /// One row per address; one empty row for a host without any.
    rows: Vec<IpRow>,
    /// Whether its addresses were looked up (past the resolver's bound they are not).
    resolved: bool,
    /// Its addresses left out of the answer.
    more_ips: usize,
}

#[derive(Debug, Default, Serialize)]
pub struct IpRow {
    ip: Option<String>,
    country: Option<String>,
    country_code: Option<String>,
    asn: Option<u32>,
    as_org: Option<String>,
    ptr: Option<String>,
    /// Its reverse DNS was not looked up (past the page's bound).
    ptr_skipped: bool,
}

/// The facts a domain page is built from.
pub struct Facts<'a> {
    pub lang: Lang,
    pub domain: &'a Domain,
    pub is_email: bool,
    pub rechecked: bool,
    pub result: &'a VerdictResult,
    pub suggestion: Option<&'a Domain>,
    pub mx: &'a MxInfo,
    pub why: &'a Why,
    /// The registered domain's age, when known.
    pub age: Option<DomainAge>,
}

pub async fn domain_view(pages: &Pages, catalog: &Catalog, f: Facts<'_>) -> DomainView {
    let r = f.result;
    let name = f.domain.as_str();
    let state = page_state(r);
    let no_mail = matches!(state, "no_mail" | "no_domain");
    let queued = if no_mail { Some("no_mx") } else { r.review_required.then_some("ambiguous") };
    // A free provider is named first by its own name (gmail.com, not the "Google Workspace" of
    // its MX hosts); its infrastructure follows. The API's `details.provider` is the same name.
    let hosts = f.mx.hosts().iter().map(|h| h.name.as_str());
    let (provider, infrastructure) = provider_names(catalog, f.domain, r.free_provider, hosts);
    let (provider, infrastructure) = (provider.map(str::to_owned), infrastructure.map(str::to_owned));
    DomainView {
        chrome: Chrome::for_domain(f.lang, name, &pages.settings.public_url),
        domain: name.to_owned(),
        is_email: f.is_email,
        rechecked: f.rechecked,
        suggestion: f.suggestion.map(Domain::to_string),
        suggestion_href: f.suggestion.map(|s| page_path(f.lang, s.as_str())),
        verdict: if r.disposable { "disposable" } else { "safe" },
        state,
        queued,
        provider,
        provider_key: if r.has_mx { "provider_own" } else { "provider_none" },
        infrastructure,
        why: why_lines(f.lang, r, f.why, catalog.relay.contains(f.domain)),
        service: service(catalog, f.domain, r),
        registered_on: f.age.map(|a| crate::clock::utc_day(a.registered)),
        age_days: f.age.map(|a| a.days),
        age_key: match f.age.map(|a| a.days) {
            Some(0) => "age_today",
            Some(1) => "age_one",
            _ => "age_days",
        },
        flags: flags(r, no_mail),
        mx: mx_rows(pages, f.mx, f.lang).await,
        mx_more_hosts: f.mx.cut().map_or(0, |cut| cut.hosts),
        mx_resolved_bound: crate::dns::MX_HOSTS_RESOLVED,
        attribution: (!pages.ipdata.shipped).then(|| pages.ipdata.attribution.clone()),
        ipdata_shipped: pages.ipdata.shipped,
        cached: r.cached,
        recheck_action: format!("{}/recheck", page_path(f.lang, name)),
        recheck_hours: (pages.settings.recheck_interval.as_secs() / 3600).max(1),
    }
}

/// What the verdict box shows. A `safe` domain without mail servers is not "safe" to a reader:
/// no address there receives mail, so the box says that, neutrally; a reviewer's or the
/// operator's allow keeps "safe" (the domain was judged, whatever DNS says).
pub fn page_state(r: &VerdictResult) -> &'static str {
    if r.disposable {
        "disposable"
    } else if r.has_mx || r.allowlisted {
        "safe"
    } else if !r.domain_exists {
        "no_domain"
    } else {
        "no_mail"
    }
}

fn service(catalog: &Catalog, domain: &Domain, r: &VerdictResult) -> &'static str {
    if r.free_provider {
        "free"
    } else if r.disposable {
        "disposable"
    } else if catalog.relay.contains(domain) {
        "relay"
    } else if r.business_email {
        "business"
    } else {
        "other"
    }
}

/// The verdict's flags as the API gives them. `no_mail`: the domain cannot receive mail, so it
/// is queued to be looked at while `review_required` (an undecided verdict) is false — the row
/// says why, so the page does not contradict itself.
fn flags(r: &VerdictResult, no_mail: bool) -> Vec<Flag> {
    [
        ("free_provider", r.free_provider),
        ("business_email", r.business_email),
        ("shared_mx", r.shared_mx),
        ("has_mx", r.has_mx),
        ("domain_exists", r.domain_exists),
        ("allowlisted", r.allowlisted),
        ("blocked", r.blocked),
        ("mx_ip_match", r.mx_ip_match),
        ("review_required", r.review_required),
    ]
    .into_iter()
    .map(|(name, value)| Flag { name, value, note: (no_mail && name == "review_required").then_some("no_mx") })
    .collect()
}

async fn mx_rows(pages: &Pages, mx: &MxInfo, lang: Lang) -> Vec<MxView> {
    let ptr = pages.rdns.names(&mx.addresses()).await;
    mx.hosts()
        .iter()
        .map(|host| {
            let mut rows: Vec<IpRow> =
                host.ips.iter().map(|ip| ip_row(*ip, pages.ipdata.lookup(*ip, lang), ptr.get(ip))).collect();
            if rows.is_empty() {
                rows.push(IpRow::default());
            }
            MxView { name: host.name.clone(), rows, resolved: host.resolved, more_ips: host.more_ips }
        })
        .collect()
}

/// `ptr`: `None` when the address's reverse DNS was not looked up, else what it gave.
fn ip_row(ip: IpAddr, info: IpInfo, ptr: Option<&Option<String>>) -> IpRow {
    let country = match (&info.country_name, &info.country_code, &info.city) {
        (Some(name), Some(code), Some(city)) => Some(format!("{city}, {name} ({code})")),
        (Some(name), Some(code), None) => Some(format!("{name} ({code})")),
        (Some(name), None, _) => Some(name.clone()),
        (None, Some(code), _) => Some(code.clone()),
        (None, None, _) => None,
    };
    IpRow {
        ip: Some(ip.to_string()),
        country,
        country_code: info.country_code,
        asn: info.asn,
        as_org: info.as_org,
        ptr: ptr.cloned().flatten(),
        ptr_skipped: ptr.is_none(),
    }
}

#[cfg(test)]
mod tests {
    use email_verdict_core::verdict::decide;
    use email_verdict_core::{Decision, MxHost, Signals};

    use super::*;

    fn state(mx: MxInfo, s: Signals) -> &'static str {
        page_state(&decide(&s, &mx, false))
    }

    #[test]
    fn a_domain_that_cannot_receive_mail_is_not_shown_as_safe() {
        let own = || MxInfo::Mx { hosts: vec![MxHost::new("mx.example", vec![])] };
        assert_eq!(state(own(), Signals::default()), "safe");
        assert_eq!(state(MxInfo::NoMx, Signals::default()), "no_mail");
        assert_eq!(state(MxInfo::NullMx, Signals::default()), "no_mail");
        assert_eq!(state(MxInfo::NoDomain, Signals::default()), "no_domain");
        let block = Signals { decision: Some(Decision::Block), ..Signals::default() };
        assert_eq!(state(MxInfo::NoDomain, block), "disposable", "a block decision stands");
        let allow = Signals { decision: Some(Decision::Allow), ..Signals::default() };
        assert_eq!(state(MxInfo::NoMx, allow), "safe", "so does an allow");
    }

    #[test]
    fn the_review_flag_of_a_domain_without_mail_is_explained() {
        let r = decide(&Signals::default(), &MxInfo::NoMx, false);
        assert!(!r.review_required, "the API's flag stays as the spec has it");
        let rows = flags(&r, true);
        let review = rows.iter().find(|f| f.name == "review_required").map(|f| (f.value, f.note));
        assert_eq!(review, Some((false, Some("no_mx"))));
        assert!(rows.iter().filter(|f| f.name != "review_required").all(|f| f.note.is_none()));
        assert!(flags(&r, false).iter().all(|f| f.note.is_none()));
    }
}
