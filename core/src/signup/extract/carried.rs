//! Every domain a signup carries, whatever the field that holds it.
//!
//! Field names are the app framework's business (Express's qs reads `[email]=` as `email`, PHP
//! and Rack have their own bracket rules, an app may read `invitee_email`), so the configured
//! names only say which address is *the* signup's (`on_missing_email`, the detail headers). For
//! the verdict, every `@` of every value of the query and of the body counts ([`scan`]): every
//! JSON string at any depth (object keys too), every form field and every multipart text part,
//! under any name but a secret one (`email.secret_fields`: a password is never scanned). Their
//! names are judged, at most `max_domains` sites (a name's last two labels) and twice as many names.

use crate::{Domain, EmailAddress};

use super::{Extracted, Unreadable, again, scan};

/// `max_domains` when the configuration does not set it: a team invite naming 9 domains signs up.
pub const DEFAULT_MAX_DOMAINS: usize = 16;
/// The largest `max_domains` a configuration may set.
pub const MAX_DOMAINS_LIMIT: usize = 64;
/// Names judged per site allowed, on average (a form of each IDNA mapping, a
/// name's valid parents): each name is a cache read or a callout.
pub const NAMES_PER_DOMAIN: usize = 2;
/// Names kept while reading: past this the signup is over any bound.
const KEPT: usize = MAX_DOMAINS_LIMIT * NAMES_PER_DOMAIN + 1;

/// A name to judge. A name found only in free text, or derived from one with a refused label
/// (`mention`), is judged without feeding the review queue or RDAP: nobody typed it as their address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    pub domain: Domain,
    pub mention: bool,
}

/// Work spent reading one request's texts again (fields, decoded texts, about 64 bytes a unit):
/// past it the body is too complex to read.
const MAX_WORK: usize = 200_000;

/// The distinct names found, in the order found, bounded; and whether reading them hit a bound
/// ([`Domains::refused`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Domains {
    names: Vec<Name>,
    overflow: bool,
    refused: Option<Unreadable>,
    work: usize,
}

impl Domains {
    /// Adds every name behind an `@` of `text`, and of every text an app may decode from it
    /// ([`again`]).
    pub fn consider(&mut self, text: &str) {
        self.consider_with(text, &[]);
    }

    /// [`Domains::consider`], with JSON found inside the text skipping `secret` keys.
    pub fn consider_with(&mut self, text: &str, secret: &[String]) {
        again::text(self, text, secret, 0);
    }

    /// Adds every name behind an `@` of `text` itself.
    pub(super) fn scan(&mut self, text: &str) {
        scan::names_in(text, |found| self.add(found.domain, found.mention));
    }

    /// Counts `units` of work; `false` (and the body too complex) past [`MAX_WORK`].
    pub(super) fn spend(&mut self, units: usize) -> bool {
        self.work = self.work.saturating_add(units);
        if self.work > MAX_WORK {
            self.refuse_too_complex();
        }
        self.refused.is_none()
    }

    /// Whether a message found at `depth` (its bytes `inner`) may be read one level deeper; past
    /// [`again::MAX_DEPTH`] it is not, and one holding an `@` makes the body too complex.
    pub(super) fn deeper(&mut self, depth: usize, inner: &[u8]) -> bool {
        if depth + 1 < again::MAX_DEPTH {
            return self.refused.is_none();
        }
        if inner.contains(&b'@') || inner.windows(2).any(|w| w == b"\\u") {
            self.refuse_too_complex();
        }
        false
    }

    pub(super) fn refuse_too_complex(&mut self) {
        self.refused.get_or_insert(Unreadable::TooComplex);
    }

    /// Why reading stopped short: the texts decoded from the request went past a bound.
    pub fn refused(&self) -> Option<Unreadable> {
        self.refused
    }

    pub fn add(&mut self, domain: Domain, mention: bool) {
        if let Some(name) = self.names.iter_mut().find(|n| n.domain == domain) {
            name.mention &= mention;
        } else if self.names.len() == KEPT {
            self.overflow = true;
        } else {
            self.names.push(Name { domain, mention });
        }
    }

    pub fn as_slice(&self) -> &[Name] {
        &self.names
    }

    /// Over the bounds for `max_domains`: more distinct sites (a name's last two labels,
    /// [`scan::site`]), or more names than [`NAMES_PER_DOMAIN`] times as many.
    pub fn too_many(&self, max_domains: usize) -> bool {
        let mut sites: Vec<&str> = Vec::new();
        for name in &self.names {
            let site = scan::site(&name.domain);
            if !sites.contains(&site) {
                sites.push(site);
            }
        }
        self.overflow || sites.len() > max_domains || self.names.len() > max_domains * NAMES_PER_DOMAIN
    }

    fn extend(&mut self, other: Domains) {
        self.overflow |= other.overflow;
        self.refused = self.refused.or(other.refused);
        self.work = self.work.saturating_add(other.work);
        for name in other.names {
            self.add(name.domain, name.mention);
        }
    }
}

/// What one part of a request (its headers and query, or its body) carries: what the configured
/// sources gave, and the domains of every address in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    pub configured: Extracted,
    pub domains: Domains,
}

impl Carried {
    pub fn new(configured: Extracted, domains: Domains) -> Self {
        Self { configured, domains }
    }

    /// Nothing read (and so nothing wrong).
    pub fn nothing() -> Self {
        Self::new(Extracted::NotFound, Domains::default())
    }

    /// The whole request: the configured sources combined ([`Extracted::and`]), every domain kept.
    pub fn and(mut self, other: Carried) -> Carried {
        self.domains.extend(other.domains);
        Carried { configured: self.configured.and(other.configured), domains: self.domains }
    }

    /// What is to be judged, once the whole request has been read, within `max_domains`.
    pub fn to_judge(self, max_domains: usize) -> ToJudge {
        let mut domains = Domains::default();
        let (primary, problem) = match self.configured {
            Extracted::Email(raw) => {
                let email = scan::unwrapped(&raw).and_then(|a| EmailAddress::parse_lenient(a).ok());
                if let Some(email) = &email {
                    domains.add(email.domain().clone(), false); // the signup's own address first
                }
                // A configured header is read nowhere else; a value that is already the address
                // as parsed (the common case) names nothing more.
                if email.as_ref().is_none_or(|e| scan::trim(&raw) != e.to_string()) {
                    domains.consider(&raw);
                }
                let problem = email.is_none().then_some(Problem::Invalid(None));
                (email, problem)
            }
            Extracted::NotFound => (None, Some(Problem::Missing)),
            Extracted::Invalid(why) => (None, Some(Problem::Invalid(Some(why)))),
            Extracted::Unreadable(why) => (None, Some(Problem::Unreadable(why))),
        };
        domains.extend(self.domains);
        let problem = match (problem, domains.refused) {
            (Some(Problem::Unreadable(why)), _) | (_, Some(why)) => Some(Problem::Unreadable(why)),
            _ if domains.too_many(max_domains) => Some(Problem::TooManyDomains),
            (other, None) => other,
        };
        ToJudge { primary, names: domains.names, problem }
    }
}

/// A whole signup, ready to be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToJudge {
    /// The address of the configured sources: the one the detail headers describe.
    pub primary: Option<EmailAddress>,
    /// Every distinct name to judge, the primary's domain first; when the signup is over the
    /// bounds ([`Problem::TooManyDomains`]) not all of them.
    pub names: Vec<Name>,
    /// Why the signup cannot be judged as it should: its policy decides.
    pub problem: Option<Problem>,
}

/// What is wrong with a signup before any verdict, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The body cannot be read in full (`on_unreadable_body`), even when an address was found
    /// elsewhere: the body may hold another.
    Unreadable(super::Unreadable),
    /// More than `max_domains` distinct sites, or too many names: always refused.
    TooManyDomains,
    /// The configured sources gave an unusable value (`on_invalid_email`).
    Invalid(Option<super::Unusable>),
    /// The configured sources gave nothing (`on_missing_email`).
    Missing,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signup::extract::{Unreadable, Unusable};

    const MAX: usize = DEFAULT_MAX_DOMAINS;

    fn domains(texts: &[&str]) -> Domains {
        let mut d = Domains::default();
        texts.iter().for_each(|t| d.consider(t));
        d
    }

    fn names(d: &[Name]) -> Vec<&str> {
        d.iter().map(|n| n.domain.as_str()).collect()
    }

    #[test]
    fn every_at_counts() {
        let d = domains(&[
            " ann@gmail.com\n",
            "Ann <x@mailinator.com>",
            "see x@yopmail.com",
            "@handle",
            "x@mailinator.com",
            "X@MAILINATOR.COM",
            "not an address",
            "a@b",
        ]);
        assert_eq!(names(d.as_slice()), ["gmail.com", "mailinator.com", "yopmail.com"]);
        let mentioned: Vec<bool> = d.as_slice().iter().map(|n| n.mention).collect();
        assert_eq!(mentioned, [false, false, true]);
        assert!(!d.too_many(MAX));
    }

    #[test]
    fn the_bounds_are_on_sites_and_names() {
        let many: Vec<String> = (0..=MAX).map(|i| format!("a@d{i}.example")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(domains(&refs[..MAX]).as_slice().len(), MAX);
        assert!(!domains(&refs[..MAX]).too_many(MAX));
        assert!(domains(&refs).too_many(MAX));
        assert!(!domains(&refs[..9]).too_many(MAX), "a team invite of 9 domains");
        let same: Vec<String> = (0..100).map(|i| format!("a{i}@d.example")).collect();
        let refs: Vec<&str> = same.iter().map(String::as_str).collect();
        assert!(!domains(&refs).too_many(MAX));
        // Names under one registrable domain are bounded too.
        let deep: Vec<String> = (0..=2 * MAX).map(|i| format!("a@s{i}.d.example")).collect();
        let refs: Vec<&str> = deep.iter().map(String::as_str).collect();
        assert!(domains(&refs).too_many(MAX));
        // Past what is kept, whatever the setting.
        let huge: Vec<String> = (0..=KEPT).map(|i| format!("a@d{i}.example")).collect();
        let refs: Vec<&str> = huge.iter().map(String::as_str).collect();
        assert!(domains(&refs).too_many(MAX_DOMAINS_LIMIT));
    }

    #[test]
    fn to_judge_puts_the_primary_first_and_names_the_worst_problem() {
        let carried = |configured, others: &[&str]| Carried::new(configured, domains(others));
        let email = |s: &str| Extracted::Email(s.to_owned());
        let judged = carried(email("ann@gmail.com"), &["x@mailinator.com", "ann@gmail.com"]).to_judge(MAX);
        assert_eq!(names(&judged.names), ["gmail.com", "mailinator.com"]);
        assert_eq!(judged.primary.map(|p| p.to_string()), Some("ann@gmail.com".to_owned()));
        assert_eq!(judged.problem, None);

        let missing = carried(Extracted::NotFound, &["x@mailinator.com"]).to_judge(MAX);
        assert_eq!((names(&missing.names), missing.problem), (vec!["mailinator.com"], Some(Problem::Missing)));
        let invalid = carried(email("not an address"), &["x@mailinator.com"]).to_judge(MAX);
        assert_eq!(invalid.problem, Some(Problem::Invalid(None)));
        let conflicting = carried(Extracted::Invalid(Unusable::Conflicting), &[]).to_judge(MAX);
        assert_eq!(conflicting.problem, Some(Problem::Invalid(Some(Unusable::Conflicting))));

        // An address in the query does not make an unreadable body readable.
        let unreadable = Carried::new(email("ann@gmail.com"), Domains::default())
            .and(Carried::new(Extracted::Unreadable(Unreadable::Encoded), Domains::default()))
            .to_judge(MAX);
        assert_eq!(unreadable.problem, Some(Problem::Unreadable(Unreadable::Encoded)));

        let many: Vec<String> = (0..MAX).map(|i| format!("a@d{i}.example")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let over = carried(email("ann@gmail.com"), &refs).to_judge(MAX);
        assert_eq!(over.problem, Some(Problem::TooManyDomains));
    }

    /// The configured address is read as the app's validator reads it: a pasted display name,
    /// a long local part; its IDNA 2003 form is judged too.
    #[test]
    fn the_configured_address_is_read_leniently() {
        let judge = |raw: &str| Carried::new(Extracted::Email(raw.to_owned()), Domains::default()).to_judge(MAX);
        let pasted = judge("Ann Smith <ann@gmail.com>");
        assert_eq!((pasted.primary.map(|p| p.to_string()), pasted.problem), (Some("ann@gmail.com".to_owned()), None));
        let long = format!("{}@outlook.com", "a".repeat(80));
        assert_eq!(judge(&long).problem, None);
        let sharp = judge("bob@abyßmail.com");
        assert_eq!(names(&sharp.names), ["xn--abymail-2va.com", "abyssmail.com"]);
        let header = judge("bob@ab--cd.mailinator.com");
        assert_eq!((names(&header.names), header.problem), (vec!["mailinator.com"], Some(Problem::Invalid(None))));
    }
}
