use super::*;
use crate::catalog::ListKind;

/// A catalog with the shipped relay list's shape: free webmail, a relay, shared MX hosts.
fn catalog() -> Catalog {
    let mut c = Catalog::default();
    c.load(ListKind::Free, "gmail.com\ngooglemail.com\nproton.me\nyahoo.com\n");
    c.load(ListKind::Relay, "duck.com\nsimplelogin.com\n");
    c.load(ListKind::SharedMx, "google.com\tGoogle Workspace\nprotection.outlook.com\tMicrosoft 365\n");
    c
}

/// The details of `input` with MX hosts `mx` (`free` as the verdict would say) against
/// `(normalized_email, role_account, relay, provider)`; `subaddressed` is checked by [`norm`].
fn check(input: &str, free: bool, mx: &[&str], expected: (&str, bool, bool, Option<&str>)) {
    let parsed = LookupInput::parse(input).unwrap();
    let got = details(&catalog(), &parsed, free, mx.iter().copied());
    let (normalized_email, role_account, relay, provider) = expected;
    let want = Details {
        normalized_email: normalized_email.to_owned(),
        subaddressed: got.subaddressed,
        role_account,
        relay,
        provider: provider.map(str::to_owned),
        domain_age_days: None,
    };
    assert_eq!(got, want, "{input}");
}

/// Only the normalized address and whether the rule took a sub-address out (no MX, not free);
/// `is_subaddressed`, the gateway's question, agrees with `details`.
fn norm(input: &str, expected: &str, subaddressed: bool) {
    let parsed = LookupInput::parse(input).unwrap();
    let got = details(&catalog(), &parsed, false, []);
    assert_eq!((got.normalized_email.as_str(), got.subaddressed), (expected, subaddressed), "{input}");
    if let LookupInput::Email(e) = &parsed {
        assert_eq!(is_subaddressed(e.local(), e.domain()), subaddressed, "{input}");
    }
}

#[test]
fn gmail_ignores_dots_tags_and_case_and_googlemail_is_gmail() {
    for (input, expected, subaddressed) in [
        ("J.O.H.N+x@GoogleMail.com", "john@gmail.com", true),
        ("john@gmail.com", "john@gmail.com", false),
        ("Homer.J.Simpson@gmail.com", "homerjsimpson@gmail.com", true),
        ("john+2@gmail.com", "john@gmail.com", true),
        // Case alone and googlemail.com alone are the person's own address, not a sub-address.
        ("HOMERJSIMPSON@gmail.com", "homerjsimpson@gmail.com", false),
        ("a.b+c+d@gmail.com", "ab@gmail.com", true),
        ("john@googlemail.com", "john@gmail.com", false),
        ("JOHN@GoogleMail.com", "john@gmail.com", false),
        // Nothing left before the tag: kept as given, nothing removed.
        ("+tag@gmail.com", "+tag@gmail.com", false),
    ] {
        norm(input, expected, subaddressed);
    }
}

#[test]
fn microsoft_consumer_domains_drop_the_plus_tag_and_keep_case() {
    for (input, expected, subaddressed) in [
        ("Mork+newsletter@outlook.com", "Mork@outlook.com", true),
        ("mork+a@hotmail.com", "mork@hotmail.com", true),
        ("mork+a@live.com", "mork@live.com", true),
        ("mork@live.com", "mork@live.com", false),
        // Dots are not Microsoft's to ignore.
        ("m.ork@outlook.com", "m.ork@outlook.com", false),
    ] {
        norm(input, expected, subaddressed);
    }
}

#[test]
fn yahoo_disposable_addresses_give_the_base_name() {
    norm("base-keyword@yahoo.com", "base@yahoo.com", true);
    norm("Base@yahoo.com", "Base@yahoo.com", false);
    // A `+` is not Yahoo's separator.
    norm("base+x@yahoo.com", "base+x@yahoo.com", false);
}

#[test]
fn icloud_domains_drop_the_plus_tag_and_keep_their_domain() {
    for (input, expected, subaddressed) in [
        ("ann+shop@icloud.com", "ann@icloud.com", true),
        ("ann+x@me.com", "ann@me.com", true),
        ("Ann+x@mac.com", "Ann@mac.com", true),
        ("ann.lee@icloud.com", "ann.lee@icloud.com", false),
    ] {
        norm(input, expected, subaddressed);
    }
}

#[test]
fn proton_drops_the_tag_and_its_transparent_characters_and_folds_case() {
    for (input, expected, subaddressed) in [
        ("Alice.User+news@proton.me", "aliceuser@proton.me", true),
        ("alice_user@protonmail.com", "aliceuser@protonmail.com", true),
        ("alice-user@pm.me", "aliceuser@pm.me", true),
        ("alice+x@protonmail.ch", "alice@protonmail.ch", true),
        ("Alice@proton.me", "alice@proton.me", false),
    ] {
        norm(input, expected, subaddressed);
    }
}

#[test]
fn fastmail_plus_and_subdomain_addressing() {
    for (input, expected, subaddressed) in [
        ("joe+hiking@fastmail.com", "joe@fastmail.com", true),
        ("joe+hiking@fastmail.fm", "joe@fastmail.fm", true),
        ("joe@fastmail.com", "joe@fastmail.com", false),
        ("hiking@joe.fastmail.com", "joe@fastmail.com", true),
        ("shop@joecitizen.fastmail.fm", "joecitizen@fastmail.fm", true),
        // The subdomain form is a sub-address even when the tag is the user's name.
        ("joe@joe.fastmail.com", "joe@fastmail.com", true),
        // Deeper names are not a documented form: kept.
        ("x@a.b.fastmail.com", "x@a.b.fastmail.com", false),
        ("x@notfastmail.com", "x@notfastmail.com", false),
    ] {
        norm(input, expected, subaddressed);
    }
}

#[test]
fn unknown_domains_keep_the_local_part_as_given_and_the_domain_normalized() {
    // No rule applies: nothing is called a sub-address, `+` or not.
    for (input, expected) in [
        ("J.O.H.N+x@Example.COM", "J.O.H.N+x@example.com"),
        ("john-x@yahoo.co.uk", "john-x@yahoo.co.uk"),
        ("user@bücher.example", "user@xn--bcher-kva.example"),
    ] {
        norm(input, expected, false);
    }
}

#[test]
fn role_names_from_the_shipped_list() {
    // RFC 2142 sections 3-5, and the common functional names the list adds.
    for local in [
        "postmaster",
        "abuse",
        "hostmaster",
        "webmaster",
        "noc",
        "security",
        "info",
        "sales",
        "support",
        "marketing",
        "admin",
        "noreply",
        "no-reply",
        "Postmaster",
        "ABUSE+x",
        "support+billing",
    ] {
        check(&format!("{local}@example.com"), false, &[], (&format!("{local}@example.com"), true, false, None));
    }
    // Digits only (the package lists years and `123`) are a person's choice, dropped at generation.
    for local in ["john", "jane.doe", "+postmaster", "post.master", "123", "2019"] {
        assert!(!is_role(local), "{local}");
    }
    // The role is read before the provider's rule: "info+x@gmail.com" is a role address.
    check("Info+x@gmail.com", true, &[], ("info@gmail.com", true, false, Some("gmail.com")));
}

#[test]
fn relay_and_provider() {
    check("x@duck.com", false, &[], ("x@duck.com", false, true, None));
    // A free provider is named by its own entry, not its MX hosts' provider.
    check("ann@gmail.com", true, &["gmail-smtp-in.l.google.com"], ("ann@gmail.com", false, false, Some("gmail.com")));
    // Otherwise the first MX host on shared infrastructure names it.
    check(
        "ann@corp.example",
        false,
        &["mx.corp.example", "corp-example.mail.protection.outlook.com"],
        ("ann@corp.example", false, false, Some("Microsoft 365")),
    );
    check("ann@corp.example", false, &["mx.corp.example"], ("ann@corp.example", false, false, None));
    // A bare domain: no address, no role, no sub-address.
    check("duck.com", false, &[], ("", false, true, None));
    assert!(!details(&catalog(), &LookupInput::parse("gmail.com").unwrap(), true, []).subaddressed);
    let c = catalog();
    let (provider, infrastructure) =
        provider_names(&c, &Domain::parse("gmail.com").unwrap(), true, ["alt1.aspmx.l.google.com"]);
    assert_eq!((provider, infrastructure), (Some("gmail.com"), Some("Google Workspace")));
}

#[test]
fn the_role_list_is_the_generated_file() {
    assert!(ROLES.starts_with("# data/roles.txt"));
    let names: Vec<&str> = ROLES.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect();
    assert!(names.len() > 100 && names.iter().all(|n| *n == n.to_ascii_lowercase()));
}

#[test]
fn a_quoted_dot_atom_is_the_atom_and_other_quoted_forms_have_one_spelling() {
    // RFC 5322 §3.2.4: `"ann"` is `ann`; the provider's rules then apply.
    for (input, expected, subaddressed) in [
        ("\"ann\"@gmail.com", "ann@gmail.com", false),
        ("\"ann+2\"@gmail.com", "ann@gmail.com", true),
        ("\"a.nn\"@gmail.com", "ann@gmail.com", true),
        ("\"j.o+x\"@gmail.com", "jo@gmail.com", true),
        ("\"a\\nn\"@gmail.com", "ann@gmail.com", false),
        ("\"Ann\"@outlook.com", "Ann@outlook.com", false),
        ("\"ann\"@example.com", "ann@example.com", false),
        // Not a dot-atom: kept quoted, escapes only where needed, no provider rule.
        ("\"a b+x\"@gmail.com", "\"a b+x\"@gmail.com", false),
        ("\"a\\ b\"@example.com", "\"a b\"@example.com", false),
        ("\"a\\\"b\"@example.com", "\"a\\\"b\"@example.com", false),
        ("\"a..b\"@example.com", "\"a..b\"@example.com", false),
        ("\".ann\"@gmail.com", "\".ann\"@gmail.com", false),
    ] {
        norm(input, expected, subaddressed);
    }
}
