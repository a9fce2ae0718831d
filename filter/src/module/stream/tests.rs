//! The module's glue without Envoy: the unit-test build links `abi.rs`'s stand-ins, which
//! answer every callback with "nothing" (no headers, a refused callout).

use super::*;

fn config_json(failure_mode: &str) -> Vec<u8> {
    serde_json::json!({
        "sidecar": { "cluster": "email_verdict", "api_key": "ev_0000000000000000000000000000000000000000" },
        "signup_routes": [{ "method": "POST", "path": "/signup" }],
        "failure_mode": failure_mode,
    })
    .to_string()
    .into_bytes()
}

fn stream(failure_mode: &str) -> Stream {
    let config = configure(std::ptr::null_mut(), config_json(failure_mode)).expect("a valid configuration");
    let filter = thread_config(&config).map(RequestFilter::new);
    assert!(filter.is_some());
    let host = ModuleHost::new(std::ptr::null_mut(), Arc::clone(&config.counters));
    Stream { config, filter, host, after_panic: None }
}

#[test]
fn program_init_answers_the_abi_version() {
    let version = envoy_dynamic_module_on_program_init();
    assert!(!version.is_null());
    assert_eq!(host::c_bytes(version), abi::ABI_VERSION.to_bytes());
}

#[test]
fn a_bad_configuration_is_refused() {
    assert!(configure(std::ptr::null_mut(), b"{}".to_vec()).is_none());
    assert!(configure(std::ptr::null_mut(), b"not json".to_vec()).is_none());
    let env = serde_json::json!({
        "sidecar": { "cluster": "c", "api_key_env": "EMAIL_VERDICT_TEST_UNSET_VARIABLE" },
        "signup_routes": [{ "method": "POST", "path": "/signup" }],
    });
    assert!(configure(std::ptr::null_mut(), env.to_string().into_bytes()).is_none(), "unset variable");
}

#[test]
fn guard_turns_a_panic_into_the_fallback() {
    assert_eq!(guard("test", || 7, || 1), 1);
    assert_eq!(guard("test", || 7, || panic!("boom: someone@example.com")), 7);
}

#[test]
fn a_panic_with_failure_mode_deny_refuses_the_request_and_later_hooks_hold() {
    let mut s = stream("deny");
    let action = s.run("request headers", |_, _| panic!("boom"));
    assert_eq!(action, Action::Pause, "the failure reply was sent: the request stays held");
    assert_eq!(s.after_panic, Some(Action::Pause));
    assert!(s.filter.is_none());
    assert_eq!(s.run("request body", |_, _| Action::Continue), Action::Pause, "later hooks do not run the logic");
}

#[test]
fn a_panic_with_failure_mode_allow_lets_the_request_through() {
    let mut s = stream("allow");
    assert_eq!(s.run("request headers", |_, _| panic!("boom")), Action::Continue);
    assert_eq!(s.run("request body", |_, _| Action::Pause), Action::Continue);
}

#[test]
fn a_panic_in_the_failure_path_still_answers() {
    let mut s = stream("deny");
    s.filter = None; // as if the logic itself could not be asked
    assert_eq!(s.recover("test"), Action::Pause);
    let mut s = stream("allow");
    s.filter = None;
    assert_eq!(s.recover("test"), Action::Continue);
}

#[test]
fn a_panicking_stream_hook_does_not_unwind_into_the_caller() {
    let mut s = stream("deny");
    let ptr = std::ptr::addr_of_mut!(s) as FilterModulePtr;
    // No request headers from the stand-in: the logic answers without panicking; the hook returns.
    // SAFETY: a live stream.
    let status = unsafe { envoy_dynamic_module_on_http_filter_request_headers(std::ptr::null_mut(), ptr, true) };
    assert!(status == abi::HEADERS_CONTINUE || status == abi::HEADERS_STOP_ITERATION);
}

#[test]
fn each_thread_parses_its_own_copy() {
    let config = configure(std::ptr::null_mut(), config_json("allow")).unwrap();
    let here = thread_config(&config).unwrap();
    assert!(Rc::ptr_eq(&here, &thread_config(&config).unwrap()), "parsed once per thread");
    let shared = Arc::clone(&config);
    let there = std::thread::spawn(move || thread_config(&shared).map(|c| Rc::as_ptr(&c) as usize)).join().unwrap();
    assert!(there.is_some_and(|p| p != Rc::as_ptr(&here) as usize));
}

#[test]
fn the_environment_is_envoys_own() {
    assert_eq!(env_var("EMAIL_VERDICT_TEST_UNSET_VARIABLE"), Err(EnvError::NotSetInEnvoy));
    assert!(env_var("PATH").is_ok());
}

#[test]
fn without_a_configuration_on_its_thread_a_stream_follows_failure_mode() {
    for (mode, want) in [("deny", Action::Pause), ("allow", Action::Continue)] {
        let mut s = stream(mode);
        s.filter = None;
        assert_eq!(s.run("request headers", |_, _| panic!("never called")), want, "{mode}");
        assert_eq!(s.run("request body", |_, _| panic!("never called")), want, "{mode}");
    }
}
