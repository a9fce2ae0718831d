//! Every domain behind an `@`, read as leniently as the most lenient address validator an app
//! may run, and named as strictly as a registry would.
//!
//! Apps store what their validator returns, and validators differ: pydantic's `EmailStr` and
//! Go's `net/mail` unwrap `Bob <bob@x>`; Python's `strip()` removes U+001C–U+001F, JavaScript's
//! `trim()` U+FEFF; validator.js accepts `ab--cd.` labels and zero-width characters in the local
//! part; Django sends mail through Python's IDNA 2003 codec, which turns `ß` into `ss` and drops
//! ZWJ. So the gate does not ask whether a value *is* an address: every `@` in it is followed by
//! a domain to judge, whatever stands before it and whatever wraps it ([`names_in`]).
//!
//! A tail is what follows the `@`, read two ways: as far as any reader takes a domain (to the
//! first whitespace, control, RFC 5322 special or URL delimiter: symbols, emoji, private-use and
//! unassigned code points are part of a label, as validator.js, Django, Go's `net/mail` and
//! ruby-mail take them: `bob@i❤.mailinator.com`), and as far as letters (any script), digits, `-`
//! and `_` go (so `sales@acme.com!` in free text still names `acme.com`); each once as it stands
//! and once with the comments and whitespace RFC 5322 allows around its atoms
//! (`bob@ mailinator (x). com`, as Python's `email.utils` reads it). Default-ignorable code
//! points are removed, a root dot dropped, and the name mapped both ways UTS-46 knows
//! (nontransitional, and transitional as IDNA 2003 does: `ß`→`ss`, `ς`→`σ`). A label IDNA 2008
//! or STD3 refuses (`ab--cd`, `xn--zz`, `x_y`, an edge hyphen) does not hide the name: its valid
//! parents are judged instead.
//!
//! This runs in the gateway's filter, whose module must stay small: the whole Public Suffix List
//! (the `psl` crate, about 970 KB of code) would double it. So nothing here asks for a
//! registrable domain; the list's top-level domains (`data/tlds.txt`) are all it needs.

use std::sync::OnceLock;

use crate::Domain;
use crate::domain::LABEL_DOTS;

/// The Public Suffix List's top-level domains, one a line (`data/tlds.txt`, with its source).
const TLDS: &str = include_str!("../../../../data/tlds.txt");

/// Whitespace as any popular runtime trims it: Unicode White_Space (Rust, JavaScript's `\s`),
/// plus what Python's `str.isspace()` adds (U+001C–U+001F) and JavaScript's `trim()` adds (U+FEFF).
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1C}'..='\u{1F}' | '\u{FEFF}')
}

/// `text` without the whitespace any popular runtime trims ([`is_space`]).
pub fn trim(text: &str) -> &str {
    text.trim_matches(is_space)
}

/// Default-ignorable code points (invisible; UTS-46 drops some, IDNA 2003's nameprep maps
/// others "to nothing", browsers render none), U+1806 (nameprep drops it too).
fn is_ignorable(c: char) -> bool {
    matches!(
        u32::from(c),
        0xAD | 0x34F
            | 0x61C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x1806
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// Combining marks of the common blocks (Rust's `is_alphanumeric` leaves most of them out).
fn is_combining(c: char) -> bool {
    matches!(u32::from(c), 0x300..=0x36F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// A character of a label as far as any reader takes one: everything but whitespace, controls,
/// the RFC 5322 specials and the URL delimiters (and label dots, which separate labels).
fn in_wide_label(c: char) -> bool {
    !(is_space(c) || c.is_control() || is_dot(c) || "()<>[]:;@\\,\"/?#".contains(c))
}

/// A character of a label of letters and digits (fullwidth `－` and `＿` map to `-` and `_`).
fn in_label(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || c == '-'
        || c == '_'
        || (!c.is_ascii()
            && (c.is_alphanumeric() || is_ignorable(c) || is_combining(c) || matches!(c, '\u{FF0D}' | '\u{FF3F}')))
}

fn is_dot(c: char) -> bool {
    LABEL_DOTS.contains(&c)
}

/// A name found behind an `@`, and whether it may be judged: see [`names_in`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub domain: Domain,
    /// Found in free text rather than in a value that is an address once unwrapped, or derived
    /// from a name with a refused label ([`valid_parents`]): typed by nobody.
    pub mention: bool,
}

/// Every name behind an `@` of `text`. In a value that is an address once unwrapped
/// ([`unwrapped`]) every name counts; in free text (a bio, a list, a URL) only names under a
/// top-level domain of the Public Suffix List: a name under one that does not exist cannot
/// receive mail (`@odata.context`, `medium.com/@jane.doe`).
pub fn names_in(text: &str, mut found: impl FnMut(Found)) {
    if !text.contains('@') {
        return;
    }
    let mention = unwrapped(text).is_none();
    let mut rest = text;
    while let Some(at) = rest.find('@') {
        rest = &rest[at + 1..];
        for tail in tails(rest) {
            for (domain, derived) in names_of(&tail) {
                if !mention || under_known_tld(&domain) {
                    found(Found { domain, mention: mention || derived });
                }
            }
        }
    }
}

/// The tails right after an `@`: wide and narrow ([`in_wide_label`], [`in_label`]), each as it
/// stands and, when it differs, with comments and whitespace around its atoms skipped.
fn tails(after: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(2);
    let cfws = after.contains(|c: char| c == '(' || is_space(c));
    for lenient in [false, true].into_iter().take(if cfws { 2 } else { 1 }) {
        let wide = tail(after, lenient, in_wide_label);
        let narrow = wide.chars().all(|c| in_label(c) || c == '.');
        let narrow = (!narrow).then(|| tail(after, lenient, in_label));
        for t in std::iter::once(wide).chain(narrow) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

fn tail(after: &str, cfws: bool, in_label: fn(char) -> bool) -> String {
    fn skip(s: &str, cfws: bool) -> &str {
        if cfws { skip_cfws(s) } else { s }
    }
    let mut out = String::new();
    let mut rest = skip(after, cfws);
    loop {
        let end = rest.find(|c: char| !in_label(c)).unwrap_or(rest.len());
        out.push_str(&rest[..end]);
        let after_label = skip(&rest[end..], cfws);
        match after_label.chars().next() {
            Some(dot) if is_dot(dot) && end > 0 => {
                out.push('.');
                rest = skip(&after_label[dot.len_utf8()..], cfws);
            }
            _ => return out,
        }
    }
}

/// `s` after RFC 5322 CFWS: whitespace and (nested, escaped) comments. An unclosed comment is
/// left as it is.
fn skip_cfws(mut s: &str) -> &str {
    loop {
        let trimmed = s.trim_start_matches(is_space);
        match trimmed.strip_prefix('(').and_then(close_comment) {
            Some(after) => s = after,
            None => return trimmed,
        }
    }
}

/// After the `(` of a comment: what follows its `)`.
fn close_comment(s: &str) -> Option<&str> {
    let mut depth = 1usize;
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[i + 1..]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The names a tail stands for: each form ([`forms`]) as a whole, or, where a label is refused,
/// its valid parents ([`valid_parents`]: derived, true).
fn names_of(tail: &str) -> Vec<(Domain, bool)> {
    let mut names: Vec<(Domain, bool)> = Vec::new();
    for form in forms(tail) {
        let found = match Domain::parse(&form) {
            Ok(domain) => vec![(domain, false)],
            Err(_) => valid_parents(&form).into_iter().map(|d| (d, true)).collect(),
        };
        for name in found {
            if !names.iter().any(|(n, _)| *n == name.0) {
                names.push(name);
            }
        }
    }
    names
}

/// The tail without ignorable code points and root dots, nontransitional, then transitional
/// when that differs (IDNA 2003's four deviations; ZWJ and ZWNJ are gone already).
fn forms(tail: &str) -> Vec<String> {
    let plain = tail.trim_end_matches('.');
    if plain.is_ascii() {
        return if plain.is_empty() { Vec::new() } else { vec![plain.to_owned()] }; // no ignorable, no deviation
    }
    let visible: String = tail.chars().filter(|c| !is_ignorable(*c)).collect();
    let name = visible.trim_end_matches(is_dot).to_owned();
    if name.is_empty() {
        return Vec::new();
    }
    let mut transitional = String::with_capacity(name.len() + 2);
    for c in name.chars() {
        match c {
            'ß' | '\u{1E9E}' => transitional.push_str("ss"),
            'ς' => transitional.push('σ'),
            c => transitional.push(c),
        }
    }
    if transitional == name { vec![name] } else { vec![name, transitional] }
}

/// For a name with a label no registry hands out: its longest suffix that is a valid name, and
/// that name's parents of two labels or more. Nobody typed these names, and one may be a public
/// suffix (`x_y.co.uk` gives `co.uk`): they are looked up as mentions, teaching the sidecar
/// nothing (`learn=false`).
fn valid_parents(name: &str) -> Vec<Domain> {
    let labels: Vec<&str> = name.split(LABEL_DOTS).collect();
    (1..labels.len().saturating_sub(1)).filter_map(|start| Domain::parse(&labels[start..].join(".")).ok()).collect()
}

/// Whether the name's top-level domain is one the Public Suffix List knows.
fn under_known_tld(domain: &Domain) -> bool {
    let tld = domain.as_str().rsplit('.').next().unwrap_or_default();
    known_tlds().binary_search(&tld).is_ok()
}

/// [`TLDS`], sorted, read once.
fn known_tlds() -> &'static [&'static str] {
    static SORTED: OnceLock<Vec<&'static str>> = OnceLock::new();
    SORTED.get_or_init(|| {
        let mut tlds: Vec<&str> = TLDS.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
        tlds.sort_unstable();
        tlds
    })
}

/// A name's last two labels: a bound on how many places a signup's names are at, never
/// stricter than their registrable domains, which would need the whole Public Suffix List.
pub fn site(domain: &Domain) -> &str {
    let name = domain.as_str();
    let mut dots = name.rmatch_indices('.').map(|(i, _)| i);
    match (dots.next(), dots.next()) {
        (Some(_), Some(second)) => &name[second + 1..],
        _ => name,
    }
}

/// The address a value holds once unwrapped as mail clients and lenient validators unwrap it:
/// padding ([`trim`]), `mailto:`, a trailing comment (`bob@x (Bob)`), a display name's angle
/// brackets (`Bob <bob@x>`). `None` when what is left is not one `local@domain` without
/// whitespace (outside a quoted local part): free text, or a list of addresses.
pub fn unwrapped(text: &str) -> Option<&str> {
    let mut t = trim(text);
    if t.get(..7).is_some_and(|p| p.eq_ignore_ascii_case("mailto:")) {
        t = trim(&t[7..]);
    }
    while let Some(open) = t.strip_suffix(')').and_then(|inner| inner.rfind('(')) {
        t = trim(&t[..open]);
    }
    if let Some(inner) = t.strip_suffix('>') {
        t = trim(&inner[inner.rfind('<')? + 1..]);
    }
    let (local, domain) = t.rsplit_once('@')?;
    let quoted = local.len() >= 2 && local.starts_with('"') && local.ends_with('"');
    let spaced = |s: &str| s.chars().any(is_space);
    let single = !domain.is_empty() && !local.is_empty() && !spaced(domain) && (quoted || !spaced(local));
    (single && (quoted || !local.contains(['@', ',', ';', '<', '>']))).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        names_in(text, |f| out.push((f.domain.to_string(), f.mention)));
        out
    }

    fn names(text: &str) -> Vec<String> {
        found(text).into_iter().map(|(d, _)| d).collect()
    }

    #[test]
    fn every_at_in_any_wrapping() {
        for text in [
            "bob@mailinator.com",
            "Bob <bob@mailinator.com>",
            "<bob@mailinator.com>",
            "bob@mailinator.com (Bob)",
            "bob(x)@mailinator.com",
            "mailto:bob@mailinator.com",
            "team:bob@mailinator.com;",
            "\u{200b}bob@mailinator.com",
            "\u{1c}bob@mailinator.com\u{1f}",
            "\u{feff}bob@mailinator.com",
            ".bob@mailinator.com",
            "b..ob@mailinator.com",
            "\"b\u{1}ob\"@mailinator.com",
            "bob@mailinator.com.",
            "bob@MAILINATOR.COM",
            "bob@ mailinator.com",
            "bob@mailinator (c). com",
            "bob@mail\u{200d}inator.com",
            "bob@mail\u{ad}inator.com",
            "bob@ｍａｉｌｉｎａｔｏｒ．ｃｏｍ",
        ] {
            assert!(names(text).contains(&"mailinator.com".to_owned()), "{text:?}: {:?}", names(text));
        }
        let long = format!("{}@mailinator.com", "a".repeat(100));
        assert_eq!(names(&long), ["mailinator.com"]);
        let padded = format!("{}bob@mailinator.com{}", " \t\n\u{a0}\u{3000}".repeat(100), " ".repeat(400));
        assert_eq!(found(&padded), [("mailinator.com".to_owned(), false)]);
        assert_eq!(names("ann@gmail.com, bob@mailinator.com"), ["gmail.com", "mailinator.com"]);
    }

    #[test]
    fn refused_labels_do_not_hide_the_registrable_domain() {
        for label in ["ab--cd", "r3---sn", "xn--zz", "x_y", "-x", "x-"] {
            let text = format!("bob@{label}.mailinator.com");
            assert_eq!(found(&text), [("mailinator.com".to_owned(), true)], "{label}: derived, learn=false");
        }
        assert_eq!(names("bob@x_y.a.b.mailinator.com"), ["a.b.mailinator.com", "b.mailinator.com", "mailinator.com"]);
        assert_eq!(names("bob@x_y.shop.co.uk"), ["shop.co.uk", "co.uk"], "a public suffix too, as a mention");
        assert!(names("bob@x_y.com").is_empty(), "no registry hands out x_y.com");
        // The name as typed, valid in one form, is not derived.
        assert_eq!(found("bob@abyßmail.com").iter().filter(|(_, derived)| *derived).count(), 0);
    }

    #[test]
    fn the_top_level_domains_are_the_public_suffix_lists() {
        let tlds = known_tlds();
        assert!(tlds.len() > 1_000);
        // The list the `psl` crate compiles, in another snapshot: they differ only by the few TLDs
        // delegated or retired between the two dates (a TLD such as `ck` is known through `*.ck`).
        let known = |name: &str| psl::suffix(name.as_bytes()).is_some_and(|s| s.is_known());
        let unknown_to_psl: Vec<&str> =
            tlds.iter().copied().filter(|t| !known(t) && !known(&format!("x.{t}"))).collect();
        assert!(unknown_to_psl.len() <= 5, "{unknown_to_psl:?}");
        for tld in ["com", "uk", "shop", "xn--p1ai", "za"] {
            assert!(tlds.binary_search(&tld).is_ok(), "{tld}");
        }
        for unknown in ["context", "doe", "localhost", "example", "invalid"] {
            assert!(tlds.binary_search(&unknown).is_err(), "{unknown}");
        }
    }

    #[test]
    fn a_site_is_the_last_two_labels() {
        let site_of = |name: &str| site(&Domain::parse(name).unwrap()).to_owned();
        assert_eq!(site_of("mail.google.com"), "google.com");
        assert_eq!(site_of("google.com"), "google.com");
        assert_eq!(site_of("a.b.co.uk"), "co.uk", "coarser than the registrable domain: never stricter");
    }

    #[test]
    fn both_idna_forms_are_judged() {
        assert_eq!(names("bob@abyßmail.com"), ["xn--abymail-2va.com", "abyssmail.com"]);
        assert!(names("bob@ABYẞMAIL.com").contains(&"abyssmail.com".to_owned()));
        assert_eq!(names("bob@ςx.gr").len(), 2);
    }

    #[test]
    fn free_text_counts_under_known_top_level_domains_only() {
        assert!(found("Hi @odata.context").is_empty());
        assert!(found("see medium.com/@jane.doe today").is_empty());
        assert_eq!(found("write to sales@acme.com. Thanks"), [("acme.com".to_owned(), true)]);
        assert_eq!(found("ask @the.coffee.shop"), [("the.coffee.shop".to_owned(), true)]);
        assert!(found("https://user@host/").is_empty());
        // A value that is an address keeps today's rule: whatever its top-level domain.
        assert_eq!(found("bob@x.example"), [("x.example".to_owned(), false)]);
        assert_eq!(found("Bob <bob@x.example>"), [("x.example".to_owned(), false)]);
        assert!(found("a@b").is_empty());
        assert!(found("no at sign").is_empty());
    }

    #[test]
    fn unwrapping() {
        assert_eq!(unwrapped(" Ann Smith <ann@gmail.com> "), Some("ann@gmail.com"));
        assert_eq!(unwrapped("mailto:ann@gmail.com"), Some("ann@gmail.com"));
        assert_eq!(unwrapped("ann@gmail.com (Ann)"), Some("ann@gmail.com"));
        assert_eq!(unwrapped("\"a b\"@gmail.com"), Some("\"a b\"@gmail.com"));
        assert_eq!(unwrapped("ann@gmail.com, bob@x.com"), None);
        assert_eq!(unwrapped("write to ann@gmail.com"), None);
        assert_eq!(unwrapped("@odata.context"), None);
        assert_eq!(unwrapped("x <y"), None);
    }

    #[test]
    fn trimming_is_the_union_of_runtimes() {
        assert_eq!(trim("\u{1c}\u{feff}\u{a0}\u{3000} a \u{2028}\u{85}\u{1f}"), "a");
    }
}
