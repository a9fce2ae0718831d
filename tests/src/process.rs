//! Child processes owned by a guard, free ports and polling with a deadline.

use std::fs::File;
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Ports [`free_port`] already handed out in this process: the kernel may give a just-released
/// port again at once, and two listeners of one server (or two servers) on the same port with
/// SO_REUSEPORT would silently share it.
static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());

/// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it, release it), never
/// one this process got before.
pub fn free_port() -> u16 {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..100 {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = l.local_addr().expect("local_addr").port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
    panic!("no fresh free port after 100 tries");
}

/// A port free for both UDP and TCP on 127.0.0.1 (for DNS servers).
pub fn free_udp_tcp_port() -> u16 {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..50 {
        let u = UdpSocket::bind("127.0.0.1:0").expect("bind udp 127.0.0.1:0");
        let port = u.local_addr().expect("local_addr").port();
        if !handed_out.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed_out.push(port);
            return port;
        }
    }
    panic!("no port free for both UDP and TCP after 50 tries");
}

/// Polls `f` every 25 ms until it returns `Some`, or panics naming `what` after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A running child process. Its stdout and stderr go to files; on `Drop` it is killed, and when
/// the current thread is panicking (a failed test) both files are printed.
#[derive(Debug)]
pub struct ChildProcess {
    name: String,
    child: Option<Child>,
    status: Option<ExitStatus>,
    stdout: PathBuf,
    stderr: PathBuf,
    extra_logs: Vec<PathBuf>,
    graceful: bool,
}

impl ChildProcess {
    /// Spawns `cmd` with stdin closed and stdout/stderr captured to `<dir>/<name>.stdout|stderr`
    /// (appending, so a restarted process keeps the earlier output).
    pub fn spawn(name: &str, mut cmd: Command, dir: &Path) -> ChildProcess {
        let stdout = dir.join(format!("{name}.stdout"));
        let stderr = dir.join(format!("{name}.stderr"));
        let open = |p: &Path| {
            File::options().create(true).append(true).open(p).unwrap_or_else(|e| panic!("open {}: {e}", p.display()))
        };
        cmd.stdin(Stdio::null()).stdout(open(&stdout)).stderr(open(&stderr));
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {name} ({cmd:?}): {e}"));
        ChildProcess {
            name: name.to_string(),
            child: Some(child),
            status: None,
            stdout,
            stderr,
            extra_logs: Vec::new(),
            graceful: false,
        }
    }

    /// Stop with SIGTERM first (SIGKILL after 5 s) instead of SIGKILL: for processes such as NSD
    /// whose forked workers outlive a killed parent for a moment.
    pub fn stop_gracefully(&mut self) {
        self.graceful = true;
    }

    /// Another file to print on failure (e.g. a log file the process writes itself).
    pub fn add_log(&mut self, path: PathBuf) {
        self.extra_logs.push(path);
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    pub fn stdout_path(&self) -> &Path {
        &self.stdout
    }

    pub fn stderr_path(&self) -> &Path {
        &self.stderr
    }

    /// Everything the process wrote to stdout so far.
    pub fn stdout_text(&self) -> String {
        read_lossy(&self.stdout)
    }

    /// Everything the process wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        read_lossy(&self.stderr)
    }

    /// `Some(status)` once the process has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if let (None, Some(c)) = (self.status, self.child.as_mut()) {
            self.status = c.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends SIGTERM (through the `kill` command: no libc dependency).
    pub fn terminate(&mut self) {
        if self.try_wait().is_none() {
            self.signal("TERM");
        }
    }

    /// Sends the signal `name` (`QUIT`, `KILL`...) through the `kill` command; panics when the
    /// process has already exited (a test that signals it expects it to be running).
    pub fn signal(&mut self, name: &str) {
        assert!(self.try_wait().is_none(), "{} exited before SIG{name}: {:?}", self.name, self.status);
        let ok = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "kill -{name} {} ({}) failed", self.pid(), self.name);
    }

    /// SIGKILL (or SIGTERM first, see [`ChildProcess::stop_gracefully`]) and reap; a no-op when
    /// already exited.
    pub fn kill(&mut self) {
        if self.try_wait().is_some() {
            return;
        }
        if self.graceful {
            self.terminate();
            if self.wait_timeout(Duration::from_secs(5)).is_some() {
                return;
            }
        }
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            self.status = c.wait().ok();
        }
    }

    /// The captured output, for a failure message.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        let files = [&self.stdout, &self.stderr].into_iter().chain(self.extra_logs.iter());
        for p in files {
            let text = read_lossy(p);
            let tail = tail(&text, 16 * 1024);
            out.push_str(&format!("----- {} ({}) -----\n{}\n", self.name, p.display(), tail));
        }
        out
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("{}", self.dump());
        }
    }
}

fn read_lossy(p: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut f) = File::open(p) {
        let _ = f.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}
