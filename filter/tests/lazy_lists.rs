//! The strong lists are inflated only when the local fallback first needs them, never at
//! configuration: a Wasm VM's memory never shrinks, and Envoy runs one VM per worker
//! (BENCHMARKS.md, section 8, "Where a Wasm worker's memory goes"). A test binary of its own, so
//! a process of its own: the lists are inflated once per process.

use email_verdict_core::Domain;
use email_verdict_filter::FilterConfig;
use email_verdict_filter::config::EnvError;
use email_verdict_filter::fallback;

#[test]
fn a_configuration_leaves_the_strong_lists_deflated_until_the_fallback_reads_them() {
    let doc = br#"{"sidecar": {"cluster": "email_verdict", "api_key": "ev_k"},
                   "signup_routes": [{"method": "POST", "path": "/signup"}]}"#;
    let config = FilterConfig::from_json(doc, &|_| Err(EnvError::NotSet)).unwrap();
    let lists = config.local_lists.expect("local_fallback defaults to true");
    assert!(!fallback::inflated(), "inflated at configuration");
    assert!(lists.is_listed(&Domain::parse("x.mailinator.com").unwrap()));
    assert!(fallback::inflated());
    assert!(!lists.is_listed(&Domain::parse("gmail.com").unwrap()));
}
