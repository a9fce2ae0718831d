//! A tiny HTTP/1.1 client over `TcpStream`. The request target is sent exactly as given, so a
//! test decides every byte of the percent-encoding. One request per connection
//! (`Connection: close`) unless [`Request::send_keep_alive`] is used.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A request under construction.
#[derive(Debug, Clone)]
pub struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    timeout: Duration,
}

impl Request {
    pub fn new(method: &str, target: &str) -> Request {
        Request {
            method: method.to_string(),
            target: target.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout: Duration::from_secs(20),
        }
    }

    pub fn get(target: &str) -> Request {
        Request::new("GET", target)
    }

    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn bearer(self, key: &str) -> Request {
        self.header("Authorization", &format!("Bearer {key}"))
    }

    pub fn body(mut self, body: &[u8]) -> Request {
        self.body = body.to_vec();
        self
    }

    /// Read timeout for the whole exchange (default 20 s).
    pub fn timeout(mut self, t: Duration) -> Request {
        self.timeout = t;
        self
    }

    pub fn target(&self) -> &str {
        &self.target
    }

    /// Sends the request and reads the response; panics with context on I/O errors.
    pub fn send(&self, addr: SocketAddr) -> Response {
        self.try_send(addr).unwrap_or_else(|e| panic!("{} {} to {addr}: {e}", self.method, self.target))
    }

    pub fn try_send(&self, addr: SocketAddr) -> io::Result<Response> {
        let mut stream = self.connect(addr)?;
        stream.write_all(&self.encode(addr, true))?;
        read_response(&mut BufReader::new(&mut stream), &self.method, true)
    }

    /// Sends on a connection the caller opened (e.g. from a chosen source address).
    pub fn send_on(&self, stream: &mut TcpStream) -> Response {
        let addr = stream.peer_addr().expect("a connected stream");
        let sent = stream.write_all(&self.encode(addr, true));
        let resp = sent.and_then(|()| read_response(&mut BufReader::new(&mut *stream), &self.method, true));
        resp.unwrap_or_else(|e| panic!("{} {} to {addr}: {e}", self.method, self.target))
    }

    /// Sends without `Connection: close` and returns the still-open connection too.
    pub fn send_keep_alive(&self, addr: SocketAddr) -> io::Result<(Response, TcpStream)> {
        let mut stream = self.connect(addr)?;
        stream.write_all(&self.encode(addr, false))?;
        let resp = read_response(&mut BufReader::new(&mut stream), &self.method, false)?;
        Ok((resp, stream))
    }

    fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(self.timeout))?;
        stream.set_write_timeout(Some(self.timeout))?;
        Ok(stream)
    }

    fn encode(&self, addr: SocketAddr, close: bool) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\nHost: {addr}\r\n", self.method, self.target);
        if close {
            head.push_str("Connection: close\r\n");
        }
        for (n, v) in &self.headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        if !self.body.is_empty() || !matches!(self.method.as_str(), "GET" | "HEAD") {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every header named `name` (case-insensitive).
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics with the status and body when it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("response body is not JSON ({e}); status {}:\n{}", self.status, self.text()))
    }
}

impl std::fmt::Display for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "HTTP {}", self.status)?;
        for (n, v) in &self.headers {
            writeln!(f, "{n}: {v}")?;
        }
        write!(f, "\n{}", self.text())
    }
}

fn read_response(r: &mut impl BufRead, method: &str, close: bool) -> io::Result<Response> {
    let status_line = read_line(r)?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(bad(format!("bad status line {status_line:?}")));
    }
    let status: u16 =
        parts.next().and_then(|s| s.parse().ok()).ok_or_else(|| bad(format!("bad status line {status_line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(r)?;
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':').ok_or_else(|| bad(format!("bad header line {line:?}")))?;
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let mut resp = Response { status, headers, body: Vec::new() };
    if method == "HEAD" || status == 204 || status == 304 || (100..200).contains(&status) {
        return Ok(resp);
    }
    let chunked = resp.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        resp.body = read_chunked(r)?;
    } else if let Some(len) = resp.header("content-length") {
        let len: usize = len.parse().map_err(|_| bad(format!("bad content-length {len:?}")))?;
        resp.body = vec![0; len];
        r.read_exact(&mut resp.body)?;
    } else if close {
        r.read_to_end(&mut resp.body)?;
    } else {
        return Err(bad("keep-alive response without length".into()));
    }
    Ok(resp)
}

fn read_chunked(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(r)?;
        let size_hex = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| bad(format!("bad chunk size {line:?}")))?;
        if size == 0 {
            // trailers, then an empty line
            while !read_line(r)?.is_empty() {}
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        read_line(r)?;
    }
}

fn read_line(r: &mut impl BufRead) -> io::Result<String> {
    let mut buf = Vec::new();
    r.read_until(b'\n', &mut buf)?;
    if buf.is_empty() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before the response was complete"));
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}
