//! A recording host for native tests: request headers and body, shared data with CAS versions
//! (shared between "workers" through an `Rc`), dispatched callouts, local responses, counters
//! and logs; every call can be made to fail.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use crate::cache::{SharedData, SharedDataError};
use crate::host::{Counter, Host, HostError, LogLevel, RequestHeaders};

/// Shared data as Envoy keeps it: a version per key, bumped on every write.
pub type Store = Rc<RefCell<HashMap<String, (Vec<u8>, u32)>>>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatched {
    pub cluster: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout: Duration,
    pub token: u32,
}

impl Dispatched {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub status: u16,
    pub details: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub grpc_status: Option<u8>,
}

impl Sent {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Which host calls fail (with `BadArgument`, as Envoy answers when headers are gone).
#[derive(Debug, Clone, Default)]
pub struct Failures {
    pub set_header: bool,
    pub remove_header: bool,
    pub read_header: bool,
    pub body: bool,
    pub dispatch: bool,
    pub local_response: bool,
    pub resume: bool,
    pub shared_data: bool,
}

#[derive(Debug, Default)]
pub struct MockHost {
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    pub store: Store,
    pub dispatched: Vec<Dispatched>,
    pub sent: Vec<Sent>,
    pub resumed: u32,
    /// What `client_address` answers.
    pub client: Option<std::net::IpAddr>,
    pub counters: HashMap<Counter, u64>,
    pub now_ms: u64,
    pub logs: RefCell<Vec<(LogLevel, String)>>,
    pub fail: Failures,
    pub next_token: u32,
    /// Calls that read the request headers (the filter reads them once per request).
    pub header_reads: RefCell<u32>,
    /// Calls that removed a request header.
    pub header_removals: u32,
    /// This stream's id (`Host::stream_id`); 0 cannot be woken, so it never waits on another.
    pub stream: u64,
    /// The streams this one woke, in order.
    pub woken: Vec<u64>,
    /// What `woken_can_call_out` answers.
    pub woken_calls_out: bool,
    /// What `callout_span` answers (the module's span for a callout).
    pub span: Option<(String, String)>,
}

const BAD_ARGUMENT: u32 = 2;

impl MockHost {
    pub fn new(store: Store) -> Self {
        Self { store, now_ms: 1_700_000_000_000, next_token: 1, ..Self::default() }
    }

    pub fn header(&self, name: &str) -> Option<String> {
        let values: Vec<_> = self.headers.iter().filter(|(k, _)| k == name).collect();
        assert!(values.len() <= 1, "header {name} present {} times", values.len());
        values.first().map(|(_, v)| String::from_utf8(v.clone()).unwrap())
    }

    pub fn count(&self, counter: Counter) -> u64 {
        self.counters.get(&counter).copied().unwrap_or(0)
    }

    fn check(&self, fail: bool, call: &'static str) -> Result<(), HostError> {
        if fail { Err(HostError::new(call, BAD_ARGUMENT)) } else { Ok(()) }
    }
}

impl SharedData for MockHost {
    fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError> {
        self.check(self.fail.shared_data, "proxy_get_shared_data")?;
        Ok(self.store.borrow().get(key).map_or((None, None), |(v, cas)| (Some(v.clone()), Some(*cas))))
    }

    fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
        self.check(self.fail.shared_data, "proxy_set_shared_data").map_err(SharedDataError::Host)?;
        let mut store = self.store.borrow_mut();
        let current = store.get(key).map(|(_, c)| *c);
        if let Some(cas) = cas
            && current != Some(cas)
        {
            return Err(SharedDataError::CasMismatch);
        }
        store.insert(key.to_owned(), (value.to_vec(), current.unwrap_or(0) + 1));
        Ok(())
    }
}

impl Host for MockHost {
    fn request_headers(&self) -> Result<RequestHeaders, HostError> {
        self.check(self.fail.read_header, "proxy_get_header_map_pairs")?;
        *self.header_reads.borrow_mut() += 1;
        Ok(RequestHeaders(self.headers.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.clone())).collect()))
    }

    fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostError> {
        self.check(self.fail.set_header, "proxy_replace_header_map_value")?;
        self.headers.retain(|(k, _)| k != name);
        self.headers.push((name.to_owned(), value.as_bytes().to_vec()));
        Ok(())
    }

    fn remove_request_header(&mut self, name: &str) -> Result<(), HostError> {
        self.check(self.fail.remove_header, "proxy_remove_header_map_value")?;
        self.header_removals += 1;
        self.headers.retain(|(k, _)| k != name);
        Ok(())
    }

    fn request_body(&self, max_len: usize) -> Result<Vec<u8>, HostError> {
        self.check(self.fail.body, "proxy_get_buffer_bytes")?;
        Ok(self.body[..self.body.len().min(max_len)].to_vec())
    }

    fn callout_span(&mut self) -> Option<(String, String)> {
        self.span.clone()
    }

    fn dispatch_http_call(
        &mut self,
        cluster: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<u32, HostError> {
        self.check(self.fail.dispatch, "proxy_http_call")?;
        let token = self.next_token;
        self.next_token += 1;
        let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let body = body.map(<[u8]>::to_vec);
        self.dispatched.push(Dispatched { cluster: cluster.to_owned(), headers, body, timeout, token });
        Ok(token)
    }

    fn client_address(&self) -> Option<std::net::IpAddr> {
        self.client
    }

    fn send_local_response(
        &mut self,
        status: u16,
        details: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        grpc_status: Option<u8>,
    ) -> Result<(), HostError> {
        self.check(self.fail.local_response, "proxy_send_local_response")?;
        let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let details = details.to_owned();
        self.sent.push(Sent { status, details, headers, body: body.to_vec(), grpc_status });
        Ok(())
    }

    fn resume_request(&mut self) -> Result<(), HostError> {
        self.check(self.fail.resume, "proxy_continue_stream")?;
        self.resumed += 1;
        Ok(())
    }

    fn increment(&mut self, counter: Counter) {
        *self.counters.entry(counter).or_default() += 1;
    }

    fn now_ms(&self) -> Result<u64, HostError> {
        Ok(self.now_ms)
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.logs.borrow_mut().push((level, message.to_owned()));
    }

    fn stream_id(&self) -> u64 {
        self.stream
    }

    fn prepare_wake(&mut self) -> bool {
        self.stream != 0
    }

    fn wake(&mut self, stream: u64) {
        self.woken.push(stream);
    }

    fn woken_can_call_out(&self) -> bool {
        self.woken_calls_out
    }
}

/// A sidecar `200` with the given verdict and true flags.
pub fn lookup_response(domain: &str, verdict: &str, flags: &[&str]) -> crate::host::CalloutResponse {
    let flag = |name: &str| flags.contains(&name);
    let body = serde_json::json!({
        "request_id": "r1", "input": domain, "input_type": "domain", "email": "", "domain": domain,
        "result": {
            "verdict": verdict, "disposable": verdict == "disposable", "temporary": verdict == "disposable",
            "safe": verdict == "safe", "free_provider": flag("free_provider"),
            "business_email": flag("business_email"), "shared_mx": flag("shared_mx"), "has_mx": flag("has_mx"),
            "domain_exists": true, "mx_records": [], "mx_ip_address": [], "level": "low",
            "recommendation": "allow", "cached": false, "allowlisted": flag("allowlisted"),
            "blocked": flag("blocked"), "mx_ip_match": flag("mx_ip_match"),
            "review_required": flag("review_required")
        }
    });
    crate::host::CalloutResponse::plain(Some(200), body.to_string().into_bytes())
}

/// A sidecar answer for a domain without mail that is a probable typo of `suggestion`.
pub fn lookup_response_suggesting(domain: &str, suggestion: &str) -> crate::host::CalloutResponse {
    let mut response = lookup_response(domain, "safe", &[]);
    let mut body: serde_json::Value = serde_json::from_slice(&response.body).unwrap_or_default();
    body["did_you_mean"] = suggestion.into();
    response.body = body.to_string().into_bytes();
    response
}

/// A sidecar error answer, `{"request_id", "error": {"code", "message"}}`.
pub fn error_response(status: u16, code: &str) -> crate::host::CalloutResponse {
    let body = format!(r#"{{"request_id":"r1","error":{{"code":"{code}","message":"m"}}}}"#);
    crate::host::CalloutResponse::plain(Some(status), body.into_bytes())
}
