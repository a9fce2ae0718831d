//! Every address a signup carries, whatever the field that holds it.
//!
//! Field names are the app framework's business (Express's qs reads `[email]=` as `email`, PHP
//! and Rack have their own bracket rules, an app may read `invitee_email`), so the configured
//! names only say which address is *the* signup's (`on_missing_email`, the detail headers). For
//! the verdict, every value of the query and of the body whose whole trimmed text is an email
//! address counts: every JSON string at any depth (object keys too), every form field and every
//! multipart part, under any name. Their distinct domains are judged, at most [`MAX_DOMAINS`].

use crate::{Domain, EmailAddress};

use super::Extracted;

/// Distinct domains judged per signup; a signup carrying more is refused (`too_many_addresses`):
/// each one costs a verdict (a cache read, or a callout).
pub const MAX_DOMAINS: usize = 8;

/// The longest text that can be an address (254 octets) with some whitespace around it.
const LONGEST: usize = 320;

/// The distinct domains of the addresses found, in the order found, bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Domains {
    list: Vec<Domain>,
    too_many: bool,
}

impl Domains {
    /// Adds the domain of `text` when its whole trimmed text is an address.
    pub fn consider(&mut self, text: &str) {
        if let Some(email) = address(text) {
            self.add(email.domain());
        }
    }

    pub fn add(&mut self, domain: &Domain) {
        if self.list.contains(domain) {
            return;
        }
        if self.list.len() == MAX_DOMAINS {
            self.too_many = true;
        } else {
            self.list.push(domain.clone());
        }
    }

    /// More than [`MAX_DOMAINS`] were found: the rest were dropped.
    pub fn too_many(&self) -> bool {
        self.too_many
    }

    pub fn as_slice(&self) -> &[Domain] {
        &self.list
    }

    fn extend(&mut self, other: Domains) {
        self.too_many |= other.too_many;
        for domain in &other.list {
            self.add(domain);
        }
    }
}

/// `text`, trimmed, as an address: cheap tests first (an `@`, a plausible length), since most
/// values are not addresses.
fn address(text: &str) -> Option<EmailAddress> {
    if text.len() > LONGEST || !text.contains('@') {
        return None;
    }
    EmailAddress::parse(text.trim()).ok()
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

    /// What is to be judged, once the whole request has been read.
    pub fn to_judge(self) -> ToJudge {
        let mut domains = Domains::default();
        let (primary, problem) = match self.configured {
            Extracted::Email(raw) => match EmailAddress::parse(raw.trim()) {
                Ok(email) => {
                    domains.add(email.domain()); // the signup's own address is judged first
                    (Some(email), None)
                }
                Err(_) => (None, Some(Problem::Invalid(None))),
            },
            Extracted::NotFound => (None, Some(Problem::Missing)),
            Extracted::Invalid(why) => (None, Some(Problem::Invalid(Some(why)))),
            Extracted::Unreadable(why) => (None, Some(Problem::Unreadable(why))),
        };
        domains.extend(self.domains);
        let problem = match problem {
            Some(Problem::Unreadable(why)) => Some(Problem::Unreadable(why)),
            _ if domains.too_many() => Some(Problem::TooManyDomains),
            other => other,
        };
        ToJudge { primary, domains: domains.list, problem }
    }
}

/// A whole signup, ready to be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToJudge {
    /// The address of the configured sources: the one the detail headers describe.
    pub primary: Option<EmailAddress>,
    /// Every distinct domain to judge, the primary's first; at most [`MAX_DOMAINS`].
    pub domains: Vec<Domain>,
    /// Why the signup cannot be judged as it should: its policy decides.
    pub problem: Option<Problem>,
}

/// What is wrong with a signup before any verdict, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The body cannot be read in full (`on_unreadable_body`), even when an address was found
    /// elsewhere: the body may hold another.
    Unreadable(super::Unreadable),
    /// More than [`MAX_DOMAINS`] distinct domains: always refused.
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

    fn domains(texts: &[&str]) -> Domains {
        let mut d = Domains::default();
        texts.iter().for_each(|t| d.consider(t));
        d
    }

    fn names(d: &[Domain]) -> Vec<&str> {
        d.iter().map(Domain::as_str).collect()
    }

    #[test]
    fn only_whole_addresses_count() {
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
        assert_eq!(names(d.as_slice()), ["gmail.com", "mailinator.com"]);
        assert!(!d.too_many());
    }

    #[test]
    fn the_bound_is_on_distinct_domains() {
        let many: Vec<String> = (0..=MAX_DOMAINS).map(|i| format!("a@d{i}.example")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(domains(&refs[..MAX_DOMAINS]).as_slice().len() == MAX_DOMAINS);
        assert!(!domains(&refs[..MAX_DOMAINS]).too_many());
        assert!(domains(&refs).too_many());
        let same: Vec<String> = (0..100).map(|i| format!("a{i}@d.example")).collect();
        let refs: Vec<&str> = same.iter().map(String::as_str).collect();
        assert!(!domains(&refs).too_many());
    }

    #[test]
    fn to_judge_puts_the_primary_first_and_names_the_worst_problem() {
        let carried = |configured, others: &[&str]| Carried::new(configured, domains(others));
        let email = |s: &str| Extracted::Email(s.to_owned());
        let judged = carried(email("ann@gmail.com"), &["x@mailinator.com", "ann@gmail.com"]).to_judge();
        assert_eq!(names(&judged.domains), ["gmail.com", "mailinator.com"]);
        assert_eq!(judged.primary.map(|p| p.to_string()), Some("ann@gmail.com".to_owned()));
        assert_eq!(judged.problem, None);

        let missing = carried(Extracted::NotFound, &["x@mailinator.com"]).to_judge();
        assert_eq!((names(&missing.domains), missing.problem), (vec!["mailinator.com"], Some(Problem::Missing)));
        let invalid = carried(email("not an address"), &["x@mailinator.com"]).to_judge();
        assert_eq!(invalid.problem, Some(Problem::Invalid(None)));
        let conflicting = carried(Extracted::Invalid(Unusable::Conflicting), &[]).to_judge();
        assert_eq!(conflicting.problem, Some(Problem::Invalid(Some(Unusable::Conflicting))));

        // An address in the query does not make an unreadable body readable.
        let unreadable = Carried::new(email("ann@gmail.com"), Domains::default())
            .and(Carried::new(Extracted::Unreadable(Unreadable::Encoded), Domains::default()))
            .to_judge();
        assert_eq!(unreadable.problem, Some(Problem::Unreadable(Unreadable::Encoded)));

        let many: Vec<String> = (0..MAX_DOMAINS).map(|i| format!("a@d{i}.example")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let over = carried(email("ann@gmail.com"), &refs).to_judge();
        assert_eq!((over.domains.len(), over.problem), (MAX_DOMAINS, Some(Problem::TooManyDomains)));
    }
}
