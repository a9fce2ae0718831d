use super::*;

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

#[test]
fn spec_rows_and_rules() {
    let none = Signals::default();
    let no_mx_row =
        || Expect { disposable: no(), free: no(), business: no(), shared: no(), review: no(), ..Default::default() };
    check("no MX", none, MxInfo::NoMx, no_mx_row());
    check("NXDOMAIN", none, MxInfo::NoDomain, no_mx_row());
    check("null MX", none, MxInfo::NullMx, no_mx_row());
    check("listed disposable but no MX (rule 4)", Signals { disposable: true, ..none }, MxInfo::NoMx, no_mx_row());
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
        Signals { free: true, disposable: true, ..none },
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
        Signals { disposable: true, ..none },
        mx(),
        Expect { disposable: yes(), business: no(), review: no(), blocked: no(), ..Default::default() },
    );
    check(
        "disposable on shared MX is still disposable (its own listing)",
        Signals { disposable: true, shared_mx: true, ..none },
        mx(),
        Expect { disposable: yes(), business: no(), shared: yes(), review: no(), ..Default::default() },
    );
    check(
        "relay is known and safe",
        Signals { relay: true, disposable: true, ..none },
        mx(),
        Expect { disposable: no(), business: no(), review: no(), ..Default::default() },
    );
    check(
        "allowlisted clears review and beats lists",
        Signals { disposable: true, decision: Some(Decision::Allow), ..none },
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
    check(
        "mx_ip_match never through shared MX (rule 3)",
        Signals { mx_ip_match: true, shared_mx: true, ..none },
        mx(),
        Expect { disposable: no(), ip_match: no(), business: yes(), ..Default::default() },
    );
    check(
        "allowlisted beats mx_ip_match",
        Signals { mx_ip_match: true, decision: Some(Decision::Allow), ..none },
        mx(),
        Expect { disposable: no(), ip_match: no(), allowlisted: yes(), ..Default::default() },
    );
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
