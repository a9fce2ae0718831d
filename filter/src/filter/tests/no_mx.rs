//! `no_mx` (a domain that cannot receive mail, as the sidecar's `x-email-verdict-mail` says)
//! and the disposable verdicts counted by their deciding source (`x-email-verdict-source`),
//! both kept with a cached verdict.

use super::*;
use email_verdict_core::{Mail, VerdictSource};

/// The sidecar's answer for `domain` with its source and mail headers.
fn told(domain: &str, verdict: &str, source: VerdictSource, mail: Mail) -> crate::host::CalloutResponse {
    crate::host::CalloutResponse { source: Some(source), mail: Some(mail), ..lookup_response(domain, verdict, &[]) }
}

fn signup(h: &Harness, email: &str, answer_with: Option<crate::host::CalloutResponse>) -> MockHost {
    let mut f = h.filter();
    let mut host = json_signup(h, email);
    send(&mut f, &mut host);
    if let Some(response) = answer_with {
        answer(&mut f, &mut host, response);
    }
    host
}

#[test]
fn block_refuses_a_domain_without_mail_in_its_own_words_and_caches_why() {
    let h = Harness::new(json!({ "no_mx": "block", "mode": "flag" }));
    let host = signup(&h, "ann@nomail.example", Some(told("nomail.example", "safe", VerdictSource::Rules, Mail::None)));
    let sent = only_sent(&host);
    assert_eq!((sent.status, sent.details.as_str()), (400, "email_verdict_no_mx"));
    assert!(String::from_utf8_lossy(&sent.body).contains("undeliverable_email"));
    assert_eq!((host.count(Counter::BlockedNoMx), host.count(Counter::Blocked)), (1, 0));
    // From the cache: no callout, the same refusal.
    let again = signup(&h, "bob@nomail.example", None);
    assert!(again.dispatched.is_empty());
    assert_eq!(only_sent(&again).details, "email_verdict_no_mx");
    // A domain with an implicit MX (an address record) or MX records goes on.
    for (domain, mail) in [("implicit.example", Mail::Implicit), ("mx.example", Mail::Mx)] {
        let host = signup(&h, &format!("ann@{domain}"), Some(told(domain, "safe", VerdictSource::Rules, mail)));
        assert!(host.sent.is_empty(), "{domain}");
        assert_eq!(host.header("x-email-verdict").as_deref(), Some("safe"));
    }
}

#[test]
fn an_answer_that_does_not_say_is_never_refused_for_its_mail() {
    let h = Harness::new(json!({ "no_mx": "block" }));
    let host = signup(&h, "ann@old.example", Some(lookup_response("old.example", "safe", &[])));
    assert!(host.sent.is_empty() && host.resumed == 1);
}

#[test]
fn flag_adds_no_mx_to_the_flags_and_allow_nothing() {
    for (no_mx, flags, flagged) in [("flag", "no_mx", 1), ("allow", "", 0)] {
        let h = Harness::new(json!({ "no_mx": no_mx }));
        let host =
            signup(&h, "ann@nomail.example", Some(told("nomail.example", "safe", VerdictSource::Rules, Mail::None)));
        assert!(host.sent.is_empty(), "{no_mx}");
        assert_eq!(host.header("x-email-flags").as_deref(), Some(flags), "{no_mx}");
        assert_eq!(host.count(Counter::FlaggedNoMx), flagged, "{no_mx}");
    }
}

#[test]
fn shadow_counts_what_no_mx_would_block() {
    let h = Harness::new(json!({ "no_mx": "block", "mode": "shadow" }));
    let host = signup(&h, "ann@nomail.example", Some(told("nomail.example", "safe", VerdictSource::Rules, Mail::None)));
    assert!(host.sent.is_empty());
    assert_eq!((host.count(Counter::WouldBlockNoMx), host.count(Counter::BlockedNoMx)), (1, 0));
}

#[test]
fn disposable_verdicts_are_counted_by_their_source_cached_or_not() {
    let h = Harness::new(json!({}));
    let sources = [
        (VerdictSource::StrongList, Counter::DisposableByStrongList),
        (VerdictSource::List, Counter::DisposableByList),
        (VerdictSource::Reviewer, Counter::DisposableByReviewer),
        (VerdictSource::Operator, Counter::DisposableByOperator),
        (VerdictSource::Infrastructure, Counter::DisposableByInfrastructure),
    ];
    for (i, (source, counter)) in sources.into_iter().enumerate() {
        let domain = format!("d{i}.example");
        let host = signup(&h, &format!("a@{domain}"), Some(told(&domain, "disposable", source, Mail::Mx)));
        assert_eq!((host.count(counter), host.count(Counter::Blocked)), (1, 1), "{source}");
        let cached = signup(&h, &format!("b@{domain}"), None);
        assert!(cached.dispatched.is_empty());
        assert_eq!(cached.count(counter), 1, "{source}, from the cache");
    }
    let unknown = signup(&h, "a@old.example", Some(lookup_response("old.example", "disposable", &[])));
    assert_eq!(unknown.count(Counter::DisposableByUnknown), 1);
    let safe = signup(&h, "a@gmail.com", Some(told("gmail.com", "safe", VerdictSource::Rules, Mail::Mx)));
    let by_source = Counter::ALL.into_iter().filter(|c| c.name().contains(".disposable_by_"));
    assert_eq!(by_source.map(|c| safe.count(c)).sum::<u64>(), 0, "a safe verdict counts under no source");
}
