//! `MxResolver` over hickory-resolver: MX first, then A and AAAA of the first MX hosts
//! concurrently, within the bounds of [`super`] ([`MX_HOSTS_KEPT`] names,
//! [`MX_HOSTS_RESOLVED`] of them resolved, [`ADDRESSES_PER_HOST`] addresses each).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use email_verdict_core::{Domain, MxHost, MxInfo};
use futures::future::join_all;
use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::lookup::Lookup;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{Name, RData, RecordType};

use super::{ADDRESSES_PER_HOST, DnsFailure, MX_HOSTS_KEPT, MX_HOSTS_RESOLVED, MxAnswer, MxResolver};
use crate::metrics::{DnsErrorKind, Metrics, QueryType};

/// How long a negative answer without an SOA minimum is trusted.
const DEFAULT_NEGATIVE_TTL: u32 = 300;

#[derive(Debug, Clone)]
pub struct ResolverSettings {
    /// Nameservers to ask; empty means the system's resolver configuration.
    pub nameservers: Vec<SocketAddr>,
    /// Per-query timeout (each attempt).
    pub timeout: Duration,
    pub attempts: usize,
}

pub struct HickoryResolver {
    resolver: TokioResolver,
    metrics: Arc<Metrics>,
}

/// Parses `ADDR[:PORT]` (`192.0.2.1`, `192.0.2.1:5353`, `::1`, `[::1]:5353`); port 53 by default.
pub fn parse_nameserver(s: &str) -> Option<SocketAddr> {
    s.parse::<SocketAddr>().ok().or_else(|| {
        s.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, 53))
    })
}

impl HickoryResolver {
    pub fn new(settings: &ResolverSettings, metrics: Arc<Metrics>) -> Result<Self, NetError> {
        let provider = TokioRuntimeProvider::default();
        let mut builder = if settings.nameservers.is_empty() {
            TokioResolver::builder(provider)?
        } else {
            let servers = settings.nameservers.iter().map(|addr| nameserver(*addr)).collect();
            TokioResolver::builder_with_config(ResolverConfig::from_name_servers(servers), provider)
        };
        let opts: &mut ResolverOpts = builder.options_mut();
        opts.timeout = settings.timeout;
        opts.attempts = settings.attempts;
        // The sidecar keeps its own TTL-bounded cache with stale fallback; a second cache
        // underneath would make `cached` and TTLs lie.
        opts.cache_size = 0;
        opts.use_hosts_file = ResolveHosts::Never;
        opts.ndots = 0;
        Ok(Self { resolver: builder.build()?, metrics })
    }

    /// One query, counted in the metrics with how it ended.
    async fn query(&self, name: Name, qtype: QueryType) -> Result<Lookup, NetError> {
        let counted = self.metrics.dns_query(qtype);
        let record_type = match qtype {
            QueryType::Mx => RecordType::MX,
            QueryType::A => RecordType::A,
            QueryType::Aaaa => RecordType::AAAA,
            QueryType::Ptr => RecordType::PTR,
        };
        let lookup = self.resolver.lookup(name, record_type);
        let result = crate::telemetry::span(dns_span(qtype), lookup, |r| {
            vec![crate::telemetry::Attribute::new("email_verdict.outcome", if r.is_ok() { "ok" } else { "error" })]
        })
        .await;
        counted.finish(result.as_ref().err().and_then(failure_kind));
        result
    }

    /// The MX records of `domain` as (preference, host, ttl); an empty list when the domain has
    /// none. NXDOMAIN and no-data come back as `Err(Ok(answer))`, failures as `Err(Err(..))`.
    async fn mx_records(&self, domain: &Domain) -> Result<Vec<(u16, String, u32)>, Result<MxAnswer, DnsFailure>> {
        let name = fqdn(domain.as_str()).map_err(Err)?;
        let lookup = self.query(name, QueryType::Mx).await.map_err(negative)?;
        Ok(lookup
            .answers()
            .iter()
            .filter_map(|r| match &r.data {
                RData::MX(mx) => Some((mx.preference, host_name(&mx.exchange), r.ttl)),
                _ => None,
            })
            .collect())
    }

    /// A and AAAA of one host, at most [`ADDRESSES_PER_HOST`] distinct ones (A first) and how
    /// many more the answers held; a host whose addresses cannot be had just contributes none,
    /// and says so by `complete == false` (the answer is then trusted only briefly).
    async fn addresses(&self, host: &str) -> Addresses {
        let mut found = Addresses { ips: Vec::new(), more: 0, ttl: u32::MAX, complete: true };
        let Ok(name) = fqdn(host) else {
            found.complete = false;
            return found;
        };
        let (v4, v6) = futures::join!(self.query(name.clone(), QueryType::A), self.query(name, QueryType::Aaaa));
        let mut seen: HashSet<IpAddr> = HashSet::new();
        for result in [v4, v6] {
            match result {
                Ok(lookup) => {
                    for r in lookup.answers() {
                        let ip = match &r.data {
                            RData::A(a) => IpAddr::V4(a.0),
                            RData::AAAA(a) => IpAddr::V6(a.0),
                            _ => continue,
                        };
                        found.ttl = found.ttl.min(r.ttl);
                        if !seen.insert(ip) {
                            continue;
                        }
                        if found.ips.len() < ADDRESSES_PER_HOST {
                            found.ips.push(ip);
                        } else {
                            found.more += 1;
                        }
                    }
                }
                Err(e) if e.is_no_records_found() => {}
                Err(_) => found.complete = false,
            }
        }
        found
    }
}

/// What [`HickoryResolver::addresses`] found for one host.
struct Addresses {
    ips: Vec<IpAddr>,
    /// Distinct addresses past [`ADDRESSES_PER_HOST`], left out.
    more: usize,
    ttl: u32,
    complete: bool,
}

impl HickoryResolver {
    /// The host name of `ip` by reverse DNS (its first PTR record), for the public pages;
    /// `Ok(None)` when it has none. Bounded by `timeout` on top of the resolver's own limits.
    pub async fn reverse(&self, ip: IpAddr, timeout: Duration) -> Result<Option<String>, DnsFailure> {
        let lookup = match tokio::time::timeout(timeout, self.query(Name::from(ip), QueryType::Ptr)).await {
            Err(_) => return Err(DnsFailure("reverse lookup timed out".into())),
            Ok(Err(e)) if e.is_nx_domain() || e.is_no_records_found() => return Ok(None),
            Ok(Err(e)) => return Err(DnsFailure(e.to_string())),
            Ok(Ok(lookup)) => lookup,
        };
        let mut names: Vec<String> = lookup
            .answers()
            .iter()
            .filter_map(|r| match &r.data {
                RData::PTR(ptr) => Some(host_name(&ptr.0)),
                _ => None,
            })
            .filter(|n| !n.is_empty())
            .collect();
        names.sort(); // several PTR records come in any order: show the same one every time
        Ok(names.into_iter().next())
    }
}

impl HickoryResolver {
    /// No MX record: RFC 5321 §5.1 delivers to the name's own address, if it has one (two more
    /// queries, as for one MX host). A failed address lookup is taken for an address, not
    /// cached: only what DNS says cannot receive mail is `NoMx`.
    async fn implicit_mx(&self, domain: &Domain, no_mx_ttl: u32) -> MxAnswer {
        let found = Box::pin(self.addresses(domain.as_str())).await;
        match (found.ips.is_empty(), found.complete) {
            (true, true) => MxAnswer { mx: MxInfo::NoMx, ttl: secs(no_mx_ttl) },
            (false, _) => MxAnswer { mx: MxInfo::ImplicitMx, ttl: secs(no_mx_ttl.min(found.ttl)) },
            (true, false) => MxAnswer { mx: MxInfo::ImplicitMx, ttl: secs(0) },
        }
    }
}

#[async_trait]
impl MxResolver for HickoryResolver {
    async fn resolve(&self, domain: &Domain) -> Result<MxAnswer, DnsFailure> {
        let mut mx = match Box::pin(self.mx_records(domain)).await {
            Ok(mx) => mx,
            Err(Ok(MxAnswer { mx: MxInfo::NoMx, ttl })) => {
                return Ok(Box::pin(self.implicit_mx(domain, ttl.as_secs().try_into().unwrap_or(u32::MAX))).await);
            }
            Err(answer_or_failure) => return answer_or_failure,
        };
        let ttl = mx.iter().map(|m| m.2).min().unwrap_or(DEFAULT_NEGATIVE_TTL);
        // RFC 7505: a lone MX whose exchange is the root means "accepts no mail".
        if mx.iter().all(|m| m.1.is_empty()) {
            if !mx.is_empty() {
                return Ok(MxAnswer { mx: MxInfo::NullMx, ttl: secs(ttl) });
            }
            return Ok(Box::pin(self.implicit_mx(domain, ttl)).await);
        }
        mx.retain(|m| !m.1.is_empty());
        mx.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        // Names cost no query (the message bounds them), but each is kept in the cache, judged
        // on every lookup and shown: the first MX_HOSTS_KEPT by preference are, the rest counted.
        let mut seen: HashSet<&str> = HashSet::with_capacity(mx.len());
        let names: Vec<&str> = mx.iter().map(|m| m.1.as_str()).filter(|h| seen.insert(h)).collect();
        let more_hosts = names.len().saturating_sub(MX_HOSTS_KEPT);
        let names = &names[..names.len() - more_hosts];
        // Addresses cost two queries a host: only the first MX_HOSTS_RESOLVED are looked up.
        let resolved = join_all(names.iter().take(MX_HOSTS_RESOLVED).map(|h| self.addresses(h))).await;
        let mut ttl = ttl;
        let mut hosts: Vec<MxHost> = names
            .iter()
            .zip(resolved)
            .map(|(name, found)| {
                ttl = ttl.min(if found.complete { found.ttl } else { 0 });
                MxHost { more_ips: found.more, ..MxHost::new(*name, found.ips) }
            })
            .collect();
        hosts.extend(names.iter().skip(MX_HOSTS_RESOLVED).map(|name| MxHost::unresolved(*name)));
        Ok(MxAnswer { mx: MxInfo::with_hosts(hosts, more_hosts), ttl: secs(ttl) })
    }
}

fn nameserver(addr: SocketAddr) -> NameServerConfig {
    let mut udp = ConnectionConfig::udp();
    udp.port = addr.port();
    let mut tcp = ConnectionConfig::tcp();
    tcp.port = addr.port();
    NameServerConfig::new(addr.ip(), true, vec![udp, tcp])
}

fn fqdn(name: &str) -> Result<Name, DnsFailure> {
    Name::from_ascii(format!("{name}.")).map_err(|e| DnsFailure(format!("bad name: {e}")))
}

/// Lowercase, no trailing dot; the root (null MX) becomes "".
fn host_name(name: &Name) -> String {
    name.to_ascii().trim_end_matches('.').to_ascii_lowercase()
}

/// NXDOMAIN and NOERROR/no-data are answers; everything else is a failure.
fn negative(e: NetError) -> Result<MxAnswer, DnsFailure> {
    let mx = if e.is_nx_domain() {
        MxInfo::NoDomain
    } else if e.is_no_records_found() {
        MxInfo::NoMx
    } else {
        return Err(DnsFailure(e.to_string()));
    };
    let ttl = match &e {
        NetError::Dns(DnsError::NoRecordsFound(nr)) => nr.negative_ttl,
        _ => None,
    };
    Ok(MxAnswer { mx, ttl: secs(ttl.unwrap_or(DEFAULT_NEGATIVE_TTL)) })
}

/// What kind of failure `e` is; `None` for NXDOMAIN and no data, which are answers.
fn failure_kind(e: &NetError) -> Option<DnsErrorKind> {
    if e.is_nx_domain() || e.is_no_records_found() {
        return None;
    }
    Some(match e {
        NetError::Timeout => DnsErrorKind::Timeout,
        NetError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => DnsErrorKind::Timeout,
        NetError::Dns(DnsError::ResponseCode(ResponseCode::ServFail)) => DnsErrorKind::Servfail,
        NetError::Dns(DnsError::ResponseCode(ResponseCode::Refused)) => DnsErrorKind::Refused,
        _ => DnsErrorKind::Other,
    })
}

/// The span of one query, named by its type (`dns.mx`, `dns.a`, `dns.aaaa`, `dns.ptr`).
fn dns_span(qtype: QueryType) -> &'static str {
    match qtype {
        QueryType::Mx => "dns.mx",
        QueryType::A => "dns.a",
        QueryType::Aaaa => "dns.aaaa",
        QueryType::Ptr => "dns.ptr",
    }
}

fn secs(s: u32) -> Duration {
    Duration::from_secs(u64::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nameserver_forms() {
        assert_eq!(parse_nameserver("192.0.2.1"), Some("192.0.2.1:53".parse().unwrap()));
        assert_eq!(parse_nameserver("127.0.0.1:5353"), Some("127.0.0.1:5353".parse().unwrap()));
        assert_eq!(parse_nameserver("::1"), Some("[::1]:53".parse().unwrap()));
        assert_eq!(parse_nameserver("[::1]:5353"), Some("[::1]:5353".parse().unwrap()));
        assert_eq!(parse_nameserver("[::1]"), Some("[::1]:53".parse().unwrap()));
        assert_eq!(parse_nameserver("ns.example"), None);
    }

    #[test]
    fn failures_are_told_apart_from_negative_answers() {
        use hickory_resolver::net::NoRecords;
        use hickory_resolver::proto::op::Query;
        let no_records = |code| NetError::Dns(DnsError::NoRecordsFound(NoRecords::new(Query::default(), code)));
        let rcode = |code| NetError::Dns(DnsError::ResponseCode(code));
        let io_timeout = NetError::Io(Arc::new(std::io::ErrorKind::TimedOut.into()));
        let cases = [
            (no_records(ResponseCode::NXDomain), None),
            (no_records(ResponseCode::NoError), None),
            (NetError::Timeout, Some(DnsErrorKind::Timeout)),
            (io_timeout, Some(DnsErrorKind::Timeout)),
            (rcode(ResponseCode::ServFail), Some(DnsErrorKind::Servfail)),
            (rcode(ResponseCode::Refused), Some(DnsErrorKind::Refused)),
            (rcode(ResponseCode::FormErr), Some(DnsErrorKind::Other)),
            (NetError::NoConnections, Some(DnsErrorKind::Other)),
        ];
        for (error, kind) in cases {
            assert_eq!(failure_kind(&error), kind, "{error}");
        }
    }
}
