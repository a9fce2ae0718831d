//! Password fields are never judged: a password shaped like an address (`P@ssw0rd.shop`) must not
//! become a domain the sidecar is asked about (a lookup by the filter, the judged domains of
//! `/ext_authz`). The evidence is the sidecar's log, which names the domain of every lookup and
//! the first judged domain of every `/ext_authz` check; the password-only signups make the
//! password's domain the first one if it were judged.

use serde_json::json;

use email_verdict_tests::envoy::Gateway;

use super::Via;
use super::corpus::{Case, SAFE};

/// The password's tail, unique enough to find in a log.
const MARK: &str = "ssw0rd";
const PASSWORD: &str = "P@ssw0rd.shop";

fn case(what: String, ct: &str, body: Vec<u8>) -> Case {
    let headers = vec![("Content-Type".to_string(), ct.to_string())];
    Case { family: "password", what, target: "/signup".into(), headers, body }
}

pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for name in ["password", "passwd", "pwd", "newPassword", "password_confirmation", "user[password]"] {
        for with_email in [true, false] {
            let email = if with_email { Some(SAFE) } else { None };
            let mut doc = json!({});
            if let Some(e) = email {
                doc["email"] = json!(e);
            }
            match name.strip_prefix("user[") {
                Some(inner) => {
                    let key = inner.trim_end_matches(']');
                    doc["user"] = json!({ key: PASSWORD });
                }
                None => doc[name] = json!(PASSWORD),
            }
            let lead = email.map(|e| format!("email={}&", e.replace('@', "%40"))).unwrap_or_default();
            let field = name.replace('[', "%5B").replace(']', "%5D");
            let mut parts = String::new();
            if let Some(e) = email {
                parts += &format!("--B\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n{e}\r\n");
            }
            parts += &format!("--B\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{PASSWORD}\r\n--B--\r\n");
            let w = if with_email { "with email" } else { "alone" };
            out.push(case(format!("{name} JSON {w}"), "application/json", doc.to_string().into_bytes()));
            let form = format!("{lead}{field}=P%40ssw0rd.shop").into_bytes();
            out.push(case(format!("{name} form {w}"), "application/x-www-form-urlencoded", form));
            out.push(case(format!("{name} multipart {w}"), "multipart/form-data; boundary=B", parts.into_bytes()));
        }
    }
    out
}

/// The sidecar's log lines that name the password's domain (every gateway's sidecar, after its
/// password cases).
pub fn judged(via: Via, gw: &Gateway) -> Vec<String> {
    let log = gw.sidecar.stderr_text();
    let lines: Vec<String> =
        log.lines().filter(|l| l.contains(MARK)).map(|l| format!("{}: the sidecar logged {l}", via.name())).collect();
    println!("{}: sidecar log lines naming the password's domain: {}", via.name(), lines.len());
    lines
}
