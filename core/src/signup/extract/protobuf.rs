//! Protobuf messages read without their schema (gRPC, gRPC-Web, Connect).
//!
//! The wire format tells a length-delimited field (a string, `bytes`, a nested message, a map
//! entry, a packed list) from the others, but not which of those it is. So every
//! length-delimited field is read as text (each `@` judged, exactly as in a JSON string, and
//! decoded again where an app would: [`super::again`]) and, where its bytes parse as a message,
//! read again as one: nested messages, repeated fields, maps, `bytes` holding a message and
//! `google.protobuf.Any` all come out of that one rule. Nesting and the fields read are bounded
//! (over: refused, never skipped).
//!
//! The signup's own address is named by a field-number path (`email.proto_fields`: `1`, `3.1`):
//! the schema's names are not on the wire, and a path works for every message without a
//! descriptor set to ship and keep in step with the app.

use super::again;
use super::carried::Domains;
use super::{Carried, Extracted, Unreadable, Unusable, single};
use crate::signup::settings::EmailSources;

/// The largest field number protobuf allows.
const MAX_FIELD: u32 = (1 << 29) - 1;

/// `"3.1"` → `[3, 1]`; `None` unless every piece is a field number.
pub fn field_path(path: &str) -> Option<Vec<u32>> {
    let number = |n: &str| {
        let digits = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0');
        digits.then(|| n.parse::<u32>().ok()).flatten().filter(|n| *n <= MAX_FIELD)
    };
    path.split('.').map(number).collect()
}

/// One field on the wire: a length-delimited value, or another kind (read, not kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Field<'a> {
    pub number: u32,
    pub value: Option<&'a [u8]>,
}

/// The fields of `bytes` when the whole of it is a well-formed message (groups, which proto3
/// dropped, are not read); `None` otherwise. An empty input is an empty message.
pub(super) fn fields(bytes: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let key = varint(&mut rest)?;
        let number = u32::try_from(key >> 3).ok().filter(|n| (1..=MAX_FIELD).contains(n))?;
        let value = match key & 7 {
            0 => varint(&mut rest).map(|_| None)?,
            1 => take(&mut rest, 8).map(|_| None)?,
            2 => {
                let len = usize::try_from(varint(&mut rest)?).ok()?;
                Some(take(&mut rest, len)?)
            }
            5 => take(&mut rest, 4).map(|_| None)?,
            _ => return None,
        };
        out.push(Field { number, value });
    }
    Some(out)
}

fn varint(rest: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &b) in rest.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            *rest = &rest[i + 1..];
            return Some(value);
        }
    }
    None
}

fn take<'a>(rest: &mut &'a [u8], len: usize) -> Option<&'a [u8]> {
    let taken = rest.get(..len)?;
    *rest = &rest[len..];
    Some(taken)
}

/// A whole request message: the configured paths' values and every address it carries. A
/// message that does not parse is [`Unreadable::Malformed`].
pub(super) fn read_message(bytes: &[u8], sources: &EmailSources) -> Carried {
    let Some(top) = fields(bytes) else {
        return Carried::new(Extracted::Unreadable(Unreadable::Malformed), Domains::default());
    };
    let paths: Vec<Vec<u32>> = sources.proto_fields.iter().filter_map(|p| field_path(p)).collect();
    let mut walk = Walk { paths: &paths, path: Vec::new(), found: Vec::new(), domains: Domains::default() };
    walk.message(&top, &sources.secret_fields, 0);
    let configured = single(walk.found.into_iter());
    Carried::new(configured, walk.domains)
}

/// Reads a message found inside other bytes (a `bytes` field, base64 text): its addresses only.
pub(super) fn read_nested(fields: &[Field<'_>], domains: &mut Domains, secret: &[String], depth: usize) {
    let mut walk = Walk { paths: &[], path: Vec::new(), found: Vec::new(), domains: std::mem::take(domains) };
    walk.message(fields, secret, depth);
    *domains = walk.domains;
}

struct Walk<'p> {
    paths: &'p [Vec<u32>],
    path: Vec<u32>,
    found: Vec<Result<String, Unusable>>,
    domains: Domains,
}

impl Walk<'_> {
    fn message(&mut self, fields: &[Field<'_>], secret: &[String], depth: usize) {
        for field in fields {
            if !self.domains.spend(1) {
                return;
            }
            let Some(value) = field.value else { continue };
            self.path.push(field.number);
            if self.paths.contains(&self.path) {
                self.found.push(String::from_utf8(value.to_vec()).map_err(|_| Unusable::NotText));
            }
            again::bytes_as_text(&mut self.domains, value, secret, depth);
            if let Some(inner) = fields_inside(value)
                && self.domains.deeper(depth, value)
            {
                self.message(&inner, secret, depth + 1);
            }
            self.path.pop();
        }
    }
}

/// The fields of a length-delimited value that is itself a message (not empty: an empty value
/// is an empty string far more often).
pub(super) fn fields_inside(value: &[u8]) -> Option<Vec<Field<'_>>> {
    if value.is_empty() {
        return None;
    }
    fields(value)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub fn string_field(number: u32, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, u64::from(number) << 3 | 2);
        put_varint(&mut out, value.len() as u64);
        out.extend_from_slice(value);
        out
    }

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn sources(paths: &[&str]) -> EmailSources {
        EmailSources { proto_fields: paths.iter().map(|p| (*p).to_owned()).collect(), ..EmailSources::default() }
    }

    fn names(c: &Carried) -> Vec<String> {
        c.domains.as_slice().iter().map(|n| n.domain.to_string()).collect()
    }

    #[test]
    fn paths() {
        assert_eq!(field_path("1"), Some(vec![1]));
        assert_eq!(field_path("3.1"), Some(vec![3, 1]));
        for bad in ["", "0", "a", "1.", ".1", "536870912", "-1", "+1"] {
            assert_eq!(field_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_configured_field_and_every_string() {
        let profile = [string_field(1, b"x@mailinator.com"), string_field(2, b"y@yopmail.com")].concat();
        let mut msg = string_field(1, b"ann@gmail.com");
        msg.extend(string_field(3, &profile));
        msg.extend([0x20, 0x05]); // field 4, varint 5
        let read = read_message(&msg, &sources(&["1"]));
        assert_eq!(read.configured, Extracted::Email("ann@gmail.com".to_owned()));
        assert_eq!(names(&read), ["gmail.com", "mailinator.com", "yopmail.com"]);
        let nested = read_message(&msg, &sources(&["3.1"]));
        assert_eq!(nested.configured, Extracted::Email("x@mailinator.com".to_owned()));
        let twice = [string_field(1, b"a@gmail.com"), string_field(1, b"b@gmail.com")].concat();
        assert_eq!(read_message(&twice, &sources(&["1"])).configured, Extracted::Invalid(Unusable::Conflicting));
    }

    #[test]
    fn bytes_holding_json_or_a_message() {
        let json = string_field(4, br#"{"owner":"bob@mailinator.com"}"#);
        assert_eq!(names(&read_message(&json, &sources(&[]))), ["mailinator.com"]);
        let any = string_field(
            6,
            &[string_field(1, b"type.googleapis.com/x.Y"), string_field(2, &string_field(1, b"bob@yopmail.com"))]
                .concat(),
        );
        assert_eq!(names(&read_message(&any, &sources(&[]))), ["yopmail.com"]);
        let map_entry = string_field(5, &[string_field(1, b"k"), string_field(2, b"v@mailinator.com")].concat());
        assert_eq!(names(&read_message(&map_entry, &sources(&[]))), ["mailinator.com"]);
    }

    #[test]
    fn not_a_message_is_malformed() {
        for bad in [&b"\x0a\x05ab"[..], b"\x00", b"\x0b\x01", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"] {
            assert_eq!(
                read_message(bad, &sources(&[])).configured,
                Extracted::Unreadable(Unreadable::Malformed),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn nesting_past_the_bound_is_refused() {
        let mut msg = string_field(1, b"bob@mailinator.com");
        for _ in 0..100 {
            msg = string_field(2, &msg);
        }
        let read = read_message(&msg, &sources(&[]));
        assert_eq!(
            read.to_judge(16).problem,
            Some(crate::signup::extract::Problem::Unreadable(Unreadable::TooComplex))
        );
    }
}
