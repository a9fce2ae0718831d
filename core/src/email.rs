//! `EmailAddress`: an addr-spec (RFC 5322 / RFC 6531) whose domain is a valid [`Domain`].

use std::fmt;

use crate::{Domain, InputError};

const MAX_LOCAL: usize = 64;
const MAX_ADDRESS: usize = 254;

/// An email address that passed [`EmailAddress::parse`].
///
/// Invariant: the local part is a non-empty dot-atom or quoted string of at most 64 octets,
/// kept exactly as given (local parts are case-sensitive); the domain is a normalized
/// [`Domain`]; the whole address is at most 254 octets. Domain literals (`[192.0.2.1]`) are
/// refused: the verdict is about a domain name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailAddress {
    local: Box<str>,
    domain: Domain,
}

impl EmailAddress {
    pub fn parse(input: &str) -> Result<Self, InputError> {
        let (local, domain) = input.rsplit_once('@').ok_or(InputError::EmptyLocalPart)?;
        if domain.is_empty() {
            return Err(InputError::EmptyDomain);
        }
        let domain = Domain::parse(domain)?;
        check_local(local)?;
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

fn check_local(local: &str) -> Result<(), InputError> {
    if local.is_empty() {
        return Err(InputError::EmptyLocalPart);
    }
    if local.len() > MAX_LOCAL {
        return Err(InputError::LocalPartTooLong);
    }
    let valid = match local.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"').is_some_and(is_quoted_content),
        None => local.split('.').all(is_atom),
    };
    if valid { Ok(()) } else { Err(InputError::MalformedLocalPart) }
}

/// RFC 5322 `atext`, widened by RFC 6531 to any non-ASCII character.
fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || (!c.is_ascii() && !c.is_control())
}

fn is_atom(atom: &str) -> bool {
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
        check("user@example.com.", Ok("user@example.com"));
        check("\"john doe\"@example.com", Ok("\"john doe\"@example.com"));
        check("\"a\\\"b\"@example.com", Ok("\"a\\\"b\"@example.com"));
        check("\"a@b\"@example.com", Ok("\"a@b\"@example.com"));
        check("josé@example.com", Ok("josé@example.com"));
        check("user@bücher.example", Ok("user@xn--bcher-kva.example"));
        check("!#$%&'*+-/=?^_`{|}~@example.com", Ok("!#$%&'*+-/=?^_`{|}~@example.com"));
        check(&format!("{}@example.com", "a".repeat(64)), Ok(&format!("{}@example.com", "a".repeat(64))));
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
        check("user@[192.0.2.1]", Err(IpLiteral));
        check("user@192.0.2.1", Err(IpLiteral));
        check("user@localhost", Err(SingleLabel));
        check("us er@example.com", Err(MalformedLocalPart));
        let long_domain = format!("{}.example", vec!["a".repeat(63); 3].join("."));
        check(&format!("{}@{long_domain}", "a".repeat(60)), Err(EmailTooLong));
    }
}
