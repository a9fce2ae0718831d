//! The stream hooks: one [`RequestFilter`] per HTTP stream over a [`ModuleHost`], each hook run
//! inside a panic guard; a stream's scheduled wake-up (a shared callout's answer) and its end.

use super::*;

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
    let sent = catch_unwind(AssertUnwindSafe(|| {
        // In the request's protocol when its headers can be read (a gRPC client must get its
        // `grpc-status`: `ModuleHost::send_local_response`), else as REST.
        let protocol = host.request_headers().map(|h| {
            let path = crate::signup_path::normalize(&h.text(":path"));
            Protocol::of(&|name| h.values(name), config.graphql_paths.contains(&path))
        });
        let reply = LocalReply::unavailable(config.failure_status);
        let out = reply.render(&protocol.unwrap_or_default(), Via::LocalReply, None);
        let headers: Vec<(&str, &str)> = out.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        host.send_local_response(out.status, out.details, &headers, &out.body, out.grpc_status)
    }));
    match sent {
        Ok(Ok(())) => Action::Pause,
        _ => Action::Continue,
    }
}

/// The stream a hook is for, its host talking to Envoy through this hook's `envoy` pointer.
///
/// # Safety
/// `ptr` comes from `filter_new` and not destroyed yet; one hook at a time (Envoy's worker).
unsafe fn entered<'a>(envoy: FilterEnvoyPtr, ptr: FilterModulePtr) -> &'a mut Stream {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { &mut *(ptr as *mut Stream) };
    stream.host.envoy = envoy;
    stream
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
/// See [`entered`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_headers(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { entered(envoy, filter) };
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
/// See [`entered`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_body(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    end_of_stream: bool,
) -> u32 {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { entered(envoy, filter) };
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
/// See [`entered`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_request_trailers(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
) -> u32 {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { entered(envoy, filter) };
    match stream.run("request trailers", |f, h| f.on_request_trailers(h)) {
        Action::Continue => abi::TRAILERS_CONTINUE,
        Action::Pause => abi::TRAILERS_STOP_ITERATION,
    }
}

/// The sidecar's answer (or Envoy's own, for a timeout or a refused connection).
///
/// # Safety
/// See [`entered`]; Envoy's arrays, valid during the call.
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
    let stream = unsafe { entered(envoy, filter) };
    let was_answered = stream.after_panic.is_some();
    let action = stream.run("callout answer", |f, h| {
        let Some(token) = h.take_token(callout_id) else { return Action::Pause };
        // A reset or an answer over Envoy's buffer limit has no status: a sidecar error.
        let succeeded = result == abi::CALLOUT_SUCCESS;
        // SAFETY: Envoy's arrays, valid during the call.
        let header = |name: &str| unsafe { host::callout_header(headers, headers_size, name) }.filter(|_| succeeded);
        // SAFETY: as above.
        let body = unsafe { chunks(body_chunks, body_chunks_size, MAX_CALLOUT_BODY) };
        f.on_callout_response(h, token, &CalloutResponse::read(header, body));
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
/// See [`entered`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn envoy_dynamic_module_on_http_filter_scheduled(
    envoy: FilterEnvoyPtr,
    filter: FilterModulePtr,
    _event_id: u64,
) {
    // SAFETY: guaranteed by the caller.
    let stream = unsafe { entered(envoy, filter) };
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
