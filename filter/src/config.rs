//! The plugin configuration (`CONFIG.md`): serde types with their defaults, `validate()`, and the
//! resolved [`FilterConfig`] the filter runs with.
//!
//! Every error names the field it is about (`sidecar.timeout_ms: must be 1..=60000`): the
//! operator sees it once, in Envoy's log, when Envoy rejects the plugin.

use std::rc::Rc;
use std::time::Duration;

use serde::Deserialize;

use email_verdict_core::signup::settings::{check_range, check_status, is_tchar, parse_json, to_u16};
use email_verdict_core::signup::velocity::{MIN_MAILBOX_SECRET as MIN_SECRET, VelocityLimits, mailbox_secret};
use email_verdict_core::signup::{
    BlockResponse, Bypass, ConfigError, DetailHeaders, EmailSources, Enforcement, EnforcementConfig, FlagHeaders,
    GraphQl, Mode, NoMx, Policy, Subaddressed,
};

use crate::cache::VerdictCache;
use crate::decided::StoredDecisions;
use crate::fallback::StrongLists;
use crate::flight::Flights;
use email_verdict_core::signup::path as signup_path;

const MAX_TIMEOUT_MS: u64 = 60_000;
const MAX_ENTRIES: u64 = 1_000_000;
const MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;

/// Why an environment variable could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvError {
    NotSet,
    /// Only `wasm32-wasip1` modules can read the VM's environment.
    Unsupported,
    /// Not set in Envoy's own environment (the dynamic module reads the process environment).
    NotSetInEnvoy,
}

/// The JSON document, field for field. `email` .. `on_unreadable_body` are core's
/// [`EnforcementConfig`] (shared with the sidecar's ext_authz endpoint), written out here because
/// serde cannot flatten a struct that refuses unknown fields.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    pub sidecar: SidecarConfig,
    pub signup_routes: Vec<SignupRoute>,
    #[serde(default)]
    pub email: EmailSources,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default = "default_enforce_percent")]
    pub enforce_percent: u64,
    #[serde(default)]
    pub block_response: BlockResponse,
    #[serde(default)]
    pub flag_headers: FlagHeaders,
    #[serde(default)]
    pub detail_headers: DetailHeaders,
    #[serde(default = "Policy::allow")]
    pub on_missing_email: Policy,
    #[serde(default = "Policy::deny")]
    pub on_invalid_email: Policy,
    #[serde(default = "Policy::deny")]
    pub on_unreadable_body: Policy,
    #[serde(default)]
    pub failure_mode: FailureMode,
    #[serde(default = "default_failure_status")]
    pub failure_status: u64,
    #[serde(default = "yes")]
    pub local_fallback: bool,
    #[serde(default = "default_decision_sync_seconds")]
    pub decision_sync_seconds: u64,
    #[serde(default)]
    pub cache: CacheConfig,
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: u64,
    #[serde(default = "yes")]
    pub hold_headers: bool,
    /// Signup counts and their limits (core's `velocity`); absent: nothing is counted.
    #[serde(default)]
    pub velocity: Option<VelocityLimits>,
    #[serde(default)]
    pub on_subaddressed: Subaddressed,
    /// A domain that cannot receive mail: allow, flag or block (core's `NoMx`).
    #[serde(default)]
    pub no_mx: NoMx,
    /// Distinct sites (a name's last two labels) judged per signup (core's `extract`); more is refused.
    #[serde(default = "default_max_domains")]
    pub max_domains: u64,
    /// The secret of the mailbox hash (`velocity`): exactly one of the value and the name of
    /// an environment variable holding it, when `velocity` is set.
    #[serde(default)]
    pub mailbox_secret: Option<String>,
    #[serde(default)]
    pub mailbox_secret_env: Option<String>,
    /// GraphQL routes and the mutations that are signups (core's `GraphQl`); their paths are
    /// signup routes for POST.
    #[serde(default)]
    pub graphql: Option<GraphQl>,
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

fn default_decision_sync_seconds() -> u64 {
    30
}

/// At most an hour between two fetches of the decisions.
const MAX_DECISION_SYNC_SECONDS: u64 = 3600;

/// Keeping the sidecar's decisions ([`crate::decided`]): for `local_fallback`, and so that the
/// verdict cache never serves a verdict judged before a decision the gateway knows.
#[derive(Debug, Clone)]
pub struct DecisionSync {
    pub period_ms: u64,
    pub stored: Rc<StoredDecisions>,
    /// `local_fallback` decides by them when the sidecar gives no verdict.
    pub fallback: bool,
}
/// `failure_mode`: one policy for every way of getting no verdict (`"allow"` / `"deny"`), or one
/// per reason (`{"sidecar_timeout": "deny", ...}`; a reason left out is `allow`, the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureMode {
    pub sidecar_error: Policy,
    pub sidecar_timeout: Policy,
    pub sidecar_rejected: Policy,
}

impl Default for FailureMode {
    fn default() -> Self {
        Self::all(Policy::Allow)
    }
}

impl FailureMode {
    pub fn all(policy: Policy) -> Self {
        Self { sidecar_error: policy, sidecar_timeout: policy, sidecar_rejected: policy }
    }

    /// The policy for a request that got no verdict for this reason (a host failure counts as
    /// a sidecar error).
    pub fn for_reason(&self, reason: Bypass) -> Policy {
        match reason {
            Bypass::SidecarTimeout => self.sidecar_timeout,
            Bypass::SidecarRejected => self.sidecar_rejected,
            _ => self.sidecar_error,
        }
    }
}

impl<'de> Deserialize<'de> for FailureMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct PerReason {
            #[serde(default = "Policy::allow")]
            sidecar_error: Policy,
            #[serde(default = "Policy::allow")]
            sidecar_timeout: Policy,
            #[serde(default = "Policy::allow")]
            sidecar_rejected: Policy,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            All(Policy),
            PerReason(PerReason),
        }
        match Raw::deserialize(d) {
            Ok(Raw::All(policy)) => Ok(Self::all(policy)),
            Ok(Raw::PerReason(p)) => Ok(Self {
                sidecar_error: p.sidecar_error,
                sidecar_timeout: p.sidecar_timeout,
                sidecar_rejected: p.sidecar_rejected,
            }),
            Err(_) => Err(serde::de::Error::custom(
                "expected \"allow\", \"deny\", or an object of sidecar_error / sidecar_timeout / sidecar_rejected, each \"allow\" or \"deny\"",
            )),
        }
    }
}

fn default_max_domains() -> u64 {
    email_verdict_core::signup::extract::DEFAULT_MAX_DOMAINS as u64
}
fn default_enforce_percent() -> u64 {
    100
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
    /// `graphql.paths`, normalized: signup routes for POST, read by operation.
    pub graphql_paths: Vec<String>,
    /// Where the email is, block or flag, and the answers: shared with ext_authz.
    pub enforce: Enforcement,
    pub failure_mode: FailureMode,
    pub failure_status: u16,
    /// The embedded strong lists that decide when the sidecar gives no verdict (`fallback`;
    /// inflated on that first use, not here); `None` when `local_fallback` is false.
    pub local_lists: Option<StrongLists>,
    /// The sidecar's decisions, fetched every period; `None` when `decision_sync_seconds` is 0
    /// or neither `local_fallback` nor the cache needs them.
    pub decisions: Option<DecisionSync>,
    /// `None` when `cache.ttl_seconds` is 0.
    pub cache: Option<VerdictCache>,
    pub max_body_bytes: usize,
    /// False: block-only, the request headers go upstream at once (`CONFIG.md`, "Without the
    /// header hold"); nothing can be added to them.
    pub hold_headers: bool,
    /// The mailbox hash's secret; `Some` exactly when `enforce.velocity` is set.
    pub mailbox_secret: Option<Vec<u8>>,
    /// This worker's callouts in flight, shared by its streams (with the cache only).
    pub flights: Rc<Flights>,
}

impl FilterConfig {
    /// Parses, validates and resolves the plugin configuration; `env` reads `api_key_env`.
    pub fn from_json(bytes: &[u8], env: &dyn Fn(&str) -> Result<String, EnvError>) -> Result<Self, ConfigError> {
        PluginConfig::parse(bytes)?.resolve(env)
    }

    /// True when the request is a signup: a route names its method (case-insensitive) and its
    /// normalized path (`signup_path`: query, slashes, dot segments, escapes, `;params`, case).
    pub fn is_signup(&self, method: &str, path: &str) -> bool {
        let graphql = !self.graphql_paths.is_empty() && method.eq_ignore_ascii_case("POST");
        if !graphql && !self.routes.iter().any(|r| r.method.eq_ignore_ascii_case(method)) {
            return false; // no path work for the methods no route names
        }
        let normalized = signup_path::normalize(path);
        (graphql && self.graphql_paths.contains(&normalized))
            || self.routes.iter().any(|r| r.matches(method, &normalized))
    }

    /// True when `path` is one of `graphql.paths` (normalized): a signup only for the operations
    /// named (core's `extract::graphql`).
    pub fn is_graphql(&self, path: &str) -> bool {
        !self.graphql_paths.is_empty() && self.graphql_paths.contains(&signup_path::normalize(path))
    }
}

impl PluginConfig {
    /// Parses the JSON document; unknown fields and wrong types are errors naming the field.
    pub fn parse(bytes: &[u8]) -> Result<Self, ConfigError> {
        parse_json(bytes, "the plugin configuration is empty; sidecar and signup_routes are required")
    }

    /// The fields shared with ext_authz.
    fn enforcement(&self) -> EnforcementConfig {
        EnforcementConfig {
            email: self.email.clone(),
            mode: self.mode,
            enforce_percent: self.enforce_percent,
            block_response: self.block_response.clone(),
            flag_headers: self.flag_headers.clone(),
            detail_headers: self.detail_headers,
            on_missing_email: self.on_missing_email,
            on_invalid_email: self.on_invalid_email,
            on_unreadable_body: self.on_unreadable_body,
            velocity: self.velocity.clone(),
            on_subaddressed: self.on_subaddressed,
            no_mx: self.no_mx,
            max_domains: self.max_domains,
            graphql: self.graphql.clone(),
        }
    }

    /// Checks every value that needs no environment.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_sidecar()?;
        self.validate_routes()?;
        self.enforcement().validate()?;
        if !self.hold_headers && self.mode == Mode::Flag {
            return Err(ConfigError::invalid(
                "hold_headers",
                "false works only with mode \"block\" or \"shadow\": the flag headers cannot be added once the request headers have gone upstream",
            ));
        }
        check_status("failure_status", self.failure_status)?;
        check_range("cache.max_entries", self.cache.max_entries, 1, MAX_ENTRIES)?;
        check_range("decision_sync_seconds", self.decision_sync_seconds, 0, MAX_DECISION_SYNC_SECONDS)?;
        check_range("max_body_bytes", self.max_body_bytes, 1, MAX_BODY_BYTES)?;
        self.validate_mailbox_secret()
    }

    fn validate_mailbox_secret(&self) -> Result<(), ConfigError> {
        let field = "mailbox_secret";
        match (&self.velocity, &self.mailbox_secret, &self.mailbox_secret_env) {
            (_, Some(_), Some(_)) => {
                Err(ConfigError::invalid(field, "give mailbox_secret or mailbox_secret_env, not both"))
            }
            (Some(_), None, None) => {
                Err(ConfigError::invalid(field, "velocity counts mailboxes by a keyed hash: set mailbox_secret_env"))
            }
            (_, Some(secret), None) if mailbox_secret(secret).is_none() => {
                Err(ConfigError::invalid(field, format!("must be at least {MIN_SECRET} bytes")))
            }
            _ => Ok(()),
        }
    }

    /// The mailbox hash's secret, when `velocity` is set.
    fn mailbox_secret(&self, env: &dyn Fn(&str) -> Result<String, EnvError>) -> Result<Option<Vec<u8>>, ConfigError> {
        if self.velocity.is_none() {
            return Ok(None);
        }
        if let Some(secret) = &self.mailbox_secret {
            return Ok(mailbox_secret(secret));
        }
        let name = self.mailbox_secret_env.as_deref().unwrap_or_default();
        match mailbox_secret(&read_env(env, "mailbox_secret_env", name)?) {
            Some(secret) => Ok(Some(secret)),
            None => {
                Err(ConfigError::invalid("mailbox_secret_env", format!("{name} must hold at least {MIN_SECRET} bytes")))
            }
        }
    }

    /// Validates, then reads the API key and builds the runtime configuration.
    pub fn resolve(self, env: &dyn Fn(&str) -> Result<String, EnvError>) -> Result<FilterConfig, ConfigError> {
        self.validate()?;
        let key = self.api_key(env)?;
        let mailbox_secret = self.mailbox_secret(env)?;
        let enforce = self.enforcement().resolve()?;
        let sidecar = Sidecar {
            authority: self.sidecar.authority.clone().unwrap_or_else(|| self.sidecar.cluster.clone()),
            cluster: self.sidecar.cluster,
            timeout: Duration::from_millis(self.sidecar.timeout_ms),
            authorization: format!("Bearer {key}"),
        };
        let routes = self.signup_routes.into_iter().map(route).collect();
        let graphql_paths =
            enforce.graphql.iter().flat_map(|g| g.paths.iter()).map(|p| signup_path::normalize(p)).collect();
        let cache = VerdictCache::new(self.cache.ttl_seconds, self.cache.max_entries);
        // The cache needs the decisions too: a decision must reach the verdicts it holds.
        let synced = self.decision_sync_seconds > 0 && (self.local_fallback || cache.is_some());
        Ok(FilterConfig {
            sidecar,
            routes,
            graphql_paths,
            enforce,
            failure_mode: self.failure_mode,
            failure_status: to_u16(self.failure_status),
            local_lists: self.local_fallback.then_some(StrongLists),
            decisions: synced.then(|| DecisionSync {
                period_ms: self.decision_sync_seconds * 1000,
                stored: Rc::default(),
                fallback: self.local_fallback,
            }),
            cache: cache.map(|c| c.claiming(Duration::from_millis(self.sidecar.timeout_ms)).versioned(synced)),
            max_body_bytes: usize::try_from(self.max_body_bytes).unwrap_or(usize::MAX),
            hold_headers: self.hold_headers,
            mailbox_secret,
            flights: Rc::default(),
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

    fn api_key(&self, env: &dyn Fn(&str) -> Result<String, EnvError>) -> Result<String, ConfigError> {
        if let Some(key) = &self.sidecar.api_key {
            return Ok(key.clone());
        }
        let name = self.sidecar.api_key_env.as_deref().unwrap_or_default();
        let field = "sidecar.api_key_env";
        // A key mounted from a file often ends with a newline.
        let key = read_env(env, field, name)?.trim().to_owned();
        check_api_key(field, &key).map(|()| key)
    }
}

/// The environment variable `name` of the Wasm VM, for `field`.
fn read_env(env: &dyn Fn(&str) -> Result<String, EnvError>, field: &str, name: &str) -> Result<String, ConfigError> {
    env(name).map_err(|e| match e {
        EnvError::NotSet => ConfigError::invalid(
            field,
            format!("environment variable {name} is not set in the Wasm VM (vm_config.environment_variables)"),
        ),
        EnvError::NotSetInEnvoy => ConfigError::invalid(
            field,
            format!("environment variable {name} is not set in Envoy's environment (the dynamic module reads it)"),
        ),
        EnvError::Unsupported => {
            ConfigError::invalid(field, "environment variables can only be read by the wasm32-wasip1 build")
        }
    })
}

fn route(r: SignupRoute) -> Route {
    let path = match (r.path, r.path_prefix) {
        (Some(p), _) => PathMatch::Exact(signup_path::normalize(&p)),
        (None, p) => PathMatch::Prefix(signup_path::normalize(&p.unwrap_or_default())),
    };
    Route { method: r.method.to_ascii_uppercase(), path }
}

fn check_api_key(field: &str, key: &str) -> Result<(), ConfigError> {
    if key.is_empty() || !key.bytes().all(is_visible_ascii) {
        return Err(ConfigError::invalid(field, "the API key must be non-empty visible ASCII"));
    }
    Ok(())
}

fn is_visible_ascii(b: u8) -> bool {
    (0x21..=0x7e).contains(&b)
}

#[cfg(test)]
mod tests;
