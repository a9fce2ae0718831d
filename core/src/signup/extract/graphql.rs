//! GraphQL requests: which are signups (`graphql.operations`), read with GraphQL's own lexer.
//!
//! One GraphQL route serves every operation, so the route alone does not make a signup: a
//! request is one when a mutation it holds (or a fragment, which a mutation may spread) names
//! one of the configured fields (`signUp`, `createUser`), as a field or an alias's target. Names
//! are read as GraphQL's lexer reads them: inside strings, block strings and comments they are
//! not names. A request whose document cannot be had (a persisted query sent by hash, a body
//! that does not parse) is judged as a signup: what the gate cannot read is not "not a signup".
//! Its addresses are then read as any body's are; the lexer's string escapes (`\u0040`,
//! `\u{40}`) are decoded by [`super::again`] wherever they appear.

use super::decode;
use super::json;
use super::multipart;
use super::{BodyKind, Format, fold};

/// Whether a GraphQL request's body (of `kind`, not yet decoded) runs one of `operations`.
pub fn is_signup(kind: &BodyKind, body: &[u8], operations: &[String], max: usize) -> bool {
    let Ok(body) = decode::decode_all(&kind.codings, body, max) else { return true };
    match documents(&kind.format, &body) {
        Some(docs) => docs.iter().any(|d| names_an_operation(d, operations)),
        None => true,
    }
}

/// Every document a GraphQL-over-HTTP request carries; `None` when one cannot be had.
fn documents(format: &Format, body: &[u8]) -> Option<Vec<String>> {
    match format {
        Format::Json => json::graphql_documents(body),
        Format::GraphQl => std::str::from_utf8(body).ok().map(|d| vec![d.to_owned()]),
        Format::UrlEncoded => {
            let queries: Vec<String> = form_urlencoded::parse(body)
                .filter(|(k, _)| fold::same_name(k, "query"))
                .map(|(_, v)| v.into_owned())
                .collect();
            (!queries.is_empty()).then_some(queries)
        }
        Format::Multipart { boundary } => {
            let parts = multipart::parts(body, boundary).ok()?;
            let operations: Vec<&[u8]> =
                parts.iter().filter(|p| p.name.as_deref() == Some("operations")).map(|p| p.value).collect();
            let docs: Option<Vec<Vec<String>>> = operations.iter().map(|o| json::graphql_documents(o)).collect();
            docs.map(|d| d.concat()).filter(|d| !d.is_empty())
        }
        _ => None,
    }
}

/// Whether a mutation or fragment of `document` names one of `operations`; a document the
/// lexer refuses counts as naming one.
fn names_an_operation(document: &str, operations: &[String]) -> bool {
    let Some(tokens) = lex(document) else { return true };
    let mut depth = 0usize; // selection sets (and object values inside them)
    let mut parens = 0usize; // variable definitions and arguments at the top level
    let mut watched = false; // inside a mutation or a fragment
    let mut at_top = true; // the next name at depth 0 starts a definition
    for token in tokens {
        match token {
            Token::Punct('(') if depth == 0 => parens += 1,
            Token::Punct(')') if depth == 0 => parens = parens.saturating_sub(1),
            Token::Punct(_) | Token::Name(_) | Token::Value if depth == 0 && parens > 0 => {} // a default value
            Token::Punct('{') => {
                if depth == 0 && at_top {
                    watched = false; // `{ ... }`: a query
                }
                depth += 1;
                at_top = false;
            }
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                at_top = depth == 0;
            }
            Token::Name(name) if depth == 0 && at_top => {
                watched = matches!(name, "mutation" | "fragment");
                at_top = false;
            }
            Token::Name(name) if watched && depth > 0 && operations.iter().any(|o| o == name) => return true,
            _ => {}
        }
    }
    false
}

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Name(&'a str),
    Punct(char),
    /// A string, block string or number: never a name.
    Value,
}

/// The GraphQL lexer's tokens (October 2021 spec): ignored tokens (whitespace, commas,
/// comments, BOM) skipped; strings and block strings as single values. `None` when the
/// document does not lex (an unterminated string, a character GraphQL does not have).
fn lex(doc: &str) -> Option<Vec<Token<'_>>> {
    let bytes = doc.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => i += 1,
            b'#' => i += doc[i..].find(['\n', '\r']).unwrap_or(doc.len() - i),
            b'"' if doc[i..].starts_with("\"\"\"") => {
                i += 3 + block_string_end(&doc[i + 3..])?;
                out.push(Token::Value);
            }
            b'"' => {
                i += 1 + string_end(&doc[i + 1..])?;
                out.push(Token::Value);
            }
            b'_' | b'a'..=b'z' | b'A'..=b'Z' => {
                let len = bytes[i..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                    .unwrap_or(bytes.len() - i);
                out.push(Token::Name(&doc[i..i + len]));
                i += len;
            }
            b'-' | b'0'..=b'9' => {
                let len = bytes[i + 1..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'.' | b'+' | b'-')))
                    .unwrap_or(bytes.len() - i - 1);
                i += 1 + len;
                out.push(Token::Value);
            }
            b'.' if doc[i..].starts_with("...") => {
                i += 3;
                out.push(Token::Punct('.'));
            }
            b'!' | b'$' | b'&' | b'(' | b')' | b':' | b'=' | b'@' | b'[' | b']' | b'{' | b'|' | b'}' => {
                out.push(Token::Punct(char::from(b)));
                i += 1;
            }
            _ if doc[i..].starts_with('\u{feff}') => i += 3,
            _ => return None,
        }
    }
    Some(out)
}

/// After a string's opening quote: the length up to and with its closing quote.
fn string_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            b'\n' | b'\r' => return None,
            _ => i += 1,
        }
    }
    None
}

/// After a block string's opening `"""`: the length up to and with its closing `"""`.
fn block_string_end(s: &str) -> Option<usize> {
    let mut i = 0;
    loop {
        let next = s[i..].find("\"\"\"")?;
        if s[..i + next].ends_with('\\') {
            i += next + 3; // an escaped \"""
            continue;
        }
        return Some(i + next + 3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> Vec<String> {
        vec!["signUp".to_owned(), "createUser".to_owned()]
    }

    #[test]
    fn mutations_naming_an_operation() {
        for doc in [
            "mutation { signUp(email: \"a@b.c\") { id } }",
            "mutation Join($e: String!) { u: createUser(email: $e) { id } }",
            "query Q { me { id } } mutation M { signUp(email: \"x\") { id } }",
            "mutation { ...F } fragment F on Mutation { signUp(email: \"x\") { id } }",
            "mutation { ... on Mutation { signUp(email: \"x\") { id } } }",
            "mutation M($x: In = {a: 1}) { signUp(input: $x) { id } }",
            "\u{feff}mutation{signUp(email:\"x\"){id}}",
            "mutation { signUp(email: \"unterminated) }",
        ] {
            assert!(names_an_operation(doc, &ops()), "{doc}");
        }
    }

    #[test]
    fn other_operations_pass() {
        for doc in [
            "query { signUpStats { count } }",
            "{ signUp }",
            "query { me { signUp } }",
            "mutation { updateProfile(bio: \"signUp\") { id } }",
            "mutation { updateProfile(bio: \"\"\"createUser \\\"\"\" signUp\"\"\") { id } }",
            "mutation { updateProfile # signUp\n { id } }",
            "subscription { signUp }",
        ] {
            assert!(!names_an_operation(doc, &ops()), "{doc}");
        }
    }

    #[test]
    fn requests_of_every_transport() {
        let json = BodyKind::of(Format::Json);
        let q = |body: &str, kind: &BodyKind| is_signup(kind, body.as_bytes(), &ops(), 1 << 20);
        assert!(q(r#"{"query":"mutation { signUp(email: \"x\") { id } }"}"#, &json));
        assert!(!q(r#"{"query":"query { me { id } }","variables":{}}"#, &json));
        assert!(q(r#"[{"query":"query { me { id } }"},{"query":"mutation { createUser { id } }"}]"#, &json));
        assert!(q(r#"{"extensions":{"persistedQuery":{"sha256Hash":"abc"}}}"#, &json), "no document");
        assert!(q(r#"{"query":"query { me { id } }","query":"mutation { signUp { id } }"}"#, &json));
        assert!(q("not json", &json));
        assert!(q("mutation { signUp { id } }", &BodyKind::of(Format::GraphQl)));
        let form = BodyKind::of(Format::UrlEncoded);
        assert!(!q("query=query%20%7B%20me%20%7D", &form));
        assert!(q("query=mutation%20%7B%20signUp%20%7D", &form));
        let multipart = BodyKind::of(Format::Multipart { boundary: "B".to_owned() });
        let body = "--B\r\ncontent-disposition: form-data; name=\"operations\"\r\n\r\n{\"query\":\"mutation { signUp { id } }\"}\r\n--B--\r\n";
        assert!(q(body, &multipart));
    }
}
