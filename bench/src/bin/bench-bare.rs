//! `bench-bare`: a Pingora server with nothing in it, the baseline of `make bench`. It answers
//! every request with one fixed answer (status, headers, body) read from a JSON file, after
//! reading the request body so that connections stay reusable. For the sidecar comparison the
//! answer is the exact bytes of a cached sidecar lookup captured earlier in the same run; it also
//! stands in for the app behind Envoy and for the endpoint of the callout comparisons.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use async_trait::async_trait;
use clap::Parser;
use email_verdict_bench::capture::Captured;
use http::{HeaderName, HeaderValue, Response, StatusCode};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use pingora::server::Server;
use pingora::server::configuration::ServerConf;
use pingora::services::listening::Service;

#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long)]
    listen: SocketAddr,
    /// Worker threads (as the sidecar's --threads).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The answer: JSON {"status", "headers": [[name, value]...], "body"}.
    #[arg(long)]
    response: PathBuf,
}

struct Fixed {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Vec<u8>,
}

impl Fixed {
    fn new(c: &Captured) -> anyhow::Result<Self> {
        let headers = c
            .headers
            .iter()
            .map(|(n, v)| Ok((HeaderName::try_from(n.as_str())?, HeaderValue::try_from(v.as_str())?)))
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { status: StatusCode::from_u16(c.status)?, headers, body: c.body.clone().into_bytes() })
    }
}

#[async_trait]
impl ServeHttp for Fixed {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        while let Ok(Some(_)) = session.read_request_body().await {}
        let mut response = Response::new(self.body.clone());
        *response.status_mut() = self.status;
        for (name, value) in &self.headers {
            response.headers_mut().append(name.clone(), value.clone());
        }
        response
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.response).with_context(|| format!("read {}", args.response.display()))?;
    let app = Fixed::new(&Captured::from_json(&text)?)?;
    let tmp = std::env::temp_dir();
    let conf = ServerConf {
        threads: args.threads,
        grace_period_seconds: Some(0),
        graceful_shutdown_timeout_seconds: Some(1),
        pid_file: tmp.join(format!("bench-bare-{}.pid", args.listen.port())).display().to_string(),
        upgrade_sock: tmp.join(format!("bench-bare-{}.sock", args.listen.port())).display().to_string(),
        ..ServerConf::default()
    };
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let listeners = pingora::listeners::Listeners::tcp(&args.listen.to_string());
    let mut service = Service::with_listeners("bare".into(), listeners, app);
    service.threads = Some(args.threads);
    server.add_service(service);
    server.run_forever()
}
