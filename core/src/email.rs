//! `EmailAddress`: an addr-spec (RFC 5322 / RFC 6531) whose domain is a valid [`Domain`].

use std::fmt;

use crate::{Domain, InputError};

const MAX_LOCAL: usize = 64;
const MAX_ADDRESS: usize = 254;

/// An email address that passed [`EmailAddress::parse`].
///
/// Invariant: the local part is a non-empty dot-atom or quoted string of at most 64 octets
/// ([`EmailAddress::parse_lenient`]: any length), kept exactly as given (local parts are case-sensitive), without the characters
/// python-email-validator calls unsafe ([`unsafe_in_local`]); the domain is a normalized
/// [`Domain`], written without a trailing dot; the whole address is at most 254 octets. Domain
/// literals (`[192.0.2.1]`) are refused: the verdict is about a domain name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailAddress {
    local: Box<str>,
    domain: Domain,
}

impl EmailAddress {
    pub fn parse(input: &str) -> Result<Self, InputError> {
        Self::parse_with(input, MAX_LOCAL)
    }

    /// As python-email-validator's default (non-strict) mode reads an address, which apps built
    /// on pydantic or WTForms store: a local part of any length, the whole still at most 254
    /// octets. The gateway reads the signup's own address this way, so that it describes and
    /// counts the address the app keeps.
    pub fn parse_lenient(input: &str) -> Result<Self, InputError> {
        Self::parse_with(input, MAX_ADDRESS)
    }

    fn parse_with(input: &str, max_local: usize) -> Result<Self, InputError> {
        let (local, domain) = input.rsplit_once('@').ok_or(InputError::EmptyLocalPart)?;
        if domain.is_empty() {
            return Err(InputError::EmptyDomain);
        }
        // `user@example.com.`: every email validator refuses it (a bare domain keeps its root dot).
        if domain.ends_with(crate::domain::LABEL_DOTS) {
            return Err(InputError::EmptyLabel);
        }
        let domain = Domain::parse(domain)?;
        check_local(local, max_local)?;
        let address = Self { local: local.into(), domain };
        if address.len() > MAX_ADDRESS {
            return Err(InputError::EmailTooLong);
        }
        Ok(address)
    }

    pub fn local(&self) -> &str {
        &self.local
    }

    pub fn domain(&self) -> &Domain {
        &self.domain
    }

    fn len(&self) -> usize {
        self.local.len() + 1 + self.domain.as_str().len()
    }
}

impl fmt::Display for EmailAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.local, self.domain)
    }
}

fn check_local(local: &str, max: usize) -> Result<(), InputError> {
    if local.is_empty() {
        return Err(InputError::EmptyLocalPart);
    }
    if local.len() > max {
        return Err(InputError::LocalPartTooLong);
    }
    if local.chars().any(|c| !c.is_ascii() && c.is_whitespace()) {
        return Err(InputError::Whitespace);
    }
    if local.chars().enumerate().any(|(i, c)| unsafe_in_local(c, i == 0)) {
        return Err(InputError::MalformedLocalPart);
    }
    let valid = match local.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"').is_some_and(is_quoted_content),
        None => local.split('.').all(is_atom),
    };
    if valid { Ok(()) } else { Err(InputError::MalformedLocalPart) }
}

/// Non-ASCII characters python-email-validator refuses in a local part (it allows Unicode
/// letters, marks, numbers, punctuation and symbols only): spaces and line or paragraph
/// separators (`Z*`), controls (`Cc`), format characters (`Cf`: bidi controls such as U+202E,
/// zero-width characters, the BOM, soft hyphen, tags), private use (`Co`), noncharacters and
/// the specials block's unassigned code points, and a combining mark first (it would combine
/// with whatever precedes the address). Other unassigned code points (`Cn`) are not known here
/// (no Unicode tables in the module): IDNA refuses them in the domain.
fn unsafe_in_local(c: char, first: bool) -> bool {
    let u = u32::from(c);
    if c.is_ascii() {
        return false;
    }
    let format = matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    );
    let private_use = matches!(u, 0xE000..=0xF8FF | 0xF0000..=0x10FFFF);
    let noncharacter = matches!(u, 0xFDD0..=0xFDEF | 0xFFF0..=0xFFF8) || u & 0xFFFE == 0xFFFE;
    let combining = matches!(u, 0x300..=0x36F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F);
    c.is_whitespace() || c.is_control() || format || private_use || noncharacter || (first && combining)
}

/// RFC 5322 `atext`, widened by RFC 6531 to any non-ASCII character.
fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || (!c.is_ascii() && !c.is_control())
}

pub(crate) fn is_atom(atom: &str) -> bool {
    !atom.is_empty() && atom.chars().all(is_atext)
}

/// The inside of a quoted string: printable ASCII (space included) except `"` and `\`, which
/// must be escaped as a quoted-pair, plus non-ASCII per RFC 6531.
fn is_quoted_content(content: &str) -> bool {
    let mut chars = content.chars();
    while let Some(c) = chars.next() {
        let ok = match c {
            '\\' => chars.next().is_some_and(|e| (' '..='~').contains(&e)),
            '"' => false,
            c if c.is_ascii() => (' '..='~').contains(&c),
            c => !c.is_control(),
        };
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<&str, InputError>) {
        let got = EmailAddress::parse(input).map(|e| e.to_string());
        assert_eq!(got, expected.map(str::to_owned), "input {input:?}");
    }

    #[test]
    fn valid_addresses() {
        check("user@example.com", Ok("user@example.com"));
        check("User.Name+tag@Example.COM", Ok("User.Name+tag@example.com"));
        check("\"john doe\"@example.com", Ok("\"john doe\"@example.com"));
        check("\"a\\\"b\"@example.com", Ok("\"a\\\"b\"@example.com"));
        check("\"a@b\"@example.com", Ok("\"a@b\"@example.com"));
        check("josé@example.com", Ok("josé@example.com"));
        check("user@bücher.example", Ok("user@xn--bcher-kva.example"));
        check("!#$%&'*+-/=?^_`{|}~@example.com", Ok("!#$%&'*+-/=?^_`{|}~@example.com"));
        check(&format!("{}@example.com", "a".repeat(64)), Ok(&format!("{}@example.com", "a".repeat(64))));
        // Letters, marks after the first character, numbers, punctuation and symbols of any
        // script stay accepted (RFC 6531), as python-email-validator accepts them.
        check("δοκιμή@example.com", Ok("δοκιμή@example.com"));
        check("用户@example.com", Ok("用户@example.com"));
        check("e\u{301}lan@example.com", Ok("e\u{301}lan@example.com"));
        check("a\u{2019}b€@example.com", Ok("a\u{2019}b€@example.com"));
        check("\"john doe\"@example.com", Ok("\"john doe\"@example.com"));
    }

    /// Issue 23: what python-email-validator refuses in a local part, and a trailing dot after
    /// an email's domain (every validator's test suite refuses `my@trailingdot.com.`).
    #[test]
    fn unsafe_characters_and_a_trailing_dot_are_refused() {
        use InputError::*;
        // Non-ASCII whitespace (Z*), also quoted.
        for c in [
            '\u{A0}', '\u{1680}', '\u{2000}', '\u{2007}', '\u{200A}', '\u{2028}', '\u{2029}', '\u{202F}', '\u{205F}',
            '\u{3000}', '\u{85}',
        ] {
            check(&format!("a{c}b@example.com"), Err(Whitespace));
            check(&format!("\"a{c}b\"@example.com"), Err(Whitespace));
        }
        // Bidi controls, zero-width and other format characters (Cf), private use (Co),
        // noncharacters, a combining mark first.
        let refused = [
            '\u{200E}',
            '\u{200F}',
            '\u{202A}',
            '\u{202B}',
            '\u{202C}',
            '\u{202D}',
            '\u{202E}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{61C}',
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{AD}',
            '\u{180E}',
            '\u{2064}',
            '\u{FFF9}',
            '\u{E0041}',
            '\u{E000}',
            '\u{F8FF}',
            '\u{F0000}',
            '\u{10FFFD}',
            '\u{FDD0}',
            '\u{FFFE}',
            '\u{1FFFF}',
            '\u{9F}',
        ];
        for c in refused {
            check(&format!("a{c}b@example.com"), Err(MalformedLocalPart));
            check(&format!("\"a{c}b\"@example.com"), Err(MalformedLocalPart));
            check(&format!("{c}@example.com"), Err(MalformedLocalPart));
        }
        check("\u{301}a@example.com", Err(MalformedLocalPart));
        check("\u{FE0F}a@example.com", Err(MalformedLocalPart));
        check("my@trailingdot.com.", Err(EmptyLabel));
        check("my@trailingdot.com\u{FF0E}", Err(EmptyLabel));
        check("my@trailingdot.com\u{3002}", Err(EmptyLabel));
        check("my@trailingdot.com..", Err(EmptyLabel));
        // A bare domain keeps its root dot (crate::input's tests).
        assert!(crate::Domain::parse("trailingdot.com.").is_ok());
    }

    #[test]
    fn invalid_addresses() {
        use InputError::*;
        check("user@", Err(EmptyDomain));
        check("@example.com", Err(EmptyLocalPart));
        check("a..b@example.com", Err(MalformedLocalPart));
        check(".a@example.com", Err(MalformedLocalPart));
        check("a.@example.com", Err(MalformedLocalPart));
        check("a(b)@example.com", Err(MalformedLocalPart));
        check("a\"b@example.com", Err(MalformedLocalPart));
        check("\"unterminated@example.com", Err(MalformedLocalPart));
        check("\"a\"b\"@example.com", Err(MalformedLocalPart));
        check("user@@example.com", Err(MalformedLocalPart));
        check("a,b@example.com", Err(MalformedLocalPart));
        check(&format!("{}@example.com", "a".repeat(65)), Err(LocalPartTooLong));
        let long = format!("{}@outlook.com", "a".repeat(80));
        assert_eq!(EmailAddress::parse_lenient(&long).map(|e| e.to_string()), Ok(long.clone()));
        let too_long = format!("{}@outlook.com", "a".repeat(243));
        assert_eq!(EmailAddress::parse_lenient(&too_long), Err(EmailTooLong));
        check("user@[192.0.2.1]", Err(IpLiteral));
        check("user@192.0.2.1", Err(IpLiteral));
        check("user@localhost", Err(SingleLabel));
        check("us er@example.com", Err(MalformedLocalPart));
        let long_domain = format!("{}.example", vec!["a".repeat(63); 3].join("."));
        check(&format!("{}@{long_domain}", "a".repeat(60)), Err(EmailTooLong));
    }
}
