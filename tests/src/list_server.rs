//! [`ListServer`]: a tiny HTTP/1.1 server on 127.0.0.1 serving lists the test changes and
//! breaks while the sidecar fetches them (issue 17), and any canned answer ([`Served::Reply`]:
//! an RDAP server for issue 26). Each path serves a [`Served`] answer; a
//! good list carries an `ETag` (a counter bumped by every change) and is answered `304` to a
//! matching `If-None-Match`. Every request is recorded (target and headers). One connection per
//! request (`connection: close`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What one path answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served {
    /// `200 text/plain` with this list and an `ETag`.
    List(String),
    /// `200` with an HTML error page (`text/html`), as a proxy or login wall would.
    HtmlPage,
    /// `200 text/plain` whose body is an HTML page all the same.
    HtmlAsText,
    /// This status with a short body.
    Status(u16),
    /// `200` announcing this list's length plus 100 bytes, then closing after the first half.
    Truncated(String),
    /// `200 text/plain` of this many bytes of valid names (past the sidecar's size bound).
    Huge(usize),
    /// Reads the request and never answers (the connection stays open until the server stops).
    Hang,
    /// This status, these headers and this body, as given.
    Reply { status: u16, headers: Vec<(String, String)>, body: String },
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub target: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    /// When its request line arrived.
    pub at: Instant,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    paths: HashMap<String, (Served, u64)>,
    seen: Vec<Seen>,
    held: Vec<TcpStream>,
}

/// The server; stopped on drop (or [`ListServer::stop`]: connections are then refused).
pub struct ListServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ListServer {
    pub fn start() -> ListServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the list server");
        let addr = listener.local_addr().expect("local_addr");
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, stopping) = (state.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                std::thread::spawn(move || {
                    let _ = answer(conn, &st);
                });
            }
        });
        ListServer { addr, state, stop, thread: Some(thread) }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What `path` answers from now on (a new `ETag` for a list).
    pub fn serve(&self, path: &str, served: Served) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let version = state.paths.get(path).map_or(1, |(_, v)| v + 1);
        state.paths.insert(path.to_string(), (served, version));
    }

    /// Every request so far, oldest first.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).seen.clone()
    }

    /// Held requests ([`Served::Hang`]) whose client is still waiting on the connection (it
    /// has neither closed it nor given up).
    pub fn holding(&self) -> usize {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state
            .held
            .iter()
            .filter(|conn| {
                let _ = conn.set_nonblocking(true);
                let open = matches!(conn.peek(&mut [0; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
                let _ = conn.set_nonblocking(false);
                open
            })
            .count()
    }

    /// Stops accepting: later fetches are refused. Idempotent.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for conn in self.state.lock().unwrap_or_else(|e| e.into_inner()).held.drain(..) {
            let _ = conn.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for ListServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn answer(conn: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let at = Instant::now();
    let target = line.split(' ').nth(1).unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let seen = Seen { target: target.clone(), headers, at };
    let path = target.split('?').next().unwrap_or_default().to_string();
    let served = {
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        state.seen.push(seen.clone());
        state.paths.get(&path).cloned()
    };
    let mut conn = conn;
    let Some((served, version)) = served else { return respond(&mut conn, 404, "text/plain", &[], b"no such list") };
    match served {
        Served::List(text) => {
            let etag = format!("\"v{version}\"");
            if seen.header("if-none-match") == Some(etag.as_str()) {
                return respond(&mut conn, 304, "text/plain", &[("etag", &etag)], b"");
            }
            respond(&mut conn, 200, "text/plain; charset=utf-8", &[("etag", &etag)], text.as_bytes())
        }
        Served::HtmlPage => {
            respond(&mut conn, 200, "text/html", &[], b"<!doctype html><title>Sign in</title><p>Please sign in</p>")
        }
        Served::HtmlAsText => {
            respond(&mut conn, 200, "text/plain", &[], b"\n  <html><body>502 Bad Gateway</body></html>")
        }
        Served::Status(status) => respond(&mut conn, status, "text/plain", &[], b"server error"),
        Served::Truncated(text) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                text.len() + 100
            );
            conn.write_all(head.as_bytes())?;
            conn.write_all(&text.as_bytes()[..text.len() / 2])?;
            conn.flush()?;
            conn.shutdown(Shutdown::Both)
        }
        Served::Reply { status, headers, body } => {
            let extra: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            respond(&mut conn, status, "application/rdap+json", &extra, body.as_bytes())
        }
        Served::Hang => {
            state.lock().unwrap_or_else(|e| e.into_inner()).held.push(conn);
            Ok(())
        }
        Served::Huge(len) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n"
            );
            conn.write_all(head.as_bytes())?;
            let line = b"huge-list-entry.example\n";
            let chunk: Vec<u8> = line.iter().copied().cycle().take(line.len() * 4096).collect();
            let mut sent = 0;
            while sent < len {
                let n = chunk.len().min(len - sent);
                // The client hangs up once past its bound: stop there.
                conn.write_all(&chunk[..n])?;
                sent += n;
            }
            Ok(())
        }
    }
}

fn respond(
    conn: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (n, v) in extra {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    conn.write_all(body)?;
    conn.flush()
}
