//! The only file that talks to the proxy: the proxy-wasm root and HTTP contexts, and [`Host`]
//! over the proxy-wasm ABI. Compiled for `wasm32` only.
//!
//! The SDK's `hostcalls` wrappers `panic!` on any status they do not expect (and `unwrap` UTF-8
//! conversions of header values), and a panic kills the VM. So every call the filter makes goes
//! through the raw ABI imports below, each status turned into a [`HostError`]; the one
//! exception is `dispatch_http_call`, which must go through the SDK so that its dispatcher
//! routes the answer back to this context (it returns `BadArgument` and `InternalFailure` as
//! errors, the statuses Envoy gives for an unknown cluster or a failed call).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ptr::{null, null_mut};
use std::rc::{Rc, Weak};
use std::time::Duration;

use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action as SdkAction, ContextType, LogLevel as SdkLogLevel, Status};

use crate::abi;
use crate::cache::{SharedData, SharedDataError};
use crate::config::{EnvError, FilterConfig};
use crate::decided;
use crate::filter::RequestFilter;
use crate::host::{Action, CalloutResponse, Counter, Host, HostError, LogLevel, RequestHeaders};

/// The callout's answer is a small JSON document; anything larger is cut and fails to parse.
const MAX_CALLOUT_BODY: usize = 64 * 1024;

proxy_wasm::main! {{
    // Installs the SDK's panic hook, which logs the panic message before the VM dies.
    proxy_wasm::set_log_level(SdkLogLevel::Info);
    proxy_wasm::set_root_context(|id| -> Box<dyn RootContext> { Box::new(Root { id, ..Root::default() }) });
}}

mod ffi {
    //! The proxy-wasm ABI 0.2.1 imports, statuses as plain `u32` (an unknown status from the
    //! host must not be undefined behaviour).
    #[link(wasm_import_module = "env")]
    unsafe extern "C" {
        pub fn proxy_log(level: u32, message_data: *const u8, message_size: usize) -> u32;
        pub fn proxy_get_current_time_nanoseconds(return_time: *mut u64) -> u32;
        pub fn proxy_get_buffer_bytes(
            buffer_type: u32,
            start: usize,
            max_size: usize,
            return_data: *mut *mut u8,
            return_size: *mut usize,
        ) -> u32;
        pub fn proxy_get_header_map_pairs(map_type: u32, return_data: *mut *mut u8, return_size: *mut usize) -> u32;
        pub fn proxy_get_header_map_value(
            map_type: u32,
            key_data: *const u8,
            key_size: usize,
            return_data: *mut *mut u8,
            return_size: *mut usize,
        ) -> u32;
        pub fn proxy_replace_header_map_value(
            map_type: u32,
            key_data: *const u8,
            key_size: usize,
            value_data: *const u8,
            value_size: usize,
        ) -> u32;
        pub fn proxy_remove_header_map_value(map_type: u32, key_data: *const u8, key_size: usize) -> u32;
        #[allow(clippy::too_many_arguments)]
        pub fn proxy_send_local_response(
            status_code: u32,
            details_data: *const u8,
            details_size: usize,
            body_data: *const u8,
            body_size: usize,
            headers_data: *const u8,
            headers_size: usize,
            grpc_status: i32,
        ) -> u32;
        pub fn proxy_continue_stream(stream_type: u32) -> u32;
        pub fn proxy_get_shared_data(
            key_data: *const u8,
            key_size: usize,
            return_value_data: *mut *mut u8,
            return_value_size: *mut usize,
            return_cas: *mut u32,
        ) -> u32;
        pub fn proxy_set_shared_data(
            key_data: *const u8,
            key_size: usize,
            value_data: *const u8,
            value_size: usize,
            cas: u32,
        ) -> u32;
        pub fn proxy_define_metric(
            metric_type: u32,
            name_data: *const u8,
            name_size: usize,
            return_id: *mut u32,
        ) -> u32;
        pub fn proxy_increment_metric(metric_id: u32, offset: i64) -> u32;
        pub fn proxy_set_tick_period_milliseconds(period: u32) -> u32;
        pub fn proxy_set_effective_context(context_id: u32) -> u32;
    }
}

const OK: u32 = 0;
const NOT_FOUND: u32 = 1;
const CAS_MISMATCH: u32 = 8;

const MAP_REQUEST_HEADERS: u32 = 0;
const MAP_CALLOUT_RESPONSE_HEADERS: u32 = 6;
const BUFFER_REQUEST_BODY: u32 = 0;
const BUFFER_CALLOUT_RESPONSE_BODY: u32 = 4;
const BUFFER_PLUGIN_CONFIGURATION: u32 = 7;
const STREAM_HTTP_REQUEST: u32 = 0;
const METRIC_COUNTER: u32 = 0;

fn status(call: &'static str, code: u32) -> Result<(), HostError> {
    if code == OK { Ok(()) } else { Err(HostError::new(call, code)) }
}

/// Takes ownership of a buffer the host allocated through the SDK's `proxy_on_memory_allocate`
/// (a boxed slice of exactly `size` bytes).
fn owned(data: *mut u8, size: usize) -> Vec<u8> {
    if data.is_null() {
        return Vec::new();
    }
    // SAFETY: the host wrote `size` bytes into a buffer of `size` bytes it got from the
    // module's allocator, and hands its ownership to us.
    unsafe { Vec::from_raw_parts(data, size, size) }
}

fn log(level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Trace => 0,
        LogLevel::Debug => 1,
        LogLevel::Info => 2,
        LogLevel::Warn => 3,
        LogLevel::Error => 4,
    };
    // SAFETY: pointer and length of a live string. A failed log has nowhere to be reported.
    let _ = unsafe { ffi::proxy_log(level, message.as_ptr(), message.len()) };
}

fn get_buffer(call: &'static str, buffer_type: u32, max_size: usize) -> Result<Vec<u8>, HostError> {
    get_buffer_at(call, buffer_type, 0, max_size)
}

/// At most `max_size` bytes of a buffer from byte `start` on.
fn get_buffer_at(call: &'static str, buffer_type: u32, start: usize, max_size: usize) -> Result<Vec<u8>, HostError> {
    let (mut data, mut size) = (null_mut(), 0);
    // SAFETY: out-pointers to live locals.
    let code = unsafe { ffi::proxy_get_buffer_bytes(buffer_type, start, max_size, &mut data, &mut size) };
    match code {
        OK => Ok(owned(data, size)),
        NOT_FOUND => Ok(Vec::new()),
        code => Err(HostError::new(call, code)),
    }
}

fn get_header(map_type: u32, name: &str) -> Result<Option<Vec<u8>>, HostError> {
    let (mut data, mut size) = (null_mut(), 0);
    // SAFETY: key pointer/length of a live string; out-pointers to live locals.
    let code = unsafe { ffi::proxy_get_header_map_value(map_type, name.as_ptr(), name.len(), &mut data, &mut size) };
    match code {
        OK => Ok(Some(owned(data, size))),
        NOT_FOUND => Ok(None),
        code => Err(HostError::new("proxy_get_header_map_value", code)),
    }
}

fn get_header_pairs(map_type: u32) -> Result<abi::HeaderPairs, HostError> {
    const CALL: &str = "proxy_get_header_map_pairs";
    let (mut data, mut size) = (null_mut(), 0);
    // SAFETY: out-pointers to live locals.
    status(CALL, unsafe { ffi::proxy_get_header_map_pairs(map_type, &mut data, &mut size) })?;
    abi::deserialize_map(&owned(data, size)).ok_or(HostError::new(CALL, 4 /* ParseFailure */))
}

/// Metric ids, defined once per root context (and so once per worker's VM).
struct Metrics {
    ids: [Option<u32>; Counter::ALL.len()],
}

impl Default for Metrics {
    fn default() -> Self {
        Self { ids: [None; Counter::ALL.len()] }
    }
}

impl Metrics {
    fn define() -> Self {
        let mut metrics = Self::default();
        for counter in Counter::ALL {
            let name = counter.name();
            let mut id = 0;
            // SAFETY: name pointer/length of a live string; out-pointer to a live local.
            let code = unsafe { ffi::proxy_define_metric(METRIC_COUNTER, name.as_ptr(), name.len(), &mut id) };
            match status("proxy_define_metric", code) {
                Ok(()) => metrics.ids[counter.index()] = Some(id),
                Err(e) => log(LogLevel::Error, &format!("email-verdict filter: metric {name}: {e}")),
            }
        }
        metrics
    }

    fn increment(&self, counter: Counter) {
        if let Some(id) = self.ids[counter.index()] {
            // SAFETY: plain values. A lost increment is not worth failing a request for.
            let _ = unsafe { ffi::proxy_increment_metric(id, 1) };
        }
    }
}

/// A stream's filter, reachable from the streams that wake it (`flight.rs`).
type Shared = Rc<RefCell<Option<RequestFilter>>>;

thread_local! {
    /// This VM's streams that wait on another stream's callout, by context id.
    static WAITERS: RefCell<HashMap<u32, (Weak<RefCell<Option<RequestFilter>>>, Rc<Metrics>)>> =
        RefCell::new(HashMap::new());
}

/// [`Host`] for the HTTP context the proxy is currently calling into.
struct WasmHost {
    metrics: Rc<Metrics>,
    /// The context's id (0: a root context's host).
    id: u32,
    /// The context's filter, for [`WAITERS`].
    me: Weak<RefCell<Option<RequestFilter>>>,
}

impl WasmHost {
    /// A root context's host: it never waits on a callout, it may lead one (`flight.rs`).
    fn root(metrics: Rc<Metrics>, id: u32) -> Self {
        Self { metrics, id, me: Weak::new() }
    }
}

/// The callout answer the proxy holds now: status and body (at most [`MAX_CALLOUT_BODY`]).
fn callout_response(body_size: usize) -> CalloutResponse {
    let body = if body_size == 0 {
        Ok(Vec::new())
    } else {
        get_buffer("proxy_get_buffer_bytes", BUFFER_CALLOUT_RESPONSE_BODY, body_size.min(MAX_CALLOUT_BODY))
    };
    let body = body.unwrap_or_else(|e| {
        log(LogLevel::Warn, &format!("email-verdict filter: cannot read the sidecar's answer: {e}"));
        Vec::new()
    });
    CalloutResponse::read(|name| get_header(MAP_CALLOUT_RESPONSE_HEADERS, name).ok().flatten(), body)
}

fn set_tick_period(ms: u32) {
    // SAFETY: a plain value.
    if let Err(e) = status("proxy_set_tick_period_milliseconds", unsafe { ffi::proxy_set_tick_period_milliseconds(ms) })
    {
        log(LogLevel::Warn, &format!("email-verdict filter: tick period {ms} ms: {e}"));
    }
}

impl SharedData for WasmHost {
    fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError> {
        let (mut data, mut size, mut cas) = (null_mut(), 0, 0);
        // SAFETY: key pointer/length of a live string; out-pointers to live locals.
        let code = unsafe { ffi::proxy_get_shared_data(key.as_ptr(), key.len(), &mut data, &mut size, &mut cas) };
        match code {
            OK => Ok((Some(owned(data, size)), (cas != 0).then_some(cas))),
            NOT_FOUND => Ok((None, None)),
            code => Err(HostError::new("proxy_get_shared_data", code)),
        }
    }

    fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
        // SAFETY: pointers/lengths of live slices.
        let code = unsafe {
            ffi::proxy_set_shared_data(key.as_ptr(), key.len(), value.as_ptr(), value.len(), cas.unwrap_or(0))
        };
        match code {
            OK => Ok(()),
            CAS_MISMATCH => Err(SharedDataError::CasMismatch),
            code => Err(SharedDataError::Host(HostError::new("proxy_set_shared_data", code))),
        }
    }
}

impl Host for WasmHost {
    fn request_headers(&self) -> Result<RequestHeaders, HostError> {
        let mut pairs = get_header_pairs(MAP_REQUEST_HEADERS)?;
        // Envoy gives lowercase names; make sure of it, since lookups compare bytes.
        pairs.iter_mut().for_each(|(k, _)| k.make_ascii_lowercase());
        Ok(RequestHeaders(pairs))
    }

    fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostError> {
        // SAFETY: pointers/lengths of live strings.
        let code = unsafe {
            ffi::proxy_replace_header_map_value(
                MAP_REQUEST_HEADERS,
                name.as_ptr(),
                name.len(),
                value.as_ptr(),
                value.len(),
            )
        };
        status("proxy_replace_header_map_value", code)
    }

    fn remove_request_header(&mut self, name: &str) -> Result<(), HostError> {
        // SAFETY: pointer/length of a live string.
        let code = unsafe { ffi::proxy_remove_header_map_value(MAP_REQUEST_HEADERS, name.as_ptr(), name.len()) };
        status("proxy_remove_header_map_value", code)
    }

    fn request_body(&self, max_len: usize) -> Result<Vec<u8>, HostError> {
        get_buffer("proxy_get_buffer_bytes", BUFFER_REQUEST_BODY, max_len)
    }

    fn dispatch_http_call(
        &mut self,
        cluster: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<u32, HostError> {
        // Through the SDK: its dispatcher must learn the token to route the answer back here.
        proxy_wasm::hostcalls::dispatch_http_call(cluster, headers.to_vec(), body, vec![], timeout)
            .map_err(|s: Status| HostError::new("proxy_http_call", s as u32))
    }

    fn client_address(&self) -> Option<std::net::IpAddr> {
        // `source.address`: "ip:port", "[v6]:port" (Envoy's downstream remote address).
        let value = proxy_wasm::hostcalls::get_property(vec!["source", "address"]).ok()??;
        let text = std::str::from_utf8(&value).ok()?;
        text.parse::<std::net::SocketAddr>().map(|a| a.ip()).or_else(|_| text.parse()).ok()
    }

    fn send_local_response(
        &mut self,
        status_code: u16,
        details: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        grpc_status: Option<u8>,
    ) -> Result<(), HostError> {
        let headers = abi::serialize_map(headers);
        // SAFETY: pointers/lengths of live buffers.
        let code = unsafe {
            ffi::proxy_send_local_response(
                u32::from(status_code),
                details.as_ptr(),
                details.len(),
                if body.is_empty() { null() } else { body.as_ptr() },
                body.len(),
                headers.as_ptr(),
                headers.len(),
                // Envoy uses it for a gRPC request only when no `grpc-status` header is given.
                grpc_status.map_or(-1, i32::from),
            )
        };
        status("proxy_send_local_response", code)
    }

    fn resume_request(&mut self) -> Result<(), HostError> {
        // SAFETY: a plain value.
        status("proxy_continue_stream", unsafe { ffi::proxy_continue_stream(STREAM_HTTP_REQUEST) })
    }

    fn increment(&mut self, counter: Counter) {
        self.metrics.increment(counter);
    }

    fn now_ms(&self) -> Result<u64, HostError> {
        let mut nanos = 0u64;
        // SAFETY: out-pointer to a live local.
        status("proxy_get_current_time_nanoseconds", unsafe { ffi::proxy_get_current_time_nanoseconds(&mut nanos) })?;
        Ok(nanos / 1_000_000)
    }

    fn log(&self, level: LogLevel, message: &str) {
        log(level, message);
    }

    fn stream_id(&self) -> u64 {
        u64::from(self.id)
    }

    fn prepare_wake(&mut self) -> bool {
        if self.me.strong_count() == 0 {
            return false; // a root context
        }
        let entry = (Weak::clone(&self.me), Rc::clone(&self.metrics));
        WAITERS.with(|w| w.borrow_mut().insert(self.id, entry));
        true
    }

    /// The waiter runs now, inside this context's callback, with the proxy's calls aimed at its
    /// context (Envoy defers the resumes and local replies they make until the callback returns).
    fn wake(&mut self, stream: u64) {
        let Ok(id) = u32::try_from(stream) else { return };
        let Some((filter, metrics)) = WAITERS.with(|w| w.borrow().get(&id).cloned()) else { return };
        let Some(cell) = filter.upgrade() else { return };
        // Busy: it is the stream running now (never expected); its mail waits.
        let Ok(mut waiter) = cell.try_borrow_mut() else { return };
        let Some(waiter) = waiter.as_mut() else { return };
        // SAFETY: a plain value.
        if unsafe { ffi::proxy_set_effective_context(id) } != OK {
            return; // the context is gone
        }
        let mut host = WasmHost { metrics, id, me: filter };
        waiter.on_wake(&mut host);
        // SAFETY: a plain value; back to the context whose callback this is.
        let _ = unsafe { ffi::proxy_set_effective_context(self.id) };
    }
}

/// The root context: reads and validates the plugin configuration, defines the metrics once.
#[derive(Default)]
struct Root {
    id: u32,
    config: Option<Rc<FilterConfig>>,
    metrics: RefCell<Option<Rc<Metrics>>>,
    /// Leads the flights whose leading stream ended (`flight.rs`); no request of its own.
    leader: RefCell<Option<RequestFilter>>,
    /// The decision fetch in flight; any other answer is a flight's.
    decisions_token: std::cell::Cell<Option<u32>>,
}

impl Root {
    fn metrics(&self) -> Rc<Metrics> {
        Rc::clone(self.metrics.borrow_mut().get_or_insert_with(|| Rc::new(Metrics::define())))
    }
}

/// `api_key_env`: only wasm32-wasip1 modules see the VM's environment
/// (Envoy `vm_config.environment_variables`, Istio `vmConfig.env`).
fn env_var(name: &str) -> Result<String, EnvError> {
    #[cfg(target_os = "wasi")]
    {
        std::env::var(name).map_err(|_| EnvError::NotSet)
    }
    #[cfg(not(target_os = "wasi"))]
    {
        let _ = name;
        Err(EnvError::Unsupported)
    }
}

impl Root {
    /// Fetches the sidecar's decisions when they are due (one root context per period).
    fn sync_decisions(&self) {
        let Some(config) = self.config.as_ref() else { return };
        let Some(sync) = config.decisions.as_ref() else { return };
        let mut host = WasmHost::root(self.metrics(), self.id);
        let Ok(now) = host.now_ms() else { return };
        if !decided::claim(&mut host, now, sync.period_ms) {
            return;
        }
        let etag = decided::stored_etag(&host);
        let sidecar = &config.sidecar;
        let headers = decided::fetch_headers(sidecar, etag.as_deref());
        // Through the SDK, like the stream's callout: the answer comes back to this context.
        match proxy_wasm::hostcalls::dispatch_http_call(&sidecar.cluster, headers, None, vec![], sidecar.timeout) {
            Ok(token) => self.decisions_token.set(Some(token)),
            Err(s) => {
                host.increment(Counter::DecisionSyncFailures);
                log(LogLevel::Warn, &format!("email-verdict filter: could not ask for the decisions: {s:?}"));
            }
        }
    }

    /// Calls out for the flights whose leading stream ended (made due by that stream), then
    /// puts the tick back to what the decision sync needs.
    fn lead_orphans(&self) {
        let Some(config) = self.config.as_ref() else { return };
        if !config.flights.has_orphans() {
            return;
        }
        let mut host = WasmHost::root(self.metrics(), self.id);
        if let Ok(mut leader) = self.leader.try_borrow_mut()
            && let Some(leader) = leader.as_mut()
        {
            leader.lead_orphans(&mut host);
        }
        set_tick_period(if config.decisions.is_some() { decided::TICK_MS as u32 } else { 0 });
    }

    /// Stores a fetched list; a failure keeps the last good one.
    fn decisions_answered(&self, body_size: usize) {
        let mut host = WasmHost::root(self.metrics(), self.id);
        let status = get_header(MAP_CALLOUT_RESPONSE_HEADERS, ":status").ok().flatten();
        let outcome = match status.as_deref() {
            Some(b"304") => Ok(None),
            Some(b"200") => {
                let etag = get_header(MAP_CALLOUT_RESPONSE_HEADERS, "etag").ok().flatten().unwrap_or_default();
                let etag = String::from_utf8_lossy(&etag).into_owned();
                // In slices: the whole answer is never in the VM.
                let body = decided::host_body(body_size, |start, max| {
                    get_buffer_at("proxy_get_buffer_bytes", BUFFER_CALLOUT_RESPONSE_BODY, start, max)
                });
                decided::store_answer_read(&mut host, &etag, body, body_size).map(Some)
            }
            other => Err(format!("the sidecar answered {}", String::from_utf8_lossy(other.unwrap_or(b"nothing")))),
        };
        match outcome {
            Ok(names) => {
                host.increment(Counter::DecisionSyncs);
                if let Some(names) = names {
                    log(LogLevel::Info, &format!("email-verdict filter: {names} decided names from the sidecar"));
                }
            }
            Err(e) => {
                host.increment(Counter::DecisionSyncFailures);
                log(LogLevel::Warn, &format!("email-verdict filter: decisions not updated: {e}"));
            }
        }
    }
}

impl Context for Root {
    fn on_http_call_response(&mut self, token_id: u32, _num_headers: usize, body_size: usize, _num_trailers: usize) {
        if self.decisions_token.get() == Some(token_id) {
            self.decisions_token.set(None);
            self.decisions_answered(body_size);
            return;
        }
        // An orphaned flight's answer: its waiters get it.
        let response = callout_response(body_size);
        let mut host = WasmHost::root(self.metrics(), self.id);
        if let Ok(mut leader) = self.leader.try_borrow_mut()
            && let Some(leader) = leader.as_mut()
        {
            leader.on_callout_response(&mut host, token_id, &response);
        }
    }
}

impl RootContext for Root {
    fn on_configure(&mut self, _plugin_configuration_size: usize) -> bool {
        self.metrics();
        let bytes = match get_buffer("proxy_get_buffer_bytes", BUFFER_PLUGIN_CONFIGURATION, usize::MAX) {
            Ok(bytes) => bytes,
            Err(e) => {
                log(LogLevel::Error, &format!("email-verdict filter: bad configuration: cannot read it: {e}"));
                return false;
            }
        };
        match FilterConfig::from_json(&bytes, &env_var) {
            Ok(config) => {
                log(LogLevel::Info, "email-verdict filter: configuration loaded");
                if config.decisions.is_some() {
                    // SAFETY: a plain value.
                    let code = unsafe { ffi::proxy_set_tick_period_milliseconds(decided::TICK_MS as u32) };
                    if let Err(e) = status("proxy_set_tick_period_milliseconds", code) {
                        log(LogLevel::Warn, &format!("email-verdict filter: the decisions will not be fetched: {e}"));
                    }
                }
                let config = Rc::new(config);
                *self.leader.borrow_mut() = Some(RequestFilter::new(Rc::clone(&config)));
                self.config = Some(config);
                true
            }
            Err(e) => {
                log(LogLevel::Error, &format!("email-verdict filter: bad configuration: {e}"));
                self.config = None;
                false
            }
        }
    }

    fn on_tick(&mut self) {
        self.lead_orphans();
        self.sync_decisions();
    }

    /// Never `None`: the SDK panics on it. Without a configuration (Envoy rejected the plugin),
    /// the stream passes through.
    fn create_http_context(&self, context_id: u32) -> Option<Box<dyn HttpContext>> {
        let filter: Shared = Rc::new(RefCell::new(self.config.clone().map(RequestFilter::new)));
        let host = WasmHost { metrics: self.metrics(), id: context_id, me: Rc::downgrade(&filter) };
        Some(Box::new(Stream { filter, host }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

/// One HTTP stream.
struct Stream {
    filter: Shared,
    host: WasmHost,
}

impl Stream {
    fn run(&mut self, f: impl FnOnce(&mut RequestFilter, &mut WasmHost) -> SdkAction) -> SdkAction {
        match self.filter.try_borrow_mut().as_deref_mut() {
            Ok(Some(filter)) => f(filter, &mut self.host),
            _ => SdkAction::Continue,
        }
    }
}

fn sdk(action: Action) -> SdkAction {
    match action {
        Action::Continue => SdkAction::Continue,
        Action::Pause => SdkAction::Pause,
    }
}

impl Context for Stream {
    fn on_http_call_response(&mut self, token_id: u32, _num_headers: usize, body_size: usize, _num_trailers: usize) {
        let response = callout_response(body_size);
        self.run(|filter, host| {
            filter.on_callout_response(host, token_id, &response);
            SdkAction::Continue
        });
    }

    /// The stream ends, and its callouts with it: the flights it leads go on without it.
    fn on_done(&mut self) -> bool {
        let orphaned = match self.filter.try_borrow_mut().as_deref_mut() {
            Ok(Some(filter)) => filter.on_destroy(&mut self.host),
            _ => false,
        };
        WAITERS.with(|w| w.borrow_mut().remove(&self.host.id));
        if orphaned {
            // The root leads the flight at its next tick: due now (this context's root).
            set_tick_period(1);
        }
        true
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        WAITERS.with(|w| w.borrow_mut().remove(&self.host.id));
    }
}

impl HttpContext for Stream {
    fn on_http_request_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> SdkAction {
        self.run(|filter, host| sdk(filter.on_request_headers(host, end_of_stream)))
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> SdkAction {
        self.run(|filter, host| sdk(filter.on_request_body(host, body_size, end_of_stream)))
    }

    fn on_http_request_trailers(&mut self, _num_trailers: usize) -> SdkAction {
        self.run(|filter, host| sdk(filter.on_request_trailers(host)))
    }
}
