//! Which request paths count as a signup route: as lenient as any app behind the proxy.
//!
//! An app (or its framework) may decode, merge, resolve, strip and fold a path before routing
//! it, so `//signup`, `/./signup`, `/%73ignup`, `/signup/`, `/signup;x`, `/SIGNUP` and
//! `/x/../signup` can all reach its `/signup` handler. The filter compares the *normalized* path
//! with the normalized configured one; treating a few odd paths as signups only costs an
//! inspection, while missing one is a bypass. Normalization (`CONFIG.md` documents it):
//! 1. the query and fragment are cut off; an absolute-form target loses `scheme://authority`;
//! 2. every `%XX` is decoded (so `%2F` is a `/`), once; a decoded `?` or `#` cuts again;
//! 3. `\` is a `/`;
//! 4. per segment, `;parameters` are dropped; empty segments (repeated or trailing slashes) and
//!    `.` are dropped, `..` drops the previous segment;
//! 5. ASCII letters are lowercased.
//!
//! Shared by the filter's routes and ext_authz's `graphql.paths`.

/// The normalized form of a request or configured path (always starts with `/`).
pub fn normalize(path: &str) -> String {
    let path = cut_query(path);
    let path = strip_scheme_and_authority(path);
    let decoded = percent_decode(path.as_bytes());
    let decoded = String::from_utf8_lossy(&decoded);
    let decoded = cut_query(&decoded);
    let mut segments: Vec<String> = Vec::new();
    for segment in decoded.split(['/', '\\']) {
        let segment = segment.split_once(';').map_or(segment, |(s, _)| s);
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s.to_ascii_lowercase()),
        }
    }
    format!("/{}", segments.join("/"))
}

/// `normalized` without a `.extension` on its last segment (`/signup.json` → `/signup`), as
/// frameworks with format suffixes (Rails, older Spring) route it; `None` when there is none.
pub fn without_extension(normalized: &str) -> Option<&str> {
    let (head, last) = normalized.rsplit_once('/')?;
    let dot = last.rfind('.').filter(|&i| i > 0)?;
    Some(&normalized[..head.len() + 1 + dot])
}

fn cut_query(path: &str) -> &str {
    path.find(['?', '#']).map_or(path, |i| &path[..i])
}

/// `http://host:port/x` → `/x`; anything not in absolute form is returned unchanged.
fn strip_scheme_and_authority(path: &str) -> &str {
    if path.starts_with('/') {
        return path;
    }
    match path.split_once("://") {
        Some((scheme, rest)) if !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            rest.find('/').map_or("/", |i| &rest[i..])
        }
        _ => path,
    }
}

fn percent_decode(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: Option<&u8>| b.and_then(|b| char::from(*b).to_digit(16));
        match (bytes[i], hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &str, expected: &str) {
        assert_eq!(normalize(path), expected, "{path:?}");
    }

    #[test]
    fn normalizes_every_variant_an_app_may_route_as_the_same_path() {
        let cases = [
            ("/signup", "/signup"),
            ("//signup", "/signup"),
            ("///signup", "/signup"),
            ("/./signup", "/signup"),
            ("/%73ignup", "/signup"),
            ("/%2Fsignup", "/signup"),
            ("/%2fsignup", "/signup"),
            ("/%5Csignup", "/signup"),
            ("/signup/", "/signup"),
            ("/signup//", "/signup"),
            ("/signup;x", "/signup"),
            ("/signup;jsessionid=1/", "/signup"),
            ("/sign;x/up", "/sign/up"),
            ("/signup?x=1", "/signup"),
            ("/signup#frag", "/signup"),
            ("/signup%3Fx=1", "/signup"),
            ("/SIGNUP", "/signup"),
            ("/SignUp", "/signup"),
            ("/x/../signup", "/signup"),
            ("/x/%2E%2E/signup", "/signup"),
            ("/../../signup", "/signup"),
            ("\\signup", "/signup"),
            ("http://shop.example/signup", "/signup"),
            ("https://shop.example:8443//signup/?x", "/signup"),
            ("http://shop.example", "/"),
            ("", "/"),
            ("/", "/"),
            ("*", "/*"),
            ("/api/Register/", "/api/register"),
            // A lone or broken escape stays as it is.
            ("/sign%up", "/sign%up"),
            ("/signup%", "/signup%"),
            ("/signup%4", "/signup%4"),
            // Not UTF-8 once decoded: replacement characters, never a panic.
            ("/%FF%FEsignup", "/\u{fffd}\u{fffd}signup"),
        ];
        for (path, expected) in cases {
            check(path, expected);
        }
    }

    #[test]
    fn extension_of_the_last_segment() {
        assert_eq!(without_extension("/signup.json"), Some("/signup"));
        assert_eq!(without_extension("/a.b/signup.tar.gz"), Some("/a.b/signup.tar"));
        assert_eq!(without_extension("/signup"), None);
        assert_eq!(without_extension("/a.b/signup"), None);
        assert_eq!(without_extension("/.hidden"), None);
        assert_eq!(without_extension("/"), None);
    }

    #[test]
    fn never_panics() {
        for s in ["%", "%%", "%%%", "/%", "\u{fffd}%", "é%C3", "://", "a://", "://x/y", "%C3%A9"] {
            let _ = normalize(s);
        }
    }
}
