//! Pure decisions: what a sidecar answer means and the callout's path. No host calls here.
//! What a verdict looks like on the request (flags, bypass values, local replies) is core's
//! `signup::outcome`, shared with the sidecar's ext_authz endpoint.

use email_verdict_core::signup::{Bypass, VerdictSummary};
use email_verdict_core::{Domain, ErrorBody, ErrorCode, LookupResponse};

use crate::host::CalloutResponse;

/// What a sidecar answer means for the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalloutOutcome {
    /// A verdict, and how long it may be cached.
    Verdict(VerdictSummary, Keep),
    /// The sidecar said `invalid_input`: handled as `on_invalid_email`.
    InvalidEmail,
    /// No verdict: handled as `failure_mode`, with this bypass value.
    Failed(Bypass),
}

/// How long a verdict may be cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The configured `cache.ttl_seconds`.
    Ttl,
    /// The sidecar answered without MX data (`mx_unavailable`: DNS failing or slow): briefly
    /// ([`crate::cache::VerdictCache::briefly`]), so the full answer replaces it soon.
    Briefly,
}

/// Envoy answers a timed-out callout with a synthetic 504 and a refused connection with 503.
pub fn classify(response: &CalloutResponse) -> CalloutOutcome {
    match response.status {
        Some(200) => match serde_json::from_slice::<LookupResponse>(&response.body) {
            Ok(lookup) => CalloutOutcome::Verdict(
                VerdictSummary::from_result(&lookup.record.result)
                    .with_suggestion(lookup.record.did_you_mean.as_deref()),
                if lookup.record.mx_unavailable { Keep::Briefly } else { Keep::Ttl },
            ),
            Err(_) => CalloutOutcome::Failed(Bypass::SidecarError),
        },
        Some(400) => match serde_json::from_slice::<ErrorBody>(&response.body) {
            Ok(body) if body.error.code == ErrorCode::InvalidInput => CalloutOutcome::InvalidEmail,
            _ => CalloutOutcome::Failed(Bypass::SidecarError),
        },
        Some(504) => CalloutOutcome::Failed(Bypass::SidecarTimeout),
        Some(401 | 402 | 429) => CalloutOutcome::Failed(Bypass::SidecarRejected),
        _ => CalloutOutcome::Failed(Bypass::SidecarError),
    }
}

/// `/api/v1/domain/<domain, percent-encoded>`: only the domain leaves the proxy; with
/// `?learn=false` for a name found in free text (no review queue, no RDAP at the sidecar).
pub fn lookup_path(domain: &Domain, mention: bool) -> String {
    let mut path = String::from("/api/v1/domain/");
    for b in domain.as_str().bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            path.push(char::from(b));
        } else {
            path.push_str(&format!("%{b:02X}"));
        }
    }
    if mention {
        path.push_str("?learn=false");
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use email_verdict_core::signup::Flag;

    fn response(status: Option<u16>, body: &str) -> CalloutResponse {
        CalloutResponse { status, body: body.as_bytes().to_vec() }
    }

    fn lookup_body(verdict: &str, flags: &[&str]) -> String {
        String::from_utf8(crate::mock_host::lookup_response("mailinator.com", verdict, flags).body).unwrap()
    }

    fn error_body(code: &str) -> String {
        String::from_utf8(crate::mock_host::error_response(400, code).body).unwrap()
    }

    #[test]
    fn classifies_sidecar_answers() {
        use Bypass::{SidecarError, SidecarRejected, SidecarTimeout};
        use CalloutOutcome::*;
        let verdict = |disposable, flags: &[Flag]| {
            Verdict(VerdictSummary { disposable, flags: flags.iter().copied().collect(), suggestion: None }, Keep::Ttl)
        };
        let cases: &[(Option<u16>, String, CalloutOutcome)] = &[
            (Some(200), lookup_body("disposable", &["has_mx"]), verdict(true, &[Flag::HasMx])),
            (
                Some(200),
                lookup_body("safe", &["free_provider", "mx_ip_match"]),
                verdict(false, &[Flag::FreeProvider, Flag::MxIpMatch]),
            ),
            (Some(200), "not json".into(), Failed(SidecarError)),
            (Some(200), "{}".into(), Failed(SidecarError)),
            (Some(400), error_body("invalid_input"), InvalidEmail),
            (Some(400), "garbage".into(), Failed(SidecarError)),
            (Some(401), error_body("api_key_invalid"), Failed(SidecarRejected)),
            (Some(401), error_body("missing_api_key"), Failed(SidecarRejected)),
            (Some(402), error_body("quota_exceeded"), Failed(SidecarRejected)),
            (Some(429), error_body("rate_limit_exceeded"), Failed(SidecarRejected)),
            (Some(500), error_body("internal_error"), Failed(SidecarError)),
            (Some(503), "upstream connect error".into(), Failed(SidecarError)),
            (Some(504), "upstream request timeout".into(), Failed(SidecarTimeout)),
            (Some(404), error_body("not_found"), Failed(SidecarError)),
            (Some(302), String::new(), Failed(SidecarError)),
            (None, String::new(), Failed(SidecarError)),
        ];
        for (status, body, expected) in cases {
            assert_eq!(&classify(&response(*status, body)), expected, "{status:?} {body}");
        }
    }

    #[test]
    fn an_answer_without_mx_data_is_kept_briefly() {
        let body = lookup_body("disposable", &[]).replacen('{', r#"{"mx_unavailable": true, "#, 1);
        let outcome = classify(&response(Some(200), &body));
        assert!(matches!(outcome, CalloutOutcome::Verdict(ref s, Keep::Briefly) if s.disposable), "{outcome:?}");
    }

    #[test]
    fn lookup_path_carries_only_the_domain() {
        let path = |name: &str, mention| lookup_path(&Domain::parse(name).unwrap(), mention);
        assert_eq!(path("Mailinator.COM", false), "/api/v1/domain/mailinator.com");
        assert_eq!(path("bücher.example", false), "/api/v1/domain/xn--bcher-kva.example");
        assert_eq!(path("the.coffee.shop", true), "/api/v1/domain/the.coffee.shop?learn=false");
    }
}
