//! A verdict's `result`, shared and encoded once: a kept verdict ([`super::memo`]) answers many
//! lookups, each of which copied its MX hosts and addresses and encoded the same object again
//! (BENCHMARKS.md section 2). The JSON is the very bytes `serde_json` writes for the value.

use std::ops::Deref;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use email_verdict_core::VerdictResult;

#[derive(Debug, Clone)]
pub struct SharedResult {
    value: Arc<VerdictResult>,
    /// `None` only if encoding failed (it cannot for this type): then encoded at each answer.
    json: Option<Arc<RawValue>>,
}

impl SharedResult {
    pub fn new(value: VerdictResult) -> Self {
        let json = serde_json::value::to_raw_value(&value).ok().map(Arc::from);
        Self { value: Arc::new(value), json }
    }

    /// The value itself, copied only when it is still shared.
    pub fn into_owned(self) -> VerdictResult {
        Arc::unwrap_or_clone(self.value)
    }
}

/// Equal when the values are: the JSON follows from the value.
impl PartialEq for SharedResult {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for SharedResult {}

impl Deref for SharedResult {
    type Target = VerdictResult;

    fn deref(&self) -> &VerdictResult {
        &self.value
    }
}

impl Serialize for SharedResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.json {
            Some(json) => json.serialize(serializer),
            None => self.value.serialize(serializer),
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
        assert_eq!(serde_json::to_string(&shared).unwrap(), serde_json::to_string(&plain).unwrap());
        assert_eq!(shared.record.result.clone().into_owned(), value);
    }
}
