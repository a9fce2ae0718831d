//! `serve` settings: each from its flag, else `EMAIL_VERDICT_<FLAG>`, else the `--config` TOML
//! file (same names as the flags), else the default.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde::Deserialize;

use email_verdict_core::signup::velocity::{MIN_MAILBOX_SECRET, mailbox_secret};
use email_verdict_core::signup::{Enforcement, EnforcementConfig, Policy};

pub use crate::api::velocity::Counting;

use crate::dns::{CacheConfig, ResolverSettings, parse_nameserver};
use crate::lists::{ListRole, ListSettings, ListSpec};
pub use crate::logging::LogFormat;
use crate::outbound::Reach;
use crate::pages::PageSettings;
use crate::pages::ipdata::IpDataSettings;
use crate::plans::{PlanDef, Plans};
use crate::rdap::{Bootstrap, RdapSettings};
use crate::state::queue::QUEUE_CAPACITY;
use crate::usage_error;

mod reload;
pub use reload::{ExtAuthzReloader, PlanReloader};

pub const DEFAULT_STATE: &str = "sqlite:email-verdict.db";
/// Bounds of `--review-queue-capacity`: a queue a reviewer can work through, and one a store
/// holds without trouble (an entry is a few hundred bytes).
const MIN_QUEUE_CAPACITY: usize = 100;
const MAX_QUEUE_CAPACITY: usize = 1_000_000;
/// Connections the public listener holds at once (`--max-connections`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// `--lookup-deadline-ms`.
pub const DEFAULT_LOOKUP_DEADLINE_MS: u64 = 700;
/// Connections one client holds at once on the public listener (`--max-connections-per-peer`).
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 256;

/// Flags of `serve`. Values left unset here fall through to the file, then the defaults.
#[derive(Debug, Default, Args, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ServeArgs {
    /// Public listener: the API and public pages [default: 127.0.0.1:8080]
    #[arg(long, env = "EMAIL_VERDICT_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Admin listener: health, key management, metrics [default: 127.0.0.1:8081]
    #[arg(long, env = "EMAIL_VERDICT_ADMIN_LISTEN", value_name = "ADDR")]
    pub admin_listen: Option<SocketAddr>,
    /// State store: sqlite:PATH, redis://HOST:PORT[/DB] or redis+cluster://HOST:PORT[,HOST:PORT...] [default: sqlite:email-verdict.db]
    #[arg(long, env = "EMAIL_VERDICT_STATE", value_name = "URL")]
    pub state: Option<String>,
    /// Nameserver ADDR[:PORT] to query instead of the system resolver; repeatable
    #[arg(long, env = "EMAIL_VERDICT_DNS", value_name = "ADDR[:PORT]", value_delimiter = ',')]
    pub dns: Vec<String>,
    /// Settings file (TOML, keys named like these flags)
    #[arg(long, env = "EMAIL_VERDICT_CONFIG", value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Per-query DNS timeout in milliseconds [default: 2000]
    #[arg(long, env = "EMAIL_VERDICT_DNS_TIMEOUT_MS", value_name = "MS")]
    pub dns_timeout_ms: Option<u64>,
    /// Time one lookup waits for all its DNS work, in milliseconds; past it, a verdict the lists or a decision fix comes without MX data [default: 700]
    #[arg(long, env = "EMAIL_VERDICT_LOOKUP_DEADLINE_MS", value_name = "MS")]
    pub lookup_deadline_ms: Option<u64>,
    /// Shortest time an answer is cached, in seconds, whatever its DNS TTL [default: 60]
    #[arg(long, env = "EMAIL_VERDICT_CACHE_MIN_TTL", value_name = "SECS")]
    pub cache_min_ttl: Option<u64>,
    /// Longest time an answer is cached, in seconds, whatever its DNS TTL [default: 3600]
    #[arg(long, env = "EMAIL_VERDICT_CACHE_MAX_TTL", value_name = "SECS")]
    pub cache_max_ttl: Option<u64>,
    /// How long an expired answer is kept to serve when DNS fails, in seconds [default: 86400]
    #[arg(long, env = "EMAIL_VERDICT_CACHE_STALE_TTL", value_name = "SECS")]
    pub cache_stale_ttl: Option<u64>,
    /// Most domains kept in the cache [default: 100000]
    #[arg(long, env = "EMAIL_VERDICT_CACHE_SIZE", value_name = "N")]
    pub cache_size: Option<usize>,
    /// Extra disposable domains (one per line): a file or an http(s) URL, optionally prefixed
    /// `weak:` or `strong:` (default strong); repeatable
    #[arg(long, env = "EMAIL_VERDICT_DISPOSABLE_LIST", value_name = "SOURCE", value_delimiter = ',')]
    pub disposable_list: Vec<String>,
    /// Extra free-webmail domains: a file or an http(s) URL; repeatable
    #[arg(long, env = "EMAIL_VERDICT_FREE_LIST", value_name = "SOURCE", value_delimiter = ',')]
    pub free_list: Vec<String>,
    /// Domains always `safe` (allowlisted): a file or an http(s) URL; repeatable
    #[arg(long, env = "EMAIL_VERDICT_ALLOWLIST", value_name = "SOURCE", value_delimiter = ',')]
    pub allowlist: Vec<String>,
    /// Domains always `disposable` (blocked), unless free webmail: a file or an http(s) URL; repeatable
    #[arg(long, env = "EMAIL_VERDICT_BLOCKLIST", value_name = "SOURCE", value_delimiter = ',')]
    pub blocklist: Vec<String>,
    /// Seconds between two fetches of a URL list (give or take a tenth); 0 = on SIGHUP only.
    /// Files are re-read when they change [default: 3600]
    #[arg(long, env = "EMAIL_VERDICT_LIST_REFRESH", value_name = "SECS")]
    pub list_refresh: Option<u64>,
    /// Largest share of its entries a list may lose in one reload before the new copy is
    /// refused (0 to 1; 1 = no check) [default: 0.5]
    #[arg(long, env = "EMAIL_VERDICT_LIST_MAX_SHRINK", value_name = "FRACTION")]
    pub list_max_shrink: Option<f64>,
    /// Directory for the last good copy of each URL list [default: beside the SQLite state
    /// file, PATH.lists]
    #[arg(long, env = "EMAIL_VERDICT_LIST_CACHE_DIR", value_name = "DIR")]
    pub list_cache_dir: Option<PathBuf>,
    /// Proxy (CIDR or address) whose X-Forwarded-For names the caller; repeatable
    #[arg(long, env = "EMAIL_VERDICT_TRUSTED_PROXY", value_name = "CIDR", value_delimiter = ',')]
    pub trusted_proxy: Vec<String>,
    /// Bearer token for the admin API; required when --admin-listen is not loopback
    #[arg(long, env = "EMAIL_VERDICT_ADMIN_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Distinct disposable domains an MX host or address must serve to count as disposable
    /// infrastructure [default: 2]
    #[arg(long, env = "EMAIL_VERDICT_INFRA_THRESHOLD", value_name = "N")]
    pub infra_threshold: Option<u64>,
    /// Domains the review queue keeps (the least useful are dropped past it, and counted);
    /// give every replica on one store the same value [default: 10000]
    #[arg(long, env = "EMAIL_VERDICT_REVIEW_QUEUE_CAPACITY", value_name = "N")]
    pub review_queue_capacity: Option<usize>,
    /// Strong-listed domains resolved per second in the background to warm up the
    /// infrastructure index (about 3 to 7 DNS queries each); 0 = off [default: 5]
    #[arg(long, env = "EMAIL_VERDICT_WARMUP_RATE", value_name = "N")]
    pub warmup_rate: Option<u32>,
    /// Seconds a client has to send a whole request header (slow clients get 408 and are
    /// closed) [default: 30]
    #[arg(long, env = "EMAIL_VERDICT_HEADER_TIMEOUT", value_name = "SECS")]
    pub header_timeout: Option<u64>,
    /// Connections the public listener holds at once; one more is answered 503 and closed.
    /// Lowered at start to what the open-file limit allows [default: 4096]
    #[arg(long, env = "EMAIL_VERDICT_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<usize>,
    /// Connections one client address (an IPv6 /64) holds at once on the public listener;
    /// --trusted-proxy addresses count only towards --max-connections [default: 256]
    #[arg(long, env = "EMAIL_VERDICT_MAX_CONNECTIONS_PER_PEER", value_name = "N")]
    pub max_connections_per_peer: Option<usize>,
    /// JSON: the filter's settings that apply to /ext_authz (email, mode, block_response,
    /// flag_headers, detail_headers, on_missing_email, on_invalid_email, on_unreadable_body)
    /// [default: their defaults]
    #[arg(long, env = "EMAIL_VERDICT_EXT_AUTHZ_CONFIG", value_name = "FILE")]
    pub ext_authz_config: Option<PathBuf>,
    /// Envoy's gRPC ext_authz (envoy.service.auth.v3.Authorization/Check, cleartext HTTP/2) on
    /// this address, with the /ext_authz check's settings [default: off]
    #[arg(long, env = "EMAIL_VERDICT_EXT_AUTHZ_GRPC_LISTEN", value_name = "ADDR")]
    pub ext_authz_grpc_listen: Option<SocketAddr>,
    /// Secret of the keyed mailbox hash (HMAC-SHA256) the signup counts use: the same on the
    /// gateway and every replica; required when --ext-authz-config has `velocity`
    #[arg(long, env = "EMAIL_VERDICT_MAILBOX_SECRET", value_name = "SECRET", hide_env_values = true)]
    pub mailbox_secret: Option<String>,
    /// Plans beyond the built-in four, in the settings file only: `[plans.NAME]` with
    /// `daily-quota` and `burst-per-second` (a number or "unlimited")
    #[arg(skip)]
    pub plans: BTreeMap<String, PlanDef>,
    /// Worker threads [default: number of CPUs]
    #[arg(long, env = "EMAIL_VERDICT_THREADS", value_name = "N")]
    pub threads: Option<usize>,
    /// Log format: text or json [default: text]
    #[arg(long, env = "EMAIL_VERDICT_LOG_FORMAT", value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Public pages: shortest time between two re-checks of one domain, in seconds [default: 86400]
    #[arg(long, env = "EMAIL_VERDICT_RECHECK_INTERVAL", value_name = "SECS")]
    pub recheck_interval: Option<u64>,
    /// Public pages: page views per minute per client IP; 0 = unlimited [default: 60]
    #[arg(long, env = "EMAIL_VERDICT_PAGE_RATE_LIMIT", value_name = "N")]
    pub page_rate_limit: Option<u32>,
    /// Public pages: re-checks per hour per client IP; 0 = unlimited [default: 10]
    #[arg(long, env = "EMAIL_VERDICT_RECHECK_RATE_LIMIT", value_name = "N")]
    pub recheck_rate_limit: Option<u32>,
    /// Public pages: MMDB file for IP → country (GeoLite2 Country/City, IPinfo...) [default: shipped]
    #[arg(long, env = "EMAIL_VERDICT_GEOIP_COUNTRY_DB", value_name = "FILE")]
    pub geoip_country_db: Option<PathBuf>,
    /// Public pages: MMDB file for IP → ASN (GeoLite2 ASN, IPinfo...) [default: shipped]
    #[arg(long, env = "EMAIL_VERDICT_GEOIP_ASN_DB", value_name = "FILE")]
    pub geoip_asn_db: Option<PathBuf>,
    /// Public pages: credit line for the MMDB files given [default: from their metadata]
    #[arg(long, env = "EMAIL_VERDICT_GEOIP_ATTRIBUTION", value_name = "TEXT")]
    pub geoip_attribution: Option<String>,
    /// Public pages: base URL of canonical and hreflang links, e.g. https://verdict.example.com
    /// [default: paths only]
    #[arg(long, env = "EMAIL_VERDICT_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// Domain age (`details.domain_age_days`): ask the registries' RDAP servers in the
    /// background, never on a lookup's path; `--rdap` alone means true [default: false]
    #[arg(long, env = "EMAIL_VERDICT_RDAP", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub rdap: Option<bool>,
    /// RDAP bootstrap file (RFC 9224 format) naming each TLD's RDAP server [default: the shipped
    /// IANA registry, data/rdap/dns.json]
    #[arg(long, env = "EMAIL_VERDICT_RDAP_BOOTSTRAP", value_name = "FILE")]
    pub rdap_bootstrap: Option<PathBuf>,
    /// Most time one RDAP request may take, in milliseconds [default: 3000]
    #[arg(long, env = "EMAIL_VERDICT_RDAP_TIMEOUT_MS", value_name = "MS")]
    pub rdap_timeout_ms: Option<u64>,
    /// Let outbound requests (RDAP, URL lists) reach loopback, private, link-local and other
    /// non-public addresses (a list server on the operator's own network); `--allow-private-outbound`
    /// alone means true. Redirects stay within their origin either way [default: false]
    #[arg(long, env = "EMAIL_VERDICT_ALLOW_PRIVATE_OUTBOUND", value_name = "BOOL", num_args = 0..=1,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_private_outbound: Option<bool>,
    /// Graceful upgrade: take the listeners over from the `serve` running with the same --listen,
    /// then send that one SIGQUIT (it drains and exits)
    #[arg(long, env = "EMAIL_VERDICT_UPGRADE", value_parser = clap::builder::BoolishValueParser::new())]
    // Not in the settings file: there it would turn every later start into an upgrade.
    #[serde(skip)]
    pub upgrade: bool,
}

/// Settings after layering; what the server runs with.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    pub state: String,
    pub resolver: ResolverSettings,
    pub cache: CacheConfig,
    pub lists: ListSettings,
    pub trusted_proxies: Vec<ipnet::IpNet>,
    pub admin_token: Option<String>,
    pub infra_threshold: u64,
    pub review_queue_capacity: usize,
    /// Infrastructure warm-up: domains per second; 0 = off.
    pub warmup_rate: u32,
    /// Time one lookup waits for all its DNS work (`--lookup-deadline-ms`).
    pub lookup_deadline: Duration,
    /// Time for a whole request header, on both listeners.
    pub header_timeout: Duration,
    /// Connections the public listener holds at once, in all and from one client.
    pub max_connections: usize,
    pub max_connections_per_peer: usize,
    pub threads: usize,
    pub log_format: LogFormat,
    pub pages: PageSettings,
    /// How `/ext_authz` finds the email and answers.
    pub ext_authz: Enforcement,
    /// Its file, read again on SIGHUP.
    pub ext_authz_file: Option<PathBuf>,
    /// `/ext_authz`'s signup counting, when its configuration has `velocity`.
    pub ext_authz_counting: Option<Counting>,
    /// The gRPC ext_authz listener, when on.
    pub ext_authz_grpc_listen: Option<SocketAddr>,
    /// The built-in plans and the file's.
    pub plans: Arc<Plans>,
    /// The `--config` file, read again on SIGHUP for its plans.
    pub config_file: Option<PathBuf>,
    /// Take the listeners over from the running process (Pingora's graceful upgrade).
    pub upgrade: bool,
    /// Domain age from RDAP (`--rdap`); `None` when off.
    pub rdap: Option<RdapSettings>,
    /// Which addresses outbound requests may reach (`--allow-private-outbound`).
    pub outbound: Reach,
}

impl ServeArgs {
    /// Layers these flags over the `--config` file and the defaults, and checks the result.
    pub fn resolve(self) -> anyhow::Result<ServeConfig> {
        let file = match &self.config {
            Some(path) => read_file(path)?,
            None => ServeArgs::default(),
        };
        let merged = self.over(file);
        let outbound = if merged.allow_private_outbound.unwrap_or(false) { Reach::Any } else { Reach::Public };
        let pages = page_settings(&merged, Duration::from_millis(merged.dns_timeout_ms.unwrap_or(2000).max(1)))?;
        let state = merged.state.clone().unwrap_or_else(|| DEFAULT_STATE.to_owned());
        let lists = ListSettings { reach: outbound, ..list_settings(&merged, &state)? };
        let rdap = rdap_settings(&merged)?.map(|rdap| RdapSettings { reach: outbound, ..rdap });
        let nameservers = merged
            .dns
            .iter()
            .map(|s| parse_nameserver(s).ok_or_else(|| usage_error(format!("--dns {s:?}: expected ADDR[:PORT]"))))
            .collect::<Result<_, _>>()?;
        let timeout = Duration::from_millis(merged.dns_timeout_ms.unwrap_or(2000).max(1));
        let min_ttl = Duration::from_secs(merged.cache_min_ttl.unwrap_or(60));
        let max_ttl = Duration::from_secs(merged.cache_max_ttl.unwrap_or(3600));
        if min_ttl > max_ttl {
            return Err(usage_error("--cache-min-ttl must not exceed --cache-max-ttl"));
        }
        let capacity = NonZeroUsize::new(merged.cache_size.unwrap_or(100_000))
            .ok_or_else(|| usage_error("--cache-size must be at least 1"))?;
        let attempts = 2;
        let trusted_proxies = merged
            .trusted_proxy
            .iter()
            .map(|s| crate::client_ip::parse_network(s).map_err(|e| usage_error(format!("--trusted-proxy: {e}"))))
            .collect::<Result<_, _>>()?;
        let admin_listen = merged.admin_listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8081)));
        let admin_token = merged.admin_token.filter(|t| !t.is_empty());
        if admin_token.is_none() && !admin_listen.ip().is_loopback() {
            return Err(usage_error(format!(
                "--admin-listen {admin_listen} is not a loopback address: set --admin-token (or EMAIL_VERDICT_ADMIN_TOKEN)"
            )));
        }
        let header_timeout = match merged.header_timeout.unwrap_or(30) {
            0 => return Err(usage_error("--header-timeout must be at least 1 second")),
            secs => Duration::from_secs(secs),
        };
        let max_connections = match merged.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS) {
            0 => return Err(usage_error("--max-connections must be at least 1")),
            n => n,
        };
        let max_connections_per_peer = match merged.max_connections_per_peer.unwrap_or(DEFAULT_MAX_CONNECTIONS_PER_PEER)
        {
            0 => return Err(usage_error("--max-connections-per-peer must be at least 1")),
            n => n.min(max_connections),
        };
        let review_queue_capacity = match merged.review_queue_capacity.unwrap_or(QUEUE_CAPACITY) {
            n @ MIN_QUEUE_CAPACITY..=MAX_QUEUE_CAPACITY => n,
            n => {
                return Err(usage_error(format!(
                    "--review-queue-capacity {n}: expected {MIN_QUEUE_CAPACITY} to {MAX_QUEUE_CAPACITY}"
                )));
            }
        };
        let (ext_authz, failure_mode) = ext_authz_settings(merged.ext_authz_config.as_deref())?;
        let ext_authz_counting = counting(&ext_authz, failure_mode, merged.mailbox_secret.as_deref())?;
        let plans = Plans::with_defined(&merged.plans).map_err(|e| usage_error(format!("[plans] in --config: {e}")))?;
        Ok(ServeConfig {
            listen: merged.listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
            admin_listen,
            state,
            resolver: ResolverSettings { nameservers, timeout, attempts },
            cache: CacheConfig {
                capacity,
                min_ttl,
                max_ttl,
                stale_ttl: Duration::from_secs(merged.cache_stale_ttl.unwrap_or(86_400)),
                // Every query may take `attempts` timeouts; MX then addresses run in sequence.
                lookup_timeout: timeout * (2 * attempts as u32) + Duration::from_millis(500),
            },
            lists,
            trusted_proxies,
            admin_token,
            infra_threshold: merged.infra_threshold.unwrap_or(2).max(1),
            review_queue_capacity,
            warmup_rate: merged.warmup_rate.unwrap_or(5),
            lookup_deadline: lookup_deadline(merged.lookup_deadline_ms)?,
            header_timeout,
            max_connections,
            max_connections_per_peer,
            threads: merged
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
                .max(1),
            log_format: merged.log_format.unwrap_or(LogFormat::Text),
            pages,
            ext_authz,
            ext_authz_file: merged.ext_authz_config.clone(),
            ext_authz_counting,
            ext_authz_grpc_listen: merged.ext_authz_grpc_listen,
            plans: Arc::new(plans),
            config_file: merged.config.clone(),
            upgrade: merged.upgrade,
            rdap,
            outbound,
        })
    }

    /// Each field of `self` if set, else the one from `lower`.
    fn over(self, lower: ServeArgs) -> ServeArgs {
        fn vec<T>(upper: Vec<T>, lower: Vec<T>) -> Vec<T> {
            if upper.is_empty() { lower } else { upper }
        }
        ServeArgs {
            listen: self.listen.or(lower.listen),
            admin_listen: self.admin_listen.or(lower.admin_listen),
            state: self.state.or(lower.state),
            dns: vec(self.dns, lower.dns),
            config: self.config,
            dns_timeout_ms: self.dns_timeout_ms.or(lower.dns_timeout_ms),
            lookup_deadline_ms: self.lookup_deadline_ms.or(lower.lookup_deadline_ms),
            cache_min_ttl: self.cache_min_ttl.or(lower.cache_min_ttl),
            cache_max_ttl: self.cache_max_ttl.or(lower.cache_max_ttl),
            cache_stale_ttl: self.cache_stale_ttl.or(lower.cache_stale_ttl),
            cache_size: self.cache_size.or(lower.cache_size),
            disposable_list: vec(self.disposable_list, lower.disposable_list),
            free_list: vec(self.free_list, lower.free_list),
            allowlist: vec(self.allowlist, lower.allowlist),
            blocklist: vec(self.blocklist, lower.blocklist),
            list_refresh: self.list_refresh.or(lower.list_refresh),
            list_max_shrink: self.list_max_shrink.or(lower.list_max_shrink),
            list_cache_dir: self.list_cache_dir.or(lower.list_cache_dir),
            trusted_proxy: vec(self.trusted_proxy, lower.trusted_proxy),
            admin_token: self.admin_token.or(lower.admin_token),
            infra_threshold: self.infra_threshold.or(lower.infra_threshold),
            review_queue_capacity: self.review_queue_capacity.or(lower.review_queue_capacity),
            warmup_rate: self.warmup_rate.or(lower.warmup_rate),
            header_timeout: self.header_timeout.or(lower.header_timeout),
            max_connections: self.max_connections.or(lower.max_connections),
            max_connections_per_peer: self.max_connections_per_peer.or(lower.max_connections_per_peer),
            ext_authz_config: self.ext_authz_config.or(lower.ext_authz_config),
            ext_authz_grpc_listen: self.ext_authz_grpc_listen.or(lower.ext_authz_grpc_listen),
            mailbox_secret: self.mailbox_secret.or(lower.mailbox_secret),
            plans: if self.plans.is_empty() { lower.plans } else { self.plans },
            threads: self.threads.or(lower.threads),
            log_format: self.log_format.or(lower.log_format),
            recheck_interval: self.recheck_interval.or(lower.recheck_interval),
            page_rate_limit: self.page_rate_limit.or(lower.page_rate_limit),
            recheck_rate_limit: self.recheck_rate_limit.or(lower.recheck_rate_limit),
            geoip_country_db: self.geoip_country_db.or(lower.geoip_country_db),
            geoip_asn_db: self.geoip_asn_db.or(lower.geoip_asn_db),
            geoip_attribution: self.geoip_attribution.or(lower.geoip_attribution),
            public_url: self.public_url.or(lower.public_url),
            rdap: self.rdap.or(lower.rdap),
            rdap_bootstrap: self.rdap_bootstrap.or(lower.rdap_bootstrap),
            rdap_timeout_ms: self.rdap_timeout_ms.or(lower.rdap_timeout_ms),
            allow_private_outbound: self.allow_private_outbound.or(lower.allow_private_outbound),
            upgrade: self.upgrade,
        }
    }
}

/// The public pages' settings; a reverse lookup gets one DNS timeout.
/// `--lookup-deadline-ms`: by default well inside the gateway's callout timeout (1 s in the
/// shipped configurations), so a DNS outage gives an answer rather than a timeout.
fn lookup_deadline(ms: Option<u64>) -> anyhow::Result<Duration> {
    match ms.unwrap_or(DEFAULT_LOOKUP_DEADLINE_MS) {
        0 => Err(usage_error("--lookup-deadline-ms must be at least 1")),
        ms => Ok(Duration::from_millis(ms)),
    }
}

fn page_settings(merged: &ServeArgs, dns_timeout: Duration) -> anyhow::Result<PageSettings> {
    let public_url = merged.public_url.clone().unwrap_or_default().trim_end_matches('/').to_owned();
    if !(public_url.is_empty() || public_url.starts_with("https://") || public_url.starts_with("http://")) {
        return Err(usage_error(format!("--public-url {public_url:?}: expected http(s)://HOST[:PORT]")));
    }
    let recheck_interval = merged.recheck_interval.unwrap_or(86_400);
    if recheck_interval == 0 {
        return Err(usage_error("--recheck-interval must be at least 1 second"));
    }
    Ok(PageSettings {
        recheck_interval: Duration::from_secs(recheck_interval),
        views_per_minute: merged.page_rate_limit.unwrap_or(60),
        rechecks_per_hour: merged.recheck_rate_limit.unwrap_or(10),
        public_url,
        ipdata: IpDataSettings {
            country_db: merged.geoip_country_db.clone(),
            asn_db: merged.geoip_asn_db.clone(),
            attribution: merged.geoip_attribution.clone().filter(|a| !a.trim().is_empty()),
        },
        reverse_timeout: dns_timeout,
    })
}

/// The operator lists and how they are reloaded. Their copies are kept beside a SQLite state
/// file unless `--list-cache-dir` says where; with another store, only there.
fn list_settings(merged: &ServeArgs, state: &str) -> anyhow::Result<ListSettings> {
    let flags = [
        (ListRole::Disposable, &merged.disposable_list),
        (ListRole::Free, &merged.free_list),
        (ListRole::Allow, &merged.allowlist),
        (ListRole::Block, &merged.blocklist),
    ];
    let specs = flags
        .iter()
        .flat_map(|(role, values)| values.iter().map(|v| ListSpec::parse(*role, v)))
        .collect::<anyhow::Result<_>>()?;
    let max_shrink = merged.list_max_shrink.unwrap_or(0.5);
    if !(0.0..=1.0).contains(&max_shrink) {
        return Err(usage_error(format!("--list-max-shrink {max_shrink}: expected a fraction from 0 to 1")));
    }
    let sqlite = state.strip_prefix("sqlite://").or_else(|| state.strip_prefix("sqlite:"));
    let kept_dir = merged.list_cache_dir.clone().or_else(|| sqlite.map(|path| PathBuf::from(format!("{path}.lists"))));
    let refresh = Duration::from_secs(merged.list_refresh.unwrap_or(3600));
    Ok(ListSettings { specs, refresh, max_shrink, kept_dir, ..ListSettings::default() })
}

/// RDAP's settings when `--rdap` is on. A `--rdap-bootstrap` file is read and checked even when
/// it is off, so that a mistake shows before it is turned on.
fn rdap_settings(merged: &ServeArgs) -> anyhow::Result<Option<RdapSettings>> {
    let bootstrap = match &merged.rdap_bootstrap {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage_error(format!("--rdap-bootstrap {}: {e}", path.display())))?;
            Some(
                Bootstrap::parse(&text)
                    .map_err(|e| usage_error(format!("--rdap-bootstrap {}: {e}", path.display())))?,
            )
        }
        None => None,
    };
    let timeout = match merged.rdap_timeout_ms {
        Some(0) => return Err(usage_error("--rdap-timeout-ms must be at least 1")),
        Some(ms) => Duration::from_millis(ms),
        None => crate::rdap::DEFAULT_TIMEOUT,
    };
    if !merged.rdap.unwrap_or(false) {
        return Ok(None);
    }
    let bootstrap = match bootstrap {
        Some(b) => b,
        None => Bootstrap::shipped().map_err(|e| anyhow::anyhow!("the shipped RDAP bootstrap registry: {e}"))?,
    };
    Ok(Some(RdapSettings { bootstrap: Arc::new(bootstrap), timeout, reach: Reach::Public }))
}

/// The plans of a settings file (the built-in ones and its `[plans]`), for a reload.
pub fn plans_of_file(path: &Path) -> anyhow::Result<Plans> {
    let args = read_file(path)?;
    Plans::with_defined(&args.plans).map_err(|e| usage_error(format!("[plans] in --config: {e}")))
}

fn read_file(path: &Path) -> anyhow::Result<ServeArgs> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read --config {}", path.display()))?;
    toml::from_str(&text).map_err(|e| usage_error(format!("--config {}: {}", path.display(), e.message())))
}

/// The `--ext-authz-config` file (the filter's shared settings, same validation and messages,
/// and ext_authz's own `failure_mode` for counting: `allow` by default), or the defaults.
pub(crate) fn ext_authz_settings(path: Option<&Path>) -> anyhow::Result<(Enforcement, Policy)> {
    let Some(path) = path else {
        let defaults =
            EnforcementConfig::default().resolve().map_err(|e| anyhow::anyhow!("ext_authz defaults: {e}"))?;
        return Ok((defaults, Policy::Allow));
    };
    let bytes = std::fs::read(path).with_context(|| format!("cannot read --ext-authz-config {}", path.display()))?;
    ext_authz_from_json(&bytes).map_err(|e| usage_error(format!("--ext-authz-config {}: {e}", path.display())))
}

/// An `--ext-authz-config` document, parsed and validated (`serve` and `validate-config` alike);
/// the error names the field.
pub fn ext_authz_from_json(bytes: &[u8]) -> Result<(Enforcement, Policy), String> {
    let (shared, failure_mode) = split_failure_mode(bytes)?;
    let enforcement = EnforcementConfig::from_json(&shared).map_err(|e| e.to_string())?;
    Ok((enforcement, failure_mode))
}

/// The document without its `failure_mode` (not a shared field: the filter's own is per reason),
/// and that policy. A document that is not a JSON object is left to the shared parser's message.
fn split_failure_mode(bytes: &[u8]) -> Result<(Vec<u8>, Policy), String> {
    let Ok(serde_json::Value::Object(mut doc)) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return Ok((bytes.to_vec(), Policy::Allow));
    };
    let policy = match doc.remove("failure_mode") {
        None => Policy::Allow,
        Some(value) => serde_json::from_value(value)
            .map_err(|_| "failure_mode: expected \"allow\" or \"deny\" (what counting does when the store fails)")?,
    };
    Ok((serde_json::to_vec(&doc).unwrap_or_default(), policy))
}

/// Counting is on when the configuration has `velocity`, which needs the mailbox secret.
fn counting(ext_authz: &Enforcement, failure_mode: Policy, secret: Option<&str>) -> anyhow::Result<Option<Counting>> {
    if ext_authz.velocity.is_none() {
        return Ok(None);
    }
    match secret.filter(|s| !s.trim().is_empty()) {
        Some(text) => match mailbox_secret(text) {
            Some(secret) => Ok(Some(Counting { secret, failure_mode })),
            None => Err(usage_error(format!(
                "--mailbox-secret must hold at least {MIN_MAILBOX_SECRET} bytes (the same as the gateway's)"
            ))),
        },
        None => Err(usage_error(
            "--ext-authz-config has velocity: give the mailbox hash's secret with --mailbox-secret \
             (or EMAIL_VERDICT_MAILBOX_SECRET), the same as the gateway's",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_file_beats_defaults() {
        let dir = std::env::temp_dir().join(format!("ev-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\nstate = \"sqlite:file.db\"\ndns = [\"127.0.0.1:5353\"]\ncache-min-ttl = 5\n",
        )
        .unwrap();
        let args = ServeArgs { state: Some("sqlite:flag.db".into()), config: Some(file.clone()), ..Default::default() };
        let c = args.resolve().unwrap();
        assert_eq!(c.listen, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(c.state, "sqlite:flag.db");
        assert_eq!(c.admin_listen, "127.0.0.1:8081".parse().unwrap());
        assert_eq!(c.resolver.nameservers, vec!["127.0.0.1:5353".parse().unwrap()]);
        assert_eq!(c.cache.min_ttl, Duration::from_secs(5));
        std::fs::write(&file, "listn = \"x\"\n").unwrap();
        let err = ServeArgs { config: Some(file), ..Default::default() }.resolve().unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_values_are_usage_errors() {
        let bad_dns = ServeArgs { dns: vec!["ns.example".into()], ..Default::default() };
        assert!(bad_dns.resolve().unwrap_err().is::<crate::UsageError>());
        let bad_ttl = ServeArgs { cache_min_ttl: Some(10), cache_max_ttl: Some(5), ..Default::default() };
        assert!(bad_ttl.resolve().unwrap_err().is::<crate::UsageError>());
        let open_admin = ServeArgs { admin_listen: Some("0.0.0.0:8081".parse().unwrap()), ..Default::default() };
        assert!(open_admin.resolve().unwrap_err().to_string().contains("--admin-token"));
        let guarded = ServeArgs {
            admin_listen: Some("0.0.0.0:8081".parse().unwrap()),
            admin_token: Some("t".into()),
            ..Default::default()
        };
        assert!(guarded.resolve().is_ok());
        let bad_url = ServeArgs { public_url: Some("verdict.example".into()), ..Default::default() };
        assert!(bad_url.resolve().unwrap_err().is::<crate::UsageError>());
        let no_interval = ServeArgs { recheck_interval: Some(0), ..Default::default() };
        assert!(no_interval.resolve().unwrap_err().is::<crate::UsageError>());
        let shrink = ServeArgs { list_max_shrink: Some(1.5), ..Default::default() };
        assert!(shrink.resolve().unwrap_err().to_string().contains("--list-max-shrink"));
        let tier = ServeArgs { allowlist: vec!["weak:/x".into()], ..Default::default() };
        assert!(tier.resolve().unwrap_err().is::<crate::UsageError>());
    }

    #[test]
    fn list_settings() {
        let c = ServeArgs::default().resolve().unwrap();
        assert_eq!((c.lists.refresh, c.lists.max_shrink), (Duration::from_secs(3600), 0.5));
        assert_eq!(c.lists.kept_dir, Some(PathBuf::from("email-verdict.db.lists")));
        let redis = ServeArgs { state: Some("redis://127.0.0.1:6379".into()), ..Default::default() };
        assert_eq!(redis.resolve().unwrap().lists.kept_dir, None);
        let set = ServeArgs {
            state: Some("sqlite:/var/lib/ev/state.db".into()),
            disposable_list: vec!["weak:https://l.example/d.txt".into(), "/etc/d.txt".into()],
            blocklist: vec!["https://l.example/b.txt".into()],
            list_refresh: Some(60),
            list_max_shrink: Some(0.2),
            ..Default::default()
        };
        let lists = set.resolve().unwrap().lists;
        let shown: Vec<(&str, String)> = lists.specs.iter().map(|s| (s.role.as_str(), s.shown())).collect();
        assert_eq!(
            shown,
            [
                ("disposable", "https://l.example/d.txt".to_owned()),
                ("disposable", "/etc/d.txt".to_owned()),
                ("blocklist", "https://l.example/b.txt".to_owned())
            ]
        );
        assert_eq!((lists.refresh, lists.max_shrink), (Duration::from_secs(60), 0.2));
        assert_eq!(lists.kept_dir, Some(PathBuf::from("/var/lib/ev/state.db.lists")));
        let file: ServeArgs =
            toml::from_str("blocklist = [\"https://l.example/b\"]\nlist-refresh = 60\nlist-max-shrink = 1\n").unwrap();
        assert_eq!((file.blocklist.len(), file.list_refresh, file.list_max_shrink), (1, Some(60), Some(1.0)));
    }

    #[test]
    fn rdap_is_off_unless_asked_for() {
        let off = ServeArgs::default().resolve().unwrap();
        assert!(off.rdap.is_none());
        let on = ServeArgs { rdap: Some(true), ..Default::default() }.resolve().unwrap().rdap.unwrap();
        assert_eq!(on.timeout, Duration::from_secs(3));
        assert!(on.bootstrap.server_for("example.com").is_some(), "the shipped registry");
        let file: ServeArgs = toml::from_str("rdap = true\nrdap-timeout-ms = 1500\n").unwrap();
        assert_eq!(file.resolve().unwrap().rdap.unwrap().timeout, Duration::from_millis(1500));
        let zero = ServeArgs { rdap: Some(true), rdap_timeout_ms: Some(0), ..Default::default() };
        assert!(zero.resolve().unwrap_err().is::<crate::UsageError>());
        let dir = std::env::temp_dir().join(format!("ev-config-rdap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (good, bad) = (dir.join("dns.json"), dir.join("bad.json"));
        std::fs::write(&good, r#"{"services": [[["test"], ["http://127.0.0.1:9/"]]]}"#).unwrap();
        std::fs::write(&bad, "{}").unwrap();
        let own = ServeArgs { rdap: Some(true), rdap_bootstrap: Some(good), ..Default::default() };
        let own = own.resolve().unwrap().rdap.unwrap();
        assert_eq!(own.bootstrap.server_for("a.test").map(|s| &**s), Some("http://127.0.0.1:9/"));
        assert!(own.bootstrap.server_for("example.com").is_none(), "the file replaces the registry");
        // A broken file is refused even while RDAP is off.
        let broken = ServeArgs { rdap_bootstrap: Some(bad), ..Default::default() };
        assert!(broken.resolve().unwrap_err().to_string().contains("--rdap-bootstrap"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn outbound_requests_reach_public_addresses_unless_allowed() {
        let c = ServeArgs { rdap: Some(true), ..Default::default() }.resolve().unwrap();
        assert_eq!((c.outbound, c.lists.reach, c.rdap.unwrap().reach), (Reach::Public, Reach::Public, Reach::Public));
        let file: ServeArgs = toml::from_str("rdap = true\nallow-private-outbound = true\n").unwrap();
        let c = file.resolve().unwrap();
        assert_eq!((c.outbound, c.lists.reach, c.rdap.unwrap().reach), (Reach::Any, Reach::Any, Reach::Any));
    }

    #[test]
    fn page_settings_default_to_the_spec() {
        let c = ServeArgs::default().resolve().unwrap();
        assert_eq!(c.pages.recheck_interval, Duration::from_secs(86_400), "once per 24 hours (Limits rule 3)");
        assert_eq!((c.pages.views_per_minute, c.pages.rechecks_per_hour), (60, 10));
        assert_eq!(c.pages.public_url, "");
        let set = ServeArgs { public_url: Some("https://v.example/".into()), ..Default::default() };
        assert_eq!(set.resolve().unwrap().pages.public_url, "https://v.example");
    }
}
