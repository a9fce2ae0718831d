//! Tiny TCP servers standing in for the app behind Envoy and for a broken sidecar.
//!
//! [`UpstreamApp`]: an HTTP/1.1 server (keep-alive, Content-Length or chunked bodies) that records
//! every complete request it gets and answers `200 {"ok":true}`; a request whose body never ends
//! (the connection closes or resets first) is not a request, as for any HTTP framework: it is
//! only counted ([`UpstreamApp::incomplete`]). [`SilentServer`]: accepts connections and
//! never answers (a hung sidecar).

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One request as the app received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    /// Header names lower-cased, values trimmed, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every value of header `name`.
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
    }

    /// The request path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// A recording HTTP/1.1 app on 127.0.0.1:PORT, stopped on drop.
pub struct UpstreamApp {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    incomplete: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl UpstreamApp {
    pub fn start() -> UpstreamApp {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the upstream app");
        let addr = listener.local_addr().expect("local_addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let incomplete = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (reqs, stop2, cut) = (requests.clone(), stop.clone(), incomplete.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (reqs, cut) = (reqs.clone(), cut.clone());
                std::thread::spawn(move || {
                    let _ = serve_connection(conn, &reqs, &cut);
                });
            }
        });
        UpstreamApp { addr, requests, incomplete, stop, thread: Some(thread) }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }

    /// Requests whose headers arrived but whose body never ended (not recorded).
    pub fn incomplete(&self) -> usize {
        self.incomplete.load(Ordering::SeqCst)
    }

    /// How many requests arrived so far.
    pub fn count(&self) -> usize {
        self.requests.lock().expect("lock").len()
    }

    /// Waits (up to 5 s) until at least `n` requests arrived, then returns request `n - 1`.
    pub fn wait_for_request(&self, n: usize) -> Recorded {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(r) = self.requests.lock().expect("lock").get(n - 1) {
                return r.clone();
            }
            assert!(Instant::now() < deadline, "the app got {} requests, expected at least {n}", self.count());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The last request received (panics when none).
    pub fn last(&self) -> Recorded {
        self.requests.lock().expect("lock").last().cloned().expect("the app received no request")
    }
}

impl Drop for UpstreamApp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_connection(conn: TcpStream, requests: &Mutex<Vec<Recorded>>, incomplete: &AtomicUsize) -> io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut writer = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    loop {
        let Some(head) = read_head(&mut reader)? else { return Ok(()) };
        let Ok(req) = read_body(&mut reader, head) else {
            incomplete.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        };
        let close = req.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        requests.lock().expect("lock").push(req);
        let body = b"{\"ok\":true}";
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{}\r\n",
            body.len(),
            if close { "connection: close\r\n" } else { "" }
        );
        writer.write_all(head.as_bytes())?;
        writer.write_all(body)?;
        writer.flush()?;
        if close {
            let _ = writer.shutdown(Shutdown::Both);
            return Ok(());
        }
    }
}

fn read_line(r: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    if r.read_until(b'\n', &mut buf)? == 0 {
        return Ok(None);
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// The request line and headers; `None` when the connection closed first.
fn read_head(r: &mut impl BufRead) -> io::Result<Option<Recorded>> {
    let Some(line) = read_line(r)? else { return Ok(None) };
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let Some(h) = read_line(r)? else { return Ok(None) };
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    Ok(Some(Recorded { method, target, headers, body: Vec::new() }))
}

/// The whole body; an error when it does not end as its framing says (EOF, reset, bad chunk).
fn read_body(r: &mut impl BufRead, mut req: Recorded) -> io::Result<Recorded> {
    let cut = || io::Error::new(io::ErrorKind::UnexpectedEof, "the body did not end");
    if req.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        loop {
            let size_line = read_line(r)?.ok_or_else(cut)?;
            let size =
                usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16).map_err(|_| cut())?;
            if size == 0 {
                loop {
                    match read_line(r)? {
                        Some(l) if l.is_empty() => return Ok(req),
                        Some(_) => {} // a trailer
                        None => return Err(cut()),
                    }
                }
            }
            let start = req.body.len();
            req.body.resize(start + size, 0);
            r.read_exact(&mut req.body[start..])?;
            read_line(r)?.ok_or_else(cut)?;
        }
    } else if let Some(len) = req.header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        req.body = vec![0; len];
        r.read_exact(&mut req.body)?;
    }
    Ok(req)
}

/// Accepts TCP connections on 127.0.0.1:PORT and never reads or answers: a hung sidecar.
pub struct SilentServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<Mutex<Vec<TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl SilentServer {
    pub fn start() -> SilentServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the silent server");
        let addr = listener.local_addr().expect("local_addr");
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let (stop2, acc2) = (stop.clone(), accepted.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(c) = conn {
                    acc2.lock().expect("lock").push(c);
                }
            }
        });
        SilentServer { addr, stop, accepted, thread: Some(thread) }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.lock().expect("lock").len()
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for c in self.accepted.lock().expect("lock").drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}
