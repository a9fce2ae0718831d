//! `Domain`: a validated, normalized DNS name as email uses it.

use std::fmt;
use std::net::IpAddr;

use idna::uts46::{AsciiDenyList, DnsLength, Hyphens, Uts46};

use crate::InputError;

const MAX_LABEL: usize = 63;
const MAX_NAME: usize = 253;

/// A domain name that passed [`Domain::parse`].
///
/// Invariant: ASCII only (internationalized labels in `xn--` form), lowercase, no trailing dot,
/// at least two labels, every label 1..=63 octets, at most 253 octets, STD3 host-name characters,
/// and not an IP address. The constructor is the only way in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Domain(Box<str>);

impl Domain {
    /// Normalizes and validates: one trailing dot stripped, IDNA UTS-46 to ASCII with STD3
    /// rules and hyphen checks, lowercase, then the length and label rules.
    pub fn parse(input: &str) -> Result<Self, InputError> {
        // Most names come already normalized (MX host names from DNS, list entries, cached
        // answers): UTS-46 would return them as they are, so only the shape is checked.
        if is_normalized_ascii(input) {
            check_shape(input)?;
            return Ok(Self(input.into()));
        }
        Self::parse_uts46(input)
    }

    /// [`parse`](Self::parse) without its shortcut for already normalized names.
    fn parse_uts46(input: &str) -> Result<Self, InputError> {
        let ascii = to_ascii(input)?;
        check_shape(&ascii)?;
        Ok(Self(ascii.into_boxed_str()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// This name and its parents up to and including its registrable domain (per the Public
    /// Suffix List), most specific first. A name that is itself a public suffix yields nothing:
    /// no list entry may speak for a whole public suffix. Cloning the iterator is cheap (the
    /// suffix is looked up once), so one walk can be matched against several lists.
    pub fn parents_to_registrable(&self) -> impl Iterator<Item = &str> + Clone {
        let stop = registrable_len(&self.0);
        let name: &str = &self.0;
        let mut next = stop.map(|_| name);
        std::iter::from_fn(move || {
            let current = next?;
            // The registrable domain ends the walk without a search for the next dot.
            next = match stop {
                Some(stop) if current.len() > stop => {
                    current.split_once('.').map(|(_, p)| p).filter(|p| p.len() >= stop)
                }
                _ => None,
            };
            Some(current)
        })
    }

    /// The registrable domain ("eTLD+1"), if this name is not itself a public suffix.
    pub fn registrable(&self) -> Option<&str> {
        registrable_len(&self.0).map(|len| &self.0[self.0.len() - len..])
    }

    /// The domain a registry registered, the one RDAP knows: the registrable domain, unless its
    /// public suffix is in the Public Suffix List's private section (`github.io`, `blogspot.com`:
    /// the name was handed out by a platform, not a registry, and the registry's record of the
    /// platform's own domain says nothing of it). A suffix the list does not know (its default
    /// rule: the last label) counts as a registry's.
    pub fn registered(&self) -> Option<&str> {
        let d = psl::domain(self.0.as_bytes())?;
        if d.suffix().typ() == Some(psl::Type::Private) {
            return None;
        }
        Some(&self.0[self.0.len() - d.as_bytes().len()..])
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// True when `name` (normalized ASCII) is exactly a public suffix, e.g. `com.ar` or `pp.ua`.
pub fn is_public_suffix(name: &str) -> bool {
    psl::suffix(name.as_bytes()).is_some_and(|s| s.as_bytes().len() == name.len())
}

fn registrable_len(name: &str) -> Option<usize> {
    psl::domain(name.as_bytes()).map(|d| d.as_bytes().len())
}

/// Full stop, ideographic full stop, fullwidth full stop, halfwidth ideographic full stop.
pub(crate) const LABEL_DOTS: [char; 4] = ['.', '\u{3002}', '\u{FF0E}', '\u{FF61}'];

fn to_ascii(input: &str) -> Result<String, InputError> {
    if input.is_empty() {
        return Err(InputError::Empty);
    }
    if input.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(InputError::Whitespace);
    }
    if input.starts_with('[') || input.parse::<IpAddr>().is_ok() {
        return Err(InputError::IpLiteral);
    }
    // UTS-46 separates labels with any of these dots (`mailinator.com．` is `mailinator.com.`).
    let input = input.strip_suffix(LABEL_DOTS).unwrap_or(input);
    if input.is_empty() || input.split(LABEL_DOTS).any(str::is_empty) {
        return Err(InputError::EmptyLabel);
    }
    Uts46::new()
        .to_ascii(input.as_bytes(), AsciiDenyList::STD3, Hyphens::Check, DnsLength::Ignore)
        .map(|cow| cow.into_owned())
        .map_err(|_| InputError::DisallowedCharacter)
}

/// Whether UTS-46 (STD3, hyphen checks) maps `input` to itself without error: lowercase
/// letters, digits and hyphens in non-empty dot-separated labels, none starting or ending with
/// a hyphen or with `--` in third and fourth place (`xn--` labels need their punycode checked).
fn is_normalized_ascii(input: &str) -> bool {
    input.split('.').all(|label| {
        let b = label.as_bytes();
        b.first().is_some_and(|c| *c != b'-')
            && b.last().is_some_and(|c| *c != b'-')
            && b.get(2..4) != Some(b"--".as_slice())
            && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

fn check_shape(ascii: &str) -> Result<(), InputError> {
    let labels: Vec<&str> = ascii.split('.').collect();
    if labels.iter().any(|l| l.is_empty()) {
        return Err(InputError::EmptyLabel);
    }
    if labels.len() < 2 {
        return Err(InputError::SingleLabel);
    }
    if labels.iter().any(|l| l.len() > MAX_LABEL) {
        return Err(InputError::LabelTooLong);
    }
    if ascii.len() > MAX_NAME {
        return Err(InputError::NameTooLong);
    }
    // A numeric top-level label means a dotted IPv4 form (including short forms like 1.2.3).
    if labels.last().is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit())) {
        return Err(InputError::IpLiteral);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<&str, InputError>) {
        let got = Domain::parse(input);
        assert_eq!(got.as_ref().map(Domain::as_str), expected.as_ref().map(|s| *s), "input {input:?}");
    }

    #[test]
    fn normalizes() {
        check("example.com", Ok("example.com"));
        check("EXAMPLE.Com", Ok("example.com"));
        check("example.com.", Ok("example.com"));
        check("bücher.example", Ok("xn--bcher-kva.example"));
        check("BÜCHER.example", Ok("xn--bcher-kva.example"));
        check("xn--bcher-kva.example", Ok("xn--bcher-kva.example"));
        check("ｅｘａｍｐｌｅ.com", Ok("example.com")); // full-width letters map under UTS-46
        check("a-b.example", Ok("a-b.example"));
        check("mail.例え.jp", Ok("mail.xn--r8jz45g.jp"));
        check("a\u{200b}b.example", Ok("ab.example")); // UTS-46 maps zero-width space away
        // Every UTS-46 label dot ends a name like the ASCII one (it was refused at the end).
        check("mailinator.com\u{FF0E}", Ok("mailinator.com"));
        check("mailinator\u{3002}com\u{3002}", Ok("mailinator.com"));
        check("mailinator\u{FF61}com", Ok("mailinator.com"));
        check(&format!("{}.example", "a".repeat(63)), Ok(&format!("{}.example", "a".repeat(63))));
    }

    #[test]
    fn rejects() {
        use InputError::*;
        check("", Err(Empty));
        check(".", Err(EmptyLabel));
        check("example.com..", Err(EmptyLabel));
        check("example.com\u{FF0E}.", Err(EmptyLabel));
        check("a\u{3002}\u{3002}b.example", Err(EmptyLabel));
        check("a..b.example", Err(EmptyLabel));
        check(".example.com", Err(EmptyLabel));
        check("localhost", Err(SingleLabel));
        check("localhost.", Err(SingleLabel));
        check("a b.example", Err(Whitespace));
        check(" example.com", Err(Whitespace));
        check("exa\tmple.com", Err(Whitespace));
        check("a\u{0}b.example", Err(Whitespace));
        check(&format!("{}.example", "a".repeat(64)), Err(LabelTooLong));
        check(&format!("{}example", "abcdefghi.".repeat(25)), Err(NameTooLong));
        check("192.0.2.1", Err(IpLiteral));
        check("[192.0.2.1]", Err(IpLiteral));
        check("::1", Err(IpLiteral));
        check("1.2.3", Err(IpLiteral));
        check("exa_mple.com", Err(DisallowedCharacter));
        check("exa/mple.com", Err(DisallowedCharacter));
        check("-example.com", Err(DisallowedCharacter));
        check("example-.com", Err(DisallowedCharacter));
        check("a\u{fffd}b.example", Err(DisallowedCharacter));
        check("a\u{e000}b.example", Err(DisallowedCharacter)); // private use
        check("xn--zz.example", Err(DisallowedCharacter)); // invalid punycode
    }

    #[test]
    fn shortcut_agrees_with_uts46() {
        let long = format!("{}.example", "a".repeat(64));
        let names = [
            "example.com",
            "a-b.example",
            "a--b.example",
            "ab--c.example",
            "xn--bcher-kva.example",
            "xn--zz.example",
            "-a.example",
            "a-.example",
            "a.-b.example",
            "1.2.3",
            "192.0.2.1",
            "123.example",
            "example.123",
            "localhost",
            "a..b",
            ".a.b",
            "a.b.",
            "a",
            "",
            "mx1.mail.co.uk",
            "0-0.example",
            "a.b-c-d.e",
            &long,
        ];
        for name in names {
            let fast = is_normalized_ascii(name);
            assert_eq!(Domain::parse(name), Domain::parse_uts46(name), "{name:?} (shortcut: {fast})");
            if let Ok(d) = Domain::parse_uts46(name) {
                assert_eq!(fast, d.as_str() == name && !name.contains("xn--"), "{name:?}");
            }
        }
    }

    #[test]
    fn parents_stop_at_registrable_domain() {
        let d = Domain::parse("a.b.mailinator.com").unwrap();
        let parents: Vec<_> = d.parents_to_registrable().collect();
        assert_eq!(parents, ["a.b.mailinator.com", "b.mailinator.com", "mailinator.com"]);
        let d = Domain::parse("shop.pp.ua").unwrap();
        assert_eq!(d.parents_to_registrable().collect::<Vec<_>>(), ["shop.pp.ua"]);
        let d = Domain::parse("co.uk").unwrap();
        assert_eq!(d.parents_to_registrable().count(), 0);
        assert_eq!(Domain::parse("x.y.example.co.uk").unwrap().registrable(), Some("example.co.uk"));
        let registered = |name: &str| Domain::parse(name).unwrap().registered().map(str::to_owned);
        assert_eq!(registered("x.y.example.co.uk").as_deref(), Some("example.co.uk"));
        assert_eq!(registered("mail.shop.example").as_deref(), Some("shop.example"), "an unknown TLD");
        assert_eq!(registered("ann.github.io"), None, "a platform's name, not a registry's");
        assert_eq!(registered("co.uk"), None);
    }

    #[test]
    fn public_suffix_detection() {
        assert!(is_public_suffix("com.ar"));
        assert!(is_public_suffix("pp.ua"));
        assert!(is_public_suffix("com"));
        assert!(!is_public_suffix("mailinator.com"));
    }
}
