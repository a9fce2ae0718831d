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
/// `(normalized_email, role_account, relay, provider)`.
fn check(input: &str, free: bool, mx: &[&str], expected: (&str, bool, bool, Option<&str>)) {
    let parsed = LookupInput::parse(input).unwrap();
    let got = details(&catalog(), &parsed, free, mx.iter().copied());
    let (normalized_email, role_account, relay, provider) = expected;
    let want = Details {
        normalized_email: normalized_email.to_owned(),
        role_account,
        relay,
        provider: provider.map(str::to_owned),
        domain_age_days: None,
    };
    assert_eq!(got, want, "{input}");
}

/// Only the normalized address (no MX, not free).
fn norm(input: &str, expected: &str) {
    let parsed = LookupInput::parse(input).unwrap();
    let got = details(&catalog(), &parsed, false, []);
    assert_eq!(got.normalized_email, expected, "{input}");
}

#[test]
fn gmail_ignores_dots_tags_and_case_and_googlemail_is_gmail() {
    for (input, expected) in [
        ("J.O.H.N+x@GoogleMail.com", "john@gmail.com"),
        ("john@gmail.com", "john@gmail.com"),
        ("Homer.J.Simpson@gmail.com", "homerjsimpson@gmail.com"),
        ("HOMERJSIMPSON@gmail.com", "homerjsimpson@gmail.com"),
        ("a.b+c+d@gmail.com", "ab@gmail.com"),
        ("john@googlemail.com", "john@gmail.com"),
        // Nothing left before the tag: kept as given.
        ("+tag@gmail.com", "+tag@gmail.com"),
    ] {
        norm(input, expected);
    }
}

#[test]
fn microsoft_consumer_domains_drop_the_plus_tag_and_keep_case() {
    for (input, expected) in [
        ("Mork+newsletter@outlook.com", "Mork@outlook.com"),
        ("mork+a@hotmail.com", "mork@hotmail.com"),
        ("mork+a@live.com", "mork@live.com"),
        // Dots are not Microsoft's to ignore.
        ("m.ork@outlook.com", "m.ork@outlook.com"),
    ] {
        norm(input, expected);
    }
}

#[test]
fn yahoo_disposable_addresses_give_the_base_name() {
    norm("base-keyword@yahoo.com", "base@yahoo.com");
    norm("Base@yahoo.com", "Base@yahoo.com");
    // A `+` is not Yahoo's separator.
    norm("base+x@yahoo.com", "base+x@yahoo.com");
}

#[test]
fn icloud_domains_drop_the_plus_tag_and_keep_their_domain() {
    for (input, expected) in
        [("ann+shop@icloud.com", "ann@icloud.com"), ("ann+x@me.com", "ann@me.com"), ("Ann+x@mac.com", "Ann@mac.com")]
    {
        norm(input, expected);
    }
}

#[test]
fn proton_drops_the_tag_and_its_transparent_characters_and_folds_case() {
    for (input, expected) in [
        ("Alice.User+news@proton.me", "aliceuser@proton.me"),
        ("alice_user@protonmail.com", "aliceuser@protonmail.com"),
        ("alice-user@pm.me", "aliceuser@pm.me"),
        ("alice+x@protonmail.ch", "alice@protonmail.ch"),
    ] {
        norm(input, expected);
    }
}

#[test]
fn fastmail_plus_and_subdomain_addressing() {
    for (input, expected) in [
        ("joe+hiking@fastmail.com", "joe@fastmail.com"),
        ("joe+hiking@fastmail.fm", "joe@fastmail.fm"),
        ("hiking@joe.fastmail.com", "joe@fastmail.com"),
        ("shop@joecitizen.fastmail.fm", "joecitizen@fastmail.fm"),
        // Deeper names are not a documented form: kept.
        ("x@a.b.fastmail.com", "x@a.b.fastmail.com"),
        ("x@notfastmail.com", "x@notfastmail.com"),
    ] {
        norm(input, expected);
    }
}

#[test]
fn unknown_domains_keep_the_local_part_as_given_and_the_domain_normalized() {
    for (input, expected) in [
        ("J.O.H.N+x@Example.COM", "J.O.H.N+x@example.com"),
        ("john-x@yahoo.co.uk", "john-x@yahoo.co.uk"),
        ("\"j.o\"@gmail.com", "\"j.o\"@gmail.com"),
        ("user@bücher.example", "user@xn--bcher-kva.example"),
    ] {
        norm(input, expected);
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
    // A bare domain: no address, no role.
    check("duck.com", false, &[], ("", false, true, None));
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
