//! Issue 30: the gate reads what the app reads, proved against the frameworks' own parser code.
//!
//! A generated corpus of signups (`framework_differentials/corpus.rs`: deterministic, seeded; JSON
//! in every encoding, charset and content type behind a query address, bracket and case names,
//! `;` query separators, multipart framing that parsers split differently, form charsets) goes
//! through the shipped block-mode gateway: the filter in Envoy, both builds (Wasm and dynamic module; `envoy/plugin-config.json`)
//! and Envoy's ext_authz calling the sidecar (`envoy/ext-authz-config.json`), each in front of a
//! recording app. Every request that reached the app is replayed, byte for byte, to every reader
//! of `tests/frameworks/` (Express 5, multer, busboy, formidable 3, Django, Starlette, FastAPI,
//! Flask, Rack 2.2, PHP 8.2, Go `net/http`).
//!
//! Fails when any reader read a disposable address from a request the gateway let through. A value
//! is a disposable address when, trimmed and lower-cased, it ends with `@mailinator.com` (disposable
//! in the fixture zones and lists) after a non-empty local part without whitespace, control
//! characters or `@<>()[],;:"\`: what an app's email validator would accept. Values count even
//! when the reader also reported an error (Go's `r.ParseForm` fills `r.Form` anyway).
//!
//! `real_clients_still_sign_up`: what real clients send (curl, Python requests, Node's `fetch`, Go's
//! `multipart.Writer`, Chromium's form and `fetch`) with a safe address reaches the app, judged
//! safe, and the frameworks read that address.

#[path = "framework_differentials/clients.rs"]
mod clients;
#[path = "framework_differentials/corpus.rs"]
mod corpus;
#[path = "framework_differentials/encode.rs"]
mod encode;
#[path = "framework_differentials/report.rs"]
mod report;

use std::collections::HashMap;
use std::sync::Mutex;

use email_verdict_tests::envoy::{self, EnvoyBuilder, FilterBuild, Gateway};
use email_verdict_tests::frameworks::{Frameworks, Reading};
use email_verdict_tests::{Nsd, Recorded, Request, Sidecar, UpstreamApp};

use corpus::{Case, corpus};

/// Cases per run: every family 400 times (the whole file runs in about 40 s on 2 cores).
const CASES: usize = 2800;
const SEED: u64 = 0x5EED_0030;
/// The header that ties a recorded request to its case (frameworks ignore unknown headers).
const CASE_HEADER: &str = "x-corpus-case";

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Via {
    /// The filter, in one of its builds (Wasm, dynamic module).
    Filter(FilterBuild),
    ExtAuthz,
}

impl Via {
    /// Every gateway the corpus goes through.
    pub const ALL: [Via; 3] = [Via::Filter(FilterBuild::Wasm), Via::Filter(FilterBuild::Module), Via::ExtAuthz];

    pub fn name(self) -> &'static str {
        match self {
            Via::Filter(FilterBuild::Wasm) => "filter (Wasm)",
            Via::Filter(FilterBuild::Module) => "filter (dynamic module)",
            Via::ExtAuthz => "ext_authz",
        }
    }
}

/// The shipped block-mode gateway in front of a recording app.
pub fn start_gateway(via: Via) -> Gateway {
    envoy::envoy_binary();
    if let Via::Filter(build) = via {
        build.artifact();
    }
    let config = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json").display().to_string();
    let nsd = Nsd::start();
    let mut sidecar = Sidecar::builder().dns(nsd.addr()).keys(&["gateway"]);
    if via == Via::ExtAuthz {
        sidecar = sidecar.args(&["--ext-authz-config", &config]);
    }
    let sidecar = sidecar.start();
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(sidecar.addr(), app.addr()).api_key(sidecar.key());
    let envoy = match via {
        Via::Filter(build) => envoy.build(build).start(),
        Via::ExtAuthz => envoy.ext_authz().start(),
    };
    Gateway { envoy, app, sidecar, nsd }
}

/// See the module comment.
pub fn is_disposable(value: &str) -> bool {
    let v = value.trim().to_lowercase();
    let Some(local) = v.strip_suffix("@mailinator.com") else { return false };
    !local.is_empty() && !local.chars().any(|c| c.is_whitespace() || c.is_control() || "@<>()[],;:\"\\".contains(c))
}

/// One case's trip: the gateway's status and, when it reached the app, what the app received.
pub struct Trip {
    pub case: usize,
    pub status: u16,
    pub recorded: Option<Recorded>,
}

fn send_all(via: Via, cases: &[Case]) -> Vec<Trip> {
    let gw = start_gateway(via);
    let statuses = Mutex::new(vec![0u16; cases.len()]);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(c) = cases.get(i) else { break };
                    let mut req = Request::new("POST", &c.target).header(CASE_HEADER, &i.to_string());
                    for (n, v) in &c.headers {
                        req = req.header(n, v);
                    }
                    let status = req.body(&c.body).try_send(gw.envoy.addr()).map(|r| r.status).unwrap_or(0);
                    statuses.lock().expect("lock")[i] = status;
                }
            });
        }
    });
    let mut by_case: HashMap<usize, Recorded> = HashMap::new();
    for r in gw.app.requests() {
        if let Some(i) = r.header(CASE_HEADER).and_then(|v| v.parse().ok()) {
            by_case.insert(i, r);
        }
    }
    let statuses = statuses.into_inner().expect("lock");
    statuses
        .into_iter()
        .enumerate()
        .map(|(case, status)| Trip { case, status, recorded: by_case.remove(&case) })
        .collect()
}

/// The bytes that decide what a framework reads (not the per-hop ids Envoy adds), for reusing a
/// reading when both gateways forwarded the same request.
fn reading_key(r: &Recorded) -> (String, String, Vec<(String, String)>, Vec<u8>) {
    let headers = r.headers.iter().filter(|(n, _)| !n.starts_with("x-")).cloned().collect();
    (r.method.clone(), r.target.clone(), headers, r.body.clone())
}

type Key = (String, String, Vec<(String, String)>, Vec<u8>);

/// Every distinct forwarded request, read by every reader (4 at a time).
fn read_forwarded(frameworks: &Frameworks, trips: &[&Trip]) -> HashMap<Key, Vec<Reading>> {
    let mut todo: Vec<(Key, &Recorded)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in trips.iter().filter_map(|t| t.recorded.as_ref()) {
        let key = reading_key(r);
        if seen.insert(key.clone()) {
            todo.push((key, r));
        }
    }
    let out = Mutex::new(HashMap::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((key, r)) = todo.get(i) else { break };
                    let readings = frameworks.read_all(r);
                    out.lock().expect("lock").insert(key.clone(), readings);
                }
            });
        }
    });
    out.into_inner().expect("lock")
}

/// The corpus is not vacuous: sent straight to the app (no gateway), every family gives some
/// framework a disposable address.
fn every_family_fools_a_framework_without_the_gateway(frameworks: &Frameworks, cases: &[Case]) {
    let mut fooled: HashMap<&str, usize> = HashMap::new();
    for c in cases.iter().take(140) {
        let mut headers: Vec<(String, String)> =
            c.headers.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.clone())).collect();
        headers.push(("host".into(), "app".into()));
        let r = Recorded { method: "POST".into(), target: c.target.clone(), headers, body: c.body.clone() };
        let read = frameworks.read_all(&r);
        let n = read.iter().flat_map(|(_, v)| v.iter().flatten()).any(|v| is_disposable(v));
        *fooled.entry(c.family).or_default() += usize::from(n);
    }
    println!("straight to the app, cases of the first 140 that fooled a framework: {fooled:?}");
    for (family, n) in &fooled {
        assert!(*n > 0, "no case of family {family} gives any framework a disposable address");
    }
}

#[test]
fn no_framework_reads_a_disposable_address_the_gateway_let_through() {
    let cases = corpus(SEED, CASES);
    let frameworks = Frameworks::start();
    every_family_fools_a_framework_without_the_gateway(&frameworks, &cases);
    let mut runs = Vec::new();
    for via in Via::ALL {
        runs.push((via, send_all(via, &cases)));
    }
    let all: Vec<&Trip> = runs.iter().flat_map(|(_, t)| t.iter()).collect();
    let readings = read_forwarded(&frameworks, &all);
    let report = report::Report::new(&cases, &runs, |r| &readings[&reading_key(r)]);
    println!("{report}");
    assert!(
        report.failures.is_empty(),
        "{} of the requests the gateway let through gave a framework a disposable address (first ones above)",
        report.failures.len()
    );
}
