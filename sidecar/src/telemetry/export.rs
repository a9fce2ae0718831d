//! The span pipeline: the SDK's batch processor (its own thread) handing OTLP/HTTP protobuf to
//! ureq through [`UreqClient`], so tracing adds no async HTTP stack to the tree.

use std::time::Duration;

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler as SdkSampler, SdkTracerProvider};

use super::settings::{Sampler, Settings};

/// Bound of one export (connect, send, answer); the batch processor's thread waits on it.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// A collector's answer is a small message; more is not read.
const MAX_ANSWER: u64 = 64 * 1024;

pub fn provider(settings: &Settings) -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(UreqClient::new())
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(settings.endpoint.clone())
        .with_headers(settings.headers.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| format!("OTLP exporter: {e}"))?;
    let resource = Resource::builder().with_service_name(settings.service_name.clone()).build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(sampler(settings.sampler))
        .with_resource(resource)
        .build())
}

fn sampler(sampler: Sampler) -> SdkSampler {
    let parent_based = |root| SdkSampler::ParentBased(Box::new(root));
    match sampler {
        Sampler::AlwaysOn => SdkSampler::AlwaysOn,
        Sampler::AlwaysOff => SdkSampler::AlwaysOff,
        Sampler::Ratio(r) => SdkSampler::TraceIdRatioBased(r),
        Sampler::ParentBasedAlwaysOn => parent_based(SdkSampler::AlwaysOn),
        Sampler::ParentBasedAlwaysOff => parent_based(SdkSampler::AlwaysOff),
        Sampler::ParentBasedRatio(r) => parent_based(SdkSampler::TraceIdRatioBased(r)),
    }
}

/// `opentelemetry_http::HttpClient` on a blocking ureq agent. Blocking inside the async method
/// is right here: the SDK's batch processor drives exports on a thread of its own.
#[derive(Debug)]
struct UreqClient {
    agent: ureq::Agent,
}

impl UreqClient {
    fn new() -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(EXPORT_TIMEOUT))
            .http_status_as_error(false)
            .max_redirects(0)
            .build();
        UreqClient { agent: ureq::Agent::new_with_config(config) }
    }
}

#[async_trait::async_trait]
impl HttpClient for UreqClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, body.to_vec());
        let response = self.agent.run(request)?;
        let (parts, body) = response.into_parts();
        let body = body.into_with_config().limit(MAX_ANSWER).read_to_vec()?;
        Ok(Response::from_parts(parts, Bytes::from(body)))
    }
}
