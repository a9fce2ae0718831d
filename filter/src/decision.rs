//! Pure decisions: what a sidecar answer means and the callout's path. No host calls here.
//! What a verdict looks like on the request (flags, bypass values, local replies) is core's
//! `signup::outcome`, shared with the sidecar's ext_authz endpoint.

use email_verdict_core::signup::{Bypass, Flag, VerdictSummary};
use email_verdict_core::{Domain, ErrorBody, ErrorCode};
use serde::Deserialize;

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

/// The part of the sidecar's lookup answer (`core::LookupResponse`) the filter reads; serde
/// skips the rest. Far less code in the Wasm module than the whole record (flattened, with
/// `details`), which it is tested against.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    did_you_mean: Option<String>,
    #[serde(default)]
    mx_unavailable: bool,
    result: Judgement,
}

/// `result`'s fields that make a [`VerdictSummary`].
#[derive(Deserialize)]
struct Judgement {
    disposable: bool,
    free_provider: bool,
    business_email: bool,
    shared_mx: bool,
    has_mx: bool,
    review_required: bool,
    allowlisted: bool,
    blocked: bool,
    mx_ip_match: bool,
}

impl Answer {
    fn summary(&self, response: &CalloutResponse) -> VerdictSummary {
        let r = &self.result;
        let flags = [
            (r.free_provider, Flag::FreeProvider),
            (r.business_email, Flag::BusinessEmail),
            (r.shared_mx, Flag::SharedMx),
            (r.has_mx, Flag::HasMx),
            (r.review_required, Flag::ReviewRequired),
            (r.allowlisted, Flag::Allowlisted),
            (r.blocked, Flag::Blocked),
            (r.mx_ip_match, Flag::MxIpMatch),
        ];
        let summary = VerdictSummary {
            disposable: r.disposable,
            flags: flags.into_iter().filter_map(|(set, f)| set.then_some(f)).collect(),
            suggestion: None,
            source: response.source,
            mail: response.mail,
        };
        summary.with_suggestion(self.did_you_mean.as_deref())
    }
}

/// Envoy answers a timed-out callout with a synthetic 504 and a refused connection with 503.
pub fn classify(response: &CalloutResponse) -> CalloutOutcome {
    match response.status {
        Some(200) => match serde_json::from_slice::<Answer>(&response.body) {
            Ok(answer) => CalloutOutcome::Verdict(
                answer.summary(response),
                if answer.mx_unavailable { Keep::Briefly } else { Keep::Ttl },
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
    use email_verdict_core::{Mail, VerdictSource};

    fn response(status: Option<u16>, body: &str) -> CalloutResponse {
        CalloutResponse::plain(status, body.as_bytes().to_vec())
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
            let flags = flags.iter().copied().collect();
            Verdict(VerdictSummary { disposable, flags, suggestion: None, source: None, mail: None }, Keep::Ttl)
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

    /// The filter reads part of the answer: what it reads agrees with the whole record, as the
    /// sidecar writes it, for every combination of the flags.
    #[test]
    fn the_part_read_agrees_with_the_whole_record() {
        use email_verdict_core::api::{Details, InputType, LookupRecord, LookupResponse, Verdict};
        let base = email_verdict_core::verdict::decide(&Default::default(), &email_verdict_core::MxInfo::NoMx, false);
        for bits in 0u16..512 {
            let mut r = base.clone();
            let fields = [
                &mut r.free_provider,
                &mut r.business_email,
                &mut r.shared_mx,
                &mut r.has_mx,
                &mut r.review_required,
                &mut r.allowlisted,
                &mut r.blocked,
                &mut r.mx_ip_match,
                &mut r.disposable,
            ];
            for (i, field) in fields.into_iter().enumerate() {
                *field = bits & (1 << i) != 0;
            }
            // The spec's consistency rules: `verdict`, `temporary` and `safe` follow `disposable`.
            r.verdict = if r.disposable { Verdict::Disposable } else { Verdict::Safe };
            (r.temporary, r.safe) = (r.disposable, !r.disposable);
            let did_you_mean = (bits % 3 == 0).then(|| "ann@gmail.com".to_owned());
            let record = LookupRecord {
                input: "x.example".into(),
                input_type: InputType::Domain,
                email: String::new(),
                domain: "x.example".into(),
                did_you_mean: did_you_mean.clone(),
                mx_unavailable: bits % 5 == 0,
                result: r.clone(),
                details: Details::default(),
            };
            let body = serde_json::to_vec(&LookupResponse { request_id: "r".into(), record }).unwrap();
            let whole = VerdictSummary::from_result(&r).with_suggestion(did_you_mean.as_deref());
            let keep = if bits % 5 == 0 { Keep::Briefly } else { Keep::Ttl };
            assert_eq!(
                classify(&response(Some(200), std::str::from_utf8(&body).unwrap())),
                CalloutOutcome::Verdict(whole, keep)
            );
        }
    }

    #[test]
    fn the_source_and_the_mail_are_read_from_the_answers_headers() {
        let body = lookup_body("disposable", &[]).into_bytes();
        let headers = |source: &'static str, mail: &'static str| {
            move |name: &str| match name {
                ":status" => Some(b"200".to_vec()),
                "x-email-verdict-source" => Some(source.as_bytes().to_vec()),
                "x-email-verdict-mail" => Some(mail.as_bytes().to_vec()),
                _ => None,
            }
        };
        let told = CalloutResponse::read(headers("reviewer", "none"), body.clone());
        assert_eq!((told.status, told.source, told.mail), (Some(200), Some(VerdictSource::Reviewer), Some(Mail::None)));
        let CalloutOutcome::Verdict(summary, _) = classify(&told) else { panic!("a verdict") };
        assert_eq!((summary.source, summary.mail), (Some(VerdictSource::Reviewer), Some(Mail::None)));
        // An unknown value is not told (a newer sidecar's source is no mail state of ours).
        let odd = CalloutResponse::read(headers("Reviewer", "nowhere"), body);
        assert_eq!((odd.source, odd.mail), (None, None));
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
