//! The `details` object beside `result` ([`crate::api::Details`]): what a signup form needs next,
//! computed from the input and the shipped lists only. Nothing here changes `result`.
//!
//! - `normalized_email`: the address a provider delivers to, by that provider's documented rules
//!   only ([`normalize_email`]; each rule cites its source). An unknown domain keeps its local
//!   part exactly as given (local parts are case-sensitive, RFC 5321 §2.4).
//! - `subaddressed`: that rule took something out of the local part the provider ignores — a
//!   `+tag` (Yahoo: a `-keyword`), Gmail's dots, Proton's `.` `_` `-` — or the address is
//!   Fastmail's subdomain form ([`is_subaddressed`]). Case folding alone, or `googlemail.com`
//!   becoming `gmail.com`, is not sub-addressing: the person typed their own address.
//! - `role_account`: the local part (before any `+tag`, case-insensitive) is a role name of
//!   `data/roles.txt` ([`is_role`]).
//! - `relay`: the domain is on the catalog's relay list (`data/relay.txt`).
//! - `provider`: [`provider_names`], the same name the public page shows.
//! - `domain_age_days`: not from here (no I/O in core): the sidecar sets it from RDAP when it
//!   knows the age; [`details`] leaves it absent.

use std::borrow::Cow;
use std::sync::LazyLock;

use crate::api::Details;
use crate::catalog::Catalog;
use crate::domain::Domain;
use crate::email::is_atom;
use crate::input::LookupInput;

/// `data/roles.txt`: role local parts, one per line, lowercase (see data/README.md).
const ROLES: &str = include_str!("../../data/roles.txt");

/// The role names, sorted once: a signup's check is a binary search, not a scan of the file
/// (the filter asks on every signup, cached verdicts included).
static ROLE_NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut names: Vec<&str> = ROLES.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    names.sort_unstable();
    names
});

/// The details of `input`. `free_provider` and `mx_hosts` are the verdict's (`result`'s) own, so
/// that `provider` names what the verdict saw.
pub fn details<'a>(
    catalog: &Catalog,
    input: &LookupInput,
    free_provider: bool,
    mx_hosts: impl IntoIterator<Item = &'a str>,
) -> Details {
    details_at(input, domain_details(catalog, input.domain(), free_provider, mx_hosts))
}

/// What [`details`] says of the domain alone, the same for every address at it: a verdict the
/// sidecar keeps keeps this too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainDetails {
    pub provider: Option<String>,
    pub relay: bool,
}

pub fn domain_details<'a>(
    catalog: &Catalog,
    domain: &Domain,
    free_provider: bool,
    mx_hosts: impl IntoIterator<Item = &'a str>,
) -> DomainDetails {
    let (provider, _) = provider_names(catalog, domain, free_provider, mx_hosts);
    DomainDetails { provider: provider.map(str::to_owned), relay: catalog.relay.contains(domain) }
}

/// The details of `input`, whose domain's are `domain`.
pub fn details_at(input: &LookupInput, domain: DomainDetails) -> Details {
    let ((normalized_email, subaddressed), role_account) = match input {
        LookupInput::Domain(_) => ((String::new(), false), false),
        LookupInput::Email(e) => (canonical(e.local(), input.domain()), is_role(e.local())),
    };
    let DomainDetails { provider, relay } = domain;
    Details { normalized_email, subaddressed, role_account, relay, provider, domain_age_days: None }
}

/// `(provider, infrastructure)`: a free provider is named by its own list entry (gmail.com, not
/// the "Google Workspace" of its MX hosts), its shared MX provider following as infrastructure;
/// otherwise the provider is the shared-MX provider of the first MX host on shared
/// infrastructure, and there is no separate infrastructure. The public page and the API both
/// take their names from here.
pub fn provider_names<'c, 'a>(
    catalog: &'c Catalog,
    domain: &Domain,
    free_provider: bool,
    mx_hosts: impl IntoIterator<Item = &'a str>,
) -> (Option<&'c str>, Option<&'c str>) {
    let shared = mx_hosts.into_iter().find_map(|h| catalog.shared_mx_host(h));
    let own = if free_provider { catalog.free.find(domain).map(|(entry, _)| entry) } else { None };
    match own {
        Some(own) => (Some(own), shared),
        None => (shared, None),
    }
}

/// Whether `local` (before any `+tag`, case-insensitive) is a role name of `data/roles.txt`.
pub fn is_role(local: &str) -> bool {
    let base = local.split('+').next().unwrap_or(local);
    !base.is_empty() && ROLE_NAMES.binary_search(&base.to_ascii_lowercase().as_str()).is_ok()
}

/// The address `local@domain` is delivered to, by the provider's documented rules; a domain
/// without a rule here keeps `local` as given. A quoted local part is first unquoted when what
/// it quotes is a dot-atom (`"ann"` is `ann`), else kept quoted in one form and never rewritten
/// by a provider's rule. When a
/// rule would leave nothing (`+tag@gmail.com`), the local part is kept as given.
pub fn normalize_email(local: &str, domain: &Domain) -> String {
    canonical(local, domain).0
}

/// Whether the provider's rule took a sub-address out of `local@domain`: a `+tag` (Yahoo's
/// `-keyword`), Gmail's dots or Proton's `.` `_` `-`, or Fastmail's subdomain form. `false` for a
/// domain without a rule, a quoted local part, case alone, `googlemail.com` alone, and where the
/// rule would leave nothing (`+tag@gmail.com` is kept as given). What an enforcement point asks
/// to flag or refuse sub-addressed signups.
pub fn is_subaddressed(local: &str, domain: &Domain) -> bool {
    canonical(local, domain).1
}

/// `(normalized address, subaddressed)`: [`normalize_email`] and [`is_subaddressed`] at once.
fn canonical(local: &str, domain: &Domain) -> (String, bool) {
    let name = domain.as_str();
    let local = unquoted(local);
    let rewritten = if local.starts_with('"') { None } else { rule(&local, name) };
    match rewritten {
        Some(r) if !r.local.is_empty() => (format!("{}@{}", r.local, r.domain), r.subaddressed),
        _ => (format!("{local}@{name}"), false),
    }
}

/// RFC 5322 §3.2.4: a quoted string is the same as what it quotes, its quoted-pairs being the
/// characters they escape, so `"ann"`, `"a\nn"` and `ann` are one mailbox. Content that is a
/// valid dot-atom comes out unquoted (the provider's rules then apply); any other comes out
/// quoted again with the fewest escapes (only `"` and `\`), one form however it was quoted.
fn unquoted(local: &str) -> Cow<'_, str> {
    let Some(inner) = local.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')) else {
        return Cow::Borrowed(local);
    };
    let mut content = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        content.push(if c == '\\' { chars.next().unwrap_or(c) } else { c });
    }
    if content.split('.').all(is_atom) {
        return Cow::Owned(content);
    }
    let mut quoted = String::with_capacity(content.len() + 2);
    quoted.push('"');
    for c in content.chars() {
        if matches!(c, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    Cow::Owned(quoted)
}

/// A provider's rule applied: the local part and domain it delivers to, and whether it removed a
/// sub-address (characters the provider ignores, or the subdomain form).
struct Rewrite<'d> {
    local: String,
    domain: &'d str,
    subaddressed: bool,
}

impl<'d> Rewrite<'d> {
    /// `local`, to `domain`, sub-addressed when the original held any of `ignored`.
    fn new(local: String, domain: &'d str, original: &str, ignored: &[char]) -> Self {
        Self { local, domain, subaddressed: original.contains(ignored) }
    }
}

/// The provider's rule for `local@domain`, or `None` for a domain without one.
fn rule<'d>(local: &str, domain: &'d str) -> Option<Rewrite<'d>> {
    let before = |sep: char| local.split(sep).next().unwrap_or(local).to_owned();
    let to = |l: String, d: &'d str, ignored: &[char]| Some(Rewrite::new(l, d, local, ignored));
    match domain {
        // Gmail: "Gmail doesn't recognize dots as characters within usernames, you can add or
        // remove the dots from a Gmail address without changing the actual destination address"
        // and homerjsimpson@gmail.com = HOMERJSIMPSON@gmail.com = Homer.J.Simpson@gmail.com
        // (Gmail Help, "Am I receiving someone else's mail?"); "add a plus sign (+) and any
        // combination of words or numbers after your email address" and it is delivered to you
        // (Official Gmail Blog, "2 hidden ways to get more from your Gmail address", 2008).
        // googlemail.com: "Google Mail does not recognise dots (.) as characters within a
        // username ... your.username@googlemail.com and y.o.u.r.u.s.e.r.n.a.m.e@googlemail.com are
        // delivered to the same inbox ... usernames are not case sensitive" (Google Mail Help,
        // UK), and it is the same account as gmail.com, so both normalize to gmail.com.
        "gmail.com" | "googlemail.com" => {
            to(before('+').replace('.', "").to_ascii_lowercase(), "gmail.com", &['+', '.'])
        }
        // Outlook.com / Hotmail / Live: plus addressing, local-part+tag@domain delivered to
        // local-part@domain (Microsoft Learn, "Plus addressing in Exchange Online": "Plus
        // addressing uses the syntax: <local-part>+<tag>@<domain>. ... The original email address
        // must be valid"; Outlook.com consumer mailboxes since 2013). No case rule is documented:
        // the local part keeps its case.
        "outlook.com" | "hotmail.com" | "live.com" => to(before('+'), domain, &['+']),
        // Yahoo Mail disposable addresses (AddressGuard): "Using the base name that you choose
        // when you set up AddressGuard, you can create new disposable addresses" of the form
        // basename-keyword@yahoo.com (Yahoo Help, "Using Disposable Addresses",
        // help.yahoo.com/help/uk/bt/tutorials/mail/addressguard2.html). What is left is the
        // account's base name: every disposable address of one account gives the same one. No
        // case rule documented.
        "yahoo.com" => to(before('-'), domain, &['-']),
        // iCloud Mail (icloud.com, me.com, mac.com are one account's domains: Apple Support
        // 118230, "About your @icloud.com, @me.com, and @mac.com email addresses"): an address
        // tag username+tag@icloud.com is delivered to username@icloud.com (documented in the
        // iCloud Mail tips of Mynavi News 2014-10-08, "アドレスタグ宛に送信されたメールは、タグを抜いた
        // アドレス宛に送信される", and Wikipedia "Email address", Sub-addressing: "Apple's iCloud
        // (plus)"; no Apple page found). The domain is kept: which of the three an account holds
        // differs per account. No case rule documented.
        "icloud.com" | "me.com" | "mac.com" => to(before('+'), domain, &['+']),
        // Proton Mail: "+aliases, by adding + after your username" (Proton Support, "How to
        // create and use an additional address (alias)"); "the characters '.', '_' and '-' ...
        // are treated as transparent by our service. That is, username is the same as user_name
        // and user.name" and "Usernames and email addresses are not case-sensitive" (Proton
        // Support, "How to change your username", proton.me/support/change-username). The
        // domain is kept (an account may hold its name on only some of them).
        "proton.me" | "protonmail.com" | "protonmail.ch" | "pm.me" => {
            let base: String = before('+').chars().filter(|c| !matches!(c, '.' | '_' | '-')).collect();
            to(base.to_ascii_lowercase(), domain, &['+', '.', '_', '-'])
        }
        // Fastmail plus addressing: "any email sent to username+whateveryoulike@domain.tld is
        // still sent to your account" (Fastmail Help 360060591053, "Plus addressing and subdomain
        // addressing"). No case rule documented.
        "fastmail.com" | "fastmail.fm" => to(before('+'), domain, &['+']),
        _ => fastmail_subdomain(domain),
    }
}

/// Fastmail subdomain addressing: "instead of username+whateveryoulike@domain.tld, you can use
/// an address of the form whateveryoulike@username.domain.tld" (Fastmail Help 360060591053), and
/// "email sent to anything@joecitizen.fastmail.fm will be transformed to
/// joecitizen+anything@fastmail.fm and delivered to your account" (Fastmail blog, 2008-01-24,
/// "Two address resolving additions"). So x@user.fastmail.com is user@fastmail.com. Only one
/// label under fastmail.com / fastmail.fm; the blog's `-` for `_` workaround is not reversed (a
/// `-` in the label may be the user's own). Always a sub-address: the local part is the tag.
fn fastmail_subdomain(domain: &str) -> Option<Rewrite<'_>> {
    ["fastmail.com", "fastmail.fm"].into_iter().find_map(|base| {
        let user = domain.strip_suffix(base)?.strip_suffix('.')?;
        let rewrite = Rewrite { local: user.to_owned(), domain: base, subaddressed: true };
        (!user.is_empty() && !user.contains('.')).then_some(rewrite)
    })
}

#[cfg(test)]
mod tests;
