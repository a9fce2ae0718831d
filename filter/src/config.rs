//! The plugin configuration (`CONFIG.md`): serde types with their defaults, `validate()`, and the
//! resolved [`FilterConfig`] the filter runs with.
//!
//! Every error names the field it is about (`sidecar.timeout_ms: must be 1..=60000`): the
//! operator sees it once, in Envoy's log, when Envoy rejects the plugin.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use email_verdict_core::DomainSet;

use crate::cache::VerdictCache;
use crate::fallback;
use crate::signup_path;

const MAX_TIMEOUT_MS: u64 = 60_000;
const MAX_ENTRIES: u64 = 1_000_000;
const MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;

/// Headers the filter must never strip or overwrite: naming one as a flag header would remove it
/// from every request (the filter strips client copies of the flag headers) or corrupt framing.
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "connection",
    "content-encoding",
    "content-length",
    "content-type",
    "cookie",
    "expect",
    "host",
    "keep-alive",
    "proxy-connection",
    "te",
    "transfer-encoding",
    "upgrade",
];

/// A configuration Envoy must reject, with the field it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not JSON, an unknown field, a wrong type (the message starts with the field's path).
    #[error("{0}")]
    Syntax(String),
    /// A value out of range or inconsistent with another.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

impl ConfigError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid { field: field.into(), message: message.into() }
    }
}

/// Why an environment variable could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvError {
    NotSet,
    /// Only `wasm32-wasip1` modules can read the VM's environment.
    Unsupported,
}

/// `block` answers disposable signups with `block_response`; `flag` only adds the headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Block,
    Flag,
}

/// `allow` lets the request through with the bypass header; `deny` answers it with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Allow,
    Deny,
}

/// The JSON document, field for field.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    pub sidecar: SidecarConfig,
    pub signup_routes: Vec<SignupRoute>,
    #[serde(default)]
    pub email: EmailSources,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub block_response: BlockResponse,
    #[serde(default)]
    pub flag_headers: FlagHeaders,
    #[serde(default = "allow")]
    pub on_missing_email: Policy,
    #[serde(default = "deny")]
    pub on_invalid_email: Policy,
    #[serde(default = "deny")]
    pub on_unreadable_body: Policy,
    #[serde(default = "allow")]
    pub failure_mode: Policy,
    #[serde(default = "default_failure_status")]
    pub failure_status: u64,
    #[serde(default = "yes")]
    pub local_fallback: bool,
    #[serde(default)]
    pub cache: CacheConfig,
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SidecarConfig {
    pub cluster: String,
    #[serde(default)]
    pub authority: Option<String>,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignupRoute {
    pub method: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub path_prefix: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailSources {
    #[serde(default)]
    pub headers: Vec<String>,
    #[serde(default)]
    pub query_params: Vec<String>,
    #[serde(default = "default_json_pointers")]
    pub json_pointers: Vec<String>,
    #[serde(default = "default_form_fields")]
    pub form_fields: Vec<String>,
}

impl Default for EmailSources {
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            query_params: Vec::new(),
            json_pointers: default_json_pointers(),
            form_fields: default_form_fields(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockResponse {
    #[serde(default = "default_block_status")]
    pub status: u64,
    #[serde(default = "default_block_body")]
    pub body: Value,
}

impl Default for BlockResponse {
    fn default() -> Self {
        Self { status: default_block_status(), body: default_block_body() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagHeaders {
    #[serde(default = "default_verdict_header")]
    pub verdict: String,
    #[serde(default = "default_domain_header")]
    pub domain: String,
    #[serde(default = "default_flags_header")]
    pub flags: String,
    #[serde(default = "default_bypass_header")]
    pub bypass: String,
}

impl Default for FlagHeaders {
    fn default() -> Self {
        Self {
            verdict: default_verdict_header(),
            domain: default_domain_header(),
            flags: default_flags_header(),
            bypass: default_bypass_header(),
        }
    }
}

impl FlagHeaders {
    /// The four names, for stripping client copies.
    pub fn all(&self) -> [&str; 4] {
        [&self.verdict, &self.domain, &self.flags, &self.bypass]
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    #[serde(default = "default_ttl_seconds")]
    pub ttl_seconds: u64,
    #[serde(default = "default_max_entries")]
    pub max_entries: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self { ttl_seconds: default_ttl_seconds(), max_entries: default_max_entries() }
    }
}

fn yes() -> bool {
    true
}
fn allow() -> Policy {
    Policy::Allow
}
fn deny() -> Policy {
    Policy::Deny
}
fn default_failure_status() -> u64 {
    503
}
fn default_max_body_bytes() -> u64 {
    65_536
}
/// Long enough for a cold lookup (MX, then the hosts' addresses, through a recursive resolver),
/// which a shorter timeout would turn into a bypass; a signup form can wait that long.
fn default_timeout_ms() -> u64 {
    1000
}
fn default_json_pointers() -> Vec<String> {
    vec!["/email".to_owned()]
}
fn default_form_fields() -> Vec<String> {
    vec!["email".to_owned()]
}
fn default_block_status() -> u64 {
    403
}
fn default_block_body() -> Value {
    serde_json::json!({
        "error": "disposable_email",
        "message": "Please sign up with a permanent email address.",
    })
}
fn default_verdict_header() -> String {
    "x-email-verdict".to_owned()
}
fn default_domain_header() -> String {
    "x-email-domain".to_owned()
}
fn default_flags_header() -> String {
    "x-email-flags".to_owned()
}
fn default_bypass_header() -> String {
    "x-email-verdict-bypass".to_owned()
}
fn default_ttl_seconds() -> u64 {
    300
}
fn default_max_entries() -> u64 {
    10_000
}

/// How a signup route matches the path; both sides are [`signup_path::normalize`]d.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathMatch {
    /// The normalized path, or the normalized path without a `.extension` on its last segment.
    Exact(String),
    /// A prefix of the normalized path (string prefix, not per segment: lenient on purpose).
    Prefix(String),
}

/// A signup route, method uppercased, path normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub method: String,
    pub path: PathMatch,
}

impl Route {
    /// `normalized` is the request path after [`signup_path::normalize`].
    pub fn matches(&self, method: &str, normalized: &str) -> bool {
        self.method.eq_ignore_ascii_case(method)
            && match &self.path {
                PathMatch::Exact(p) => normalized == p || signup_path::without_extension(normalized) == Some(p),
                PathMatch::Prefix(p) => normalized.starts_with(p.as_str()),
            }
    }
}

/// Where and how to ask the sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sidecar {
    pub cluster: String,
    pub authority: String,
    pub timeout: Duration,
    /// The whole `authorization` header value, `Bearer <key>`.
    pub authorization: String,
}

/// The validated configuration the filter runs with (header names lowercase).
#[derive(Debug, Clone)]
pub struct FilterConfig {
    pub sidecar: Sidecar,
    pub routes: Vec<Route>,
    pub email: EmailSources,
    pub mode: Mode,
    pub block_status: u16,
    /// `block_response.body`, serialized once.
    pub block_body: Vec<u8>,
    pub flag_headers: FlagHeaders,
    pub on_missing_email: Policy,
    pub on_invalid_email: Policy,
    pub on_unreadable_body: Policy,
    pub failure_mode: Policy,
    pub failure_status: u16,
    /// The embedded strong lists that decide when the sidecar gives no verdict (`fallback`);
    /// `None` when `local_fallback` is false.
    pub local_lists: Option<&'static DomainSet>,
    /// `None` when `cache.ttl_seconds` is 0.
    pub cache: Option<VerdictCache>,
    pub max_body_bytes: usize,
}

impl FilterConfig {
    /// Parses, validates and resolves the plugin configuration; `env` reads `api_key_env`.
    pub fn from_json(bytes: &[u8], env: &dyn Fn(&str) -> Result<String, EnvError>) -> Result<Self, ConfigError> {
        PluginConfig::parse(bytes)?.resolve(env)
    }

    /// True when the request is a signup: a route names its method (case-insensitive) and its
    /// normalized path (`signup_path`: query, slashes, dot segments, escapes, `;params`, case).
    pub fn is_signup(&self, method: &str, path: &str) -> bool {
        if !self.routes.iter().any(|r| r.method.eq_ignore_ascii_case(method)) {
            return false; // no path work for the methods no route names
        }
        let normalized = signup_path::normalize(path);
        self.routes.iter().any(|r| r.matches(method, &normalized))
    }
}

impl PluginConfig {
    /// Parses the JSON document; unknown fields and wrong types are errors naming the field.
    pub fn parse(bytes: &[u8]) -> Result<Self, ConfigError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ConfigError::Syntax(
                "the plugin configuration is empty; sidecar and signup_routes are required".to_owned(),
            ));
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let config: Self = serde_path_to_error::deserialize(&mut de).map_err(syntax_error)?;
        de.end().map_err(|e| ConfigError::Syntax(e.to_string()))?;
        Ok(config)
    }

    /// Checks every value that needs no environment.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_sidecar()?;
        self.validate_routes()?;
        self.validate_email()?;
        self.validate_headers()?;
        check_status("block_response.status", self.block_response.status)?;
        check_status("failure_status", self.failure_status)?;
        check_range("cache.max_entries", self.cache.max_entries, 1, MAX_ENTRIES)?;
        check_range("max_body_bytes", self.max_body_bytes, 1, MAX_BODY_BYTES)?;
        Ok(())
    }

    /// Validates, then reads the API key and builds the runtime configuration.
    pub fn resolve(self, env: &dyn Fn(&str) -> Result<String, EnvError>) -> Result<FilterConfig, ConfigError> {
        self.validate()?;
        let key = self.api_key(env)?;
        let sidecar = Sidecar {
            authority: self.sidecar.authority.clone().unwrap_or_else(|| self.sidecar.cluster.clone()),
            cluster: self.sidecar.cluster,
            timeout: Duration::from_millis(self.sidecar.timeout_ms),
            authorization: format!("Bearer {key}"),
        };
        let routes = self.signup_routes.into_iter().map(route).collect();
        let block_body = serde_json::to_vec(&self.block_response.body)
            .map_err(|e| ConfigError::invalid("block_response.body", e.to_string()))?;
        let mut email = self.email;
        email.headers.iter_mut().for_each(|h| h.make_ascii_lowercase());
        let mut flag_headers = self.flag_headers;
        for name in
            [&mut flag_headers.verdict, &mut flag_headers.domain, &mut flag_headers.flags, &mut flag_headers.bypass]
        {
            name.make_ascii_lowercase();
        }
        Ok(FilterConfig {
            sidecar,
            routes,
            email,
            mode: self.mode,
            block_status: to_u16(self.block_response.status),
            block_body,
            flag_headers,
            on_missing_email: self.on_missing_email,
            on_invalid_email: self.on_invalid_email,
            on_unreadable_body: self.on_unreadable_body,
            failure_mode: self.failure_mode,
            failure_status: to_u16(self.failure_status),
            local_lists: self.local_fallback.then(fallback::strong),
            cache: VerdictCache::new(self.cache.ttl_seconds, self.cache.max_entries),
            max_body_bytes: usize::try_from(self.max_body_bytes).unwrap_or(usize::MAX),
        })
    }

    fn validate_sidecar(&self) -> Result<(), ConfigError> {
        let s = &self.sidecar;
        if s.cluster.is_empty() || s.cluster.chars().any(char::is_control) {
            return Err(ConfigError::invalid("sidecar.cluster", "must be a non-empty Envoy cluster name"));
        }
        if let Some(authority) = &s.authority
            && (authority.is_empty() || authority.len() > 255 || !authority.bytes().all(is_visible_ascii))
        {
            return Err(ConfigError::invalid(
                "sidecar.authority",
                "must be a non-empty host[:port] of at most 255 visible ASCII characters",
            ));
        }
        check_range("sidecar.timeout_ms", s.timeout_ms, 1, MAX_TIMEOUT_MS)?;
        match (&s.api_key, &s.api_key_env) {
            (Some(_), Some(_)) | (None, None) => Err(ConfigError::invalid(
                "sidecar.api_key",
                "exactly one of sidecar.api_key and sidecar.api_key_env is required",
            )),
            (Some(key), None) => check_api_key("sidecar.api_key", key),
            (None, Some(name)) if name.is_empty() || name.contains(['=', '\0']) => {
                Err(ConfigError::invalid("sidecar.api_key_env", "must be the name of an environment variable"))
            }
            (None, Some(_)) => Ok(()),
        }
    }

    fn validate_routes(&self) -> Result<(), ConfigError> {
        if self.signup_routes.is_empty() {
            return Err(ConfigError::invalid("signup_routes", "must name at least one route"));
        }
        for (i, r) in self.signup_routes.iter().enumerate() {
            if r.method.is_empty() || !r.method.bytes().all(is_tchar) {
                return Err(ConfigError::invalid(format!("signup_routes[{i}].method"), "must be an HTTP method"));
            }
            let (field, path) = match (&r.path, &r.path_prefix) {
                (Some(p), None) => ("path", p),
                (None, Some(p)) => ("path_prefix", p),
                _ => {
                    return Err(ConfigError::invalid(
                        format!("signup_routes[{i}]"),
                        "exactly one of path and path_prefix is required",
                    ));
                }
            };
            if !path.starts_with('/') || path.contains(['?', '#']) || !path.bytes().all(is_visible_ascii) {
                return Err(ConfigError::invalid(
                    format!("signup_routes[{i}].{field}"),
                    "must start with '/' and hold no query, fragment, space or control character",
                ));
            }
        }
        Ok(())
    }

    fn validate_email(&self) -> Result<(), ConfigError> {
        let e = &self.email;
        if e.headers.is_empty() && e.query_params.is_empty() && e.json_pointers.is_empty() && e.form_fields.is_empty() {
            return Err(ConfigError::invalid(
                "email",
                "at least one of headers, query_params, json_pointers, form_fields must name a source",
            ));
        }
        for (i, h) in e.headers.iter().enumerate() {
            check_header_name(&format!("email.headers[{i}]"), h)?;
            if self.flag_headers.all().iter().any(|f| f.eq_ignore_ascii_case(h)) {
                return Err(ConfigError::invalid(
                    format!("email.headers[{i}]"),
                    "must not be one of flag_headers (those are stripped from every request)",
                ));
            }
        }
        for (i, p) in e.json_pointers.iter().enumerate() {
            if !(p.is_empty() || p.starts_with('/')) {
                return Err(ConfigError::invalid(
                    format!("email.json_pointers[{i}]"),
                    "must be an RFC 6901 pointer: empty or starting with '/'",
                ));
            }
        }
        for (list, names) in [("query_params", &e.query_params), ("form_fields", &e.form_fields)] {
            if let Some(i) = names.iter().position(String::is_empty) {
                return Err(ConfigError::invalid(format!("email.{list}[{i}]"), "must not be empty"));
            }
        }
        Ok(())
    }

    fn validate_headers(&self) -> Result<(), ConfigError> {
        let f = &self.flag_headers;
        let named = [("verdict", &f.verdict), ("domain", &f.domain), ("flags", &f.flags), ("bypass", &f.bypass)];
        for (i, (field, name)) in named.iter().enumerate() {
            let path = format!("flag_headers.{field}");
            check_header_name(&path, name)?;
            if RESERVED_HEADERS.iter().any(|r| r.eq_ignore_ascii_case(name)) {
                return Err(ConfigError::invalid(path, "must not be a header the proxy or the app relies on"));
            }
            if named[..i].iter().any(|(_, other)| other.eq_ignore_ascii_case(name)) {
                return Err(ConfigError::invalid(path, "must differ from the other flag headers"));
            }
        }
        Ok(())
    }

    fn api_key(&self, env: &dyn Fn(&str) -> Result<String, EnvError>) -> Result<String, ConfigError> {
        if let Some(key) = &self.sidecar.api_key {
            return Ok(key.clone());
        }
        let name = self.sidecar.api_key_env.as_deref().unwrap_or_default();
        let field = "sidecar.api_key_env";
        match env(name) {
            // A key mounted from a file often ends with a newline.
            Ok(value) => {
                let key = value.trim().to_owned();
                check_api_key(field, &key).map(|()| key)
            }
            Err(EnvError::NotSet) => Err(ConfigError::invalid(
                field,
                format!("environment variable {name} is not set in the Wasm VM (vm_config.environment_variables)"),
            )),
            Err(EnvError::Unsupported) => {
                Err(ConfigError::invalid(field, "environment variables can only be read by the wasm32-wasip1 build"))
            }
        }
    }
}

/// `path: message`, where serde's own path stops at the parent of a missing or duplicate field
/// (`sidecar: missing field `cluster``) and is completed to name the field itself.
fn syntax_error(e: serde_path_to_error::Error<serde_json::Error>) -> ConfigError {
    let message = e.inner().to_string();
    let mut field = e.path().to_string();
    if field == "." {
        field.clear();
    }
    for prefix in ["missing field `", "duplicate field `"] {
        if let Some((name, _)) = message.strip_prefix(prefix).and_then(|rest| rest.split_once('`')) {
            field = if field.is_empty() { name.to_owned() } else { format!("{field}.{name}") };
        }
    }
    ConfigError::Syntax(if field.is_empty() { message } else { format!("{field}: {message}") })
}

fn route(r: SignupRoute) -> Route {
    let path = match (r.path, r.path_prefix) {
        (Some(p), _) => PathMatch::Exact(signup_path::normalize(&p)),
        (None, p) => PathMatch::Prefix(signup_path::normalize(&p.unwrap_or_default())),
    };
    Route { method: r.method.to_ascii_uppercase(), path }
}

fn check_range(field: &str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::invalid(field, format!("must be {min}..={max}")))
    }
}

fn check_status(field: &str, status: u64) -> Result<(), ConfigError> {
    check_range(field, status, 400, 599)
}

fn to_u16(n: u64) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn check_api_key(field: &str, key: &str) -> Result<(), ConfigError> {
    if key.is_empty() || !key.bytes().all(is_visible_ascii) {
        return Err(ConfigError::invalid(field, "the API key must be non-empty visible ASCII"));
    }
    Ok(())
}

fn check_header_name(field: &str, name: &str) -> Result<(), ConfigError> {
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(ConfigError::invalid(field, "must be an HTTP header name (letters, digits, '-', ...)"));
    }
    Ok(())
}

/// RFC 9110 `tchar`: what header names and methods are made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_visible_ascii(b: u8) -> bool {
    (0x21..=0x7e).contains(&b)
}

#[cfg(test)]
mod tests;
