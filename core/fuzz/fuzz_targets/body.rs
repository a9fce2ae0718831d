//! Any request: the first line is the `content-type`, the second the request path with its
//! query, the rest the body. Extraction never panics, and an email it reports is never blank
//! (blank values count as absent).
#![no_main]

use email_verdict_core::signup::EmailSources;
use email_verdict_core::signup::extract::{self, BodyKind, Extracted};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |b| *b == b'\n');
    let content_type = parts.next().unwrap_or_default();
    let path = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let body = parts.next().unwrap_or_default();
    let sources = EmailSources {
        headers: vec!["x-email".into()],
        query_params: vec!["email".into()],
        json_pointers: vec!["/email".into(), "/user/email".into()],
        form_fields: vec!["email".into(), "user[email]".into()],
    };
    let kind = BodyKind::for_request(&[content_type.to_vec()], &[], &sources);
    assert_eq!(kind, BodyKind::from_content_type(Some(content_type)));
    for found in [
        extract::from_body(&kind, body, &sources),
        extract::from_query(&path, &sources.query_params),
        extract::from_header_values(body.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()),
    ] {
        if let Extracted::Email(email) = found {
            assert!(!email.trim().is_empty());
        }
    }
});
