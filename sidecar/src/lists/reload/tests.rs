//! `Lists` against real files and a scripted HTTP server on loopback.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Mutex;

use email_verdict_core::Domain;

use super::*;
use crate::lists::ListRole;
use crate::outbound::Reach;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ev-reload-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start(specs: &[(ListRole, String)], kept: Option<PathBuf>) -> Lists {
    let specs = specs.iter().map(|(role, v)| ListSpec::parse(*role, v).unwrap()).collect();
    let settings =
        ListSettings { specs, refresh: Duration::from_secs(3600), max_shrink: 0.5, kept_dir: kept, reach: Reach::Any };
    Lists::start(settings, Arc::new(Metrics::new()), true).unwrap()
}

fn blocked(lists: &Lists, name: &str) -> bool {
    lists.live().current().block.contains(&Domain::parse(name).unwrap())
}

fn error_of(lists: &Lists, index: usize) -> Option<String> {
    lists.live().lists()[index].last_error.as_ref().map(|(m, _)| m.clone())
}

#[tokio::test]
async fn a_file_is_read_again_once_its_change_has_held_for_one_poll() {
    let dir = dir("file");
    let file = dir.join("block.txt");
    std::fs::write(&file, "a.example\nb.example\n").unwrap();
    let mut lists = start(&[(ListRole::Block, file.display().to_string())], None);
    let mut version = lists.live().subscribe();
    assert!(blocked(&lists, "a.example") && !blocked(&lists, "c.example"));
    assert_eq!(lists.reload(false).await, 0, "unchanged: nothing read");
    std::fs::write(&file, "a.example\nb.example\nc.example\n").unwrap();
    assert_eq!(lists.reload(false).await, 0, "a change is seen, not read yet");
    assert_eq!(lists.reload(false).await, 1, "the same change one poll later: read");
    assert!(blocked(&lists, "c.example"));
    assert!(version.has_changed().unwrap());
    version.borrow_and_update();
    assert_eq!(lists.live().lists()[0].entries, 3);

    // Broken copies keep the last good one, with the error shown, until a good one comes.
    let broken: [(&str, &str); 3] = [
        ("<html><body>502 Bad Gateway</body></html>", "HTML"),
        ("a.example\n", "shrank from 3 to 1"),
        ("# emptied\n", "no valid name"),
    ];
    for (text, error) in broken {
        std::fs::write(&file, text).unwrap();
        assert_eq!(lists.reload(true).await, 0, "{text}");
        assert!(blocked(&lists, "c.example"), "{text}: the last good copy stays");
        assert!(error_of(&lists, 0).is_some_and(|e| e.contains(error)), "{text}: {:?}", error_of(&lists, 0));
    }
    assert!(!version.has_changed().unwrap(), "no swap for a refused copy");
    std::fs::remove_file(&file).unwrap();
    lists.reload(true).await;
    assert!(error_of(&lists, 0).is_some_and(|e| e.contains("cannot read")), "{:?}", error_of(&lists, 0));
    std::fs::write(&file, "a.example\nc.example\nd.example\n").unwrap();
    assert_eq!(lists.reload(true).await, 1, "SIGHUP reads at once");
    assert!(blocked(&lists, "d.example") && !blocked(&lists, "b.example"));
    assert_eq!(error_of(&lists, 0), None, "a success clears the error");
    std::fs::remove_dir_all(&dir).ok();
}

/// An answer: status, extra header lines, body.
type Answer = (u16, String, Vec<u8>);

/// A scripted HTTP server: answers each request with the next `(status, headers, body)`, the
/// last one for ever; records the request heads.
struct Server {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
    script: Arc<Mutex<Vec<Answer>>>,
}

impl Server {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://ana:s3cret@{}/list.txt?token=t0k3n", listener.local_addr().unwrap());
        let (heads, script) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(Vec::<Answer>::new())));
        let (h, sc) = (heads.clone(), script.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut head = String::new();
                while reader.read_line(&mut head).is_ok_and(|n| n > 2) {}
                h.lock().unwrap().push(head);
                let (status, headers, body) = {
                    let mut script = sc.lock().unwrap();
                    if script.len() > 1 { script.remove(0) } else { script[0].clone() }
                };
                let mut conn = conn;
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes()).and_then(|_| conn.write_all(&body));
            }
        });
        Self { url, heads, script }
    }

    fn then(&self, status: u16, headers: &str, body: &str) {
        self.script.lock().unwrap().push((status, headers.to_owned(), body.as_bytes().to_vec()));
    }

    fn last_head(&self) -> String {
        self.heads.lock().unwrap().last().cloned().unwrap_or_default()
    }
}

#[tokio::test]
async fn a_url_is_fetched_conditionally_checked_and_kept() {
    let (dir, server) = (dir("url"), Server::start());
    server.then(200, "etag: \"v1\"\r\ncontent-type: text/plain\r\n", "a.example\nb.example\n");
    server.then(304, "", "");
    server.then(200, "content-type: text/html\r\n", "a.example\n");
    server.then(500, "", "oops");
    server.then(200, "etag: \"v2\"\r\n", "a.example\nb.example\nc.example\n");
    let kept = dir.join("kept");
    let mut lists = start(&[(ListRole::Block, server.url.clone())], Some(kept.clone()));
    let head = server.last_head();
    assert!(head.contains("authorization: Basic YW5hOnMzY3JldA=="), "{head}");
    assert!(head.starts_with("GET /list.txt?token=t0k3n HTTP/1.1"), "{head}");
    assert!(blocked(&lists, "b.example"));
    let status = &lists.live().lists()[0];
    assert_eq!((status.entries, status.location, status.source.as_str()), (2, "url", &*redacted(&server.url)));

    assert_eq!(lists.reload(true).await, 0, "304");
    assert!(server.last_head().contains("if-none-match: \"v1\""), "{}", server.last_head());
    assert_eq!(error_of(&lists, 0), None);
    for error in ["HTML", "HTTP status 500"] {
        lists.reload(true).await;
        assert!(error_of(&lists, 0).is_some_and(|e| e.contains(error)), "{:?}", error_of(&lists, 0));
        assert!(blocked(&lists, "b.example"));
    }
    assert_eq!(lists.reload(true).await, 1);
    assert!(blocked(&lists, "c.example"));

    // A restart without the server starts from the kept copy (and asks for what follows it).
    drop(lists);
    let specs = [(ListRole::Block, server.url.clone())];
    let settings = ListSettings {
        specs: specs.iter().map(|(r, v)| ListSpec::parse(*r, v).unwrap()).collect(),
        kept_dir: Some(kept),
        reach: Reach::Any,
        ..ListSettings::default()
    };
    let mut lists = Lists::start(settings, Arc::new(Metrics::new()), false).unwrap();
    assert!(blocked(&lists, "c.example"));
    assert!(lists.live().lists()[0].from_kept_copy);
    assert_eq!(lists.states[0].validators.as_ref().and_then(|v| v.etag.as_deref()), Some("\"v2\""));
    server.script.lock().unwrap().clear();
    server.then(304, "", "");
    assert_eq!(lists.reload(false).await, 0, "due at once: a 304");
    assert_eq!(lists.live().lists()[0].entries, 3);
    assert!(server.last_head().contains("if-none-match: \"v2\""), "{}", server.last_head());
    assert!(!lists.live().lists()[0].from_kept_copy, "confirmed by the server");
    std::fs::remove_dir_all(&dir).ok();
}

fn redacted(url: &str) -> String {
    crate::lists::source::redact(url)
}
