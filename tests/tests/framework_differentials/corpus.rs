//! The generated corpus of signups: deterministic (seeded), each case carrying the disposable
//! address somewhere a popular framework reads it, often next to a safe address where the
//! gateway looks first. Families are named so that a failure says which class walked through.

use super::encode::{gzip, utf16, utf32le, zlib};

pub const DISPOSABLE: &str = "x@mailinator.com";
pub const SAFE: &str = "ann@gmail.com";

/// One signup as the client sends it.
pub struct Case {
    pub family: &'static str,
    pub what: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// splitmix64: small, seeded, the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize].clone()
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Field names some framework reads as (or next to) `email`.
const NAMES: [&str; 16] = [
    "email",
    "[email]",
    "%5Bemail%5D",
    "email[]",
    "email[0]",
    "user[email]",
    "user%5Bemail%5D",
    "invitee_email",
    "Email",
    "EMAIL",
    "e%6Dail",
    "email ",
    " email",
    "email[][address]",
    "user.email",
    "emails[]",
];

/// A query that shows the gateway a safe address (or nothing), plus sometimes an extra field.
fn safe_query(rng: &mut Rng) -> String {
    rng.pick(&[
        "/signup?email=ann@gmail.com".to_string(),
        "/signup?email=ann%40gmail.com".to_string(),
        "/signup?email=ann@gmail.com&name=Ann".to_string(),
        "/signup".to_string(),
    ])
}

fn url_encode(s: &str) -> String {
    email_verdict_tests::envoy::form_encode(s)
}

fn case(family: &'static str, what: String, target: String, ct: Option<&str>, body: Vec<u8>) -> Case {
    let headers = ct.map(|c| vec![("Content-Type".to_string(), c.to_string())]).unwrap_or_default();
    Case { family, what, target, headers, body }
}

/// Issue 30 §1: a JSON body the gateway may skip (encoding, charset, type) behind a query address.
fn json_encoded(rng: &mut Rng) -> Case {
    let doc = rng.pick(&[
        format!(r#"{{"email":"{DISPOSABLE}"}}"#),
        format!(r#"{{"name":"Ann","email":"{DISPOSABLE}"}}"#),
        format!(r#"{{"user":{{"email":"{DISPOSABLE}"}}}}"#),
        format!(r#"[{{"email":"{DISPOSABLE}"}}]"#),
    ]);
    let (enc, ce, body): (&str, Option<&str>, Vec<u8>) = match rng.next() % 9 {
        0 => ("utf-8", None, doc.clone().into_bytes()),
        1 => ("gzip", Some("gzip"), gzip(doc.as_bytes())),
        2 => ("deflate", Some("deflate"), zlib(doc.as_bytes())),
        3 => ("utf-16le+bom", None, utf16(&doc, true, true)),
        4 => ("utf-16be+bom", None, utf16(&doc, false, true)),
        5 => ("utf-16le", None, utf16(&doc, true, false)),
        6 => ("utf-32le", None, utf32le(&doc)),
        7 => ("utf-8 bom", None, [b"\xEF\xBB\xBF".as_slice(), doc.as_bytes()].concat()),
        _ => ("gzip utf-16le", Some("gzip"), gzip(&utf16(&doc, true, true))),
    };
    let ct = rng.pick(&[
        Some("application/json"),
        Some("application/json; charset=utf-8"),
        Some("application/json; charset=utf-16"),
        Some("application/json; charset=utf-16le"),
        Some("text/plain"),
        Some("text/plain; charset=UTF-8"),
        None,
        Some("application/vnd.api+json"),
        Some("text/x-json"),
        Some("application/jsonrequest"),
        Some("application/octet-stream"),
        Some("application/x-www-form-urlencoded"),
    ]);
    let target = safe_query(rng);
    let mut c = case("json-encoded", format!("{enc} JSON as {ct:?}"), target, ct, body);
    if let Some(ce) = ce {
        c.headers.push(("Content-Encoding".into(), ce.into()));
    }
    c
}

/// JSON shapes: nesting, arrays, duplicate and case-variant keys, escapes.
fn json_shapes(rng: &mut Rng) -> Case {
    let x = DISPOSABLE;
    let doc = rng.pick(&[
        format!(r#"{{"user":{{"email":"{x}"}}}}"#),
        format!(r#"{{"email":["{x}"]}}"#),
        format!(r#"{{"email":{{"address":"{x}"}}}}"#),
        format!(r#"{{"email":"{SAFE}","email":"{x}"}}"#),
        format!(r#"{{"email":"{SAFE}","Email":"{x}"}}"#),
        format!(r#"{{"email":"{SAFE}","invitee_email":"{x}"}}"#),
        format!(r#"{{"email":"{SAFE}","invitees":[{{"email":"{x}"}}]}}"#),
        r#"{"email":"x\u0040mailinator.com"}"#.to_string(),
        r#"{"\u0065mail":"x@mailinator.com"}"#.to_string(),
        format!(r#"{{"data":{{"attributes":{{"email":"{x}"}}}}}}"#),
        format!(r#"["{x}"]"#),
        format!(r#"{{"email":"{SAFE}"}} {{"email":"{x}"}}"#),
        format!(r#"{{"email":" {x} "}}"#),
    ]);
    let ct = rng.pick(&["application/json", "application/json; charset=utf-8", "Application/JSON"]);
    let target = safe_query(rng);
    case("json-shapes", doc.clone(), target, Some(ct), doc.into_bytes())
}

/// Issue 30 §2: bracket and case names in a urlencoded body.
fn form_names(rng: &mut Rng) -> Case {
    let name = rng.pick(&NAMES);
    let value = rng.pick(&[url_encode(DISPOSABLE), DISPOSABLE.to_string(), "x%40mailinator%2Ecom".to_string()]);
    let mut body = format!("name=Mallory&{name}={value}");
    if rng.chance(30) {
        body = format!("email={}&{name}={value}", url_encode(SAFE));
    }
    if rng.chance(20) {
        body = body.replace('&', ";");
    }
    let ct = rng.pick(&[
        Some("application/x-www-form-urlencoded"),
        Some("application/x-www-form-urlencoded; charset=UTF-8"),
        Some("APPLICATION/X-WWW-FORM-URLENCODED"),
        None,
    ]);
    let gz = rng.chance(15);
    let target = safe_query(rng);
    let bytes = if gz { gzip(body.as_bytes()) } else { body.clone().into_bytes() };
    let what = format!("{name:?} as {ct:?}{}", if gz { " gzip" } else { "" });
    let mut c = case("form-names", what, target, ct, bytes);
    if gz {
        c.headers.push(("Content-Encoding".into(), "gzip".into()));
    }
    c
}

/// Query strings: `;` separators (Rack), brackets (qs, Rack, PHP), duplicates.
fn query_names(rng: &mut Rng) -> Case {
    // A request line has no spaces: a client encodes them.
    let name = rng.pick(&NAMES).replace(' ', "%20");
    let x = rng.pick(&[DISPOSABLE.to_string(), url_encode(DISPOSABLE)]);
    let query = rng.pick(&[
        format!("email={SAFE};{name}={x}"),
        format!("name=Ann;{name}={x}"),
        format!("{name}={x}"),
        format!("email={SAFE}&{name}={x}"),
        format!("{name}={x}&email={SAFE}"),
        format!("email={SAFE}&name=Ann;email={x}"),
        format!("email={SAFE}%26{name}%3D{x}"),
        format!("email={SAFE}#&{name}={x}"),
    ]);
    let (ct, body) = rng.pick(&[
        (Some("application/json"), format!(r#"{{"email":"{SAFE}"}}"#)),
        (Some("application/x-www-form-urlencoded"), format!("email={}", url_encode(SAFE))),
        (None, String::new()),
    ]);
    let what = query.replace(SAFE, "SAFE").replace(&x, "X");
    case("query-names", what, format!("/signup?{query}"), ct, body.into_bytes())
}

/// Well-framed multipart with the names of [`NAMES`] and the safe address in another part.
fn multipart_names(rng: &mut Rng) -> Case {
    let name = rng.pick(&NAMES).replace("%5B", "[").replace("%5D", "]").replace("%6D", "m");
    let mut parts = vec![("name", "Mallory".to_string())];
    if rng.chance(50) {
        parts.push(("email", SAFE.to_string()));
    }
    let mut body = String::new();
    for (n, v) in &parts {
        body.push_str(&format!("--B\r\nContent-Disposition: form-data; name=\"{n}\"\r\n\r\n{v}\r\n"));
    }
    let at = if rng.chance(50) { 0 } else { body.len() };
    let part = format!("--B\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{DISPOSABLE}\r\n");
    body.insert_str(at, &part);
    body.push_str("--B--\r\n");
    let target = safe_query(rng);
    let ct = "multipart/form-data; boundary=B";
    case("multipart-names", format!("part {name:?}"), target, Some(ct), body.into_bytes())
}

/// Issue 30 §3 and round 3: framing that parsers split differently.
fn multipart_framing(rng: &mut Rng) -> Case {
    let x = DISPOSABLE;
    let cd = |n: &str| format!("Content-Disposition: form-data; name=\"{n}\"");
    let safe = format!("--B\r\n{}\r\n\r\n{SAFE}\r\n", cd("email"));
    let hidden = format!("--B\r\n{}\r\n\r\n{x}\r\n", cd("email"));
    let ct = "multipart/form-data; boundary=B".to_string();
    let variants: Vec<(&str, String, String)> = vec![
        (
            "delimiter mid-line",
            ct.clone(),
            format!("--B\r\n{}\r\n\r\nhi --B\r\n{}\r\n\r\n{x}\r\n--B--\r\n", cd("note"), cd("email")),
        ),
        (
            "delimiter mid-line after safe",
            ct.clone(),
            format!("{safe}--B\r\n{}\r\n\r\nhi --B\r\n{}\r\n\r\n{x}\r\n--B--\r\n", cd("note"), cd("email")),
        ),
        ("part in the epilogue", ct.clone(), format!("{safe}--B--\r\n{hidden}--B--\r\n")),
        ("part in the epilogue, no CRLF", ct.clone(), format!("{safe}--B--{hidden}--B--\r\n")),
        (
            "preamble with a mid-line delimiter",
            ct.clone(),
            format!("junk--B\r\n{}\r\n\r\n{x}\r\n{safe}--B--\r\n", cd("email")),
        ),
        ("preamble", ct.clone(), format!("preamble\r\n{hidden}--B--\r\n")),
        (
            "x-name before name",
            ct.clone(),
            format!(
                "--B\r\nContent-Disposition: form-data; x-name=\"email\"; name=\"note\"\r\n\r\n{x}\r\n{safe}--B--\r\n"
            ),
        ),
        (
            "x-boundary before boundary",
            "multipart/form-data; x-boundary=A; boundary=B".into(),
            format!("--A\r\n{}\r\n\r\n{x}\r\n--A--\r\n{safe}--B--\r\n", cd("email")),
        ),
        (
            "multipart params on urlencoded",
            "application/x-www-form-urlencoded; x=multipart; boundary=B".into(),
            format!("{hidden}--B--\r\n"),
        ),
        (
            "multipart params on text/plain",
            "text/plain; x=multipart/form-data; boundary=B".into(),
            format!("{hidden}--B--\r\n"),
        ),
        ("bare LF", ct.clone(), format!("{hidden}--B--\r\n").replace("\r\n", "\n")),
        ("bare CR", ct.clone(), format!("{hidden}--B--\r\n").replace("\r\n", "\r")),
        ("bare LF after safe", ct.clone(), format!("{safe}{}--B--\r\n", hidden.replace("\r\n", "\n"))),
        ("no close delimiter", ct.clone(), format!("{safe}{hidden}")),
        (
            "two Content-Disposition",
            ct.clone(),
            format!("--B\r\n{}\r\n{}\r\n\r\n{x}\r\n--B--\r\n", cd("note"), cd("email")),
        ),
        (
            "filename on the email part",
            ct.clone(),
            format!("--B\r\nContent-Disposition: form-data; name=\"email\"; filename=\"\"\r\n\r\n{x}\r\n--B--\r\n"),
        ),
        (
            "text/plain part",
            ct.clone(),
            format!("--B\r\n{}\r\nContent-Type: text/plain\r\n\r\n{x}\r\n--B--\r\n", cd("email")),
        ),
        (
            "utf-16 part",
            ct.clone(),
            format!("--B\r\n{}\r\nContent-Type: text/plain; charset=utf-16\r\n\r\n", cd("email")),
        ),
        ("duplicate email, disposable last", ct.clone(), format!("{safe}{hidden}--B--\r\n")),
        ("quoted boundary", "multipart/form-data; boundary=\"B\"".into(), format!("{hidden}--B--\r\n")),
        ("boundary case", "multipart/form-data; BOUNDARY=B".into(), format!("{hidden}--B--\r\n")),
        ("transport padding", ct.clone(), format!("--B  \r\n{}\r\n\r\n{x}\r\n--B--\r\n", cd("email"))),
        (
            "name unquoted",
            ct.clone(),
            format!("--B\r\nContent-Disposition: form-data; name=email\r\n\r\n{x}\r\n--B--\r\n"),
        ),
        (
            "name single-quoted",
            ct.clone(),
            format!("--B\r\nContent-Disposition: form-data; name='email'\r\n\r\n{x}\r\n--B--\r\n"),
        ),
        (
            "name*=",
            ct.clone(),
            format!("--B\r\nContent-Disposition: form-data; name*=utf-8''email\r\n\r\n{x}\r\n--B--\r\n"),
        ),
        (
            "folded header",
            ct.clone(),
            format!("--B\r\nContent-Disposition: form-data;\r\n name=\"email\"\r\n\r\n{x}\r\n--B--\r\n"),
        ),
        ("mixed/nested", "multipart/mixed; boundary=B".into(), format!("{hidden}--B--\r\n")),
        ("gzip multipart", ct.clone(), format!("{hidden}--B--\r\n")),
    ];
    let (what, ct, body) = rng.pick(&variants);
    let mut bytes = body.clone().into_bytes();
    if what == "utf-16 part" {
        bytes.extend(utf16(x, true, true));
        bytes.extend(b"\r\n--B--\r\n");
    }
    let gz = what == "gzip multipart";
    if gz {
        bytes = gzip(&bytes);
    }
    let target = safe_query(rng);
    let mut c = case("multipart-framing", what.to_string(), target, Some(&ct), bytes);
    if gz {
        c.headers.push(("Content-Encoding".into(), "gzip".into()));
    }
    c
}

/// Charsets and percent-encodings of form bodies.
fn form_charsets(rng: &mut Rng) -> Case {
    let (what, ct, body): (&str, &str, Vec<u8>) = match rng.next() % 6 {
        0 => (
            "utf-16 form",
            "application/x-www-form-urlencoded; charset=utf-16",
            utf16("email=x%40mailinator.com", true, true),
        ),
        1 => (
            "latin1 form",
            "application/x-www-form-urlencoded; charset=iso-8859-1",
            b"email=x%40mailinator.com".to_vec(),
        ),
        2 => (
            "percent-encoded name and value",
            "application/x-www-form-urlencoded",
            b"%65%6D%61%69%6C=%78%40%6D%61%69%6C%69%6E%61%74%6F%72%2E%63%6F%6D".to_vec(),
        ),
        3 => ("utf-7 form", "application/x-www-form-urlencoded; charset=utf-7", b"email=x+AEA-mailinator.com".to_vec()),
        4 => (
            "BOM before the name",
            "application/x-www-form-urlencoded",
            b"\xEF\xBB\xBFemail=x%40mailinator.com".to_vec(),
        ),
        _ => ("deflate form", "application/x-www-form-urlencoded", zlib(b"email=x%40mailinator.com")),
    };
    let target = safe_query(rng);
    let mut c = case("form-charsets", what.into(), target, Some(ct), body);
    if what == "deflate form" {
        c.headers.push(("Content-Encoding".into(), "deflate".into()));
    }
    c
}

/// `n` cases from `seed`, the families in turn.
pub fn corpus(seed: u64, n: usize) -> Vec<Case> {
    let families: [fn(&mut Rng) -> Case; 7] =
        [json_encoded, json_shapes, form_names, query_names, multipart_names, multipart_framing, form_charsets];
    let mut rng = Rng::new(seed);
    (0..n).map(|i| families[i % families.len()](&mut rng)).collect()
}
