//! A verdict's `result`, shared and encoded once: a kept verdict ([`super::memo`]) answers many
//! lookups, each of which copied its MX hosts and addresses and encoded the same object again
//! (BENCHMARKS.md section 2). The JSON is the very bytes `serde_json` writes for the value.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use email_verdict_core::VerdictResult;

#[derive(Debug, Clone)]
pub struct SharedResult(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    value: VerdictResult,
    /// Encoded at the first answer that sends it, so a result only taken apart (a batch item,
    /// `check`, a page) is never encoded; `None` only if encoding failed (it cannot for this
    /// type): then encoded at each answer.
    json: OnceLock<Option<Box<RawValue>>>,
}

impl SharedResult {
    pub fn new(value: VerdictResult) -> Self {
        Self(Arc::new(Inner { value, json: OnceLock::new() }))
    }

    /// The value itself, copied only when it is still shared.
    pub fn into_owned(self) -> VerdictResult {
        match Arc::try_unwrap(self.0) {
            Ok(inner) => inner.value,
            Err(shared) => shared.value.clone(),
        }
    }
}

/// Equal when the values are: the JSON follows from the value.
impl PartialEq for SharedResult {
    fn eq(&self, other: &Self) -> bool {
        self.0.value == other.0.value
    }
}

impl Eq for SharedResult {}

impl Deref for SharedResult {
    type Target = VerdictResult;

    fn deref(&self) -> &VerdictResult {
        &self.0.value
    }
}

impl Serialize for SharedResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let json = self.0.json.get_or_init(|| serde_json::value::to_raw_value(&self.0.value).ok());
        match json {
            Some(json) => json.serialize(serializer),
            None => self.0.value.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use email_verdict_core::verdict::{MxHost, MxInfo, Signals, decide};
    use email_verdict_core::{Details, InputType, LookupRecord, LookupResponse};

    use super::*;

    #[test]
    fn a_response_with_the_shared_result_is_the_same_json_as_with_the_value() {
        let host =
            MxHost::new("mx.\"quoted\\.example", vec!["192.0.2.1".parse().unwrap(), "2001:db8::1".parse().unwrap()]);
        let mx = MxInfo::Mx { hosts: vec![host] };
        let value = decide(&Signals::default(), &mx, true);
        let record = LookupRecord {
            input: "ann@é.example".into(),
            input_type: InputType::Email,
            email: "ann@é.example".into(),
            domain: "xn--9ca.example".into(),
            did_you_mean: None,
            mx_unavailable: false,
            result: value.clone(),
            details: Details::default(),
        };
        let plain = LookupResponse { request_id: "r1".into(), record };
        let shared = LookupResponse {
            request_id: plain.request_id.clone(),
            record: plain.record.clone().map_result(SharedResult::new),
        };
        let expected = serde_json::to_string(&plain).unwrap();
        assert_eq!(serde_json::to_string(&shared).unwrap(), expected);
        // A clone answers with the bytes the first answer encoded.
        assert_eq!(serde_json::to_string(&shared.clone()).unwrap(), expected);
        assert_eq!(shared.record.result.clone().into_owned(), value);
    }
}
