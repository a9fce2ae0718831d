//! The filter as an Envoy dynamic module (`envoy.filters.http.dynamic_modules`): the second
//! implementation of [`Host`](crate::Host), beside `wasm_host.rs`. Built with the
//! `dynamic-module` feature on native targets only; the crate's cdylib
//! (`libemail_verdict_filter.so`, `make module`) then exports the `envoy_dynamic_module_on_*`
//! hooks below and calls Envoy's `envoy_dynamic_module_callback_*` functions (`abi.rs`).
//!
//! What differs from the Wasm build (filter/CONFIG.md, "As a dynamic module"):
//! - one configuration object for all threads: each worker thread parses the configuration's
//!   JSON into its own [`FilterConfig`] once (the logic's types are per-thread, as in one Wasm VM
//!   per worker); the main thread validates it first, so a bad configuration is refused there;
//! - shared data is one process-global map (`shared.rs`);
//! - environment variables are Envoy's own (`std::env`), no `host_env_keys`;
//! - the decision sync's tick is a module thread that wakes the main thread every second
//!   through the configuration's scheduler; the fetch is a configuration-level callout;
//! - counters are defined through the ABI (Envoy prefixes them with its metrics namespace,
//!   `dynamicmodulescustom.` by default).
//!
//! No panic crosses the ABI: every hook runs inside [`std::panic::catch_unwind`]; a panic in a
//! stream's hook answers that request as `failure_mode` says for a sidecar error, logs one line
//! (never the panic's message, which could hold request data) and lets later hooks of the stream
//! pass; a panic elsewhere is logged and answered with the hook's neutral value.

pub mod abi;
mod host;
mod idle_hooks;
mod shared;

use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use email_verdict_core::signup::{LocalReply, Policy};

use crate::config::{EnvError, FilterConfig};
use crate::decided;
use crate::filter::RequestFilter;
use crate::host::{Action, CalloutResponse, Counter, Host, LogLevel};
use abi::{EnvoyBuffer, EnvoyHttpHeader, FilterConfigEnvoyPtr, FilterConfigModulePtr, FilterEnvoyPtr, FilterModulePtr};
use host::{Counters, ModuleHost, log};

const LOG_PREFIX: &str = "email-verdict filter: ";
/// The callout's answer is a small JSON document; anything larger is cut and fails to parse.
const MAX_CALLOUT_BODY: usize = 64 * 1024;

/// A raw pointer of Envoy's that the module keeps beyond one hook (the filter configuration, the
/// scheduler): Envoy owns it and keeps it valid until the configuration is destroyed.
#[derive(Debug, Clone, Copy)]
struct EnvoyPtr(*mut c_void);
// SAFETY: only handed back to Envoy, through calls the ABI allows from the thread that makes them
// (the scheduler's commit from any thread; the rest on the main thread).
unsafe impl Send for EnvoyPtr {}
// SAFETY: as above.
unsafe impl Sync for EnvoyPtr {}

impl EnvoyPtr {
    /// The pointer (a method, so that closures capture the `Send` wrapper, not its field).
    fn get(self) -> *mut c_void {
        self.0
    }
}

/// One filter configuration (`filter_config`), shared by every thread's streams.
struct ModuleConfig {
    json: Vec<u8>,
    counters: Arc<Counters>,
    /// `failure_mode` for a sidecar error and `failure_status`: what a panic answers when the
    /// logic itself cannot (`fallback`).
    failure: Policy,
    failure_status: u16,
    ticker: Mutex<Option<Ticker>>,
}

/// The decision sync's clock: a thread that commits an event to the main thread every
/// [`decided::TICK_MS`] until stopped.
struct Ticker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
    scheduler: EnvoyPtr,
}

impl Ticker {
    fn start(config: EnvoyPtr) -> Option<Self> {
        // SAFETY: Envoy's configuration pointer, in the configuration hook (main thread).
        let scheduler = unsafe { abi::envoy_dynamic_module_callback_http_filter_config_scheduler_new(config.0) };
        if scheduler.is_null() {
            return None;
        }
        let scheduler = EnvoyPtr(scheduler);
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("email-verdict-tick".to_owned()).spawn(move || {
            let (lock, wake) = &*flag;
            let mut stopped = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            loop {
                let (guard, _) = wake
                    .wait_timeout(stopped, Duration::from_millis(decided::TICK_MS))
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                stopped = guard;
                if *stopped {
                    return;
                }
                // SAFETY: the scheduler lives until `stop` has joined this thread.
                unsafe { abi::envoy_dynamic_module_callback_http_filter_config_scheduler_commit(scheduler.get(), 0) };
            }
        });
        match thread {
            Ok(thread) => Some(Self { stop, thread: Some(thread), scheduler }),
            Err(_) => {
                // SAFETY: made above, used by no thread.
                unsafe { abi::envoy_dynamic_module_callback_http_filter_config_scheduler_delete(scheduler.0) };
                None
            }
        }
    }

    fn stop(mut self) {
        {
            let (lock, wake) = &*self.stop;
            *lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
            wake.notify_all();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // SAFETY: no thread commits to it any more.
        unsafe { abi::envoy_dynamic_module_callback_http_filter_config_scheduler_delete(self.scheduler.0) };
    }
}

/// `api_key_env`, `mailbox_secret_env`: Envoy's own environment.
fn env_var(name: &str) -> Result<String, EnvError> {
    std::env::var(name).map_err(|_| EnvError::NotSetInEnvoy)
}

/// A configuration and this thread's parsed copy of it (`None`: it did not parse here).
type ThreadCopy = (Weak<ModuleConfig>, Option<Rc<FilterConfig>>);

thread_local! {
    /// This thread's copy of each live configuration.
    static CONFIGS: RefCell<Vec<ThreadCopy>> = const { RefCell::new(Vec::new()) };
}

/// This thread's [`FilterConfig`] of `config`, parsed on first use. The main thread validated
/// the same document, so it fails only when the environment changed since (a variable removed):
/// logged once per thread, and the thread's requests follow `failure_mode` ([`fallback`]).
fn thread_config(config: &Arc<ModuleConfig>) -> Option<Rc<FilterConfig>> {
    CONFIGS.with(|configs| {
        let mut configs = configs.borrow_mut();
        configs.retain(|(c, _)| c.strong_count() > 0);
        if let Some((_, parsed)) = configs.iter().find(|(c, _)| std::ptr::eq(c.as_ptr(), Arc::as_ptr(config))) {
            return parsed.clone();
        }
        let parsed = match FilterConfig::from_json(&config.json, &env_var) {
            Ok(parsed) => Some(Rc::new(parsed)),
            Err(e) => {
                log(
                    LogLevel::Error,
                    &format!("{LOG_PREFIX}bad configuration on this thread, failure_mode applies: {e}"),
                );
                None
            }
        };
        configs.push((Arc::downgrade(config), parsed.clone()));
        parsed
    })
}

/// Runs `f`, turning a panic into `fallback()` and one log line naming `hook`.
fn guard<T>(hook: &str, fallback: impl FnOnce() -> T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(_) => {
            let _ = catch_unwind(|| log(LogLevel::Error, &format!("{LOG_PREFIX}internal error in {hook}")));
            fallback()
        }
    }
}

/// The panic hook of this module's Rust runtime: the default one prints the panic's message
/// (which could hold request data) on standard error; this one says where, nothing else.
fn quiet_panics() {
    // Unit tests keep the default hook: a failing test must say why.
    if cfg!(test) {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let _ = catch_unwind(|| log(LogLevel::Error, &format!("{LOG_PREFIX}panic{at}")));
    }));
}

#[unsafe(no_mangle)]
pub extern "C" fn envoy_dynamic_module_on_program_init() -> *const c_char {
    guard("program init", std::ptr::null, || {
        quiet_panics();
        abi::ABI_VERSION.as_ptr()
    })
}

// ------------------------------------------------------------------ configuration hooks

/// # Safety
/// Envoy's buffers, valid during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_new(
    config_envoy: FilterConfigEnvoyPtr,
    _name: EnvoyBuffer,
    config: EnvoyBuffer,
) -> FilterConfigModulePtr {
    guard("configuration", std::ptr::null, || {
        // SAFETY: Envoy's buffer, valid during the call; copied at once.
        let json = unsafe { config.bytes() }.to_vec();
        configure(config_envoy, json).map_or(std::ptr::null(), |c| Arc::into_raw(c).cast())
    })
}

/// Validates the configuration (refused: one error line and `None`, so Envoy rejects it),
/// defines the counters, starts the decision sync's clock.
fn configure(config_envoy: FilterConfigEnvoyPtr, json: Vec<u8>) -> Option<Arc<ModuleConfig>> {
    let parsed = match FilterConfig::from_json(&json, &env_var) {
        Ok(parsed) => parsed,
        Err(e) => {
            log(LogLevel::Error, &format!("{LOG_PREFIX}bad configuration: {e}"));
            return None;
        }
    };
    let mut counters = Counters::default();
    for counter in Counter::ALL {
        let name = counter.name();
        let mut id = 0usize;
        // SAFETY: Envoy's configuration pointer during its hook; name pointer/length of a live
        // string; no labels; out-pointer to a live local.
        let result = unsafe {
            abi::envoy_dynamic_module_callback_http_filter_config_define_counter(
                config_envoy,
                abi::ModuleBuffer::of(name.as_bytes()),
                std::ptr::null_mut(),
                0,
                &mut id,
            )
        };
        if result == abi::METRICS_SUCCESS {
            counters.ids[counter.index()] = Some(id);
        } else {
            log(LogLevel::Error, &format!("{LOG_PREFIX}metric {name}: not defined ({result})"));
        }
    }
    // SAFETY: a plain call on the main thread.
    let validating = unsafe { abi::envoy_dynamic_module_callback_is_validation_mode() };
    let ticker = if parsed.decisions.is_some() && !validating {
        let ticker = Ticker::start(EnvoyPtr(config_envoy));
        if ticker.is_none() {
            log(LogLevel::Warn, &format!("{LOG_PREFIX}the decisions will not be fetched: no scheduler"));
        }
        ticker
    } else {
        None
    };
    log(LogLevel::Info, &format!("{LOG_PREFIX}configuration loaded"));
    Some(Arc::new(ModuleConfig {
        json,
        counters: Arc::new(counters),
        failure: parsed.failure_mode.for_reason(email_verdict_core::signup::Bypass::SidecarError),
        failure_status: parsed.failure_status,
        ticker: Mutex::new(ticker),
    }))
}

/// The configuration behind Envoy's pointer, borrowed (Envoy keeps it until `config_destroy`).
///
/// # Safety
/// `ptr` must come from `config_new` and not have been destroyed.
unsafe fn config_ref(ptr: FilterConfigModulePtr) -> Arc<ModuleConfig> {
    let ptr = ptr.cast::<ModuleConfig>();
    // SAFETY: made by `Arc::into_raw` in `config_new`; one more count for the returned Arc.
    unsafe {
        Arc::increment_strong_count(ptr);
        Arc::from_raw(ptr)
    }
}

/// # Safety
/// `config` comes from `config_new`; Envoy calls this once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_destroy(config: FilterConfigModulePtr) {
    guard(
        "configuration destroy",
        || (),
        || {
            if config.is_null() {
                return;
            }
            // SAFETY: made by `Arc::into_raw` in `config_new`; this takes Envoy's count back.
            let config = unsafe { Arc::from_raw(config.cast::<ModuleConfig>()) };
            let ticker = config.ticker.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
            if let Some(ticker) = ticker {
                ticker.stop();
            }
        },
    )
}

/// No per-route configuration: routes switch the filter off with Envoy's generic
/// `envoy.config.route.v3.FilterConfig{disabled: true}`, which never reaches the module.
///
/// # Safety
/// Envoy's buffers, unused.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_per_route_config_new(
    _name: EnvoyBuffer,
    _config: EnvoyBuffer,
) -> abi::PerRouteConfigModulePtr {
    let _ = catch_unwind(|| {
        log(
            LogLevel::Error,
            &format!("{LOG_PREFIX}per-route configuration is not supported (use FilterConfig.disabled)"),
        )
    });
    std::ptr::null()
}

#[unsafe(no_mangle)]
pub extern "C" fn envoy_dynamic_module_on_http_filter_per_route_config_destroy(_config: abi::PerRouteConfigModulePtr) {}

/// The main thread's tick: fetch the decisions when due.
///
/// # Safety
/// `config` comes from `config_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_scheduled(
    config_envoy: FilterConfigEnvoyPtr,
    config: FilterConfigModulePtr,
    _event_id: u64,
) {
    guard(
        "decision sync",
        || (),
        || {
            // SAFETY: Envoy hands back our pointer.
            let config = unsafe { config_ref(config) };
            sync_decisions(&config, config_envoy);
        },
    )
}

fn increment_config(config: &ModuleConfig, envoy: FilterConfigEnvoyPtr, counter: Counter) {
    if let Some(id) = config.counters.ids[counter.index()] {
        // SAFETY: Envoy's configuration pointer during its hook; no labels.
        let _ = unsafe {
            abi::envoy_dynamic_module_callback_http_filter_config_increment_counter(
                envoy,
                id,
                std::ptr::null_mut(),
                0,
                1,
            )
        };
    }
}

/// Fetches the sidecar's decisions when they are due (`decided.rs`: one fetch per period).
fn sync_decisions(config: &Arc<ModuleConfig>, envoy: FilterConfigEnvoyPtr) {
    let Some(parsed) = thread_config(config) else { return };
    let Some(sync) = parsed.decisions.as_ref() else { return };
    let mut store = shared::Global;
    if !decided::claim(&mut store, host::now_ms(), sync.period_ms) {
        return;
    }
    let etag = decided::stored_etag(&store);
    let sidecar = &parsed.sidecar;
    let headers = decided::fetch_headers(sidecar, etag.as_deref());
    let mut headers = host::module_headers(&headers);
    let mut id = 0u64;
    // SAFETY: Envoy's configuration pointer on the main thread; live buffers; out-pointer.
    let result = unsafe {
        abi::envoy_dynamic_module_callback_http_filter_config_http_callout(
            envoy,
            &mut id,
            abi::ModuleBuffer::of(sidecar.cluster.as_bytes()),
            headers.as_mut_ptr(),
            headers.len(),
            abi::ModuleBuffer::NULL,
            u64::try_from(sidecar.timeout.as_millis()).unwrap_or(u64::MAX),
        )
    };
    if result != abi::CALLOUT_INIT_SUCCESS {
        increment_config(config, envoy, Counter::DecisionSyncFailures);
        log(LogLevel::Warn, &format!("{LOG_PREFIX}could not ask for the decisions: callout refused ({result})"));
    }
}

/// Stores a fetched list; a failure keeps the last good one.
///
/// # Safety
/// Envoy's pointers and arrays, valid during the call.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_config_http_callout_done(
    config_envoy: FilterConfigEnvoyPtr,
    config: FilterConfigModulePtr,
    _callout_id: u64,
    result: abi::CalloutResult,
    headers: *mut EnvoyHttpHeader,
    headers_size: usize,
    body_chunks: *mut EnvoyBuffer,
    body_chunks_size: usize,
) {
    guard(
        "decision sync answer",
        || (),
        || {
            // SAFETY: Envoy hands back our pointer.
            let config = unsafe { config_ref(config) };
            let ok = result == abi::CALLOUT_SUCCESS;
            // SAFETY: Envoy's arrays, valid during the call.
            let (status, etag) = unsafe {
                (
                    ok.then(|| host::callout_header(headers, headers_size, ":status")).flatten(),
                    host::callout_header(headers, headers_size, "etag"),
                )
            };
            // SAFETY: as above; at most one byte over the limit is copied.
            let body = unsafe { chunks(body_chunks, body_chunks_size, decided::MAX_BODY + 1) };
            let mut store = shared::Global;
            let outcome = match status.as_deref() {
                Some(b"304") => Ok(None),
                Some(b"200") if body.len() <= decided::MAX_BODY => {
                    let etag = String::from_utf8_lossy(&etag.unwrap_or_default()).into_owned();
                    decided::store_answer(&mut store, &etag, &body).map(Some)
                }
                Some(b"200") => Err(format!("the answer is over {} bytes", decided::MAX_BODY)),
                other => Err(format!("the sidecar answered {}", String::from_utf8_lossy(other.unwrap_or(b"nothing")))),
            };
            match outcome {
                Ok(names) => {
                    increment_config(&config, config_envoy, Counter::DecisionSyncs);
                    if let Some(names) = names {
                        log(LogLevel::Info, &format!("{LOG_PREFIX}{names} decided names from the sidecar"));
                    }
                }
                Err(e) => {
                    increment_config(&config, config_envoy, Counter::DecisionSyncFailures);
                    log(LogLevel::Warn, &format!("{LOG_PREFIX}decisions not updated: {e}"));
                }
            }
        },
    )
}

/// # Safety
/// `chunks` must point to `count` valid buffers (or be null).
unsafe fn chunks(chunks: *const EnvoyBuffer, count: usize, max: usize) -> Vec<u8> {
    if chunks.is_null() || count == 0 {
        return Vec::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { host::concat(std::slice::from_raw_parts(chunks, count), max) }
}

// ------------------------------------------------------------------ stream hooks

/// One HTTP stream.
struct Stream {
    config: Arc<ModuleConfig>,
    /// `None`: no configuration on this thread, or after a panic (`after_panic`).
    filter: Option<RequestFilter>,
    host: ModuleHost,
    /// What every later hook answers once a panic (or a missing configuration) was handled.
    after_panic: Option<Action>,
}

impl Stream {
    /// Runs one of the logic's callbacks; a panic answers the request by `failure_mode`.
    fn run(&mut self, hook: &str, f: impl FnOnce(&mut RequestFilter, &mut ModuleHost) -> Action) -> Action {
        if let Some(action) = self.after_panic {
            return action;
        }
        let Some(filter) = self.filter.as_mut() else {
            // No configuration on this thread: no verdict can be had.
            let action = fallback(&self.config, &mut self.host);
            self.after_panic = Some(action);
            return action;
        };
        let host = &mut self.host;
        match catch_unwind(AssertUnwindSafe(|| f(filter, host))) {
            Ok(action) => action,
            Err(_) => self.recover(hook),
        }
    }

    /// After a panic: the logic's own failure path (counters, request id, bypass header), else
    /// the plain failure reply; then the stream passes (or stays answered).
    fn recover(&mut self, hook: &str) -> Action {
        let filter = self.filter.take();
        let host = &mut self.host;
        let action = match filter {
            Some(mut filter) => {
                let action = catch_unwind(AssertUnwindSafe(|| filter.on_internal_error(host)))
                    .unwrap_or_else(|_| fallback(&self.config, host));
                // Out of the flights now: nothing would take it out later.
                let _ = catch_unwind(AssertUnwindSafe(|| filter.on_destroy(host)));
                action
            }
            None => fallback(&self.config, host),
        };
        let what = if action == Action::Continue { "let through" } else { "refused" };
        let _ = catch_unwind(|| {
            log(LogLevel::Error, &format!("{LOG_PREFIX}internal error in {hook}: the request is {what} (failure_mode)"))
        });
        self.after_panic = Some(action);
        action
    }
}

/// `failure_mode` without the logic: deny answers the failure reply, allow lets the request on.
fn fallback(config: &ModuleConfig, host: &mut ModuleHost) -> Action {
    if config.failure == Policy::Allow {
        return Action::Continue;
    }
    let reply = LocalReply::unavailable(config.failure_status);
    let sent = catch_unwind(AssertUnwindSafe(|| {
        host.send_local_response(reply.status, reply.details, &[("content-type", "application/json")], reply.body)
    }));
    match sent {
        Ok(Ok(())) => Action::Pause,
        _ => Action::Continue,
    }
}

/// # Safety
/// `ptr` comes from `filter_new` and not destroyed yet; one hook at a time (Envoy's worker).
unsafe fn stream<'a>(ptr: FilterModulePtr) -> &'a mut Stream {
    // SAFETY: guaranteed by the caller.
    unsafe { &mut *(ptr as *mut Stream) }
}

/// # Safety
/// `config` comes from `config_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_new(
    config: FilterConfigModulePtr,
    envoy: FilterEnvoyPtr,
) -> FilterModulePtr {
    // A thread without its configuration still makes a stream (its hooks follow `failure_mode`);
    // only a panic here answers null, which makes Envoy close the stream.
    let make = || {
        // SAFETY: Envoy hands back our pointer.
        let config = unsafe { config_ref(config) };
        let filter = thread_config(&config).map(RequestFilter::new);
        let host = ModuleHost::new(envoy, Arc::clone(&config.counters));
        Box::into_raw(Box::new(Stream { config, filter, host, after_panic: None })) as FilterModulePtr
    };
    match catch_unwind(AssertUnwindSafe(make)) {
        Ok(ptr) => ptr,
        Err(_) => {
            let _ = catch_unwind(|| log(LogLevel::Error, &format!("{LOG_PREFIX}internal error in filter new")));
            std::ptr::null()
        }
    }
}

/// # Safety
/// See [`stream`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { stream(filter) };
    stream.host.envoy = envoy;
    match stream.run("request headers", |f, h| f.on_request_headers(h, end_of_stream)) {
        Action::Continue => abi::HEADERS_CONTINUE,
        // Held for callouts: the body (if any) waits in Envoy, under flow control, and comes to
        // the filter once it resumes; with `StopIteration` Envoy would hand it over now, and the
        // filter, still waiting, could not take it.
        Action::Pause if stream.filter.as_ref().is_some_and(RequestFilter::awaits_callouts) => {
            abi::HEADERS_STOP_ALL_ITERATION_AND_WATERMARK
        }
        // Held while the body is read (the header hold), or answered.
        Action::Pause => abi::HEADERS_STOP_ITERATION,
    }
}

/// # Safety
/// See [`stream`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { stream(filter) };
    stream.host.envoy = envoy;
    stream.host.in_body_hook = true;
    let action = stream.run("request body", |f, h| {
        let size = h.body_size();
        f.on_request_body(h, size, end_of_stream)
    });
    stream.host.in_body_hook = false;
    match action {
        Action::Continue => abi::BODY_CONTINUE,
        Action::Pause => abi::BODY_STOP_ITERATION_AND_BUFFER,
    }
}

/// # Safety
/// See [`stream`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_trailers(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
) -> u32 {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { stream(filter) };
    stream.host.envoy = envoy;
    match stream.run("request trailers", |f, h| f.on_request_trailers(h)) {
        Action::Continue => abi::TRAILERS_CONTINUE,
        Action::Pause => abi::TRAILERS_STOP_ITERATION,
    }
}

/// The sidecar's answer (or Envoy's own, for a timeout or a refused connection).
///
/// # Safety
/// See [`stream`]; Envoy's arrays, valid during the call.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_http_callout_done(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    callout_id: u64,
    result: abi::CalloutResult,
    headers: *mut EnvoyHttpHeader,
    headers_size: usize,
    body_chunks: *mut EnvoyBuffer,
    body_chunks_size: usize,
) {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { stream(filter) };
    stream.host.envoy = envoy;
    let was_answered = stream.after_panic.is_some();
    let action = stream.run("callout answer", |f, h| {
        let Some(token) = h.take_token(callout_id) else { return Action::Pause };
        // A reset or an answer over Envoy's buffer limit has no status: a sidecar error.
        // SAFETY: Envoy's arrays, valid during the call.
        let status = unsafe { host::callout_header(headers, headers_size, ":status") }
            .filter(|_| result == abi::CALLOUT_SUCCESS)
            .and_then(|s| std::str::from_utf8(&s).ok()?.trim().parse().ok());
        // SAFETY: as above.
        let body = unsafe { chunks(body_chunks, body_chunks_size, MAX_CALLOUT_BODY) };
        f.on_callout_response(h, token, &CalloutResponse { status, body });
        Action::Pause // the logic resumes the request itself
    });
    // A panic handled just now that lets the request through: it was held for this answer.
    if !was_answered && stream.after_panic == Some(Action::Continue) && action == Action::Continue {
        let _ = catch_unwind(AssertUnwindSafe(|| stream.host.resume_request()));
    }
}

/// A wake-up from the stream's own scheduler: the answer of another stream's callout it waits
/// on (`flight.rs`), or that callout's lead.
///
/// # Safety
/// See [`stream`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_scheduled(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    _event_id: u64,
) {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { stream(filter) };
    stream.host.envoy = envoy;
    let was_answered = stream.after_panic.is_some();
    let action = stream.run("shared callout", |f, h| {
        f.on_wake(h);
        Action::Pause // the logic resumes the request itself
    });
    // As for a callout's answer: a panic handled just now that lets the held request through.
    if !was_answered && stream.after_panic == Some(Action::Continue) && action == Action::Continue {
        let _ = catch_unwind(AssertUnwindSafe(|| stream.host.resume_request()));
    }
}

/// # Safety
/// `filter` comes from `filter_new`; Envoy calls this once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_destroy(filter: FilterModulePtr) {
    if filter.is_null() {
        return;
    }
    guard(
        "filter destroy",
        || (),
        || {
            // SAFETY: made by `Box::into_raw` in `filter_new`.
            let mut stream = unsafe { Box::from_raw(filter as *mut Stream) };
            // Its callouts end with it: the flights it leads go on without it.
            if let Some(filter) = stream.filter.as_mut() {
                let _ = filter.on_destroy(&mut stream.host);
            }
        },
    )
}

#[cfg(test)]
mod tests;
