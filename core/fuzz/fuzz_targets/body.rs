//! Any request: the first line is the `content-type` (then, after `|`, a content coding and after
//! another `|` a gRPC/Connect message coding), the second the request path with its query, the rest
//! the body (any format: JSON, forms, gRPC, Connect, GraphQL, compressed). Extraction never panics, an email it reports is never blank
//! (blank values count as absent), and no more names than the bounds are judged.
#![no_main]

use email_verdict_core::signup::EmailSources;
use email_verdict_core::signup::extract::{
    self, BodyKind, Carried, DEFAULT_MAX_DOMAINS, Domains, Extracted, NAMES_PER_DOMAIN, Problem, scan,
};
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
        secret_fields: vec!["password".into()],
        proto_fields: vec!["1".into(), "3.1".into()],
    };
    let mut pieces = content_type.split(|b| *b == b'|');
    let content_type = pieces.next().unwrap_or_default().to_vec();
    let content_encoding: Vec<Vec<u8>> = pieces.next().map(<[u8]>::to_vec).into_iter().collect();
    let message_encoding: Vec<Vec<u8>> = pieces.next().map(<[u8]>::to_vec).into_iter().collect();
    let kind = BodyKind::for_request(&|name| match name {
        "content-type" => vec![content_type.clone()],
        "content-encoding" => content_encoding.clone(),
        "grpc-encoding" | "connect-content-encoding" => message_encoding.clone(),
        _ => Vec::new(),
    });
    let operations = ["signUp".to_owned()];
    let _ = extract::graphql::is_signup(&kind, body, &operations, 1 << 16);
    let headers = extract::from_header_values(body.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect());
    let query = extract::read_query(&path, &sources);
    let read = extract::read_body(&kind, body, &sources, 1 << 16);
    for found in [&read.configured, &query.configured, &headers] {
        if let Extracted::Email(email) = found {
            assert!(!email.trim().is_empty());
        }
    }
    let whole = Carried::new(headers, Domains::default()).and(query).and(read).to_judge(DEFAULT_MAX_DOMAINS);
    if !matches!(whole.problem, Some(Problem::TooManyDomains | Problem::Unreadable(_))) {
        assert!(whole.names.len() <= DEFAULT_MAX_DOMAINS * NAMES_PER_DOMAIN);
    }
    let text = String::from_utf8_lossy(body);
    scan::names_in(&text, |_| {});
    if let Some(address) = scan::unwrapped(&text) {
        assert!(address.contains('@'));
    }
});
