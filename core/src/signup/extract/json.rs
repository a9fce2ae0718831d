//! JSON bodies, read strictly and with every duplicate key kept.
//!
//! `serde_json::Value` keeps the last of two equal keys, while an app may keep the first
//! (`{"email":"x@disposable","email":"y@gmail.com"}`). [`Node`] keeps every member, and a pointer
//! is followed down every duplicate, so all the values an app could see are compared. A key
//! matches a pointer token as Go's `encoding/json` and ASP.NET Core bind it: case-insensitively,
//! with Unicode simple folding (`{"EMAIL": ...}` and `{"\u0045mail": ...}` are `/email`, `ſ` is
//! `s`, the Kelvin sign `K` is `k`; `super::fold`), and the last match wins there, so two
//! different values are a conflict. Anything serde_json refuses (`NaN`, `-Infinity`, `1e400`, a
//! lone surrogate `"\ud800"`, nesting deeper than 128, trailing data) is
//! [`Unreadable::Malformed`]: some apps read it anyway.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Carried, Domains, Extracted, Unreadable, Unusable, fold, is_secret, single};
use crate::signup::settings::EmailSources;

/// A JSON value with objects as member lists (duplicates kept, in order). Numbers and booleans
/// are never an email, so their values are not kept.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Null,
    NotString,
    String(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

/// The values at the configured pointers, each followed down every duplicate key (see
/// [`single`]), and the names behind every `@` of every string in the document, object keys
/// included, but below a secret key.
pub(super) fn read_json(body: &[u8], sources: &EmailSources) -> Carried {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body); // a UTF-8 BOM, as Python reads it
    let Ok(doc) = serde_json::from_slice::<Node>(body) else {
        return Carried::new(Extracted::Unreadable(Unreadable::Malformed), Domains::default());
    };
    let mut domains = Domains::default();
    let secret = |key: &str| is_secret(key, &sources.secret_fields);
    every_string(&doc, &secret, &mut |s| domains.consider_with(s, &sources.secret_fields));
    Carried::new(at_pointers(&doc, &sources.json_pointers), domains)
}

/// Calls `f` with every string of a JSON text (keys too, but nothing below a `secret_fields`
/// key); `false` when it is not JSON.
pub(super) fn each_string_of(text: &[u8], secret_fields: &[String], f: &mut impl FnMut(&str)) -> bool {
    let Ok(doc) = serde_json::from_slice::<Node>(text) else { return false };
    every_string(&doc, &|key: &str| is_secret(key, secret_fields), f);
    true
}

/// The `query` strings of a GraphQL request in JSON: every one of an object (a duplicate key
/// too), of every item of a batch; `None` when an item has none (a persisted query names its
/// document by hash) or the text is not JSON.
pub(super) fn graphql_documents(text: &[u8]) -> Option<Vec<String>> {
    let doc = serde_json::from_slice::<Node>(text).ok()?;
    let items = match doc {
        Node::Array(items) => items,
        object => vec![object],
    };
    let mut documents = Vec::new();
    for item in items {
        let Node::Object(members) = item else { return None };
        let before = documents.len();
        for (key, value) in members {
            match (key == "query", value) {
                (true, Node::String(q)) => documents.push(q),
                (true, _) => return None,
                _ => {}
            }
        }
        if documents.len() == before {
            return None;
        }
    }
    Some(documents)
}

/// Calls `f` with every string below `node`, keys included, but not below a `secret` key.
/// Depth is bounded by serde_json's recursion limit (128).
fn every_string(node: &Node, secret: &impl Fn(&str) -> bool, f: &mut impl FnMut(&str)) {
    match node {
        Node::String(s) => f(s),
        Node::Array(items) => items.iter().for_each(|item| every_string(item, secret, f)),
        Node::Object(members) => members.iter().filter(|(key, _)| !secret(key)).for_each(|(key, value)| {
            f(key);
            every_string(value, secret, f);
        }),
        Node::Null | Node::NotString => {}
    }
}

fn at_pointers(doc: &Node, pointers: &[String]) -> Extracted {
    let mut found = Extracted::NotFound;
    for pointer in pointers {
        let Some(tokens) = tokens(pointer) else { continue };
        let mut leaves = Vec::new();
        resolve(doc, &tokens, &mut leaves);
        let values = leaves.into_iter().map(|leaf| match leaf {
            Node::Null => Ok(String::new()), // absent
            Node::String(s) => Ok(s.clone()),
            _ => Err(Unusable::NotText),
        });
        found = found.and(single(values));
    }
    found
}

/// RFC 6901: `""` is the whole document; otherwise `/`-separated tokens with `~1` and `~0`.
fn tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    Some(rest.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect())
}

/// Every node at `tokens` below `node`, down every duplicate key and every key that matches a
/// token case-insensitively.
fn resolve<'a>(node: &'a Node, tokens: &[String], out: &mut Vec<&'a Node>) {
    let Some((token, rest)) = tokens.split_first() else {
        out.push(node);
        return;
    };
    match node {
        Node::Object(members) => {
            for (_, value) in members.iter().filter(|(key, _)| fold::same_name(key, token)) {
                resolve(value, rest, out);
            }
        }
        Node::Array(items) => {
            if let Some(item) = array_index(token).and_then(|i| items.get(i)) {
                resolve(item, rest, out);
            }
        }
        _ => {}
    }
}

/// An RFC 6901 array index: digits, no leading zero.
fn array_index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::NotString)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::NotString)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::NotString)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::NotString)
    }

    fn visit_str<E>(self, s: &str) -> Result<Node, E> {
        Ok(Node::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Node, E> {
        Ok(Node::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, Node>()? {
            members.push(member);
        }
        Ok(Node::Object(members))
    }
}
