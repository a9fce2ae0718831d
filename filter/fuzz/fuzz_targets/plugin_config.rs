//! Any bytes as the plugin configuration: parsing never panics, and a configuration that is
//! accepted holds what the filter relies on (statuses Envoy can send, a bounded body buffer,
//! routes and sources to look at, flag headers that are not framing headers).
#![no_main]

use email_verdict_filter::FilterConfig;
use email_verdict_filter::config::EnvError;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let env = |name: &str| match name {
        "EMAIL_VERDICT_API_KEY" => Ok("ev_0123456789abcdef0123456789abcdef01234567".to_owned()),
        _ => Err(EnvError::NotSet),
    };
    let Ok(config) = FilterConfig::from_json(data, &env) else { return };
    assert!((400..=599).contains(&config.enforce.block_status));
    assert!((400..=599).contains(&config.failure_status));
    assert!(config.max_body_bytes >= 1 && config.max_body_bytes <= 10 * 1024 * 1024);
    assert!(!config.routes.is_empty());
    for header in config.enforce.flag_headers.all() {
        assert!(!["content-length", "transfer-encoding", "host"].contains(&header));
    }
    // Route matching on odd paths never panics.
    for path in ["/", "", "/signup?x=1", "//", "/\u{e9}"] {
        let _ = config.is_signup("POST", path);
    }
});
