//! Many addresses, one answer: the worst of their verdicts decides, the same in the filter and
//! in ext_authz. Worst first: a disposable verdict in block mode, a domain that could not be
//! judged whose `failure_mode` denies, a disposable verdict in flag mode, a domain that could
//! not be judged (let through with its bypass value), the sidecar calling a domain invalid, a
//! problem of the signup the operator let through (`on_*: allow`, the bypass header), then a
//! safe verdict: the signup's own address's when it has one.

use crate::verdict::Mail;
use crate::{Domain, VerdictSource};

use super::{Bypass, NoMx, VerdictSummary};

/// One domain's verdict, as the flag headers say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressVerdict {
    pub domain: Domain,
    pub disposable: bool,
    /// The flags header's value (`local_fallback` for a verdict reached without the sidecar).
    pub flags: String,
    pub suggestion: Option<Domain>,
    /// What decided it, when the sidecar said (the gateway's counts by source).
    pub source: Option<VerdictSource>,
    /// The domain cannot receive mail ([`Mail::None`]; `no_mx` reads it).
    pub undeliverable: bool,
}

impl AddressVerdict {
    /// `domain`'s verdict from its summary; `no_mx: flag` adds `no_mx` to an undeliverable
    /// domain's flags.
    pub fn of(domain: &Domain, summary: &VerdictSummary, no_mx: NoMx) -> Self {
        let undeliverable = summary.mail == Some(Mail::None);
        let verdict = Self {
            domain: domain.clone(),
            disposable: summary.disposable,
            flags: summary.flags.header_value(),
            suggestion: summary.suggestion.clone(),
            source: summary.source,
            undeliverable,
        };
        if undeliverable && no_mx == NoMx::Flag { verdict.with_flag(NO_MX_FLAG) } else { verdict }
    }

    /// `disposable`, decided by an enforcement point without the sidecar (`local_fallback`).
    pub fn local_fallback(domain: &Domain) -> Self {
        let flags = super::LOCAL_FALLBACK_FLAG.to_owned();
        Self { domain: domain.clone(), disposable: true, flags, suggestion: None, source: None, undeliverable: false }
    }

    /// With `subaddressed` among its flags (`on_subaddressed: flag`).
    pub fn flagged_subaddressed(self) -> Self {
        self.with_flag(SUBADDRESSED_FLAG)
    }

    fn with_flag(self, flag: &str) -> Self {
        let flags = if self.flags.is_empty() { flag.to_owned() } else { format!("{},{flag}", self.flags) };
        Self { flags, ..self }
    }
}

/// The flags header's name for a sub-addressed signup (`on_subaddressed: flag`).
pub const SUBADDRESSED_FLAG: &str = "subaddressed";
/// The flags header's name for a domain that cannot receive mail (`no_mx: flag`).
pub const NO_MX_FLAG: &str = "no_mx";

/// What judging one domain came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    Verdict(AddressVerdict),
    /// No verdict could be had.
    Failed(Bypass),
    /// The sidecar refused the domain as input (`on_invalid_email`).
    Invalid,
}

/// The worst of what judging every domain came to so far.
#[derive(Debug, Clone, Default)]
pub struct Worst {
    primary: Option<Domain>,
    disposable: Option<AddressVerdict>,
    /// The first verdict of a domain that cannot receive mail (`no_mx: block` refuses it).
    undeliverable: Option<AddressVerdict>,
    failed: Option<Bypass>,
    invalid: bool,
    /// At most the names of one signup (`extract::NAMES_PER_DOMAIN` × `max_domains`).
    safe: Vec<AddressVerdict>,
}

/// Where a signup stands once every domain is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    Disposable(AddressVerdict),
    /// `failure_mode` for this reason.
    Failed(Bypass),
    /// `on_invalid_email`.
    Invalid,
    /// Let through without a full verdict: the bypass header.
    Bypass(Bypass),
    Safe(AddressVerdict),
    /// `no_mx: block`: a domain that cannot receive mail.
    Undeliverable(AddressVerdict),
}

/// What the enforcement point's settings say of a refusal.
pub struct Refusing<F: Fn(Bypass) -> bool> {
    /// Block mode: a disposable verdict is refused.
    pub block: bool,
    /// `no_mx: block`: a domain that cannot receive mail is refused, whatever the mode.
    pub no_mx: bool,
    /// Whether `failure_mode` denies a signup for this reason.
    pub denies: F,
}

impl Worst {
    /// `primary`: the domain of the signup's own address, whose safe verdict the headers show.
    /// Verdicts may come before it is known (block-only mode judges the query first).
    pub fn set_primary(&mut self, primary: Option<&Domain>) {
        self.primary = primary.cloned();
    }

    pub fn add(&mut self, judged: Judged) {
        if let Judged::Verdict(v) = &judged
            && v.undeliverable
            && self.undeliverable.is_none()
        {
            self.undeliverable = Some(v.clone());
        }
        match judged {
            Judged::Verdict(v) if v.disposable => {
                self.disposable.get_or_insert(v);
            }
            Judged::Verdict(v) => self.safe.push(v),
            Judged::Failed(bypass) => {
                self.failed.get_or_insert(bypass);
            }
            Judged::Invalid => self.invalid = true,
        }
    }

    /// Whether the signup is refused whatever else is judged: a disposable verdict in block
    /// mode, or a failure whose policy denies.
    pub fn refuses<F: Fn(Bypass) -> bool>(&self, by: &Refusing<F>) -> bool {
        (by.block && self.disposable.is_some())
            || self.failed.is_some_and(&by.denies)
            || (by.no_mx && self.undeliverable.is_some())
    }

    /// The answer: the worst outcome, `problem` being the bypass of a signup problem the
    /// operator's policy let through.
    pub fn settle<F: Fn(Bypass) -> bool>(self, problem: Option<Bypass>, by: &Refusing<F>) -> Settled {
        let refuses = self.refuses(by);
        match (self.disposable, self.failed) {
            (Some(v), _) if by.block || !refuses => return Settled::Disposable(v),
            (_, Some(bypass)) => return Settled::Failed(bypass),
            _ => {}
        }
        if let Some(v) = self.undeliverable.filter(|_| by.no_mx) {
            return Settled::Undeliverable(v);
        }
        if self.invalid {
            return Settled::Invalid;
        }
        if let Some(bypass) = problem {
            return Settled::Bypass(bypass);
        }
        let own = self.safe.iter().position(|v| self.primary.as_ref() == Some(&v.domain));
        match self.safe.into_iter().nth(own.unwrap_or(0)) {
            Some(v) => Settled::Safe(v),
            None => Settled::Bypass(Bypass::NoEmail), // nothing was judged
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(domain: &str, disposable: bool) -> Judged {
        let domain = Domain::parse(domain).unwrap();
        let flags = String::new();
        Judged::Verdict(AddressVerdict {
            domain,
            disposable,
            flags,
            suggestion: None,
            source: None,
            undeliverable: false,
        })
    }

    const BLOCK_DENY: Refusing<fn(Bypass) -> bool> = Refusing { block: true, denies: |_| true, no_mx: false };
    const BLOCK_ALLOW: Refusing<fn(Bypass) -> bool> = Refusing { block: true, denies: |_| false, no_mx: false };
    const FLAG_DENY: Refusing<fn(Bypass) -> bool> = Refusing { block: false, denies: |_| true, no_mx: false };
    const FLAG_ALLOW: Refusing<fn(Bypass) -> bool> = Refusing { block: false, denies: |_| false, no_mx: false };

    fn worst(primary: &str, judged: &[Judged]) -> Worst {
        let mut worst = Worst::default();
        worst.set_primary(Domain::parse(primary).ok().as_ref());
        judged.iter().cloned().for_each(|j| worst.add(j));
        worst
    }

    fn settle(primary: &str, judged: &[Judged], problem: Option<Bypass>) -> Settled {
        worst(primary, judged).settle(problem, &BLOCK_ALLOW)
    }

    fn domain_of(settled: &Settled) -> &str {
        match settled {
            Settled::Disposable(v) | Settled::Safe(v) => v.domain.as_str(),
            _ => "",
        }
    }

    #[test]
    fn the_worst_outcome_decides() {
        let x = verdict("mailinator.com", true);
        let safe = verdict("gmail.com", false);
        let other = verdict("example.org", false);
        let failed = Judged::Failed(Bypass::SidecarTimeout);
        let s = settle("gmail.com", &[safe.clone(), failed.clone(), x.clone()], None);
        assert_eq!(domain_of(&s), "mailinator.com");
        assert_eq!(settle("gmail.com", &[safe.clone(), failed.clone()], None), Settled::Failed(Bypass::SidecarTimeout));
        assert_eq!(settle("gmail.com", &[safe.clone(), Judged::Invalid], None), Settled::Invalid);
        let missing = Some(Bypass::NoEmail);
        assert_eq!(settle("", std::slice::from_ref(&other), missing), Settled::Bypass(Bypass::NoEmail));
        assert_eq!(settle("", &[other.clone(), failed.clone()], missing), Settled::Failed(Bypass::SidecarTimeout));
        assert_eq!(domain_of(&settle("", &[other.clone(), x.clone()], missing)), "mailinator.com");
        // Safe everywhere: the signup's own address, whichever answer came first.
        assert_eq!(domain_of(&settle("gmail.com", &[other.clone(), safe.clone()], None)), "gmail.com");
        assert_eq!(domain_of(&settle("gmail.com", &[safe, other.clone()], None)), "gmail.com");
        assert_eq!(domain_of(&settle("", std::slice::from_ref(&other), None)), "example.org");
        assert_eq!(settle("", &[], None), Settled::Bypass(Bypass::NoEmail));
        // Flag mode: a failure that denies refuses before a disposable verdict is flagged.
        let both = [x.clone(), failed.clone()];
        assert_eq!(worst("", &both).settle(None, &FLAG_DENY), Settled::Failed(Bypass::SidecarTimeout));
        assert_eq!(domain_of(&worst("", &both).settle(None, &FLAG_ALLOW)), "mailinator.com");
        assert_eq!(domain_of(&worst("", &both).settle(None, &BLOCK_DENY)), "mailinator.com");
    }

    #[test]
    fn refusals_are_known_before_the_last_answer() {
        let mut worst = Worst::default();
        worst.add(verdict("gmail.com", false));
        assert!(!worst.refuses(&BLOCK_DENY));
        worst.add(Judged::Failed(Bypass::SidecarError));
        assert!(worst.refuses(&FLAG_DENY));
        assert!(!worst.refuses(&BLOCK_ALLOW));
        worst.add(verdict("mailinator.com", true));
        assert!(worst.refuses(&BLOCK_ALLOW));
        assert!(!worst.refuses(&FLAG_ALLOW), "flag mode refuses nothing unless a failure denies");
    }

    fn summary(disposable: bool, mail: Option<Mail>) -> VerdictSummary {
        VerdictSummary { disposable, flags: Default::default(), suggestion: None, source: None, mail }
    }

    #[test]
    fn no_mx_flags_or_refuses_only_a_domain_that_cannot_receive_mail() {
        let d = Domain::parse("nomail.example").unwrap();
        for mail in [None, Some(Mail::Mx), Some(Mail::Implicit)] {
            let v = AddressVerdict::of(&d, &summary(false, mail), NoMx::Flag);
            assert!(!v.undeliverable && v.flags.is_empty(), "{mail:?}");
        }
        let none = summary(false, Some(Mail::None));
        assert_eq!(AddressVerdict::of(&d, &none, NoMx::Allow).flags, "");
        assert_eq!(AddressVerdict::of(&d, &none, NoMx::Flag).flags, NO_MX_FLAG);
        assert_eq!(AddressVerdict::of(&d, &none, NoMx::Flag).flagged_subaddressed().flags, "no_mx,subaddressed");

        let undeliverable = Judged::Verdict(AddressVerdict::of(&d, &none, NoMx::Block));
        let no_mx = Refusing { no_mx: true, ..FLAG_ALLOW };
        let mut w = worst("nomail.example", std::slice::from_ref(&undeliverable));
        assert!(w.refuses(&no_mx) && !w.refuses(&BLOCK_ALLOW));
        assert!(matches!(w.clone().settle(None, &no_mx), Settled::Undeliverable(v) if v.domain == d));
        assert!(matches!(w.clone().settle(None, &BLOCK_DENY), Settled::Safe(_)), "no_mx allow: safe");
        // Block mode: a disposable verdict beside it is the refusal; a failure that denies too.
        w.add(verdict("mailinator.com", true));
        let block_no_mx = Refusing { no_mx: true, ..BLOCK_ALLOW };
        assert!(
            matches!(w.settle(None, &block_no_mx), Settled::Disposable(v) if v.domain.as_str() == "mailinator.com")
        );
        let w = worst("", &[undeliverable.clone(), Judged::Failed(Bypass::SidecarError)]);
        let deny_no_mx = Refusing { no_mx: true, ..FLAG_DENY };
        assert_eq!(w.settle(None, &deny_no_mx), Settled::Failed(Bypass::SidecarError));
        // Flag mode: a disposable domain without mail is refused for its mail.
        let both = AddressVerdict::of(&d, &summary(true, Some(Mail::None)), NoMx::Block);
        let w = worst("", &[Judged::Verdict(both)]);
        assert!(matches!(w.settle(None, &no_mx), Settled::Undeliverable(_)));
    }
}
