//! The address-validator corpus: values the gateway's strict address parser ignores or reads as
//! something else, but that some app's email validator accepts and turns into an address at a
//! disposable domain (`validators.rs` says which). Deterministic (seeded): every value of every
//! family in every placement, the seed choosing the local parts, paddings and whether a permanent
//! address sits in the configured `email` field beside it.

use serde_json::json;

use super::corpus::{Case, Rng, SAFE};

/// The disposable domains the corpus aims at (both disposable in the shipped lists; the test
/// checks the sidecar says so). `abyssmail.com` is where `abyßmail.com` goes under IDNA 2003.
pub const TARGETS: [&str; 2] = ["mailinator.com", "abyssmail.com"];

/// (family, values) from the seed.
fn families(rng: &mut Rng) -> Vec<(&'static str, Vec<String>)> {
    let local = |rng: &mut Rng| rng.pick(&["bob", "ann.lee", "x", "j_doe"]).to_string();
    let mut labels = Vec::new();
    // IDNA 2008 / STD3 refuse these labels; validator.js, Django, PHP, Go... accept them.
    for label in ["ab--cd", "r3---sn", "xn--zz", "x_y", "-x", "x-"] {
        labels.push(format!("{}@{label}.mailinator.com", local(rng)));
    }
    let display = [
        "Bob <bob@mailinator.com>",
        "<bob@mailinator.com>",
        "bob@mailinator.com (Bob)",
        "bob(x)@mailinator.com",
        "mailto:bob@mailinator.com",
        "team:bob@mailinator.com;",
        "ann@gmail.com, bob@mailinator.com",
        "\"Bob, Jr.\" <bob@mailinator.com>",
    ];
    // Past the gateway's 320-byte limit only with the padding that validators strip.
    let mut padded = Vec::new();
    for pad in [" ", "\t", "\n", "\r\n", "\u{a0}", "\u{3000}", "\u{2003}", "\u{85}"] {
        let n = 303 + (rng.next() % 80) as usize;
        let addr = format!("{}@mailinator.com", local(rng));
        padded.push(match rng.next() % 3 {
            0 => format!("{}{addr}", pad.repeat(n)),
            1 => format!("{addr}{}", pad.repeat(n)),
            _ => format!("{}{addr}{}", pad.repeat(n / 2), pad.repeat(n - n / 2)),
        });
    }
    // IDNA 2003 (Python's codec, Django's mail sending) maps these onto a disposable domain;
    // UTS-46 nontransitional keeps ß and refuses or keeps the joiners.
    let idna2003 = [
        "bob@abyßmail.com",
        "bob@ABYẞMAIL.com",
        "bob@mail\u{200d}inator.com",
        "bob@mail\u{200c}inator.com",
        "bob@mailinator\u{3002}com",
        "bob@ｍａｉｌｉｎａｔｏｒ.com",
    ];
    let mut invisible = Vec::new();
    for c in ['\u{200b}', '\u{2060}', '\u{200e}', '\u{202e}', '\u{ad}', '\u{feff}', '\u{2028}', '\u{301}'] {
        invisible.push(format!("{c}{}@mailinator.com", local(rng)));
    }
    invisible.push("b\u{200b}ob@mailinator.com".into());
    let long = 65 + (rng.next() % 36) as usize;
    let lenient = vec![
        format!("{}@mailinator.com", "a".repeat(long)),
        format!("{}@mailinator.com", "ann.lee.".repeat(10).trim_end_matches('.')),
        ".bob@mailinator.com".into(),
        "bob.@mailinator.com".into(),
        "b..ob@mailinator.com".into(),
        "\"b\u{1}ob\"@mailinator.com".into(),
        "\"b\u{7f}ob\"@mailinator.com".into(),
        "bob@mailinator.com.".into(),
    ];
    let stripped = vec![
        "\u{1c}bob@mailinator.com".into(),
        "bob@mailinator.com\u{1f}".into(),
        "\u{1d}bob@mailinator.com\u{1e}".into(),
        "\u{feff}bob@mailinator.com".into(),
        "bob@mailinator.com\u{feff}".into(),
    ];
    vec![
        ("idna-refused-label", labels),
        ("display-name", display.map(String::from).to_vec()),
        ("whitespace-padding", padded),
        ("idna2003-mapping", idna2003.map(String::from).to_vec()),
        ("invisible-in-local", invisible),
        ("lenient-syntax", lenient),
        ("strip-controls", stripped),
    ]
}

fn form(s: &str) -> String {
    email_verdict_tests::envoy::form_encode(s)
}

fn multipart(parts: &[(&str, &str)]) -> Vec<u8> {
    let mut body = String::new();
    for (n, v) in parts {
        body.push_str(&format!("--B\r\nContent-Disposition: form-data; name=\"{n}\"\r\n\r\n{v}\r\n"));
    }
    body.push_str("--B--\r\n");
    body.into_bytes()
}

const JSON: &str = "application/json";
const FORM: &str = "application/x-www-form-urlencoded";
const MULTIPART: &str = "multipart/form-data; boundary=B";

/// One value in one placement: (placement, target, content type, body).
fn place(placement: usize, v: &str, beside: bool) -> (&'static str, String, &'static str, Vec<u8>) {
    let safe = if beside { Some(SAFE) } else { None };
    let with_safe = |mut doc: serde_json::Value| {
        if let Some(s) = safe {
            doc["email"] = json!(s);
        }
        doc.to_string().into_bytes()
    };
    let safe_form = safe.map(|s| format!("email={}&", form(s))).unwrap_or_default();
    let mut parts: Vec<(&str, &str)> = safe.map(|s| vec![("email", s)]).unwrap_or_default();
    match placement {
        0 => ("configured email, JSON", "/signup".into(), JSON, json!({"email": v}).to_string().into_bytes()),
        1 => ("configured email, form", "/signup".into(), FORM, format!("email={}", form(v)).into_bytes()),
        2 => ("configured email, multipart", "/signup".into(), MULTIPART, multipart(&[("email", v)])),
        3 => (
            "user[email], form",
            "/signup".into(),
            FORM,
            format!("{safe_form}user%5Bemail%5D={}", form(v)).into_bytes(),
        ),
        4 => ("/user/email, JSON", "/signup".into(), JSON, with_safe(json!({"user": {"email": v}}))),
        5 => ("object key, JSON", "/signup".into(), JSON, with_safe(json!({"invites": {v: "admin"}}))),
        6 => {
            let body = json!({"email": SAFE}).to_string().into_bytes();
            ("?contact= query", format!("/signup?contact={}", form(v)), JSON, body)
        }
        _ => {
            parts.push(("contact", v));
            ("multipart text part", "/signup".into(), MULTIPART, multipart(&parts))
        }
    }
}

/// Every family's values in every placement.
pub fn corpus(seed: u64) -> Vec<Case> {
    let mut rng = Rng::new(seed ^ 0xADD2_E55E);
    let mut out = Vec::new();
    for (family, values) in families(&mut rng) {
        for v in &values {
            for placement in 0..8 {
                let beside = rng.chance(75);
                let (wher, target, ct, body) = place(placement, v, beside);
                let what = format!(
                    "{v:?} in {wher}{}",
                    if beside && matches!(placement, 3 | 4 | 5 | 7) { " beside SAFE" } else { "" }
                );
                let headers = vec![("Content-Type".to_string(), ct.to_string())];
                out.push(Case { family, what, target, headers, body });
            }
        }
    }
    out
}
