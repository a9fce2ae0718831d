//! Nobody real is turned away: real people's addresses and ordinary values that contain `@` reach
//! the app (200) through the block-mode gateway. Every domain here is safe in the fixture zones
//! (the test asks the sidecar), or is no address at all.

use serde_json::json;

use super::Trip;
use super::Via;
use super::corpus::{Case, SAFE};

/// Nine distinct safe registrable domains (fixture zones with real public suffixes): a team
/// invite within the gateway's bound of distinct domains per signup.
pub const TEAM: [&str; 9] = [
    "gmail.com",
    "googlemail.com",
    "outlook.com",
    "google.com",
    "hush.com",
    "duck.com",
    "baruchcc.edu",
    "gmial.com",
    "yhaoo.com",
];

fn case(what: &str, target: &str, ct: &str, body: Vec<u8>) -> Case {
    let headers = vec![("Content-Type".to_string(), ct.to_string())];
    Case { family: "benign", what: what.into(), target: target.into(), headers, body }
}

fn json_case(what: &str, doc: serde_json::Value) -> Case {
    case(what, "/signup", "application/json", doc.to_string().into_bytes())
}

/// A multipart part: (name, filename, content type, bytes).
type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

fn multipart(parts: &[Part]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, filename, ct, bytes) in parts {
        let file = filename.map(|f| format!("; filename=\"{f}\"")).unwrap_or_default();
        body.extend(format!("--B\r\nContent-Disposition: form-data; name=\"{name}\"{file}\r\n").as_bytes());
        if let Some(ct) = ct {
            body.extend(format!("Content-Type: {ct}\r\n").as_bytes());
        }
        body.extend(b"\r\n");
        body.extend_from_slice(bytes);
        body.extend(b"\r\n");
    }
    body.extend(b"--B--\r\n");
    body
}

pub fn cases() -> Vec<Case> {
    let team: Vec<String> = TEAM.iter().enumerate().map(|(i, d)| format!("member{i}@{d}")).collect();
    let long65 = format!("{}@gmail.com", "a".repeat(65));
    let long80 = format!("{}@outlook.com", "ann.lee.".repeat(10).trim_end_matches('.'));
    // An avatar: binary bytes with `@`, dots and a disposable-looking run inside.
    let mut avatar = b"\x89PNG\r\n\x1a\n\x00\x00@\xff\xfe".to_vec();
    avatar.extend(b"IDAT x@mailinator.com \x00\x01@ab--cd.mailinator.com\xff");
    let csv = b"email,name\r\nx@mailinator.com,X\r\ny@mailinator.com,Y\r\nbob@ab--cd.mailinator.com,B\r\n".to_vec();
    vec![
        json_case(
            "bio with dotted handles",
            json!({"email": SAFE, "bio": "Latte art daily, find me @the.coffee.shop and @jane.doe"}),
        ),
        json_case("medium.com/@jane.doe", json!({"email": SAFE, "website": "https://medium.com/@jane.doe"})),
        json_case(
            "write to a safe address in a note",
            json!({"email": SAFE, "note": "write to sales@outlook.com for invoices"}),
        ),
        json_case(
            "JSON-LD / OData keys",
            json!({"@context": "https://schema.org", "@type": "Person", "@odata.context": "$metadata#Users/$entity", "@odata.etag": "W/\"1\"", "email": SAFE}),
        ),
        json_case("password P@ssw0rd.shop, JSON", json!({"email": SAFE, "password": "P@ssw0rd.shop"})),
        case(
            "password P@ssw0rd.shop, form",
            "/signup",
            "application/x-www-form-urlencoded",
            b"email=ann%40gmail.com&password=P%40ssw0rd.shop".to_vec(),
        ),
        case(
            "password P@ssw0rd.shop, multipart",
            "/signup",
            "multipart/form-data; boundary=B",
            multipart(&[("email", None, None, SAFE.as_bytes()), ("password", None, None, b"P@ssw0rd.shop")]),
        ),
        json_case("team invite of 9 domains", json!({"email": SAFE, "invites": team})),
        case(
            "avatar file part (binary)",
            "/signup",
            "multipart/form-data; boundary=B",
            multipart(&[
                ("email", None, None, SAFE.as_bytes()),
                ("avatar", Some("me.png"), Some("image/png"), &avatar),
            ]),
        ),
        case(
            "CSV upload file part",
            "/signup",
            "multipart/form-data; boundary=B",
            multipart(&[
                ("email", None, None, SAFE.as_bytes()),
                ("contacts", Some("contacts.csv"), Some("text/csv"), &csv),
            ]),
        ),
        json_case("website https://user@host/", json!({"email": SAFE, "website": "https://ann@gmail.com/profile"})),
        json_case("65-character local part, configured field", json!({"email": long65})),
        json_case("80-character local part, configured field", json!({"email": long80})),
        json_case("Ann Smith <ann@gmail.com>, configured field", json!({"email": "Ann Smith <ann@gmail.com>"})),
        case(
            "Ann Smith <ann@gmail.com>, form",
            "/signup",
            "application/x-www-form-urlencoded",
            b"email=Ann+Smith+%3Cann%40gmail.com%3E".to_vec(),
        ),
    ]
}

/// Every benign case that did not reach the app with a 200.
pub fn refused(cases: &[Case], runs: &[(Via, Vec<Trip>)]) -> Vec<String> {
    let mut out = Vec::new();
    for (via, trips) in runs {
        for t in trips.iter().filter(|t| t.status != 200 || t.recorded.is_none()) {
            out.push(format!(
                "{}: {} got {} (reached the app: {})",
                via.name(),
                cases[t.case].what,
                t.status,
                t.recorded.is_some()
            ));
        }
    }
    println!("\nbenign signups refused by the gateway: {}", out.len());
    for line in &out {
        println!("  {line}");
    }
    out
}
