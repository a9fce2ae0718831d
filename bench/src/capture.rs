//! One HTTP answer kept as data: what `bench-bare` replays, byte for byte.

use email_verdict_tests::Response;
use serde::{Deserialize, Serialize};

/// Headers that belong to one connection rather than to the answer (captures are made on
/// `Connection: close` requests; wrk keeps its connections open).
const HOP_BY_HOP: [&str; 3] = ["connection", "keep-alive", "transfer-encoding"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captured {
    pub status: u16,
    /// In the order received, names as received.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Captured {
    pub fn from_response(r: &Response) -> anyhow::Result<Self> {
        let headers =
            r.headers.iter().filter(|(n, _)| !HOP_BY_HOP.iter().any(|h| n.eq_ignore_ascii_case(h))).cloned().collect();
        let body = String::from_utf8(r.body.clone()).map_err(|_| anyhow::anyhow!("the body is not UTF-8"))?;
        Ok(Self { status: r.status, headers, body })
    }

    /// `200 {"ok":true}`: the app behind Envoy.
    pub fn ok() -> Self {
        let body = r#"{"ok":true}"#.to_owned();
        let headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("content-length".to_owned(), body.len().to_string()),
        ];
        Self { status: 200, headers, body }
    }

    /// The same answer: status, body and headers (names compared case-insensitively, as HTTP
    /// does), except `Date`, which Pingora adds when the answer has none.
    pub fn same_answer(&self, other: &Captured) -> bool {
        let headers = |c: &Captured| {
            let mut h: Vec<(String, String)> = c
                .headers
                .iter()
                .filter(|(n, _)| !n.eq_ignore_ascii_case("date"))
                .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
                .collect();
            h.sort();
            h
        };
        self.status == other.status && self.body == other.body && headers(self) == headers(other)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> anyhow::Result<Self> {
        Ok(serde_json::from_str(text)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_answer_ignores_header_case_and_date_only() {
        let mut other = Captured::ok();
        other.headers = other.headers.iter().map(|(n, v)| (n.to_uppercase(), v.clone())).collect();
        other.headers.push(("Date".into(), "Sun, 22 Nov 2026 08:12:44 GMT".into()));
        assert!(Captured::ok().same_answer(&other));
        other.headers.push(("x-extra".into(), "1".into()));
        assert!(!Captured::ok().same_answer(&other));
        let mut body = Captured::ok();
        body.body.push(' ');
        assert!(!Captured::ok().same_answer(&body));
    }
}
