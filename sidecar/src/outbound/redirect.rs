//! Which redirects an outbound request follows: to the same origin only (scheme, host and
//! port, as written in the URLs: `127.0.0.1` and `localhost` are two hosts), or from `http` to
//! `https` on the same host with both default ports (the upgrade list hosts make). Never to
//! another host, never from `https` down to `http`, never to a URL with user information.

use ureq::http::Uri;

use super::Refusal;

/// The statuses that redirect a GET.
pub(super) fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Where `location` (a `Location` header answered to a request for `from`) leads, if it may
/// be followed.
pub(super) fn target(from: &Uri, location: &str) -> Result<Uri, Refusal> {
    let to = absolute(from, location).ok_or(Refusal::Redirect)?;
    let (a, b) = (origin(from).ok_or(Refusal::Redirect)?, origin(&to).ok_or(Refusal::Redirect)?);
    let upgrade = a.0 == "http" && b.0 == "https" && a.1 == b.1 && a.2 == 80 && b.2 == 443;
    if a == b || upgrade { Ok(to) } else { Err(Refusal::Redirect) }
}

/// `location` made absolute against `from` (RFC 3986 section 5.2, without dot segments: the
/// server resolves those), without its fragment.
fn absolute(from: &Uri, location: &str) -> Option<Uri> {
    let location = location.trim().split('#').next().unwrap_or_default();
    let (scheme, authority) = (from.scheme_str()?, from.authority()?.as_str());
    let text = if location.starts_with("//") {
        format!("{scheme}:{location}")
    } else if location.starts_with('/') {
        format!("{scheme}://{authority}{location}")
    } else if has_scheme(location) {
        location.to_owned()
    } else {
        let path = from.path();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{scheme}://{authority}{dir}{location}")
    };
    let uri: Uri = text.parse().ok()?;
    uri.authority().is_some().then_some(uri)
}

fn has_scheme(s: &str) -> bool {
    s.split_once(':').is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// Scheme, host (lower case) and port of an `http(s)` URL without user information.
fn origin(uri: &Uri) -> Option<(String, String, u16)> {
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = uri.authority()?;
    if authority.as_str().contains('@') {
        return None;
    }
    Some((scheme, authority.host().to_ascii_lowercase(), authority.port_u16().unwrap_or(default)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(from: &str, location: &str, want: Option<&str>) {
        let got = target(&from.parse().unwrap(), location).ok().map(|u| u.to_string());
        assert_eq!(got.as_deref(), want, "{from} -> {location}");
    }

    #[test]
    fn same_origin_or_an_upgrade_only() {
        let from = "http://lists.example/a/b.txt?x=1";
        check(from, "/c.txt", Some("http://lists.example/c.txt"));
        check(from, "c.txt", Some("http://lists.example/a/c.txt"));
        check(from, "//lists.example/d", Some("http://lists.example/d"));
        check(from, "http://LISTS.example:80/e#frag", Some("http://LISTS.example:80/e"));
        check(from, "https://lists.example/f", Some("https://lists.example/f"));
        check(
            "https://r.example:8443/rdap/domain/a.example",
            "/rdap/v2/a.example",
            Some("https://r.example:8443/rdap/v2/a.example"),
        );
        check(from, "http://other.example/c.txt", None);
        check(from, "//other.example/c.txt", None);
        check(from, "http://lists.example:8080/c.txt", None);
        check(from, "https://lists.example:8443/c.txt", None);
        check(from, "http://user@lists.example/c.txt", None);
        check(from, "ftp://lists.example/c.txt", None);
        check("https://lists.example/a", "http://lists.example/a", None);
        check("http://127.0.0.1:8080/a", "http://localhost:8080/a", None);
        check("http://127.0.0.1:8080/a", "http://127.0.0.1:8081/a", None);
        check(from, "http://[::1", None);
    }
}
