//! The whole gateway in one call (NSD, the sidecar, a recording app, Envoy with the filter), and
//! what tests ask the sidecar about what the filter did.

use serde_json::Value;

use super::{Envoy, EnvoyBuilder, FilterBuild, envoy_binary};
use crate::nsd::Nsd;
use crate::sidecar::{Sidecar, SidecarBuilder};
use crate::upstream::UpstreamApp;

/// The whole gateway of `make demo`, on free ports: NSD on the fixture zones, the sidecar using
/// it (one key on the `gateway` plan), a recording app, and Envoy with the filter calling the sidecar with that key.
pub struct Gateway {
    // Drop order: Envoy first (no more callouts), then the app, the sidecar, NSD.
    pub envoy: Envoy,
    pub app: UpstreamApp,
    pub sidecar: Sidecar,
    pub nsd: Nsd,
}

/// [`Gateway`] with the Envoy side adjusted by `configure`.
pub fn gateway(configure: impl FnOnce(EnvoyBuilder) -> EnvoyBuilder) -> Gateway {
    gateway_with(|b| b, configure)
}

/// [`Gateway`] with this build of the filter, the Envoy side adjusted by `configure`.
pub fn gateway_on(build: FilterBuild, configure: impl FnOnce(EnvoyBuilder) -> EnvoyBuilder) -> Gateway {
    gateway_with_on(build, |b| b, configure)
}

/// [`Gateway`] with both the sidecar and the Envoy side adjusted.
pub fn gateway_with(
    sidecar: impl FnOnce(SidecarBuilder) -> SidecarBuilder,
    configure: impl FnOnce(EnvoyBuilder) -> EnvoyBuilder,
) -> Gateway {
    gateway_with_on(FilterBuild::Wasm, sidecar, configure)
}

/// [`gateway_with`] with this build of the filter.
pub fn gateway_with_on(
    build: FilterBuild,
    sidecar: impl FnOnce(SidecarBuilder) -> SidecarBuilder,
    configure: impl FnOnce(EnvoyBuilder) -> EnvoyBuilder,
) -> Gateway {
    // Fail fast, before starting anything, when an artifact is missing.
    build.artifact();
    envoy_binary();
    let nsd = Nsd::start();
    // The gateway's key on the `gateway` plan, as every shipped setup creates it.
    let sidecar = sidecar(Sidecar::builder().dns(nsd.addr()).keys(&["gateway"])).start();
    let app = UpstreamApp::start();
    let envoy = configure(EnvoyBuilder::new(sidecar.addr(), app.addr()).api_key(sidecar.key()).build(build)).start();
    Gateway { envoy, app, sidecar, nsd }
}

/// [`Gateway`] checking over gRPC ext_authz (issue 43): the sidecar also serving
/// `--ext-authz-grpc-listen` on a free port, and Envoy from `envoy/ext-authz-grpc.template.yaml`
/// calling that port with the gateway's key (no filter artifact needed). Also returns the gRPC
/// listener's address.
pub fn grpc_ext_authz_gateway(
    sidecar: impl FnOnce(SidecarBuilder) -> SidecarBuilder,
    configure: impl FnOnce(EnvoyBuilder) -> EnvoyBuilder,
) -> (Gateway, std::net::SocketAddr) {
    envoy_binary();
    let nsd = Nsd::start();
    let grpc = std::net::SocketAddr::from(([127, 0, 0, 1], crate::free_port()));
    let listen = grpc.to_string();
    let builder = Sidecar::builder().dns(nsd.addr()).keys(&["gateway"]).args(&["--ext-authz-grpc-listen", &listen]);
    let sidecar = sidecar(builder).start();
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(grpc, app.addr()).api_key(sidecar.key()).ext_authz_grpc();
    let envoy = configure(envoy).start();
    (Gateway { envoy, app, sidecar, nsd }, grpc)
}

/// The flags of filter/CONFIG.md, in its order.
pub const FLAGS: [&str; 8] = [
    "free_provider",
    "business_email",
    "shared_mx",
    "has_mx",
    "review_required",
    "allowlisted",
    "blocked",
    "mx_ip_match",
];

/// The flags that are true in the sidecar's own answer for `domain` (asked directly, so it
/// adds a lookup line to the sidecar's log), sorted.
pub fn expected_flags(sidecar: &Sidecar, domain: &str) -> Vec<String> {
    let v = sidecar.lookup_ok(domain);
    let mut f: Vec<String> =
        FLAGS.iter().filter(|f| v["result"][**f] == Value::Bool(true)).map(|f| f.to_string()).collect();
    f.sort();
    f
}

/// How many lookups of `domain` the sidecar logged (one `route="lookup"` line per request).
pub fn sidecar_lookups(sidecar: &Sidecar, domain: &str) -> usize {
    let d = format!("domain={domain:?}");
    sidecar.stderr_text().lines().filter(|l| l.contains("route=\"lookup\"") && l.contains(&d)).count()
}

/// Every lookup line the sidecar logged.
pub fn sidecar_lookup_lines(sidecar: &Sidecar) -> usize {
    sidecar.stderr_text().lines().filter(|l| l.contains("route=\"lookup\"")).count()
}
