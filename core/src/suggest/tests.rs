use super::*;
use crate::catalog::SourceSet;
use crate::verdict::{Decision, Listing, MxHost};

/// A few providers of `data/popular.txt`, among them names that sit close to each other.
const PROVIDERS: &str = "gmail.com\ngmx.de\ngmx.net\nhotmail.com\nhotmail.co.uk\nhotmail.fr\nhotmail.de\n\
    yahoo.com\nyahoo.co.uk\nyahoo.com.br\nlive.com\nlive.fr\naol.com\nmail.com\noutlook.com\nicloud.com\n\
    ymail.com\noptusnet.com.au\nt-online.de\n";

fn providers() -> Providers {
    let mut p = Providers::default();
    let report = p.load_text(PROVIDERS);
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    p
}

fn check(p: &Providers, typed: &str, expected: Option<&str>) {
    let domain = Domain::parse(typed).unwrap();
    assert_eq!(p.closest(&domain), expected, "typed {typed:?}");
}

#[test]
fn one_edit_of_a_provider_name() {
    let p = providers();
    let cases: &[(&str, Option<&str>)] = &[
        ("gmial.com", Some("gmail.com")),  // transposition
        ("gmai.com", Some("gmail.com")),   // missing letter
        ("gmaill.com", Some("gmail.com")), // extra letter
        ("gmaik.com", Some("gmail.com")),  // k is next to l
        ("fmail.com", Some("gmail.com")),  // f is next to g
        ("hotmial.com", Some("hotmail.com")),
        ("hotmal.com", Some("hotmail.com")),
        ("yajoo.com", Some("yahoo.com")), // j is next to h
        ("yahooo.com", Some("yahoo.com")),
        ("outlok.com", Some("outlook.com")),
        ("iclod.com", Some("icloud.com")),
        ("yahoo.co.ukk", Some("yahoo.co.uk")), // suffix `co.ukk` is no public suffix
        ("optusnet.comau", Some("optusnet.com.au")),
        ("t-onlien.de", Some("t-online.de")),
        // Not one edit, or not a neighbouring key.
        ("gnial.com", None),
        ("gmzil.com", Some("gmail.com")), // z is next to a
        ("gqail.com", None),              // q is not next to m
        ("hotmail.org", None),
        ("gmailcom.com", None),
        ("mail.gmial.com", None), // a subdomain: nothing
        ("gmial.com.br", None),
    ];
    for (typed, expected) in cases {
        check(&p, typed, *expected);
    }
}

#[test]
fn suffix_slips_only_from_what_is_no_real_suffix() {
    let p = providers();
    let cases: &[(&str, Option<&str>)] = &[
        ("gmail.con", Some("gmail.com")),
        ("gmail.cmo", Some("gmail.com")),
        ("gmail.comm", Some("gmail.com")),
        ("gmail.vom", Some("gmail.com")),
        ("gmail.xom", Some("gmail.com")),
        ("gmail.cpm", Some("gmail.com")),
        ("gmail.ocm", Some("gmail.com")),
        ("hotmail.co.ul", Some("hotmail.co.uk")),
        // Real suffixes: a real name under a real TLD is left alone...
        ("gmail.co", None),
        ("gmail.cm", None),
        ("gmail.om", None),
        ("hotmail.co", None),
        ("gmx.ne", None),
        // ...unless the name itself is mistyped too.
        ("gmial.co", Some("gmail.com")),
        ("gmial.cm", Some("gmail.com")),
        ("gmial.con", Some("gmail.com")),
        // Short names are matched exactly, their suffix may slip.
        ("aol.con", Some("aol.com")),
        ("gmx.dd", Some("gmx.de")),
        ("gmx.nett", Some("gmx.net")),
        ("gmx.nde", Some("gmx.de")), // one extra letter; `nde` is two edits from `net`
    ];
    for (typed, expected) in cases {
        check(&p, typed, *expected);
    }
}

#[test]
fn short_names_and_ties_get_nothing() {
    let p = providers();
    let cases: &[(&str, Option<&str>)] = &[
        // One edit of a name shorter than MIN_FUZZY_NAME: too many real names.
        ("aoll.com", None),
        ("sol.com", None),
        ("lice.com", None),
        ("maik.com", None),
        ("gmc.de", None),
        // Two providers equally close.
        ("hotmail.fe", None), // .fr and .de
        // A provider itself, and providers that look alike: never each other.
        ("gmail.com", None),
        ("ymail.com", None),
        ("hotmail.com", None),
        // A provider's exact name is no typo of another provider's (g and y are neighbours).
        ("gmail.co", None),
        ("ymail.cm", None),
        ("ymail.con", Some("ymail.com")),
    ];
    for (typed, expected) in cases {
        check(&p, typed, *expected);
    }
}

#[test]
fn keyboard_neighbours() {
    let cases: &[(u8, u8, bool)] = &[
        (b'g', b't', true),
        (b'g', b'y', true),
        (b'g', b'f', true),
        (b'g', b'h', true),
        (b'g', b'v', true),
        (b'g', b'b', true),
        (b'g', b'r', false),
        (b'g', b'n', false),
        (b'm', b'n', true),
        (b'm', b'j', true),
        (b'm', b'k', true),
        (b'o', b'0', true),
        (b'o', b'9', true),
        (b'q', b'a', true),
        (b'a', b'z', true),
        (b'a', b'x', false),
        (b'z', b'x', true),
        (b'p', b'l', true),
        (b'.', b'm', false),
        (b'-', b'0', true),
    ];
    for &(a, b, expected) in cases {
        assert_eq!(neighbours(a, b), expected, "{} {}", a as char, b as char);
        assert_eq!(neighbours(b, a), expected, "{} {} (symmetric)", b as char, a as char);
    }
}

#[test]
fn gate_mx_and_lists() {
    let p = providers();
    let gmial = Domain::parse("gmial.com").unwrap();
    let none = Signals::default();
    let host = MxHost::new("mx.gmial.com", vec![]);
    let listing = Listing { sources: SourceSet::one(0), strong: true, via_parent: false };
    let cases: &[(Signals, MxInfo, Option<&str>)] = &[
        (none, MxInfo::NoDomain, Some("gmail.com")),
        (none, MxInfo::NoMx, Some("gmail.com")),
        (none, MxInfo::NullMx, Some("gmail.com")),
        // Working mail: never, whoever owns it.
        (none, MxInfo::Mx { hosts: vec![host.clone()] }, None),
        // A disposable listing (typosquatters' names are on the lists), without mail: suggested.
        (Signals { listing: Some(listing), ..none }, MxInfo::NoDomain, Some("gmail.com")),
        (Signals { listing: Some(Listing { strong: false, ..listing }), ..none }, MxInfo::NoMx, Some("gmail.com")),
        // ... but with the typosquatter's MX: never.
        (Signals { listing: Some(listing), ..none }, MxInfo::Mx { hosts: vec![host.clone()] }, None),
        // Vouched for by a free or relay list, decided by an operator file or a reviewer: never.
        (Signals { free: true, ..none }, MxInfo::NoDomain, None),
        (Signals { relay: true, ..none }, MxInfo::NoDomain, None),
        (Signals { decision: Some(Decision::Allow), ..none }, MxInfo::NoDomain, None),
        (Signals { decision: Some(Decision::Block), ..none }, MxInfo::NoMx, None),
    ];
    for (signals, mx, expected) in cases {
        assert_eq!(did_you_mean(&p, &gmial, signals, mx), *expected, "{signals:?} {mx:?}");
    }
}

#[test]
fn loading_refuses_what_cannot_be_a_target() {
    let mut p = Providers::default();
    let report = p.load_text("gmail.com\nmail.gmail.com\nco.uk\ngmail.con\nnot valid\ngmail.com\n");
    assert_eq!(p.len(), 1);
    let refused: Vec<(&str, &EntryError)> = report.refused.iter().map(|(l, e)| (l.as_str(), e)).collect();
    assert_eq!(
        refused,
        [
            ("mail.gmail.com", &EntryError::NotRegistrable),
            ("co.uk", &EntryError::NotRegistrable),
            ("gmail.con", &EntryError::NotRegistrable),
            ("not valid", &EntryError::Invalid),
        ]
    );
    let many: String = (0..MAX_PROVIDERS + 5).map(|i| format!("provider{i}.com\n")).collect();
    let mut p = Providers::default();
    let report = p.load_text(&many);
    assert_eq!((p.len(), report.refused.len()), (MAX_PROVIDERS, 5));
}

/// The shipped set: the suggestions the end-to-end tests and the docs rely on, and names of
/// real mail providers or real TLDs that must never be "corrected".
#[test]
fn shipped_set() {
    let mut p = Providers::default();
    let report = p.load_text(include_str!("../../../data/popular.txt"));
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    assert!((50..=300).contains(&p.len()), "{}", p.len());
    let cases: &[(&str, Option<&str>)] = &[
        ("gmial.com", Some("gmail.com")),
        ("gmail.con", Some("gmail.com")),
        ("hotmial.com", Some("hotmail.com")),
        ("yahooo.com", Some("yahoo.com")),
        ("outlok.com", Some("outlook.com")),
        ("icluod.com", Some("icloud.com")),
        ("gmail.co", None),
        ("hotmail.co", None),
        ("mailw.com", None), // mail.com is four letters: matched exactly only
        ("gmx.com", None),
        ("googlemail.com", None),
    ];
    for (typed, expected) in cases {
        check(&p, typed, *expected);
    }
}

#[test]
fn never_panics_on_odd_names() {
    let p = providers();
    for typed in ["a.b", "x-.example", "xn--bcher-kva.example", "g.com", "gmail.c", "0.com", "gmail.co.u"] {
        if let Ok(d) = Domain::parse(typed) {
            let _ = p.closest(&d);
        }
    }
    assert!(!edit(b"", b"a").eq(&Edit::Same));
    assert_eq!(edit(b"", b""), Edit::Same);
    assert_eq!(edit(b"ab", b"ba"), Edit::One);
    assert_eq!(edit(b"abc", b"a"), Edit::Far);
}
