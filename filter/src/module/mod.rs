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
mod span;
mod stream;

use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use email_verdict_core::signup::{LocalReply, Policy, Protocol, Via};

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
    /// `graphql.paths`, normalized: a panic's answer on one is GraphQL's.
    graphql_paths: Vec<String>,
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
        graphql_paths: parsed.graphql_paths.clone(),
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
            // SAFETY: as above; read where they lie, never copied whole.
            let chunks = unsafe { chunk_slices(body_chunks, body_chunks_size) };
            let body = decided::Chunks::new(&chunks);
            let mut store = shared::Global;
            let outcome = match status.as_deref() {
                Some(b"304") => Ok(None),
                Some(b"200") => {
                    let etag = String::from_utf8_lossy(&etag.unwrap_or_default()).into_owned();
                    let len = body.len();
                    decided::store_answer_read(&mut store, &etag, body, len).map(Some)
                }
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

/// The bytes of each of Envoy's buffers, where they lie.
///
/// # Safety
/// `chunks` must point to `count` valid buffers (or be null), each valid while the result is used.
unsafe fn chunk_slices<'a>(chunks: *const EnvoyBuffer, count: usize) -> Vec<&'a [u8]> {
    if chunks.is_null() || count == 0 {
        return Vec::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { std::slice::from_raw_parts(chunks, count).iter().map(|c| c.bytes()).collect() }
}
