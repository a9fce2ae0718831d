//! The standard `OTEL_*` variables, read once at start. Tracing is on only when an OTLP endpoint
//! is set and `OTEL_SDK_DISABLED` is not `true`; a value we cannot honour is an error naming the
//! variable (the operator's start fails with exit 2), never a silent default.

use std::collections::HashMap;

use percent_encoding::percent_decode_str;

/// What to export, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`.
    pub endpoint: String,
    pub headers: HashMap<String, String>,
    pub service_name: String,
    pub sampler: Sampler,
}

/// `OTEL_TRACES_SAMPLER` (with `OTEL_TRACES_SAMPLER_ARG` for the ratios).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampler {
    AlwaysOn,
    AlwaysOff,
    Ratio(f64),
    ParentBasedAlwaysOn,
    ParentBasedAlwaysOff,
    ParentBasedRatio(f64),
}

const DEFAULT_SERVICE: &str = "email-verdict";

impl Settings {
    /// The settings from `var` (the process environment in production); `Ok(None)`: tracing off.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Settings>, String> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        match var("OTEL_SDK_DISABLED").map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("false") => {}
            Some("true") => return Ok(None),
            Some(other) => return Err(format!("OTEL_SDK_DISABLED={other}: expected true or false")),
        }
        let endpoint = match (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(traces), _) => checked_endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.trim())?,
            (None, Some(base)) => {
                let base = checked_endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", base.trim())?;
                format!("{}/v1/traces", base.trim_end_matches('/'))
            }
            (None, None) => return Ok(None),
        };
        for name in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let Some(protocol) = var(name)
                && protocol.trim() != "http/protobuf"
            {
                return Err(format!("{name}={protocol}: only http/protobuf is supported"));
            }
        }
        let mut headers = HashMap::new();
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            if let Some(list) = var(name) {
                // Never the value in the message: it is usually a credential.
                headers.extend(parse_headers(&list).map_err(|e| format!("{name}: {e}"))?);
            }
        }
        let service_name = var("OTEL_SERVICE_NAME").map_or_else(|| DEFAULT_SERVICE.to_owned(), |s| s.trim().to_owned());
        let sampler = sampler(var("OTEL_TRACES_SAMPLER"), var("OTEL_TRACES_SAMPLER_ARG"))?;
        Ok(Some(Settings { endpoint, headers, service_name, sampler }))
    }
}

fn checked_endpoint(name: &str, value: &str) -> Result<String, String> {
    let uri: http::Uri = value.parse().map_err(|_| format!("{name}={value}: not a URL"))?;
    match (uri.scheme_str(), uri.authority()) {
        (Some("http" | "https"), Some(authority)) if !authority.as_str().contains('@') => Ok(value.to_owned()),
        (Some("http" | "https"), Some(_)) => Err(format!("{name}: user information in the URL is not supported")),
        _ => Err(format!("{name}={value}: expected an http:// or https:// URL")),
    }
}

/// `key1=value1,key2=value2`, each part percent-decoded (the W3C baggage form the spec names).
fn parse_headers(list: &str) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for (n, part) in list.split(',').enumerate().filter(|(_, p)| !p.trim().is_empty()) {
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!("entry {} is not key=value", n + 1));
        };
        let key = percent_decode_str(key.trim()).decode_utf8().map_err(|_| format!("entry {}: not UTF-8", n + 1))?;
        let value =
            percent_decode_str(value.trim()).decode_utf8().map_err(|_| format!("entry {}: not UTF-8", n + 1))?;
        if http::HeaderName::from_bytes(key.as_bytes()).is_err() {
            return Err(format!("entry {}: {key:?} is not a header name", n + 1));
        }
        if http::HeaderValue::from_str(&value).is_err() {
            return Err(format!("entry {} ({key}): the value is not a valid header value", n + 1));
        }
        headers.push((key.into_owned(), value.into_owned()));
    }
    Ok(headers)
}

fn sampler(name: Option<String>, arg: Option<String>) -> Result<Sampler, String> {
    let ratio = || -> Result<f64, String> {
        match arg.as_deref().map(str::trim) {
            None => Ok(1.0),
            Some(text) => match text.parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
                _ => Err(format!("OTEL_TRACES_SAMPLER_ARG={text}: expected a number from 0 to 1")),
            },
        }
    };
    Ok(match name.as_deref().map(str::trim) {
        None | Some("parentbased_always_on") => Sampler::ParentBasedAlwaysOn,
        Some("always_on") => Sampler::AlwaysOn,
        Some("always_off") => Sampler::AlwaysOff,
        Some("traceidratio") => Sampler::Ratio(ratio()?),
        Some("parentbased_always_off") => Sampler::ParentBasedAlwaysOff,
        Some("parentbased_traceidratio") => Sampler::ParentBasedRatio(ratio()?),
        Some(other) => {
            return Err(format!(
                "OTEL_TRACES_SAMPLER={other}: expected always_on, always_off, traceidratio, parentbased_always_on, \
                 parentbased_always_off or parentbased_traceidratio"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<Settings>, String> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_vars(|name| vars.get(name).cloned())
    }

    #[test]
    fn off_without_an_endpoint_or_when_disabled() {
        assert_eq!(settings(&[]), Ok(None));
        assert_eq!(settings(&[("OTEL_SERVICE_NAME", "x"), ("OTEL_TRACES_SAMPLER", "nonsense")]), Ok(None));
        assert_eq!(
            settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_SDK_DISABLED", "TRUE")]),
            Ok(None)
        );
    }

    #[test]
    fn endpoints_and_defaults() {
        let s = settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")]).unwrap().unwrap();
        assert_eq!(s.endpoint, "http://collector:4318/v1/traces");
        assert_eq!(s.service_name, "email-verdict");
        assert_eq!(s.sampler, Sampler::ParentBasedAlwaysOn);
        let s = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://traces.example/otlp"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%3Db, x-tenant = t1"),
            ("OTEL_SERVICE_NAME", "gate"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "https://traces.example/otlp");
        assert_eq!(s.headers.get("api-key").map(String::as_str), Some("a=b"));
        assert_eq!(s.headers.get("x-tenant").map(String::as_str), Some("t1"));
        assert_eq!(s.service_name, "gate");
        assert_eq!(s.sampler, Sampler::ParentBasedRatio(0.25));
    }

    #[test]
    fn bad_values_name_the_variable() {
        let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        for (vars, variable) in [
            (vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")], "OTEL_EXPORTER_OTLP_ENDPOINT"),
            (vec![("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://c/x")], "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            (vec![on, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")], "OTEL_EXPORTER_OTLP_PROTOCOL"),
            (vec![on, ("OTEL_EXPORTER_OTLP_HEADERS", "novalue")], "OTEL_EXPORTER_OTLP_HEADERS"),
            (vec![on, ("OTEL_EXPORTER_OTLP_HEADERS", "bad name=v")], "OTEL_EXPORTER_OTLP_HEADERS"),
            (vec![on, ("OTEL_TRACES_SAMPLER", "sometimes")], "OTEL_TRACES_SAMPLER"),
            (
                vec![on, ("OTEL_TRACES_SAMPLER", "traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "2")],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
            (vec![on, ("OTEL_SDK_DISABLED", "yes")], "OTEL_SDK_DISABLED"),
        ] {
            let error = settings(&vars).unwrap_err();
            assert!(error.starts_with(variable), "{vars:?}: {error}");
        }
    }

    #[test]
    fn a_header_value_is_never_in_the_message() {
        let error = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=secret%0Atoken"),
        ])
        .unwrap_err();
        assert!(!error.contains("secret"), "{error}");
    }
}
