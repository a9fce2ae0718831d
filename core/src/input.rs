//! The `:input` of a lookup: a bare domain or an email address, and why it may be invalid.

use crate::{Domain, EmailAddress, InputType};

/// Why an input is not a valid domain or email address. The `Display` text is the message the
/// API returns with `invalid_input`, so it names the problem without echoing the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("input is empty")]
    Empty,
    #[error("input contains whitespace or control characters")]
    Whitespace,
    #[error("domain has an empty label")]
    EmptyLabel,
    #[error("domain must have at least two labels")]
    SingleLabel,
    #[error("a domain label is longer than 63 octets")]
    LabelTooLong,
    #[error("domain is longer than 253 octets")]
    NameTooLong,
    #[error("IP address literals are not accepted")]
    IpLiteral,
    #[error("domain contains characters not allowed in a host name")]
    DisallowedCharacter,
    #[error("email address has an empty domain")]
    EmptyDomain,
    #[error("email address has an empty local part")]
    EmptyLocalPart,
    #[error("email local part is longer than 64 octets")]
    LocalPartTooLong,
    #[error("email local part is malformed")]
    MalformedLocalPart,
    #[error("email address is longer than 254 octets")]
    EmailTooLong,
}

/// A parsed lookup input. The only way to build one is [`LookupInput::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupInput {
    Domain(Domain),
    Email(EmailAddress),
}

/// `@` and the characters that stand for it (fullwidth `＠`, small `﹫`): text holding one may be
/// an email address, whose local part must not be shown back (pages) or logged.
pub fn may_hold_local_part(text: &str) -> bool {
    text.contains(['@', '\u{FF20}', '\u{FE6B}'])
}

impl LookupInput {
    /// Parses an already percent-decoded input: an email address when it contains `@`,
    /// otherwise a bare domain.
    pub fn parse(input: &str) -> Result<Self, InputError> {
        if input.is_empty() {
            return Err(InputError::Empty);
        }
        if input.contains('@') {
            EmailAddress::parse(input).map(Self::Email)
        } else {
            Domain::parse(input).map(Self::Domain)
        }
    }

    pub fn domain(&self) -> &Domain {
        match self {
            Self::Domain(d) => d,
            Self::Email(e) => e.domain(),
        }
    }

    pub fn input_type(&self) -> InputType {
        match self {
            Self::Domain(_) => InputType::Domain,
            Self::Email(_) => InputType::Email,
        }
    }

    /// The normalized email address, or an empty string for a bare domain (as the spec wants).
    pub fn email_string(&self) -> String {
        match self {
            Self::Domain(_) => String::new(),
            Self::Email(e) => e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<(InputType, &str, &str), InputError>) {
        let got = LookupInput::parse(input).map(|i| (i.input_type(), i.email_string(), i.domain().as_str().to_owned()));
        let expected = expected.map(|(t, e, d)| (t, e.to_owned(), d.to_owned()));
        assert_eq!(got, expected, "input {input:?}");
    }

    #[test]
    fn domains_and_emails() {
        use InputType::*;
        check("example.com", Ok((Domain, "", "example.com")));
        check("Example.COM.", Ok((Domain, "", "example.com")));
        check("bücher.example", Ok((Domain, "", "xn--bcher-kva.example")));
        check("a@b.example", Ok((Email, "a@b.example", "b.example")));
        check("John.Doe@Mailinator.COM", Ok((Email, "John.Doe@mailinator.com", "mailinator.com")));
        check("user@bücher.example", Ok((Email, "user@xn--bcher-kva.example", "xn--bcher-kva.example")));
        check("\"john doe\"@x.example", Ok((Email, "\"john doe\"@x.example", "x.example")));
    }

    #[test]
    fn invalid_inputs() {
        check("", Err(InputError::Empty));
        check("user@", Err(InputError::EmptyDomain));
        check("@domain.example", Err(InputError::EmptyLocalPart));
        check("user@@x.example", Err(InputError::MalformedLocalPart));
        check("a b.example", Err(InputError::Whitespace));
    }
}
