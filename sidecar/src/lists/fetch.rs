//! Fetching a URL list: one bounded GET (time and size), conditional on the validators of the
//! last good copy (`If-None-Match`, `If-Modified-Since`), over `ureq` (blocking: callers run it
//! on a blocking thread). Anything but a 2xx or a 304 is a failure, and so is an HTML answer.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ListError;
use super::source::ListUrl;
use crate::outbound::{self, Client, Reach};

/// The largest list body accepted.
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;
/// The most one fetch may take, from connecting to the body's last byte (redirects included).
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed (within the URL's origin: `outbound`).
const MAX_REDIRECTS: u32 = 5;

/// What lets the server answer "not modified": from the last good copy's response.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

pub enum Fetched {
    /// 304: the last good copy is current.
    NotModified,
    /// A 2xx body that is not declared HTML, with its validators.
    Body { bytes: Vec<u8>, validators: Validators },
}

pub struct Fetcher {
    client: Client,
    max_bytes: u64,
}

impl Fetcher {
    /// `reach`: which addresses a list URL may lead to (`--allow-private-outbound`).
    pub fn new(timeout: Duration, max_bytes: u64, reach: Reach) -> Self {
        Self { client: Client::new(timeout, MAX_REDIRECTS, reach), max_bytes }
    }

    /// GETs `url`; `have` are the validators of the copy in hand (none: ask unconditionally).
    pub fn fetch(&self, url: &ListUrl, have: Option<&Validators>) -> Result<Fetched, ListError> {
        let mut headers = vec![("accept", "text/plain, */*;q=0.1".to_owned())];
        if let Some((user, password)) = url.basic() {
            headers.push(("authorization", basic_auth(user, password)));
        }
        if let Some(have) = have {
            headers.extend(have.etag.clone().map(|etag| ("if-none-match", etag)));
            headers.extend(have.last_modified.clone().map(|date| ("if-modified-since", date)));
        }
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let response = self.client.get(url.request(), &headers).map_err(ListError::from)?;
        let status = response.status().as_u16();
        if status == 304 && have.is_some() {
            return Ok(Fetched::NotModified);
        }
        if !(200..300).contains(&status) {
            return Err(ListError::Status(status));
        }
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        if header("content-type").is_some_and(|t| is_html_type(&t)) {
            return Err(ListError::Html);
        }
        let validators = Validators { etag: header("etag"), last_modified: header("last-modified") };
        let body = response.into_body().with_config().limit(self.max_bytes).read_to_vec();
        let bytes = body.map_err(|e| ListError::Fetch(outbound::failure(e)))?;
        Ok(Fetched::Body { bytes, validators })
    }
}

impl From<outbound::Failure> for ListError {
    fn from(failure: outbound::Failure) -> Self {
        match failure {
            outbound::Failure::Refused(refusal) => ListError::Refused(refusal),
            outbound::Failure::Failed(why) => ListError::Fetch(why),
        }
    }
}

fn is_html_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "text/html" || essence == "application/xhtml+xml"
}

fn basic_auth(user: &str, password: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// A server on loopback that reads a request, waits `delay`, then answers `answer` (once).
    fn server(delay: Duration, answer: &'static [u8]) -> ListUrl {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = ListUrl::parse(&format!("http://{}/l.txt", listener.local_addr().unwrap())).unwrap();
        std::thread::spawn(move || {
            if let Ok((mut conn, _)) = listener.accept() {
                let _ = conn.read(&mut [0; 4096]);
                std::thread::sleep(delay);
                let _ = conn.write_all(answer);
            }
        });
        url
    }

    #[test]
    fn a_fetch_is_bounded_in_time_and_size() {
        let slow = server(Duration::from_secs(5), b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\na.example\n");
        let started = std::time::Instant::now();
        let got = Fetcher::new(Duration::from_millis(300), MAX_BYTES, Reach::Any).fetch(&slow, None).map(|_| ());
        assert_eq!(got.err(), Some(ListError::Fetch("timed out".into())));
        assert!(started.elapsed() < Duration::from_secs(3));
        let big = server(Duration::ZERO, b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\na.example\nb.example\n");
        let got = Fetcher::new(TIMEOUT, 15, Reach::Any).fetch(&big, None).map(|_| ());
        assert_eq!(got.err(), Some(ListError::Fetch("body larger than 15 bytes".into())));
    }

    #[test]
    fn html_types() {
        assert!(
            is_html_type("text/html; charset=utf-8")
                && is_html_type("TEXT/HTML")
                && is_html_type("application/xhtml+xml")
        );
        assert!(!is_html_type("text/plain") && !is_html_type("application/octet-stream"));
        assert_eq!(basic_auth("ana", "p@ss"), "Basic YW5hOnBAc3M=");
    }
}
