//! The protocol matrix (issue 43, "Proof"): real servers and real clients of every protocol a mesh
//! carries, through the shipped block-mode gateways: the filter in Envoy, both builds (Wasm and
//! dynamic module; `envoy/plugin-config.json`), and Envoy's HTTP ext_authz calling the sidecar
//! (`envoy/ext-authz-config.json`), and ext_authz over gRPC where the tree has its template
//! (`envoy/ext-authz-grpc.template.yaml`), each rendered from its shipped template with the gRPC
//! service routed to the app over HTTP/2 (cluster `app_grpc`).
//!
//! The apps (`tests/frameworks/README.md`, "Protocols"; [`email_verdict_tests::protocols`]): a
//! Python grpcio server, and one Node process serving connect-node (Connect, gRPC and gRPC-Web),
//! graphql-yoga and Express 5 (`express.json()` inflating gzip, deflate and br). The clients:
//! grpcio's, connect-node's Connect (binary and JSON), gRPC and gRPC-Web transports, and fetch
//! as a GraphQL-over-HTTP client and for compressed JSON. One gateway per build, shared by every
//! case (`cases.rs`): a real address signs up through each protocol and client; a disposable one
//! in every field, nesting and encoding of the issue never reaches a handler, and the client
//! library reports the refusal in its protocol's words (`PERMISSION_DENIED` with a message, a
//! GraphQL `errors` response, 403); after a decompression bomb the gateway still serves.
//!
//! Fails printing a table (case × gateway) of what happened, then each failure in full.

#[path = "protocols/cases.rs"]
mod cases;
#[path = "protocols/report.rs"]
mod report;

use std::net::SocketAddr;
use std::time::Instant;

use email_verdict_tests::envoy::{self, Envoy, EnvoyBuilder, FilterBuild};
use email_verdict_tests::protocols::{Protocols, Runner};
use email_verdict_tests::{Nsd, Sidecar, free_port};
use serde_json::json;

use cases::Case;
use report::{Outcome, Report};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Via {
    Filter(FilterBuild),
    ExtAuthz,
    /// Envoy's ext_authz over gRPC against `serve --ext-authz-grpc-listen`
    /// (`envoy/ext-authz-grpc.template.yaml`), where the tree has it.
    ExtAuthzGrpc,
}

/// The gRPC ext_authz template: a gateway of the matrix once it is in the tree.
const GRPC_AUTHZ_TEMPLATE: &str = "ext-authz-grpc.template.yaml";

impl Via {
    /// Every gateway of the tree.
    pub fn all() -> Vec<Via> {
        let mut all = vec![Via::Filter(FilterBuild::Wasm), Via::Filter(FilterBuild::Module), Via::ExtAuthz];
        if email_verdict_tests::workspace_root().join("envoy").join(GRPC_AUTHZ_TEMPLATE).exists() {
            all.push(Via::ExtAuthzGrpc);
        }
        all
    }

    pub fn name(self) -> &'static str {
        match self {
            Via::Filter(FilterBuild::Wasm) => "Wasm",
            Via::Filter(FilterBuild::Module) => "module",
            Via::ExtAuthz => "ext_authz",
            Via::ExtAuthzGrpc => "gRPC ext_authz",
        }
    }
}

/// One gateway: NSD, the sidecar, Envoy in front of the protocol apps.
struct Stack {
    // Drop order: Envoy first, then the sidecar, NSD.
    envoy: Envoy,
    _sidecar: Sidecar,
    _nsd: Nsd,
}

/// The route and cluster that send a call carrying `x-protocols-server: python` to the grpcio
/// server (the shipped `app_grpc` goes to connect-node): the test's own, inserted before the
/// shipped gRPC route, the gateway on as on that route.
fn python_route(first_grpc_route: &str) -> (String, String) {
    let route = format!(
        "              - name: grpc_python
                match:
                  prefix: /acme.v1.Accounts/
                  headers:
                  - name: x-protocols-server
                    string_match: {{ exact: python }}
                route: {{ cluster: app_grpc_python }}
{first_grpc_route}"
    );
    (first_grpc_route.to_owned(), route)
}

fn python_cluster(port: u16) -> String {
    format!(
        "  clusters:
  - name: app_grpc_python
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        \"@type\": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config:
          http2_protocol_options: {{}}
    load_assignment:
      cluster_name: app_grpc_python
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: {{ address: 127.0.0.1, port_value: {port} }}
"
    )
}

fn start_gateway(via: Via, apps: &Protocols) -> Stack {
    envoy::envoy_binary();
    if let Via::Filter(build) = via {
        build.artifact();
    }
    let config = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json").display().to_string();
    let nsd = Nsd::start_with_root();
    let mut sidecar = Sidecar::builder().dns(nsd.addr()).keys(&["gateway"]);
    let grpc_check = SocketAddr::from(([127, 0, 0, 1], free_port()));
    match via {
        Via::ExtAuthz => sidecar = sidecar.args(&["--ext-authz-config", &config]),
        Via::ExtAuthzGrpc => {
            let listen = grpc_check.to_string();
            sidecar = sidecar.args(&["--ext-authz-grpc-listen", &listen, "--ext-authz-config", &config]);
        }
        Via::Filter(_) => {}
    }
    let sidecar = sidecar.start();
    let node = apps.node_app();
    let first_grpc_route = match via {
        Via::ExtAuthz | Via::ExtAuthzGrpc => "              - name: grpc_signup\n",
        Via::Filter(_) => "              - name: grpc_service\n",
    };
    if via == Via::ExtAuthzGrpc {
        let path = email_verdict_tests::workspace_root().join("envoy").join(GRPC_AUTHZ_TEMPLATE);
        let text = std::fs::read_to_string(&path).expect("read the gRPC ext_authz template");
        assert!(
            text.contains("cluster: app_grpc") && text.contains(first_grpc_route),
            "envoy/{GRPC_AUTHZ_TEMPLATE} has no gRPC signup route: give it the routes grpc_signup, \
             grpc_service and graphql and the cluster app_grpc of envoy/ext-authz.template.yaml"
        );
    }
    let (from, to) = python_route(first_grpc_route);
    let check = if via == Via::ExtAuthzGrpc { grpc_check } else { sidecar.addr() };
    let builder = EnvoyBuilder::new(check, node)
        .api_key(sidecar.key())
        .placeholder("GRPC_APP_ADDRESS", &node.ip().to_string())
        .placeholder("GRPC_APP_PORT", &node.port().to_string())
        .edit_config(&from, &to)
        .edit_config("  clusters:\n", &python_cluster(apps.python_app().port()));
    let envoy = match via {
        Via::Filter(build) => builder.build(build).start(),
        Via::ExtAuthz => builder.ext_authz().start(),
        Via::ExtAuthzGrpc => builder.template(GRPC_AUTHZ_TEMPLATE).start(),
    };
    Stack { envoy, _sidecar: sidecar, _nsd: nsd }
}

/// Runs one case through the gateway at `stack`, tagged `id`: what the client reported and what
/// the handlers received.
fn run(apps: &Protocols, stack: &Stack, case: &Case, id: &str) -> Outcome {
    let addr = stack.envoy.addr();
    let mut command = case.command.clone();
    command["case"] = json!(id);
    command["target"] = match case.runner {
        Runner::Python => json!(addr.to_string()),
        Runner::Node => json!(format!("http://{addr}")),
    };
    let started = Instant::now();
    let reported = apps.run(case.runner, &command);
    let millis = started.elapsed().as_millis();
    Outcome { reported, seen: apps.seen(id), millis }
}

#[test]
fn every_protocol_signs_up_a_real_address_and_no_disposable_one_reaches_a_handler() {
    let started = Instant::now();
    let cases = cases::cases();
    let apps = Protocols::start();
    let mut report = Report::new(&cases);
    let vias = Via::all();
    for (g, via) in vias.iter().copied().enumerate() {
        let t = Instant::now();
        let stack = start_gateway(via, &apps);
        let up = t.elapsed();
        let outcomes: Vec<Outcome> =
            cases.iter().enumerate().map(|(i, c)| run(&apps, &stack, c, &format!("{g}-{i}"))).collect();
        println!(
            "{}: gateway up in {:.1} s, {} cases in {:.1} s",
            via.name(),
            up.as_secs_f64(),
            cases.len(),
            (t.elapsed() - up).as_secs_f64()
        );
        report.add(via, outcomes);
    }
    println!("{report}");
    println!("time: {:.1} s in all", started.elapsed().as_secs_f64());
    let failed = report.failures();
    assert!(failed == 0, "{failed} of {} case runs failed (table above)", cases.len() * vias.len());
}
