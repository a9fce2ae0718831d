//! [`Host`] over the dynamic-module ABI, for one HTTP stream (and the counters a filter
//! configuration defined). Every call copies what Envoy returns at once: Envoy's buffers live
//! only until the hook returns.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ptr::null_mut;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::abi::{self, EnvoyBuffer, EnvoyHttpHeader, FilterEnvoyPtr, ModuleBuffer, ModuleHttpHeader};
use super::shared::SHARED;
use super::span::CalloutSpan;
use crate::cache::{SharedData, SharedDataError};
use crate::host::{Counter, Host, HostError, LogLevel, RequestHeaders};

/// `HostError` statuses (proxy-wasm's numbering, which `HostError` names).
const BAD_ARGUMENT: u32 = 2;
const INTERNAL_FAILURE: u32 = 10;

/// Envoy's ids of the filter's counters, defined once per filter configuration.
#[derive(Debug)]
pub struct Counters {
    pub ids: [Option<usize>; Counter::ALL.len()],
}

impl Default for Counters {
    fn default() -> Self {
        Self { ids: [None; Counter::ALL.len()] }
    }
}

/// Logs through Envoy (`[dynamic_modules]` in its log). Never an address or a secret.
pub fn log(level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Trace => abi::LOG_TRACE,
        LogLevel::Debug => abi::LOG_DEBUG,
        LogLevel::Info => abi::LOG_INFO,
        LogLevel::Warn => abi::LOG_WARN,
        LogLevel::Error => abi::LOG_ERROR,
    };
    // SAFETY: pointer and length of a live string.
    unsafe { abi::envoy_dynamic_module_callback_log(level, ModuleBuffer::of(message.as_bytes())) }
}

pub fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Owned name/value pairs as `module_http_header`s pointing into them (valid while `pairs` is).
pub fn module_headers(pairs: &[(&str, &str)]) -> Vec<ModuleHttpHeader> {
    pairs.iter().map(|(k, v)| ModuleHttpHeader::of(k, v.as_bytes())).collect()
}

/// The bytes of Envoy's buffers, concatenated, at most `max` of them.
///
/// # Safety
/// Every buffer must be valid for its length.
pub unsafe fn concat(chunks: &[EnvoyBuffer], max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in chunks {
        // SAFETY: guaranteed by the caller.
        let bytes = unsafe { chunk.bytes() };
        let room = max.saturating_sub(out.len());
        out.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if out.len() >= max {
            break;
        }
    }
    out
}

/// The status of a callout answer's headers, when present and numeric.
///
/// # Safety
/// `headers` must point to `count` valid headers (or be null).
pub unsafe fn callout_header(headers: *const EnvoyHttpHeader, count: usize, name: &str) -> Option<Vec<u8>> {
    if headers.is_null() {
        return None;
    }
    // SAFETY: guaranteed by the caller.
    let headers = unsafe { std::slice::from_raw_parts(headers, count) };
    headers.iter().find_map(|h| {
        // SAFETY: Envoy's header buffers, valid during the hook.
        let (k, v) = unsafe { h.pair() };
        k.eq_ignore_ascii_case(name.as_bytes()).then(|| v.to_vec())
    })
}

thread_local! {
    /// This worker's streams that wait on another stream's callout, by stream id: their
    /// schedulers (`flight.rs`).
    static WAITERS: RefCell<HashMap<u64, abi::FilterSchedulerPtr>> = RefCell::new(HashMap::new());
    /// The last stream id handed out on this worker.
    static LAST_ID: Cell<u64> = const { Cell::new(0) };
}

/// One stream's host.
pub struct ModuleHost {
    pub envoy: FilterEnvoyPtr,
    pub counters: std::sync::Arc<Counters>,
    /// True while Envoy is in the request body hook: the chunk just received is readable then,
    /// and not yet part of the buffered body.
    pub in_body_hook: bool,
    /// Envoy's callout ids, the tokens the filter logic knows them by, and their spans.
    callouts: Vec<(u64, u32, Option<CalloutSpan>)>,
    /// The span made for the callout about to start (`Host::callout_span`).
    next_span: Option<CalloutSpan>,
    next_token: u32,
    /// This stream's number on its worker (`flight.rs`).
    id: u64,
    /// This stream's scheduler, made when it first waits on another stream's callout.
    scheduler: Option<abi::FilterSchedulerPtr>,
}

impl ModuleHost {
    pub fn new(envoy: FilterEnvoyPtr, counters: std::sync::Arc<Counters>) -> Self {
        let id = LAST_ID.with(|last| {
            last.set(last.get().wrapping_add(1).max(1));
            last.get()
        });
        Self {
            envoy,
            counters,
            in_body_hook: false,
            callouts: Vec::new(),
            next_span: None,
            next_token: 1,
            id,
            scheduler: None,
        }
    }

    /// The token of Envoy's callout `id`, forgotten once the answer is handed over (its span
    /// ends).
    pub fn take_token(&mut self, id: u64) -> Option<u32> {
        let at = self.callouts.iter().position(|(c, _, _)| *c == id)?;
        Some(self.callouts.swap_remove(at).1)
    }

    fn body_chunks(&self, kind: abi::BodyType) -> Vec<EnvoyBuffer> {
        // SAFETY: Envoy's filter pointer, valid during the hook.
        let count = unsafe { abi::envoy_dynamic_module_callback_http_get_body_chunks_size(self.envoy, kind) };
        if count == 0 {
            return Vec::new();
        }
        let mut chunks = vec![EnvoyBuffer::NULL; count];
        // SAFETY: room for `count` buffers, as Envoy asks.
        let ok =
            unsafe { abi::envoy_dynamic_module_callback_http_get_body_chunks(self.envoy, kind, chunks.as_mut_ptr()) };
        if ok { chunks } else { Vec::new() }
    }

    /// The request body's size so far: the buffered body and, in the body hook, the chunk just
    /// received (unless that chunk is the buffered body itself, resumed by an earlier filter).
    pub fn body_size(&self) -> usize {
        // SAFETY: Envoy's filter pointer, valid during the hook.
        unsafe {
            let buffered =
                abi::envoy_dynamic_module_callback_http_get_body_size(self.envoy, abi::BUFFERED_REQUEST_BODY);
            if self.in_body_hook && !abi::envoy_dynamic_module_callback_http_received_buffered_request_body(self.envoy)
            {
                buffered + abi::envoy_dynamic_module_callback_http_get_body_size(self.envoy, abi::RECEIVED_REQUEST_BODY)
            } else {
                buffered
            }
        }
    }
}

impl SharedData for ModuleHost {
    fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError> {
        Ok(SHARED.get(key))
    }

    fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
        SHARED.set(key, value, cas)
    }
}

impl Host for ModuleHost {
    fn request_headers(&self) -> Result<RequestHeaders, HostError> {
        const CALL: &str = "envoy_dynamic_module_callback_http_get_headers";
        // SAFETY: Envoy's filter pointer, valid during the hook.
        let count =
            unsafe { abi::envoy_dynamic_module_callback_http_get_headers_size(self.envoy, abi::REQUEST_HEADER) };
        let mut headers = vec![EnvoyHttpHeader::NULL; count];
        if count > 0 {
            // SAFETY: room for `count` headers, as Envoy asks.
            let ok = unsafe {
                abi::envoy_dynamic_module_callback_http_get_headers(
                    self.envoy,
                    abi::REQUEST_HEADER,
                    headers.as_mut_ptr(),
                )
            };
            if !ok {
                return Err(HostError::new(CALL, BAD_ARGUMENT));
            }
        }
        let pairs = headers
            .into_iter()
            .map(|h| {
                // SAFETY: Envoy's header buffers, valid during the hook; copied at once.
                let (k, v) = unsafe { h.pair() };
                (k.to_ascii_lowercase(), v.to_vec())
            })
            .collect();
        Ok(RequestHeaders(pairs))
    }

    fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostError> {
        // SAFETY: pointers/lengths of live strings.
        let ok = unsafe {
            abi::envoy_dynamic_module_callback_http_set_header(
                self.envoy,
                abi::REQUEST_HEADER,
                ModuleBuffer::of(name.as_bytes()),
                ModuleBuffer::of(value.as_bytes()),
            )
        };
        if ok { Ok(()) } else { Err(HostError::new("envoy_dynamic_module_callback_http_set_header", BAD_ARGUMENT)) }
    }

    fn remove_request_header(&mut self, name: &str) -> Result<(), HostError> {
        // SAFETY: pointer/length of a live string; a null value removes the header.
        let ok = unsafe {
            abi::envoy_dynamic_module_callback_http_set_header(
                self.envoy,
                abi::REQUEST_HEADER,
                ModuleBuffer::of(name.as_bytes()),
                ModuleBuffer::NULL,
            )
        };
        if ok { Ok(()) } else { Err(HostError::new("envoy_dynamic_module_callback_http_set_header", BAD_ARGUMENT)) }
    }

    fn request_body(&self, max_len: usize) -> Result<Vec<u8>, HostError> {
        let mut chunks = self.body_chunks(abi::BUFFERED_REQUEST_BODY);
        // SAFETY: Envoy's filter pointer, valid during the hook.
        let received_is_buffered =
            unsafe { abi::envoy_dynamic_module_callback_http_received_buffered_request_body(self.envoy) };
        if self.in_body_hook && !received_is_buffered {
            chunks.extend(self.body_chunks(abi::RECEIVED_REQUEST_BODY));
        }
        // SAFETY: buffers Envoy just handed out, valid during the hook; copied at once.
        Ok(unsafe { concat(&chunks, max_len) })
    }

    fn dispatch_http_call(
        &mut self,
        cluster: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<u32, HostError> {
        const CALL: &str = "envoy_dynamic_module_callback_http_filter_http_callout";
        let mut headers = module_headers(headers);
        let body = body.map_or(ModuleBuffer::NULL, ModuleBuffer::of);
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let span = self.next_span.take(); // ends here unless the callout starts
        let mut id = 0u64;
        // SAFETY: pointers/lengths of live buffers; out-pointer to a live local.
        let result = unsafe {
            abi::envoy_dynamic_module_callback_http_filter_http_callout(
                self.envoy,
                &mut id,
                ModuleBuffer::of(cluster.as_bytes()),
                headers.as_mut_ptr(),
                headers.len(),
                body,
                timeout_ms,
            )
        };
        match result {
            abi::CALLOUT_INIT_SUCCESS => {
                let token = self.next_token;
                self.next_token = self.next_token.wrapping_add(1).max(1);
                self.callouts.push((id, token, span));
                Ok(token)
            }
            // Missing headers, unknown cluster: what proxy-wasm calls BadArgument.
            1 | 2 => Err(HostError::new(CALL, BAD_ARGUMENT)),
            _ => Err(HostError::new(CALL, INTERNAL_FAILURE)),
        }
    }

    fn callout_span(&mut self) -> Option<(String, String)> {
        let span = CalloutSpan::start(self.envoy)?;
        let ids = span.ids();
        self.next_span = Some(span);
        ids
    }

    fn client_address(&self) -> Option<std::net::IpAddr> {
        let mut value = EnvoyBuffer::NULL;
        // SAFETY: out-pointer to a live local.
        let ok = unsafe {
            abi::envoy_dynamic_module_callback_http_filter_get_attribute_string(
                self.envoy,
                abi::ATTRIBUTE_SOURCE_ADDRESS,
                &mut value,
            )
        };
        if !ok {
            return None;
        }
        // SAFETY: Envoy's buffer, valid during the hook; copied at once.
        let text = String::from_utf8_lossy(unsafe { value.bytes() }).into_owned();
        text.parse::<std::net::SocketAddr>().map(|a| a.ip()).or_else(|_| text.parse()).ok()
    }

    fn send_local_response(
        &mut self,
        status: u16,
        details: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        grpc_status: Option<u8>,
    ) -> Result<(), HostError> {
        // The ABI takes no gRPC status and Envoy passes `0` (OK) for it: for a gRPC request its
        // local reply becomes `200` with `grpc-status: 0` and the body as `grpc-message`, a
        // refusal the client reads as success, unless a `grpc-status` header is given (Envoy
        // keeps it). So a gRPC answer always carries the header.
        let code = grpc_status.map(|c| c.to_string());
        let missing = code.as_deref().filter(|_| !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("grpc-status")));
        let with_status: Vec<(&str, &str)> =
            headers.iter().copied().chain(missing.map(|c| ("grpc-status", c))).collect();
        let mut headers = module_headers(&with_status);
        // SAFETY: pointers/lengths of live buffers.
        unsafe {
            abi::envoy_dynamic_module_callback_http_send_response(
                self.envoy,
                u32::from(status),
                headers.as_mut_ptr(),
                headers.len(),
                ModuleBuffer::of(body),
                ModuleBuffer::of(details.as_bytes()),
            );
        }
        Ok(())
    }

    fn resume_request(&mut self) -> Result<(), HostError> {
        // SAFETY: Envoy's filter pointer, valid during the hook.
        unsafe { abi::envoy_dynamic_module_callback_http_filter_continue_decoding(self.envoy) };
        Ok(())
    }

    fn increment(&mut self, counter: Counter) {
        if let Some(id) = self.counters.ids[counter.index()] {
            // SAFETY: plain values; no labels. A lost increment is not worth failing a request for.
            let _ = unsafe {
                abi::envoy_dynamic_module_callback_http_filter_increment_counter(self.envoy, id, null_mut(), 0, 1)
            };
        }
    }

    fn now_ms(&self) -> Result<u64, HostError> {
        Ok(now_ms())
    }

    fn log(&self, level: LogLevel, message: &str) {
        log(level, message);
    }

    fn stream_id(&self) -> u64 {
        self.id
    }

    fn prepare_wake(&mut self) -> bool {
        if self.scheduler.is_none() {
            // SAFETY: Envoy's filter pointer, valid during the hook.
            let scheduler = unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_new(self.envoy) };
            if scheduler.is_null() {
                return false;
            }
            self.scheduler = Some(scheduler);
            WAITERS.with(|w| w.borrow_mut().insert(self.id, scheduler));
        }
        true
    }

    /// Through the waiter's own scheduler: it runs in its own hook, so its callouts are its own.
    fn wake(&mut self, stream: u64) {
        let scheduler = WAITERS.with(|w| w.borrow().get(&stream).copied());
        if let Some(scheduler) = scheduler {
            // SAFETY: a scheduler of this worker's, deleted only with its stream's host (below),
            // which also takes it out of `WAITERS` first.
            unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_commit(scheduler, WAKE_EVENT) };
        }
    }

    fn woken_can_call_out(&self) -> bool {
        true
    }
}

/// The event id of a wake-up (the only event a stream's scheduler carries).
pub const WAKE_EVENT: u64 = 1;

impl Drop for ModuleHost {
    fn drop(&mut self) {
        if let Some(scheduler) = self.scheduler.take() {
            WAITERS.with(|w| w.borrow_mut().remove(&self.id));
            // SAFETY: made by `prepare_wake`, no longer reachable through `WAITERS`.
            unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_delete(scheduler) };
        }
    }
}

/// A C string's bytes, for the tests of what the hooks return.
#[cfg(test)]
pub fn c_bytes(ptr: *const std::ffi::c_char) -> Vec<u8> {
    // SAFETY: test-only, on a `'static` C string.
    unsafe { std::ffi::CStr::from_ptr(ptr) }.to_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_is_bounded() {
        let (a, b) = (b"hello ".to_vec(), b"world".to_vec());
        let chunks = [
            EnvoyBuffer { ptr: a.as_ptr().cast(), length: a.len() },
            EnvoyBuffer::NULL,
            EnvoyBuffer { ptr: b.as_ptr().cast(), length: b.len() },
        ];
        // SAFETY: live vectors.
        unsafe {
            assert_eq!(concat(&chunks, 100), b"hello world");
            assert_eq!(concat(&chunks, 8), b"hello wo");
            assert_eq!(concat(&chunks, 0), b"");
        }
    }

    #[test]
    fn callout_headers_are_found_case_insensitively() {
        let (k, v) = (b":status".to_vec(), b"200".to_vec());
        let (k2, v2) = (b"ETag".to_vec(), b"\"v1\"".to_vec());
        let headers = [
            EnvoyHttpHeader {
                key_ptr: k.as_ptr().cast(),
                key_length: k.len(),
                value_ptr: v.as_ptr().cast(),
                value_length: v.len(),
            },
            EnvoyHttpHeader {
                key_ptr: k2.as_ptr().cast(),
                key_length: k2.len(),
                value_ptr: v2.as_ptr().cast(),
                value_length: v2.len(),
            },
        ];
        // SAFETY: live vectors.
        unsafe {
            assert_eq!(callout_header(headers.as_ptr(), 2, ":status"), Some(b"200".to_vec()));
            assert_eq!(callout_header(headers.as_ptr(), 2, "etag"), Some(b"\"v1\"".to_vec()));
            assert_eq!(callout_header(headers.as_ptr(), 2, "x"), None);
            assert_eq!(callout_header(std::ptr::null(), 0, ":status"), None);
        }
    }
}
