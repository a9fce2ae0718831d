use super::*;
use crate::catalog::SourceSet;

fn mx() -> MxInfo {
    let ips = vec!["192.0.2.1".parse().unwrap(), "2001:db8::1".parse().unwrap()];
    MxInfo::Mx { hosts: vec![MxHost::new("mx.example.net", ips)] }
}

/// The fields a case is about; `None` means "don't care".
#[derive(Default)]
struct Expect {
    disposable: Option<bool>,
    free: Option<bool>,
    business: Option<bool>,
    shared: Option<bool>,
    review: Option<bool>,
    allowlisted: Option<bool>,
    blocked: Option<bool>,
    ip_match: Option<bool>,
}

fn check(name: &str, s: Signals, mx: MxInfo, e: Expect) {
    let r = decide(&s, &mx, false);
    // The consistency rules hold for every case.
    assert_eq!(r.temporary, r.disposable, "{name}");
    assert_eq!(r.safe, !r.disposable, "{name}");
    assert_eq!(r.verdict == Verdict::Disposable, r.disposable, "{name}");
    assert_eq!(r.level == Level::Critical, r.disposable, "{name}");
    assert_eq!(r.recommendation == Recommendation::Block, r.disposable, "{name}");
    if !r.has_mx {
        assert!(r.mx_records.is_empty() && r.mx_ip_address.is_empty(), "{name}");
    }
    if r.safe && !r.allowlisted {
        assert!(!r.blocked && !r.mx_ip_match, "{name}: any safe case");
    }
    let got = [
        r.disposable,
        r.free_provider,
        r.business_email,
        r.shared_mx,
        r.review_required,
        r.allowlisted,
        r.blocked,
        r.mx_ip_match,
    ];
    let want = [e.disposable, e.free, e.business, e.shared, e.review, e.allowlisted, e.blocked, e.ip_match];
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if let Some(w) = w {
            assert_eq!(*g, w, "{name}: field #{i}");
        }
    }
}

fn no() -> Option<bool> {
    Some(false)
}
fn yes() -> Option<bool> {
    Some(true)
}

fn strong() -> Option<Listing> {
    Some(Listing { sources: SourceSet::one(0), strong: true, via_parent: false })
}

fn weak() -> Option<Listing> {
    Some(Listing { sources: SourceSet::one(2), strong: false, via_parent: false })
}

fn via_parent(l: Option<Listing>) -> Option<Listing> {
    l.map(|l| Listing { via_parent: true, ..l })
}

#[test]
fn spec_rows_and_rules() {
    let none = Signals::default();
    let no_mx_row =
        || Expect { disposable: no(), free: no(), business: no(), shared: no(), review: no(), ..Default::default() };
    check("no MX", none, MxInfo::NoMx, no_mx_row());
    check("NXDOMAIN", none, MxInfo::NoDomain, no_mx_row());
    check("null MX", none, MxInfo::NullMx, no_mx_row());
    check("listed disposable but no MX (rule 4)", Signals { listing: strong(), ..none }, MxInfo::NoMx, no_mx_row());
    check("free with no MX", Signals { free: true, ..none }, MxInfo::NoMx, no_mx_row());
    check(
        "business on shared MX",
        Signals { shared_mx: true, ..none },
        mx(),
        Expect { disposable: no(), business: yes(), shared: yes(), review: yes(), ..Default::default() },
    );
    check(
        "own MX",
        none,
        mx(),
        Expect { disposable: no(), business: no(), shared: no(), review: yes(), ..Default::default() },
    );
    check(
        "free webmail",
        Signals { free: true, shared_mx: true, ..none },
        mx(),
        Expect { disposable: no(), free: yes(), business: no(), review: no(), ..Default::default() },
    );
    check(
        "free beats disposable list (rule 2)",
        Signals { free: true, listing: strong(), ..none },
        mx(),
        Expect { disposable: no(), free: yes(), ..Default::default() },
    );
    check(
        "free beats a block decision (rule 2)",
        Signals { free: true, decision: Some(Decision::Block), ..none },
        mx(),
        Expect { disposable: no(), blocked: no(), ..Default::default() },
    );
    check(
        "disposable",
        Signals { listing: strong(), ..none },
        mx(),
        Expect { disposable: yes(), business: no(), review: no(), blocked: no(), ..Default::default() },
    );
    check(
        "disposable on shared MX is still disposable (its own listing)",
        Signals { listing: strong(), shared_mx: true, ..none },
        mx(),
        Expect { disposable: yes(), business: no(), shared: yes(), review: no(), ..Default::default() },
    );
    check(
        "relay is known and safe",
        Signals { relay: true, listing: strong(), ..none },
        mx(),
        Expect { disposable: no(), business: no(), review: no(), ..Default::default() },
    );
    check(
        "allowlisted clears review and beats lists",
        Signals { listing: strong(), decision: Some(Decision::Allow), ..none },
        mx(),
        Expect { disposable: no(), allowlisted: yes(), review: no(), ..Default::default() },
    );
    check(
        "blocked forces disposable, even without MX",
        Signals { decision: Some(Decision::Block), ..none },
        MxInfo::NoMx,
        Expect { disposable: yes(), blocked: yes(), review: no(), ..Default::default() },
    );
    check(
        "mx_ip_match makes disposable",
        Signals { mx_ip_match: true, ..none },
        mx(),
        Expect { disposable: yes(), ip_match: yes(), review: no(), ..Default::default() },
    );
    // Issue 24: the signal comes from the domain's own (not shared) servers only; a shared
    // backup MX beside a disposable one hides nothing (rule 3 forbids transmitting, not this).
    check(
        "own disposable server beside a shared one",
        Signals { mx_ip_match: true, shared_mx: true, ..none },
        mx(),
        Expect {
            disposable: yes(),
            ip_match: yes(),
            business: no(),
            shared: yes(),
            review: no(),
            ..Default::default()
        },
    );
    check(
        "allowlisted beats mx_ip_match",
        Signals { mx_ip_match: true, decision: Some(Decision::Allow), ..none },
        mx(),
        Expect { disposable: no(), ip_match: no(), allowlisted: yes(), ..Default::default() },
    );
    check(
        "allowlisted on shared MX with its own disposable servers: never business_email",
        Signals { mx_ip_match: true, shared_mx: true, decision: Some(Decision::Allow), ..none },
        mx(),
        Expect {
            disposable: no(),
            ip_match: no(),
            allowlisted: yes(),
            business: no(),
            shared: yes(),
            ..Default::default()
        },
    );
    check(
        "free webmail beats mx_ip_match (rule 2)",
        Signals { free: true, mx_ip_match: true, ..none },
        mx(),
        Expect { disposable: no(), ip_match: no(), business: no(), ..Default::default() },
    );
}

/// Issue 14: a weak-only listing is a reason to review unless something independent agrees;
/// a listing through a parent decides only when the name's mail goes where the parent's does.
#[test]
fn source_tiers_and_corroboration() {
    let none = Signals::default();
    let review_row = || Expect { disposable: no(), review: yes(), blocked: no(), ip_match: no(), ..Default::default() };
    let disposable_row = || Expect { disposable: yes(), review: no(), ..Default::default() };
    check("strong listing decides", Signals { listing: strong(), ..none }, mx(), disposable_row());
    check("weak-only listing is safe, under review", Signals { listing: weak(), ..none }, mx(), review_row());
    check(
        "weak-only on shared MX: a business under review",
        Signals { listing: weak(), shared_mx: true, ..none },
        mx(),
        Expect { business: yes(), ..review_row() },
    );
    check(
        "weak + strong sources: the strong one decides",
        Signals {
            listing: Some(Listing {
                sources: SourceSet::one(0).union(SourceSet::one(2)),
                strong: true,
                via_parent: false,
            }),
            ..none
        },
        mx(),
        disposable_row(),
    );
    check(
        "weak-only corroborated by a block decision",
        Signals { listing: weak(), decision: Some(Decision::Block), ..none },
        mx(),
        Expect { blocked: yes(), ..disposable_row() },
    );
    check(
        "weak-only corroborated by its own mail servers",
        Signals { listing: weak(), mx_ip_match: true, ..none },
        mx(),
        Expect { ip_match: yes(), ..disposable_row() },
    );
    check(
        "weak-only with its own disposable server beside a shared one (issue 24)",
        Signals { listing: weak(), mx_ip_match: true, shared_mx: true, ..none },
        mx(),
        Expect { ip_match: yes(), business: no(), ..disposable_row() },
    );
    check(
        "weak-only, no MX: rule 4",
        Signals { listing: weak(), ..none },
        MxInfo::NoMx,
        Expect { review: no(), ..review_row() },
    );
    check(
        "weak-only but free: rule 2",
        Signals { listing: weak(), free: true, ..none },
        mx(),
        Expect { review: no(), free: yes(), ..review_row() },
    );
    check(
        "weak-only, allowlisted",
        Signals { listing: weak(), decision: Some(Decision::Allow), ..none },
        mx(),
        Expect { review: no(), allowlisted: yes(), ..review_row() },
    );
    check(
        "subdomain of a strong listing, same mail as the parent",
        Signals { listing: via_parent(strong()), parent_mail: true, ..none },
        mx(),
        disposable_row(),
    );
    check(
        "subdomain of a strong listing with its own unrelated mail server",
        Signals { listing: via_parent(strong()), parent_mail: false, ..none },
        mx(),
        review_row(),
    );
    check(
        "subdomain with its own mail server on known disposable infrastructure",
        Signals { listing: via_parent(strong()), mx_ip_match: true, ..none },
        mx(),
        Expect { ip_match: yes(), ..disposable_row() },
    );
    check(
        "subdomain of a weak listing, same mail as the parent: still weak-only",
        Signals { listing: via_parent(weak()), parent_mail: true, ..none },
        mx(),
        review_row(),
    );
    check(
        "subdomain of a strong listing without MX of its own: rule 4",
        Signals { listing: via_parent(strong()), ..none },
        MxInfo::NoMx,
        Expect { review: no(), ..review_row() },
    );
}

#[test]
fn listing_in_question_is_what_did_not_decide() {
    let s = |listing, parent_mail| Signals { listing, parent_mail, ..Signals::default() };
    assert!(!s(None, false).listing_in_question());
    assert!(!s(strong(), false).listing_in_question());
    assert!(s(weak(), false).listing_in_question());
    assert!(s(via_parent(strong()), false).listing_in_question());
    assert!(!s(via_parent(strong()), true).listing_in_question());
}

#[test]
fn mx_data_is_reported_only_with_mx() {
    let r = decide(&Signals::default(), &mx(), true);
    assert_eq!(r.mx_records, ["mx.example.net"]);
    assert_eq!(r.mx_ip_address, ["192.0.2.1", "2001:db8::1"]);
    assert!(r.cached && r.has_mx && r.domain_exists);
    let r = decide(&Signals::default(), &MxInfo::NullMx, false);
    assert!(!r.has_mx && r.domain_exists && r.mx_records.is_empty());
}

#[test]
fn addresses_are_deduplicated_in_mx_order() {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    let mx = MxInfo::Mx {
        hosts: vec![
            MxHost::new("a.example", vec![ip("192.0.2.2"), ip("192.0.2.1"), ip("192.0.2.2")]),
            MxHost::new("b.example", vec![ip("192.0.2.1"), ip("2001:db8::1"), ip("192.0.2.3")]),
        ],
    };
    assert_eq!(mx.addresses(), [ip("192.0.2.2"), ip("192.0.2.1"), ip("2001:db8::1"), ip("192.0.2.3")]);
    // Linear: 40,000 distinct addresses (the 520 ms with Vec::contains) in one pass.
    let many: Vec<IpAddr> = (0..40_000u32).map(|i| IpAddr::from((0x0a00_0000 + i).to_be_bytes())).collect();
    let big = MxInfo::Mx { hosts: vec![MxHost::new("a.example", many.clone()), MxHost::new("b.example", many)] };
    assert_eq!(big.addresses().len(), 40_000);
}

#[test]
fn a_cut_answer_says_what_it_lost() {
    assert_eq!(mx().cut(), None);
    assert_eq!(MxInfo::NoMx.cut(), None);
    let resolved = MxHost { more_ips: 3, ..MxHost::new("a.example", vec!["192.0.2.1".parse().unwrap()]) };
    let partial = MxInfo::with_hosts(vec![resolved, MxHost::unresolved("b.example")], 7);
    assert!(matches!(partial, MxInfo::Partial { more_hosts: 7, .. }));
    assert_eq!(partial.cut(), Some(MxCut { hosts: 7, unresolved: 1, addresses: 3 }));
    assert!(partial.has_mx() && partial.domain_exists());
    assert_eq!(
        MxInfo::with_hosts(vec![MxHost::new("a.example", vec![])], 0),
        MxInfo::Mx { hosts: vec![MxHost::new("a.example", vec![])] }
    );
    // The kept hosts are what the verdict carries; an unresolved host is named, without addresses.
    let r = decide(&Signals::default(), &partial, false);
    assert_eq!(r.mx_records, ["a.example", "b.example"]);
    assert_eq!(r.mx_ip_address, ["192.0.2.1"]);
    assert!(r.has_mx && r.review_required && !r.disposable);
}

#[test]
fn a_cut_answer_never_vouches_for_a_domain() {
    let hosts = vec![MxHost::new("shop.mail.protection.outlook.com", vec!["192.0.2.30".parse().unwrap()])];
    let shared = Signals { shared_mx: true, ..Signals::default() };
    assert!(decide(&shared, &MxInfo::with_hosts(hosts.clone(), 0), false).business_email);
    for cut in [
        MxInfo::with_hosts(hosts.clone(), 3),
        MxInfo::with_hosts(vec![hosts[0].clone(), MxHost::unresolved("mx11.example")], 0),
        MxInfo::with_hosts(vec![MxHost { more_ips: 1, ..hosts[0].clone() }], 0),
    ] {
        let r = decide(&shared, &cut, false);
        assert!(!r.business_email && r.shared_mx && r.review_required && !r.disposable, "{cut:?}");
    }
}

/// Issue 31: without MX data, only what needs no DNS gives a verdict; the rest needs DNS.
#[test]
fn without_mx_data_only_what_needs_no_dns_is_decided() {
    let known = |name: &str, s: Signals, disposable: bool| {
        let r = decide_without_mx(&s).unwrap_or_else(|| panic!("{name}: decided without DNS"));
        assert_eq!((r.disposable, r.safe, r.verdict == Verdict::Disposable), (disposable, !disposable, disposable));
        assert!(!r.has_mx && !r.domain_exists && r.mx_records.is_empty() && !r.cached, "{name}: no MX data");
        assert!(!r.review_required && !r.mx_ip_match && !r.business_email, "{name}");
        r
    };
    let s = Signals::default;
    assert!(known("strong", Signals { listing: strong(), ..s() }, true).level == Level::Critical);
    assert!(known("free", Signals { free: true, ..s() }, false).free_provider);
    known("relay", Signals { relay: true, ..s() }, false);
    assert!(known("blocked", Signals { listing: weak(), decision: Some(Decision::Block), ..s() }, true).blocked);
    assert!(known("allowed", Signals { listing: strong(), decision: Some(Decision::Allow), ..s() }, false).allowlisted);
    assert!(!known("free, blocked", Signals { free: true, decision: Some(Decision::Block), ..s() }, false).blocked);
    for (name, needs_dns) in [
        ("unknown", s()),
        ("weak", Signals { listing: weak(), ..s() }),
        ("strong parent", Signals { listing: via_parent(strong()), ..s() }),
    ] {
        assert_eq!(decide_without_mx(&needs_dns), None, "{name}");
    }
}
