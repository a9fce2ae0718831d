//! The client against servers on loopback: refused without `Reach::Any` (by address and by
//! name), redirects followed within the origin only, and only so many of them.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A server answering each request with `answer(its path)`; counts the requests.
fn server(answer: impl Fn(&str) -> String + Send + 'static) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            while let Ok(n) = reader.read_line(&mut String::new()) {
                if n <= 2 {
                    break;
                }
            }
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = conn.write_all(answer(line.split(' ').nth(1).unwrap_or_default()).as_bytes());
        }
    });
    (addr, count)
}

fn redirect_to(location: &str) -> String {
    format!("HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
}

fn ok() -> String {
    "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".into()
}

fn status(reach: Reach, url: &str) -> Result<u16, Failure> {
    Client::new(Duration::from_secs(5), 3, reach).get(url, &[("accept", "text/plain")]).map(|r| r.status().as_u16())
}

#[test]
fn loopback_is_refused_by_address_and_by_name_unless_allowed() {
    let (addr, count) = server(|_| ok());
    let refused = Err(Failure::Refused(Refusal::NotPublic));
    let port = addr.port();
    for url in [format!("http://{addr}/"), format!("http://localhost:{port}/"), format!("http://[::1]:{port}/")] {
        assert_eq!(status(Reach::Public, &url), refused, "{url}");
    }
    assert_eq!(count.load(Ordering::SeqCst), 0, "nothing was sent");
    assert_eq!(status(Reach::Any, &format!("http://{addr}/")), Ok(200));
}

#[test]
fn a_redirect_is_followed_within_the_origin_only() {
    let (addr, count) = server(|path| if path == "/old" { redirect_to("/new") } else { ok() });
    assert_eq!(status(Reach::Any, &format!("http://{addr}/old")), Ok(200));
    assert_eq!(count.load(Ordering::SeqCst), 2);
    let (looping, _) = server(|_| redirect_to("/again"));
    assert_eq!(status(Reach::Any, &format!("http://{looping}/")), Err(Failure::Failed("too many redirects".into())));

    let (target, reached) = server(|_| ok());
    let port = target.port();
    let refused = Err(Failure::Refused(Refusal::Redirect));
    let (other_port, _) = server(move |_| redirect_to(&format!("http://127.0.0.1:{port}/")));
    assert_eq!(status(Reach::Any, &format!("http://{other_port}/")), refused, "another port");
    let (other_name, _) = server(move |_| redirect_to(&format!("http://localhost:{port}/")));
    let other_name = format!("http://127.0.0.1:{}/", other_name.port());
    assert_eq!(status(Reach::Any, &other_name), refused, "another host name for the same address");
    assert_eq!(reached.load(Ordering::SeqCst), 0);
}
