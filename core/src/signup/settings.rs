//! The enforcement settings both enforcement points share, field for field as
//! `filter/CONFIG.md` gives them: where the email is, block or flag, the block response, the
//! flag headers (with the detail headers and which of them are sent) and what to do without a
//! usable email. The filter's plugin configuration holds
//! them beside its own fields; the sidecar's `--ext-authz-config` file holds only them. One type,
//! one set of defaults, one validation, so both say the same thing about the same mistake.
//!
//! Every error names the field it is about (`flag_headers.flags: must not be a header ...`).

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::velocity::VelocityLimits;
use serde_json::Value;

/// Headers an enforcement point must never strip or overwrite: naming one as a flag header would
/// remove it from every request (client copies of the flag headers are stripped) or corrupt framing.
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

/// A configuration that must be refused, with the field it is about.
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
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid { field: field.into(), message: message.into() }
    }
}

/// `block` answers disposable signups with `block_response`; `flag` only adds the headers;
/// `shadow` judges every signup as block mode does and changes nothing (`rollout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Block,
    Flag,
    Shadow,
}

/// `allow` lets the request through with the bypass header; `deny` answers it with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Allow,
    Deny,
}

impl Policy {
    /// Serde's default for `on_missing_email` and `failure_mode`.
    pub fn allow() -> Self {
        Self::Allow
    }
    /// Serde's default for `on_invalid_email` and `on_unreadable_body`.
    pub fn deny() -> Self {
        Self::Deny
    }
}

/// What to do with a sub-addressed signup (`details::is_subaddressed`: a `+tag` or provider
/// dots the provider ignores): let it through, add `subaddressed` to the flags header, or refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Subaddressed {
    #[default]
    Allow,
    Flag,
    Deny,
}

/// What to do with a signup whose domain cannot receive mail (`Mail::None`: no MX and no
/// address, a null MX, or no such name), a verdict the API keeps `safe`: let it through, add
/// `no_mx` to the flags header, or refuse it (`no_mx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoMx {
    #[default]
    Allow,
    Flag,
    Block,
}

/// Where the email is; every source is read and they must agree (`extract`).
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
    /// Fields never scanned for addresses: a name holding any of these (case-insensitively) is
    /// a secret (`extract::is_secret`). Lowercase once resolved.
    #[serde(default = "default_secret_fields")]
    pub secret_fields: Vec<String>,
    /// Protobuf field-number paths (`1`, `3.1`) of the signup's address in a gRPC or Connect
    /// message, read without a schema (`extract::protobuf`).
    #[serde(default)]
    pub proto_fields: Vec<String>,
}

impl Default for EmailSources {
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            query_params: Vec::new(),
            json_pointers: default_json_pointers(),
            form_fields: default_form_fields(),
            secret_fields: default_secret_fields(),
            proto_fields: Vec::new(),
        }
    }
}

/// GraphQL routes: a request to one of `paths` is a signup only when it runs a mutation (or a
/// fragment) naming one of `operations` (`extract::graphql`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphQl {
    pub paths: Vec<String>,
    pub operations: Vec<String>,
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
    /// The suggested provider domain of a probable typo (`did_you_mean`): the domain only,
    /// never the email's local part.
    #[serde(default = "default_suggestion_header")]
    pub suggestion: String,
    /// The detail headers ([`DetailHeaders`] says which are sent): the normalized address,
    /// whether it is a role account, whether its domain is a relay service.
    #[serde(default = "default_normalized_email_header")]
    pub normalized_email: String,
    #[serde(default = "default_role_account_header")]
    pub role_account: String,
    #[serde(default = "default_relay_header")]
    pub relay: String,
    /// Signup counts (`velocity`): this canonical mailbox's signups in the last 24 hours, this
    /// client's in the last hour, and the scopes whose `flag` limit the signup passed.
    #[serde(default = "default_mailbox_signups_header")]
    pub mailbox_signups: String,
    #[serde(default = "default_client_signups_header")]
    pub client_signups: String,
    #[serde(default = "default_velocity_header")]
    pub velocity: String,
}

impl Default for FlagHeaders {
    fn default() -> Self {
        Self {
            verdict: default_verdict_header(),
            domain: default_domain_header(),
            flags: default_flags_header(),
            bypass: default_bypass_header(),
            suggestion: default_suggestion_header(),
            normalized_email: default_normalized_email_header(),
            role_account: default_role_account_header(),
            relay: default_relay_header(),
            mailbox_signups: default_mailbox_signups_header(),
            client_signups: default_client_signups_header(),
            velocity: default_velocity_header(),
        }
    }
}

impl FlagHeaders {
    /// Every name, for stripping client copies (whether or not a detail header is sent).
    pub fn all(&self) -> [&str; 11] {
        self.named().map(|(_, name)| name)
    }

    /// The detail headers' names (a signup without an address of its own sends none of them).
    pub fn detail_names(&self) -> [&str; 3] {
        [&self.normalized_email, &self.role_account, &self.relay]
    }

    /// The signup count headers' names: mailbox, client, velocity (sent only with counting on).
    pub fn count_names(&self) -> [&str; 3] {
        [&self.mailbox_signups, &self.client_signups, &self.velocity]
    }

    /// Each name with its field, in `CONFIG.md` order.
    fn named(&self) -> [(&'static str, &str); 11] {
        [
            ("verdict", &self.verdict),
            ("domain", &self.domain),
            ("flags", &self.flags),
            ("bypass", &self.bypass),
            ("suggestion", &self.suggestion),
            ("normalized_email", &self.normalized_email),
            ("role_account", &self.role_account),
            ("relay", &self.relay),
            ("mailbox_signups", &self.mailbox_signups),
            ("client_signups", &self.client_signups),
            ("velocity", &self.velocity),
        ]
    }

    fn each_mut(&mut self) -> [&mut String; 11] {
        [
            &mut self.verdict,
            &mut self.domain,
            &mut self.flags,
            &mut self.bypass,
            &mut self.suggestion,
            &mut self.normalized_email,
            &mut self.role_account,
            &mut self.relay,
            &mut self.mailbox_signups,
            &mut self.client_signups,
            &mut self.velocity,
        ]
    }
}

/// `detail_headers`: which of the record's details the app receives, each under its
/// [`FlagHeaders`] name. All on by default; a detail switched off is never added, and a client's
/// copy of its header is still removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetailHeaders {
    #[serde(default = "yes")]
    pub normalized_email: bool,
    #[serde(default = "yes")]
    pub role_account: bool,
    #[serde(default = "yes")]
    pub relay: bool,
    /// The signup counts' headers (with `velocity` configured).
    #[serde(default = "yes")]
    pub mailbox_signups: bool,
    #[serde(default = "yes")]
    pub client_signups: bool,
}

impl Default for DetailHeaders {
    fn default() -> Self {
        Self { normalized_email: true, role_account: true, relay: true, mailbox_signups: true, client_signups: true }
    }
}

fn yes() -> bool {
    true
}

fn default_enforce_percent() -> u64 {
    100
}

/// The shared fields as a document (the sidecar's `--ext-authz-config` file is exactly this).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnforcementConfig {
    #[serde(default)]
    pub email: EmailSources,
    #[serde(default)]
    pub mode: Mode,
    /// The share of signups (by client, `rollout`) `mode` is enforced for; the rest are shadowed.
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
    /// Signup counts and their limits (`velocity.rs`); absent: nothing is counted.
    #[serde(default)]
    pub velocity: Option<VelocityLimits>,
    #[serde(default)]
    pub on_subaddressed: Subaddressed,
    #[serde(default)]
    pub no_mx: NoMx,
    /// Distinct sites (a name's last two labels) judged per signup (and twice as many names); more is
    /// refused (`too_many_addresses`).
    #[serde(default = "default_max_domains")]
    pub max_domains: u64,
    /// GraphQL routes and the mutations that are signups; absent: no route is read as GraphQL.
    #[serde(default)]
    pub graphql: Option<GraphQl>,
}

impl Default for EnforcementConfig {
    fn default() -> Self {
        Self {
            email: EmailSources::default(),
            mode: Mode::default(),
            enforce_percent: default_enforce_percent(),
            block_response: BlockResponse::default(),
            flag_headers: FlagHeaders::default(),
            detail_headers: DetailHeaders::default(),
            on_missing_email: Policy::allow(),
            on_invalid_email: Policy::deny(),
            on_unreadable_body: Policy::deny(),
            velocity: None,
            on_subaddressed: Subaddressed::default(),
            no_mx: NoMx::default(),
            max_domains: default_max_domains(),
            graphql: None,
        }
    }
}

impl EnforcementConfig {
    /// Parses and validates a document of these fields alone.
    pub fn from_json(bytes: &[u8]) -> Result<Enforcement, ConfigError> {
        parse_json::<Self>(bytes, "the configuration is empty; write {} for the defaults")?.resolve()
    }

    /// Checks every value.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_email()?;
        self.validate_headers()?;
        if let Some(velocity) = &self.velocity {
            velocity.validate().map_err(|(field, message)| ConfigError::invalid(field, message))?;
        }
        check_range("max_domains", self.max_domains, 1, super::extract::MAX_DOMAINS_LIMIT as u64)?;
        check_range("enforce_percent", self.enforce_percent, 0, 100)?;
        if let Some(graphql) = &self.graphql {
            graphql.validate()?;
        }
        check_status("block_response.status", self.block_response.status)
    }

    /// Validates and builds what an enforcement point runs with (header names lowercase, the
    /// block body serialized once).
    pub fn resolve(self) -> Result<Enforcement, ConfigError> {
        self.validate()?;
        let block_body = serde_json::to_vec(&self.block_response.body)
            .map_err(|e| ConfigError::invalid("block_response.body", e.to_string()))?;
        let mut email = self.email;
        email.headers.iter_mut().for_each(|h| h.make_ascii_lowercase());
        email.secret_fields.iter_mut().for_each(|f| *f = f.to_lowercase());
        let mut flag_headers = self.flag_headers;
        flag_headers.each_mut().into_iter().for_each(|name| name.make_ascii_lowercase());
        Ok(Enforcement {
            email,
            mode: self.mode,
            enforce_percent: u8::try_from(self.enforce_percent).unwrap_or(100),
            block_status: to_u16(self.block_response.status),
            block_body,
            flag_headers,
            detail_headers: self.detail_headers,
            on_missing_email: self.on_missing_email,
            on_invalid_email: self.on_invalid_email,
            on_unreadable_body: self.on_unreadable_body,
            velocity: self.velocity,
            on_subaddressed: self.on_subaddressed,
            no_mx: self.no_mx,
            max_domains: usize::try_from(self.max_domains).unwrap_or(usize::MAX),
            graphql: self.graphql,
        })
    }

    fn validate_email(&self) -> Result<(), ConfigError> {
        let e = &self.email;
        let none = e.headers.is_empty() && e.query_params.is_empty() && e.json_pointers.is_empty();
        if none && e.form_fields.is_empty() && e.proto_fields.is_empty() {
            return Err(ConfigError::invalid(
                "email",
                "at least one of headers, query_params, json_pointers, form_fields, proto_fields must name a source",
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
        for (i, path) in e.proto_fields.iter().enumerate() {
            if super::extract::protobuf::field_path(path).is_none() {
                return Err(ConfigError::invalid(
                    format!("email.proto_fields[{i}]"),
                    "must be field numbers joined by dots, each 1..=536870911 (e.g. \"1\" or \"3.1\")",
                ));
            }
        }
        let lists =
            [("query_params", &e.query_params), ("form_fields", &e.form_fields), ("secret_fields", &e.secret_fields)];
        for (list, names) in lists {
            if let Some(i) = names.iter().position(String::is_empty) {
                return Err(ConfigError::invalid(format!("email.{list}[{i}]"), "must not be empty"));
            }
        }
        Ok(())
    }

    fn validate_headers(&self) -> Result<(), ConfigError> {
        let named = self.flag_headers.named();
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
}

/// The validated shared settings an enforcement point runs with (header names lowercase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    pub email: EmailSources,
    pub mode: Mode,
    /// 0..=100, validated.
    pub enforce_percent: u8,
    pub block_status: u16,
    /// `block_response.body`, serialized once.
    pub block_body: Vec<u8>,
    pub flag_headers: FlagHeaders,
    pub detail_headers: DetailHeaders,
    pub on_missing_email: Policy,
    pub on_invalid_email: Policy,
    pub on_unreadable_body: Policy,
    pub velocity: Option<VelocityLimits>,
    pub on_subaddressed: Subaddressed,
    pub no_mx: NoMx,
    pub max_domains: usize,
    pub graphql: Option<GraphQl>,
}

impl GraphQl {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.paths.is_empty() {
            return Err(ConfigError::invalid("graphql.paths", "must name at least one path"));
        }
        if let Some(i) = self.paths.iter().position(|p| !p.starts_with('/')) {
            return Err(ConfigError::invalid(format!("graphql.paths[{i}]"), "must start with '/'"));
        }
        if self.operations.is_empty() {
            return Err(ConfigError::invalid("graphql.operations", "must name at least one mutation field"));
        }
        let name = |s: &str| {
            let mut chars = s.chars();
            chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
                && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        };
        match self.operations.iter().position(|o| !name(o)) {
            Some(i) => Err(ConfigError::invalid(format!("graphql.operations[{i}]"), "must be a GraphQL name")),
            None => Ok(()),
        }
    }
}

/// Parses a JSON document strictly (trailing data refused); errors name the field. `empty` is
/// the message for a document of only whitespace.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8], empty: &str) -> Result<T, ConfigError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ConfigError::Syntax(empty.to_owned()));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(syntax_error)?;
    de.end().map_err(|e| ConfigError::Syntax(e.to_string()))?;
    Ok(value)
}

/// `path: message`, where serde's own path stops at the parent of a missing or duplicate field
/// (`sidecar: missing field `cluster``) and is completed to name the field itself.
fn syntax_error(e: serde_path_to_error::Error<serde_json::Error>) -> ConfigError {
    let message = e.inner().to_string();
    let mut field = e.path().to_string();
    // `.` is the document itself; a last `?` is a key not yet read (`{"a": 1,}`): name the
    // object that holds it, or nothing at the top.
    while matches!(field.as_bytes().last(), Some(b'?' | b'.')) {
        field.pop();
    }
    for prefix in ["missing field `", "duplicate field `"] {
        if let Some((name, _)) = message.strip_prefix(prefix).and_then(|rest| rest.split_once('`')) {
            field = if field.is_empty() { name.to_owned() } else { format!("{field}.{name}") };
        }
    }
    ConfigError::Syntax(if field.is_empty() { message } else { format!("{field}: {message}") })
}

pub fn check_range(field: &str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::invalid(field, format!("must be {min}..={max}")))
    }
}

pub fn check_status(field: &str, status: u64) -> Result<(), ConfigError> {
    check_range(field, status, 400, 599)
}

pub fn to_u16(n: u64) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

pub fn check_header_name(field: &str, name: &str) -> Result<(), ConfigError> {
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(ConfigError::invalid(field, "must be an HTTP header name (letters, digits, '-', ...)"));
    }
    Ok(())
}

/// RFC 9110 `tchar`: what header names and methods are made of.
pub fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn default_json_pointers() -> Vec<String> {
    vec!["/email".to_owned()]
}
fn default_form_fields() -> Vec<String> {
    vec!["email".to_owned()]
}
fn default_secret_fields() -> Vec<String> {
    ["password", "passwd", "pwd"].map(str::to_owned).to_vec()
}
fn default_max_domains() -> u64 {
    super::extract::DEFAULT_MAX_DOMAINS as u64
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
fn default_suggestion_header() -> String {
    "x-email-suggestion".to_owned()
}
fn default_normalized_email_header() -> String {
    "x-email-normalized".to_owned()
}
fn default_role_account_header() -> String {
    "x-email-role".to_owned()
}
fn default_relay_header() -> String {
    "x-email-relay".to_owned()
}
fn default_mailbox_signups_header() -> String {
    "x-email-mailbox-signups".to_owned()
}
fn default_client_signups_header() -> String {
    "x-email-client-signups".to_owned()
}
fn default_velocity_header() -> String {
    "x-email-velocity".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_object_gets_the_filter_defaults() {
        let e = EnforcementConfig::from_json(b"{}").unwrap();
        assert_eq!(e.email.json_pointers, ["/email"]);
        assert_eq!(e.email.form_fields, ["email"]);
        assert_eq!((e.mode, e.block_status), (Mode::Block, 403));
        assert_eq!(
            e.flag_headers.all(),
            [
                "x-email-verdict",
                "x-email-domain",
                "x-email-flags",
                "x-email-verdict-bypass",
                "x-email-suggestion",
                "x-email-normalized",
                "x-email-role",
                "x-email-relay",
                "x-email-mailbox-signups",
                "x-email-client-signups",
                "x-email-velocity"
            ]
        );
        assert_eq!(e.detail_headers, DetailHeaders::default());
        assert!(e.detail_headers.mailbox_signups && e.detail_headers.client_signups && e.velocity.is_none());
        assert_eq!(
            (e.on_missing_email, e.on_invalid_email, e.on_unreadable_body),
            (Policy::Allow, Policy::Deny, Policy::Deny)
        );
        let body: Value = serde_json::from_slice(&e.block_body).unwrap();
        assert_eq!(body["error"], "disposable_email");
    }

    #[test]
    fn mistakes_name_their_field() {
        let cases = [
            (&b""[..], "the configuration is empty"),
            (b"{\"mode\":\"dry_run\"}", "mode: unknown variant `dry_run`"),
            (b"{\"enforce_percent\":101}", "enforce_percent: must be 0..=100"),
            (b"{\"sidecar\":{}}", "sidecar: unknown field `sidecar`"),
            (b"{\"email\":{\"headers\":[\"X-Email-Flags\"]}}", "email.headers[0]: must not be one of flag_headers"),
            (b"{\"flag_headers\":{\"flags\":\"cookie\"}}", "flag_headers.flags: must not be a header"),
            (b"{\"flag_headers\":{\"relay\":\"X-Email-Verdict\"}}", "flag_headers.relay: must differ"),
            (b"{\"flag_headers\":{\"normalized_email\":\"x email\"}}", "flag_headers.normalized_email: must be"),
            (b"{\"email\":{\"headers\":[\"x-email-role\"]}}", "email.headers[0]: must not be one of flag_headers"),
            (b"{\"detail_headers\":{\"role\":false}}", "detail_headers.role: unknown field `role`"),
            (b"{\"detail_headers\":{\"relay\":\"no\"}}", "detail_headers.relay: invalid type"),
            (b"{\"block_response\":{\"status\":200}}", "block_response.status: must be 400..=599"),
            (b"{\"velocity\":{\"client\":{\"per_hour\":0,\"action\":\"flag\"}}}", "velocity.client: give exactly one"),
            (
                b"{\"velocity\":{\"mailbox\":{\"per_day\":3,\"action\":\"drop\"}}}",
                "velocity.mailbox.action: unknown variant",
            ),
            (b"{\"flag_headers\":{\"velocity\":\"X-Email-Flags\"}}", "flag_headers.velocity: must differ"),
            (b"{} {}", "trailing characters"),
            (b"{\"mode\": \"flag\",}", "trailing comma at line 1 column 17"),
            (b"{\"block_response\": {\"status\": 403,}}", "block_response: trailing comma"),
        ];
        for (doc, expected) in cases {
            let err = EnforcementConfig::from_json(doc).unwrap_err().to_string();
            assert!(err.starts_with(expected), "{}: {err}", String::from_utf8_lossy(doc));
        }
    }
}
