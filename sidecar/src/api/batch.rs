//! `POST /api/v1/domains`: verdicts for 1 to 1,000 inputs in one request, in input order.
//!
//! Same key, limits and headers as the single lookup: the request takes one place in the burst
//! window and one unit of daily quota per valid input, all admitted in one step or refused
//! whole (`402`, nothing counted); units of inputs that get no verdict (a DNS or store failure)
//! are given back. Lookups run at most [`CONCURRENCY`] at a time, through the same MX cache and
//! single flight as every other lookup, so a batch never has more than that many resolutions
//! under way.

use email_verdict_core::{BatchItem, BatchRequest, BatchResponse, ErrorCode, LookupInput};
use futures::StreamExt;
use pingora::protocols::http::ServerSession;

use super::body::read_body;
use super::lookup::{post_with_key, verdict_of};
use super::{Api, ApiError, LogFields, Reply, Request};
use crate::verdicts::{SharedResult, record};

pub const PATH: &str = "/api/v1/domains";
/// Lookups of one batch under way at once.
pub const CONCURRENCY: usize = 16;
/// 1,000 inputs of at most 254 octets, JSON-quoted, fit well within.
const MAX_BODY_BYTES: usize = 1 << 20;

pub async fn handle(api: &Api, session: &mut ServerSession, request: &Request, log: &mut LogFields) -> Reply {
    let key = match post_with_key(api, session, request, log).await {
        Ok(key) => key,
        Err(reply) => return reply,
    };
    let inputs = match inputs(session).await {
        Ok(inputs) => inputs,
        Err(e) => return e.into(),
    };
    let parsed: Vec<Result<LookupInput, String>> =
        inputs.iter().map(|raw| LookupInput::parse(raw).map_err(|e| e.to_string())).collect();
    let valid = parsed.iter().filter(|p| p.is_ok()).count() as u64;
    let mut grant = match api.limiter.admit(&key, valid).await {
        Ok(grant) => grant,
        Err(e) => return ApiError::from(e).into(),
    };
    let results: Vec<BatchItem> = futures::stream::iter(inputs.into_iter().zip(parsed))
        .map(|(raw, parsed)| async move {
            match parsed {
                Err(message) => BatchItem::error(raw, ErrorCode::InvalidInput, message),
                Ok(input) => match verdict_of(api, &input).await {
                    Ok(judged) => {
                        BatchItem::Record(Box::new(record(&raw, &input, judged).map_result(SharedResult::into_owned)))
                    }
                    Err(e) => BatchItem::error(raw, e.code, e.message),
                },
            }
        })
        .buffered(CONCURRENCY)
        .collect()
        .await;
    let failed =
        results.iter().filter(|i| matches!(i, BatchItem::Error { error, .. } if error.code != ErrorCode::InvalidInput));
    api.limiter.refund(&mut grant, failed.count() as u64).await;
    log.items = Some(results.len());
    Reply::Batch(Box::new(BatchResponse { request_id: request.id.clone(), results }), grant.headers())
}

/// The body's inputs: JSON `{"inputs": [...]}` with 1 to 1,000 strings.
async fn inputs(session: &mut ServerSession) -> Result<Vec<String>, ApiError> {
    let invalid = |message: String| ApiError::new(ErrorCode::InvalidInput, message);
    let body = read_body(session, MAX_BODY_BYTES).await.map_err(|e| invalid(e.message(MAX_BODY_BYTES)))?;
    let inputs = parse_inputs(&body).map_err(|why| invalid(format!("{why}; the body is {SHAPE}")))?;
    match inputs.len() {
        0 => Err(invalid("\"inputs\" is empty: give 1 to 1000 domains or emails".to_owned())),
        n if n > BatchRequest::MAX_INPUTS => {
            Err(invalid(format!("{n} inputs: at most {} in one request", BatchRequest::MAX_INPUTS)))
        }
        _ => Ok(inputs),
    }
}

const SHAPE: &str = r#"{"inputs": ["domain or email", ...]}"#;

/// The inputs of a batch body, or what is wrong with it in the API's words (not serde's).
fn parse_inputs(body: &[u8]) -> Result<Vec<String>, String> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| "the body is not JSON".to_owned())?;
    let serde_json::Value::Object(mut object) = value else {
        return Err("the body is not a JSON object".to_owned());
    };
    if let Some(other) = object.keys().find(|k| *k != "inputs") {
        return Err(format!("unknown field {other:?}"));
    }
    let Some(inputs) = object.remove("inputs") else { return Err("\"inputs\" is missing".to_owned()) };
    let serde_json::Value::Array(items) = inputs else { return Err("\"inputs\" is not an array".to_owned()) };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            serde_json::Value::String(s) => Ok(s),
            _ => Err(format!("\"inputs\"[{i}] is not a string")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_bodies_are_named_in_the_apis_words() {
        let check = |body: &str, expected: Result<Vec<&str>, &str>| {
            let got = parse_inputs(body.as_bytes());
            assert_eq!(
                got,
                expected.map(|v| v.into_iter().map(str::to_owned).collect()).map_err(str::to_owned),
                "{body}"
            );
        };
        check(r#"{"inputs": ["a.example", "b@c.example"]}"#, Ok(vec!["a.example", "b@c.example"]));
        check("not json", Err("the body is not JSON"));
        check(r#"["a.example"]"#, Err("the body is not a JSON object"));
        check(r#"{"inputs": "a.example"}"#, Err("\"inputs\" is not an array"));
        check(r#"{"input": []}"#, Err("unknown field \"input\""));
        check("{}", Err("\"inputs\" is missing"));
        check(r#"{"inputs": ["a.example", 7]}"#, Err("\"inputs\"[1] is not a string"));
    }
}
