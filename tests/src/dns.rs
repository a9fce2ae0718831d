//! Just enough of the DNS wire format for tests: build a query, read a question, read a reply's
//! header; and [`DnsCounter`], a forwarder that counts the queries passing through it.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Query types used by the tests.
pub mod qtype {
    pub const A: u16 = 1;
    pub const NS: u16 = 2;
    pub const SOA: u16 = 6;
    pub const MX: u16 = 15;
    pub const AAAA: u16 = 28;
}

/// Response codes.
pub mod rcode {
    pub const NOERROR: u8 = 0;
    pub const SERVFAIL: u8 = 2;
    pub const NXDOMAIN: u8 = 3;
    pub const REFUSED: u8 = 5;
}

static NEXT_ID: AtomicU16 = AtomicU16::new(0x4d00);

/// A standard query (RD set, class IN) for `name` / `qtype`. Returns (id, message).
pub fn build_query(name: &str, qtype: u16) -> (u16, Vec<u8>) {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.').filter(|l| !l.is_empty()) {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    (id, m)
}

/// The first question of a message: (name lowercased without trailing dot, qtype).
/// `None` for anything that is not a plain, uncompressed question.
pub fn parse_question(msg: &[u8]) -> Option<(String, u16)> {
    if msg.len() < 12 || u16::from_be_bytes([msg[4], msg[5]]) == 0 {
        return None;
    }
    let mut pos = 12;
    let mut labels: Vec<String> = Vec::new();
    loop {
        let len = *msg.get(pos)? as usize;
        pos += 1;
        if len == 0 {
            break;
        }
        if len > 63 {
            return None;
        }
        let label = msg.get(pos..pos + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        pos += len;
    }
    let qtype = u16::from_be_bytes([*msg.get(pos)?, *msg.get(pos + 1)?]);
    Some((labels.join("."), qtype))
}

/// The header of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyHeader {
    pub id: u16,
    pub authoritative: bool,
    pub truncated: bool,
    pub rcode: u8,
    pub answers: u16,
}

pub fn parse_reply_header(msg: &[u8]) -> Option<ReplyHeader> {
    if msg.len() < 12 || msg[2] & 0x80 == 0 {
        return None;
    }
    Some(ReplyHeader {
        id: u16::from_be_bytes([msg[0], msg[1]]),
        authoritative: msg[2] & 0x04 != 0,
        truncated: msg[2] & 0x02 != 0,
        rcode: msg[3] & 0x0f,
        answers: u16::from_be_bytes([msg[6], msg[7]]),
    })
}

/// Sends one query over UDP and waits up to `timeout` for the matching reply's header.
pub fn query_udp(server: SocketAddr, name: &str, qtype: u16, timeout: Duration) -> io::Result<ReplyHeader> {
    let reply = query_udp_raw(server, name, qtype, timeout)?;
    parse_reply_header(&reply).ok_or_else(|| io::Error::other("not a DNS reply"))
}

/// Sends one query over UDP and returns the whole matching reply.
pub fn query_udp_raw(server: SocketAddr, name: &str, qtype: u16, timeout: Duration) -> io::Result<Vec<u8>> {
    let sock = UdpSocket::bind("127.0.0.1:0")?;
    sock.connect(server)?;
    sock.set_read_timeout(Some(timeout))?;
    let (id, q) = build_query(name, qtype);
    sock.send(&q)?;
    let mut buf = [0u8; 4096];
    loop {
        let n = sock.recv(&mut buf)?;
        if parse_reply_header(&buf[..n]).is_some_and(|h| h.id == id) {
            return Ok(buf[..n].to_vec());
        }
    }
}

/// Sends one query over TCP and reads the reply.
pub fn query_tcp(server: SocketAddr, name: &str, qtype: u16, timeout: Duration) -> io::Result<ReplyHeader> {
    let mut s = TcpStream::connect_timeout(&server, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    let (_, q) = build_query(name, qtype);
    write_framed(&mut s, &q)?;
    let reply = read_framed(&mut s)?;
    parse_reply_header(&reply).ok_or_else(|| io::Error::other("not a DNS reply"))
}

fn read_framed(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len)?;
    let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut msg)?;
    Ok(msg)
}

fn write_framed(s: &mut TcpStream, msg: &[u8]) -> io::Result<()> {
    let mut out = Vec::with_capacity(msg.len() + 2);
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    s.write_all(&out)
}

type Counts = Arc<Mutex<HashMap<(String, u16), usize>>>;

/// A DNS forwarder on 127.0.0.1 (UDP and TCP on the same port) between the sidecar and NSD. It
/// counts every query by (qname lowercased, qtype) before forwarding it. Stops on `Drop`.
///
/// NSD answers with lowercased names whatever the zone file says, so a counter started with
/// [`DnsCounter::start_uppercasing_mx`] also rewrites the MX targets of every reply to upper
/// case (the labels written out in the rdata; compressed suffixes keep the question's case):
/// that is how the tests feed upper-case MX names to the sidecar.
pub struct DnsCounter {
    addr: SocketAddr,
    counts: Counts,
    log: Arc<Mutex<Vec<(String, u16)>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl DnsCounter {
    /// Starts forwarding to `upstream`.
    pub fn start(upstream: SocketAddr) -> DnsCounter {
        DnsCounter::start_inner(upstream, false)
    }

    /// Like [`DnsCounter::start`], and upper-cases the MX targets of every reply.
    pub fn start_uppercasing_mx(upstream: SocketAddr) -> DnsCounter {
        DnsCounter::start_inner(upstream, true)
    }

    fn start_inner(upstream: SocketAddr, uppercase_mx: bool) -> DnsCounter {
        let (udp, tcp) = bind_udp_tcp();
        let addr = udp.local_addr().expect("local_addr");
        let counts: Counts = Arc::default();
        let log: Arc<Mutex<Vec<(String, u16)>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let record = {
            let counts = counts.clone();
            let log = log.clone();
            move |msg: &[u8]| {
                if let Some(q) = parse_question(msg) {
                    *counts.lock().unwrap().entry(q.clone()).or_insert(0) += 1;
                    log.lock().unwrap().push(q);
                }
            }
        };
        let udp_thread = {
            let stop = stop.clone();
            let record = record.clone();
            std::thread::spawn(move || udp_loop(udp, upstream, uppercase_mx, stop, record))
        };
        let tcp_thread = {
            let stop = stop.clone();
            std::thread::spawn(move || tcp_loop(tcp, upstream, uppercase_mx, stop, record))
        };
        DnsCounter { addr, counts, log, stop, threads: vec![udp_thread, tcp_thread] }
    }

    /// Where clients send their queries (UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many queries for (name, qtype) passed so far (`name` compared case-insensitively,
    /// trailing dot ignored).
    pub fn count(&self, name: &str, qtype: u16) -> usize {
        let key = (name.trim_end_matches('.').to_ascii_lowercase(), qtype);
        self.counts.lock().unwrap().get(&key).copied().unwrap_or(0)
    }

    /// Every query seen, in order (for failure messages).
    pub fn queries(&self) -> Vec<(String, u16)> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for DnsCounter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn bind_udp_tcp() -> (UdpSocket, TcpListener) {
    for _ in 0..50 {
        let udp = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
        let port = udp.local_addr().expect("local_addr").port();
        if let Ok(tcp) = TcpListener::bind(("127.0.0.1", port)) {
            return (udp, tcp);
        }
    }
    panic!("no port free for both UDP and TCP after 50 tries");
}

fn udp_loop(
    sock: UdpSocket,
    upstream: SocketAddr,
    uppercase_mx: bool,
    stop: Arc<AtomicBool>,
    record: impl Fn(&[u8]) + Clone + Send + 'static,
) {
    sock.set_read_timeout(Some(Duration::from_millis(50))).ok();
    let mut buf = [0u8; 65535];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, client)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let query = buf[..n].to_vec();
        record(&query);
        let Ok(reply_sock) = sock.try_clone() else {
            continue;
        };
        // One thread per query: NSD answers in microseconds, and a lost reply must not
        // hold up the others.
        std::thread::spawn(move || {
            let up = match UdpSocket::bind("127.0.0.1:0") {
                Ok(s) => s,
                Err(_) => return,
            };
            if up.connect(upstream).is_err() || up.send(&query).is_err() {
                return;
            }
            up.set_read_timeout(Some(Duration::from_secs(5))).ok();
            let mut rbuf = [0u8; 65535];
            if let Ok(m) = up.recv(&mut rbuf) {
                if uppercase_mx {
                    uppercase_mx_targets(&mut rbuf[..m]);
                }
                let _ = reply_sock.send_to(&rbuf[..m], client);
            }
        });
    }
}

fn tcp_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    uppercase_mx: bool,
    stop: Arc<AtomicBool>,
    record: impl Fn(&[u8]) + Clone + Send + 'static,
) {
    listener.set_nonblocking(true).ok();
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, _)) => {
                let stop = stop.clone();
                let record = record.clone();
                std::thread::spawn(move || {
                    let _ = tcp_conn(conn, upstream, uppercase_mx, &stop, &record);
                });
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn tcp_conn(
    mut conn: TcpStream,
    upstream: SocketAddr,
    uppercase_mx: bool,
    stop: &AtomicBool,
    record: &impl Fn(&[u8]),
) -> io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut up: Option<TcpStream> = None;
    while !stop.load(Ordering::Relaxed) {
        let query = read_framed(&mut conn)?;
        record(&query);
        if up.is_none() {
            let s = TcpStream::connect_timeout(&upstream, Duration::from_secs(5))?;
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            up = Some(s);
        }
        let u = up.as_mut().expect("connected above");
        write_framed(u, &query)?;
        let mut reply = read_framed(u)?;
        if uppercase_mx {
            uppercase_mx_targets(&mut reply);
        }
        write_framed(&mut conn, &reply)?;
    }
    Ok(())
}

/// Upper-cases, in place, the labels written out in the target name of every MX record of a
/// message (lengths do not change, so compression pointers stay valid). Returns `None` on a
/// message it cannot walk (left partly rewritten; it is still a valid message).
pub fn uppercase_mx_targets(msg: &mut [u8]) -> Option<()> {
    let count = |i: usize| u16::from_be_bytes([msg[i], msg[i + 1]]) as usize;
    if msg.len() < 12 {
        return None;
    }
    let (qd, rrs) = (count(4), count(6) + count(8) + count(10));
    let mut pos = 12;
    for _ in 0..qd {
        pos = skip_name(msg, pos)? + 4;
    }
    for _ in 0..rrs {
        pos = skip_name(msg, pos)?;
        let fixed = msg.get(pos..pos + 10)?;
        let rtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let rdlen = u16::from_be_bytes([fixed[8], fixed[9]]) as usize;
        let rdata = pos + 10;
        if rtype == qtype::MX {
            let mut p = rdata + 2;
            while let Some(&len) = msg.get(p) {
                if len == 0 || len & 0xc0 != 0 {
                    break;
                }
                msg.get_mut(p + 1..p + 1 + len as usize)?.make_ascii_uppercase();
                p += 1 + len as usize;
            }
        }
        pos = rdata + rdlen;
    }
    Some(())
}

/// The position just after the (possibly compressed) name starting at `pos`.
fn skip_name(msg: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let len = *msg.get(pos)?;
        if len == 0 {
            return Some(pos + 1);
        }
        if len & 0xc0 == 0xc0 {
            return Some(pos + 2);
        }
        pos += 1 + len as usize;
    }
}

/// A "nameserver" that receives queries over UDP and TCP and never answers: for timeout tests.
pub struct BlackHole {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl BlackHole {
    pub fn start() -> BlackHole {
        let (udp, tcp) = bind_udp_tcp();
        let addr = udp.local_addr().expect("local_addr");
        let stop = Arc::new(AtomicBool::new(false));
        let s1 = stop.clone();
        let t1 = std::thread::spawn(move || {
            udp.set_read_timeout(Some(Duration::from_millis(50))).ok();
            let mut buf = [0u8; 65535];
            while !s1.load(Ordering::Relaxed) {
                let _ = udp.recv_from(&mut buf);
            }
        });
        let s2 = stop.clone();
        let t2 = std::thread::spawn(move || {
            tcp.set_nonblocking(true).ok();
            let mut held = Vec::new();
            while !s2.load(Ordering::Relaxed) {
                match tcp.accept() {
                    Ok((c, _)) => held.push(c),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        BlackHole { addr, stop, threads: vec![t1, t2] }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_round_trips() {
        let (_, q) = build_query("MX2.Ownmail.Example.", qtype::MX);
        assert_eq!(parse_question(&q), Some(("mx2.ownmail.example".into(), qtype::MX)));
    }

    #[test]
    fn root_question() {
        let (_, q) = build_query(".", qtype::NS);
        assert_eq!(parse_question(&q), Some((String::new(), qtype::NS)));
    }

    #[test]
    fn truncated_question_is_none() {
        let (_, q) = build_query("a.example", qtype::A);
        assert_eq!(parse_question(&q[..q.len() - 3]), None);
    }
}
