//! `email-verdict serve`: wires the store, resolver, cache and catalog into two Pingora
//! listeners, logs one line when both accept connections, and exits on SIGTERM after a bounded
//! grace period. On SIGQUIT it hands its listening sockets to a process started with
//! `--upgrade` and drains (Pingora's graceful upgrade).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use pingora::server::configuration::{Opt, ServerConf};
use pingora::server::{ExecutionPhase, Server};
use pingora::services::background::background_service;
use pingora::services::listening::Service;

use crate::admin::dashboard::Dashboard;
use crate::admin::{Admin, AdminApp, hash_token};
use crate::api::{Api, ApiApp};
use crate::auth::Authenticator;
use crate::clock::Clock;
use crate::config::ServeConfig;
use crate::config::{ExtAuthzReloader, PlanReloader};
use crate::dns::{HickoryResolver, MxCache};
use crate::grpc_authz::GrpcAuthz;
use crate::http_guard::{ADMIN_CAPS, Capped, ConnectionBudget, ConnectionCaps, Guarded, KEY_HOLDER_SHARE, KeyCheck};
use crate::leases::LeaseSweeper;
use crate::limits::Limiter;
use crate::lists::{ListReloader, Lists, LiveCatalog, install_sighup_handler};
use crate::metrics::Metrics;
use crate::pages::Pages;
use crate::pages::templates::Templates;
use crate::plans::{PlanBook, Plans};
use crate::rdap::DomainAges;
use crate::signups::Signups;
use crate::verdicts::Verdicts;
use crate::warmup::Warmup;
use crate::{state, usage_error};

/// Seconds between SIGTERM and the listeners closing, then the most given to requests in flight.
const GRACE_PERIOD: u64 = 1;
const SHUTDOWN_TIMEOUT: u64 = 5;

pub fn run(config: ServeConfig) -> anyhow::Result<()> {
    if !config.upgrade {
        // In an upgrade the running process holds both ports: its sockets are taken over.
        check_bindable(config.listen, "--listen")?;
        check_bindable(config.admin_listen, "--admin-listen")?;
    }
    if let Some(grpc) = config.ext_authz_grpc_listen
        && [config.listen, config.admin_listen].iter().any(|a| {
            a.port() == grpc.port() && (a.ip() == grpc.ip() || a.ip().is_unspecified() || grpc.ip().is_unspecified())
        })
    {
        return Err(usage_error(format!(
            "--ext-authz-grpc-listen {grpc}: a listener of its own, not --listen's or --admin-listen's"
        )));
    }
    install_sighup_handler().context("cannot install the SIGHUP handler")?;
    crate::telemetry::init_from_env().map_err(usage_error)?;
    let public_caps = public_caps(&config, raise_open_file_limit());
    let store = state::open_with_capacity(&config.state, config.review_queue_capacity)?;
    let metrics = Arc::new(Metrics::new());
    if config.lists.kept_dir.is_none() && config.lists.specs.iter().any(|s| s.is_url()) {
        tracing::warn!("URL lists without --list-cache-dir: a restart without the network starts without them");
    }
    let lists = Lists::start(config.lists.clone(), metrics.clone(), true)?;
    let catalog = lists.live();
    let resolver =
        Arc::new(HickoryResolver::new(&config.resolver, metrics.clone()).context("cannot set up the DNS resolver")?);
    let mx = MxCache::new(resolver.clone(), config.cache.clone(), metrics.clone());
    let clock: Arc<dyn Clock> = crate::clock::server_clock();
    let warmup = NonZeroU32::new(config.warmup_rate).map(|rate| {
        let (catalog, store, clock, metrics) = (catalog.clone(), store.clone(), clock.clone(), metrics.clone());
        background_service("warmup", Warmup::new(catalog, resolver.clone(), store, clock, metrics, rate))
    });
    let templates = Arc::new(Templates::new()?);
    let pages = Pages::new(config.pages.clone(), templates.clone(), resolver, store.clone(), clock.clone())?;
    let plans = Arc::new(PlanBook::new(Plans::clone(&config.plans)));
    let verdicts =
        Verdicts::new(catalog.clone(), mx, store.clone(), clock.clone(), config.infra_threshold, metrics.clone())
            .with_dns_deadline(config.lookup_deadline);
    if config.outbound == crate::outbound::Reach::Any {
        tracing::warn!("outbound requests (RDAP, URL lists) may reach private addresses: --allow-private-outbound");
    }
    let verdicts = match &config.rdap {
        Some(rdap) => {
            tracing::info!(bootstrap_publication = %rdap.bootstrap.publication, "domain age from RDAP: on");
            verdicts
                .with_domain_ages(DomainAges::start(rdap, metrics.clone()).context("cannot start the RDAP workers")?)
        }
        None => verdicts,
    };
    let verdicts = Arc::new(verdicts);
    let api = Arc::new(Api {
        auth: Authenticator::new(store.clone()),
        limiter: Limiter::new(store.clone(), clock.clone(), metrics.clone(), plans.clone()),
        verdicts: verdicts.clone(),
        trusted_proxies: config.trusted_proxies.clone(),
        pages,
        metrics: metrics.clone(),
        ext_authz: arc_swap::ArcSwap::from_pointee(config.ext_authz.clone()),
        signups: Signups::new(store.clone(), clock.clone(), metrics.clone()),
        ext_authz_counting: config.ext_authz_counting.clone(),
    });
    let leases = api.limiter.leases();
    // What a process that ended held unspent goes back before this one answers.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")?
        .block_on(leases.settle());
    // Bound before Pingora starts: a port in use is the operator's error, said plainly.
    let grpc_authz = match config.ext_authz_grpc_listen {
        Some(addr) => Some(
            GrpcAuthz::bind(api.clone(), addr)
                .map_err(|e| usage_error(format!("--ext-authz-grpc-listen {addr}: {e}")))?,
        ),
        None => None,
    };
    let token_hash = config.admin_token.as_deref().map(hash_token);
    // An upgrade inherits sockets that already accept: healthy as soon as it serves at all.
    let ready = Arc::new(AtomicBool::new(config.upgrade));
    let watching = catalog.clone();
    let dashboard = Dashboard::new(templates);
    let guesses = Default::default();
    let admin = Arc::new(Admin {
        store,
        clock,
        catalog,
        plans: plans.clone(),
        token_hash,
        dashboard,
        ready: ready.clone(),
        metrics,
        leases: leases.clone(),
        guesses,
        problem_logged: AtomicBool::new(false),
        verdicts,
        velocity: config.ext_authz.velocity.clone(),
    });

    let conf = server_conf(&config);
    if config.upgrade {
        tracing::info!(
            upgrade_sock = %conf.upgrade_sock,
            "upgrade: waiting for the listeners of the running process; send it SIGQUIT"
        );
    }
    let opt = config.upgrade.then(|| Opt { upgrade: true, ..Opt::default() });
    let mut server = Server::new_with_opt_and_conf(opt, conf);
    // In an upgrade this blocks until the old process sends its sockets (Pingora gives up, and
    // exits 1, after about 6 s without them).
    server.bootstrap();
    let header_timeout = config.header_timeout;
    // Each listener its own budget: a flood of the public one leaves the admin one reachable.
    // A share of the public one is kept for requests with a valid key: the gateway's checks.
    let reserved = public_caps.total / KEY_HOLDER_SHARE;
    let public_budget = ConnectionBudget::new("api", public_caps, reserved, config.trusted_proxies.clone());
    let admin_budget = ConnectionBudget::new("admin", ADMIN_CAPS, 0, Vec::new());
    let keys: Arc<dyn KeyCheck> = Arc::new(ApiKeys(api.clone()));
    let ext_authz_api = api.clone();
    let public_app = Guarded { app: ApiApp(api), header_timeout, keys: Some(keys) };
    let mut public = Service::with_listeners(
        "api".into(),
        listeners(config.listen),
        Capped { app: Arc::new(public_app), budget: public_budget },
    );
    public.threads = Some(config.threads);
    let admin_app = Guarded { app: AdminApp(admin), header_timeout, keys: None };
    let mut admin = Service::with_listeners(
        "admin".into(),
        listeners(config.admin_listen),
        Capped { app: Arc::new(admin_app), budget: admin_budget },
    );
    admin.threads = Some(1);
    server.add_service(background_service("lists", ListReloader::new(lists)));
    crate::leases::close_at_upgrade(leases.clone(), server.watch_execution_phase());
    server.add_service(background_service("leases", LeaseSweeper(leases)));
    if let Some(file) = config.config_file.clone() {
        server.add_service(background_service("plans", PlanReloader { book: plans, file }));
    }
    if let Some(file) = config.ext_authz_file.clone() {
        server.add_service(background_service("ext_authz", ExtAuthzReloader { api: ext_authz_api, file }));
    }
    server.add_service(public);
    server.add_service(admin);
    if let Some(warmup) = warmup {
        server.add_service(warmup);
    }
    let mut listening = vec![config.listen, config.admin_listen];
    if let Some(grpc_authz) = grpc_authz {
        let mut service = background_service("ext_authz_grpc", grpc_authz);
        service.threads = Some(config.threads);
        server.add_service(service);
        listening.extend(config.ext_authz_grpc_listen);
    }
    announce_ready(&server, listening, &watching, ready);
    // `run`, not `run_forever` (which exits inside): the spans of the last requests are sent first.
    server.run(pingora::server::RunArgs::default());
    crate::telemetry::shutdown();
    crate::logging::flush();
    std::process::exit(0)
}

fn server_conf(config: &ServeConfig) -> ServerConf {
    ServerConf {
        threads: config.threads,
        grace_period_seconds: Some(GRACE_PERIOD),
        graceful_shutdown_timeout_seconds: Some(SHUTDOWN_TIMEOUT),
        // Pingora's pid and upgrade-socket defaults live under /tmp; keep ours unique per port.
        pid_file: std::env::temp_dir()
            .join(format!("email-verdict-{}.pid", config.listen.port()))
            .display()
            .to_string(),
        upgrade_sock: std::env::temp_dir()
            .join(format!("email-verdict-{}.sock", config.listen.port()))
            .display()
            .to_string(),
        ..ServerConf::default()
    }
}

/// Files kept for everything but client connections: the admin listener's budget, the state
/// store, lists, logs, and DNS sockets for lookups under way.
const FILES_RESERVED: u64 = 256;

mod key_check;
use key_check::ApiKeys;

/// The public listener's caps: `--max-connections` and `--max-connections-per-peer`, lowered
/// so that client connections take at most half of the open files left after
/// [`FILES_RESERVED`] (each connection's lookups need DNS sockets of their own).
fn public_caps(config: &ServeConfig, open_files: Option<u64>) -> ConnectionCaps {
    let wanted = ConnectionCaps { total: config.max_connections, per_peer: config.max_connections_per_peer };
    let caps = caps_within(wanted, open_files);
    if caps.total < wanted.total {
        tracing::warn!(
            max_connections = caps.total,
            max_connections_per_peer = caps.per_peer,
            asked = wanted.total,
            open_files,
            "--max-connections lowered to what the open-file limit allows"
        );
    }
    tracing::info!(
        max_connections = caps.total,
        max_connections_per_peer = caps.per_peer,
        admin_max_connections = ADMIN_CAPS.total,
        "connection caps"
    );
    caps
}

fn caps_within(wanted: ConnectionCaps, open_files: Option<u64>) -> ConnectionCaps {
    let fit =
        open_files.map_or(usize::MAX, |n| usize::try_from(n.saturating_sub(FILES_RESERVED) / 2).unwrap_or(usize::MAX));
    let total = wanted.total.min(fit.max(16));
    ConnectionCaps { total, per_peer: wanted.per_peer.min(total) }
}

/// Raises the soft open-file limit to the hard one (every connection is a file; 1,024 is a
/// common soft default), logs the figure and returns it; `None` where it cannot be read.
fn raise_open_file_limit() -> Option<u64> {
    match raise_nofile() {
        Ok((before, now)) if now > before => {
            tracing::info!(open_files = now, raised_from = before, "open-file limit raised to the hard limit");
            Some(now)
        }
        Ok((_, now)) => {
            tracing::info!(open_files = now, "open-file limit (already the hard limit)");
            Some(now)
        }
        Err(e) => {
            tracing::warn!(error = %e, "the open-file limit could not be raised");
            None
        }
    }
}

/// (soft open-file limit before, soft limit now), raised to the hard limit: the `rlimit` crate
/// knows each platform's rules (macOS caps the soft limit at `OPEN_MAX`; elsewhere it is refused).
fn raise_nofile() -> std::io::Result<(u64, u64)> {
    let (before, _) = rlimit::Resource::NOFILE.get()?;
    let now = rlimit::increase_nofile_limit(u64::MAX)?;
    Ok((before, now))
}

fn listeners(addr: SocketAddr) -> pingora::listeners::Listeners {
    pingora::listeners::Listeners::tcp(&addr.to_string())
}

/// Pingora panics on a listener it cannot bind; find out first and say so plainly.
fn check_bindable(addr: SocketAddr, flag: &str) -> anyhow::Result<()> {
    TcpListener::bind(addr).map(drop).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse | std::io::ErrorKind::AddrNotAvailable | std::io::ErrorKind::PermissionDenied => {
            usage_error(format!("{flag} {addr}: {e}"))
        }
        _ => anyhow::Error::new(e).context(format!("{flag} {addr}")),
    })
}

/// Logs `ready` and flips `ready` (what `/healthz` reports) once Pingora runs, the listeners
/// accept connections and the list reloader listens for SIGHUP. In an upgrade the old process
/// accepts on the same sockets, but `Running` comes only after bootstrap handed them to this
/// one, so the check still holds.
fn announce_ready(server: &Server, listening: Vec<SocketAddr>, lists: &Arc<LiveCatalog>, ready: Arc<AtomicBool>) {
    let mut phases = server.watch_execution_phase();
    let lists = lists.clone();
    std::thread::spawn(move || {
        while let Ok(phase) = phases.blocking_recv() {
            if matches!(phase, ExecutionPhase::Running) {
                break;
            }
        }
        for _ in 0..500 {
            if lists.is_watching()
                && listening
                    .iter()
                    .all(|a| TcpStream::connect_timeout(&connectable(*a), Duration::from_millis(100)).is_ok())
            {
                ready.store(true, Ordering::Release);
                let grpc = listening.get(2).map(|a| a.to_string());
                tracing::info!(listen = %listening[0], admin_listen = %listening[1], ext_authz_grpc_listen = grpc, "ready");
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        tracing::error!("listeners did not come up");
    });
}

/// A wildcard listen address is reached through loopback.
fn connectable(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], addr.port())),
        ip if ip.is_unspecified() => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port())),
        _ => addr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_fit_the_open_file_limit() {
        let wanted = ConnectionCaps { total: 4096, per_peer: 256 };
        assert_eq!(caps_within(wanted, Some(1_048_576)), wanted);
        assert_eq!(caps_within(wanted, None), wanted);
        assert_eq!(caps_within(wanted, Some(1024)), ConnectionCaps { total: 384, per_peer: 256 });
        assert_eq!(caps_within(wanted, Some(300)), ConnectionCaps { total: 22, per_peer: 22 });
        assert_eq!(caps_within(wanted, Some(10)), ConnectionCaps { total: 16, per_peer: 16 });
    }

    #[test]
    fn the_open_file_limit_is_raised_to_the_hard_one() {
        let (_, now) = raise_nofile().expect("getrlimit");
        let (again, same) = raise_nofile().expect("getrlimit");
        assert_eq!((again, same), (now, now));
    }
}
