//! The built `email-verdict` binary: `serve` as a guarded child process, and the operator CLI.

use crate::http::{Request, Response};
use crate::process::{ChildProcess, free_port, wait_for};
use crate::tempdir::TestDir;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long `serve` may take to answer `/healthz`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a CLI command may take.
const CLI_TIMEOUT: Duration = Duration::from_secs(30);

/// The binary under test: `$EMAIL_VERDICT_BIN`, else `<workspace>/target/release/email-verdict`.
/// Panics with a "build first" message when it does not exist.
pub fn binary() -> PathBuf {
    let path = std::env::var_os("EMAIL_VERDICT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target/release/email-verdict"));
    if !path.is_file() {
        panic!(
            "email-verdict binary not found at {}: build first: cargo build --release \
             (or point EMAIL_VERDICT_BIN at a built binary)",
            path.display()
        );
    }
    path
}

/// A command on the binary with a clean environment: no `EMAIL_VERDICT_*` (nor `OTEL_*`: a
/// tracing setting of the machine's would change what a test sees) from the caller.
fn command(cwd: &Path) -> Command {
    command_on(&binary(), cwd)
}

/// [`command`] on another build of the binary (benchmarks compare two).
fn command_on(bin: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(bin);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("EMAIL_VERDICT_") || k.to_string_lossy().starts_with("OTEL_") {
            cmd.env_remove(k);
        }
    }
    cmd.current_dir(cwd);
    cmd
}

/// What a CLI command did.
#[derive(Debug, Clone)]
pub struct CliOutput {
    /// `None` when killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl CliOutput {
    /// The last non-empty line of stdout, trimmed.
    pub fn last_line(&self) -> &str {
        self.stdout.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
    }

    /// Panics (with both outputs) unless the exit code is `code`.
    pub fn expect_code(&self, code: i32, what: &str) -> &Self {
        assert_eq!(self.code, Some(code), "{what}: unexpected exit code\n{self}");
        self
    }
}

impl std::fmt::Display for CliOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit code: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}", self.code, self.stdout, self.stderr)
    }
}

/// One line of `keys list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub id: String,
    pub name: String,
    pub plan: String,
    pub status: String,
    pub used_today: String,
}

/// The operator CLI on one state URL.
#[derive(Debug, Clone)]
pub struct Cli {
    state: String,
    cwd: PathBuf,
    config: Option<PathBuf>,
}

impl Cli {
    pub fn new(state: &str, cwd: &Path) -> Cli {
        Cli { state: state.to_string(), cwd: cwd.to_path_buf(), config: None }
    }

    /// Every command also gets `--config FILE` (e.g. for the plans the file defines).
    pub fn with_config(mut self, file: &Path) -> Cli {
        self.config = Some(file.to_path_buf());
        self
    }

    pub fn state(&self) -> &str {
        &self.state
    }

    /// Runs `email-verdict ARGS... --state URL` and collects its exit code and output.
    pub fn run(&self, args: &[&str]) -> CliOutput {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--state", &self.state]);
        let config = self.config.as_ref().map(|c| c.display().to_string());
        if let Some(config) = &config {
            all.extend(["--config", config]);
        }
        run_raw(&self.cwd, &all)
    }

    /// `keys create --plan PLAN --name NAME`; returns the key (the last stdout line).
    pub fn create_key(&self, plan: &str, name: &str) -> String {
        let out = self.run(&["keys", "create", "--plan", plan, "--name", name]);
        out.expect_code(0, "keys create");
        let key = out.last_line().to_string();
        assert!(is_key(&key), "keys create: last stdout line is not a key (ev_ + 40 lowercase hex)\n{out}");
        key
    }

    /// `keys list`, parsed (header line skipped).
    pub fn list(&self) -> Vec<KeyRow> {
        let out = self.run(&["keys", "list"]);
        out.expect_code(0, "keys list");
        parse_key_list(&out.stdout).unwrap_or_else(|e| panic!("keys list: {e}\n{out}"))
    }

    /// The row of `keys list` named `name` (panics unless exactly one).
    pub fn row_named(&self, name: &str) -> KeyRow {
        let rows: Vec<KeyRow> = self.list().into_iter().filter(|r| r.name == name).collect();
        assert_eq!(rows.len(), 1, "keys list: expected one key named {name:?}: {rows:?}");
        rows.into_iter().next().expect("one row")
    }
}

/// Runs the binary with exactly `args` (no `--state` added).
pub fn run_raw(cwd: &Path, args: &[&str]) -> CliOutput {
    run_with_stdin(cwd, args, None)
}

/// [`run_raw`] with `input` as the command's standard input (`None`: no input at all).
pub fn run_with_stdin(cwd: &Path, args: &[&str], input: Option<&[u8]>) -> CliOutput {
    let mut cmd = command(cwd);
    let stdin = if input.is_some() { Stdio::piped() } else { Stdio::null() };
    cmd.args(args).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if let (Some(input), Some(mut pipe)) = (input, child.stdin.take()) {
        use std::io::Write;
        // A command that exits before reading all of it is not this function's failure.
        let _ = pipe.write_all(input);
    }
    let pid = child.id();
    // A watchdog instead of a wait with timeout (std has none): kill after CLI_TIMEOUT.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(CLI_TIMEOUT).is_err() {
            let _ = Command::new("kill").arg("-KILL").arg(pid.to_string()).status();
        }
    });
    let out = child.wait_with_output().expect("wait for CLI");
    let _ = tx.send(());
    let _ = watchdog.join();
    CliOutput {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `ev_` followed by 40 lowercase hex characters.
pub fn is_key(s: &str) -> bool {
    s.strip_prefix("ev_").is_some_and(|h| h.len() == 40 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// `key_` followed by 12 hex characters.
pub fn is_key_id(s: &str) -> bool {
    s.strip_prefix("key_").is_some_and(|h| h.len() == 12 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn parse_key_list(stdout: &str) -> Result<Vec<KeyRow>, String> {
    let mut lines = stdout.lines().filter(|l| !l.trim().is_empty());
    lines.next().ok_or("no header line")?;
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() != 5 {
                return Err(format!("expected 5 tab-separated fields, got {}: {l:?}", f.len()));
            }
            Ok(KeyRow {
                id: f[0].to_string(),
                name: f[1].to_string(),
                plan: f[2].to_string(),
                status: f[3].to_string(),
                used_today: f[4].to_string(),
            })
        })
        .collect()
}

/// How to start `email-verdict serve`.
#[derive(Debug, Clone)]
pub struct SidecarBuilder {
    dns: Vec<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    via_env: bool,
    via_config: bool,
    settings: Option<String>,
    key_plans: Vec<String>,
    state: Option<String>,
    bin: Option<PathBuf>,
    listen_ip: Option<std::net::IpAddr>,
}

impl Default for SidecarBuilder {
    fn default() -> Self {
        SidecarBuilder {
            dns: Vec::new(),
            args: Vec::new(),
            env: Vec::new(),
            via_env: false,
            via_config: false,
            settings: None,
            key_plans: vec!["pro".to_string()],
            state: None,
            bin: None,
            listen_ip: None,
        }
    }
}

impl SidecarBuilder {
    /// A nameserver (`--dns 127.0.0.1:PORT`); may be repeated.
    pub fn dns(mut self, addr: SocketAddr) -> Self {
        self.dns.push(addr.to_string());
        self
    }

    /// Extra arguments after the standard ones.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|s| s.to_string()));
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_string(), v.to_string()));
        self
    }

    /// Pass listen, admin-listen, state and dns as `EMAIL_VERDICT_*` variables, not flags.
    pub fn via_env(mut self) -> Self {
        self.via_env = true;
        self
    }

    /// Pass listen, admin-listen, state and dns in a `--config` TOML file, not flags.
    pub fn via_config(mut self) -> Self {
        self.via_config = true;
        self
    }

    /// Settings file text (TOML, e.g. `[plans.gateway]`), given as `--config` to `serve` and to
    /// the key creation before it.
    pub fn settings(mut self, toml: &str) -> Self {
        self.settings = Some(toml.to_string());
        self
    }

    /// A `--state` URL instead of a fresh `sqlite:<dir>/state.db` (shared Redis, a state kept
    /// across restarts...).
    pub fn state(mut self, url: &str) -> Self {
        self.state = Some(url.to_string());
        self
    }

    /// Serve with this build of the binary instead of [`binary`] (e.g. a before/after
    /// comparison). Keys are then best made through the admin API: [`Cli`] runs [`binary`].
    pub fn binary(mut self, bin: &Path) -> Self {
        self.bin = Some(bin.to_path_buf());
        self
    }

    /// The public listener's address (default 127.0.0.1), e.g. `::` for a dual-stack listener;
    /// [`Sidecar::addr`] then still gives a loopback address to connect to.
    pub fn listen_ip(mut self, ip: std::net::IpAddr) -> Self {
        self.listen_ip = Some(ip);
        self
    }

    /// Keys to create (with `keys create`) before `serve` starts; default one `pro` key.
    pub fn keys(mut self, plans: &[&str]) -> Self {
        self.key_plans = plans.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Starts `serve` and waits until `GET /healthz` on the admin listener answers 200 `ok`.
    pub fn start(self) -> Sidecar {
        let dir = TestDir::new("sidecar");
        let state = self.state.clone().unwrap_or_else(|| format!("sqlite:{}", dir.join("state.db").display()));
        let mut cli = Cli::new(&state, dir.path());
        if let Some(text) = &self.settings {
            let file = dir.join("plans.toml");
            std::fs::write(&file, text).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
            cli = cli.with_config(&file);
        }
        let keys: Vec<String> =
            self.key_plans.iter().enumerate().map(|(i, plan)| cli.create_key(plan, &format!("test-{i}"))).collect();
        let listen = SocketAddr::new(self.listen_ip.unwrap_or([127, 0, 0, 1].into()), free_port());
        let admin = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let cmd = self.serve_command(dir.path(), &state, listen, admin);
        let mut process = ChildProcess::spawn("email-verdict", cmd, dir.path());
        let started = Instant::now();
        wait_ready(&mut process, admin);
        Sidecar { process, listen, admin, cli, keys, startup: started.elapsed(), builder: self, dir }
    }

    /// `email-verdict serve` with these settings on these addresses.
    fn serve_command(&self, dir: &Path, state: &str, listen: SocketAddr, admin: SocketAddr) -> Command {
        let mut cmd = match &self.bin {
            Some(bin) => command_on(bin, dir),
            None => command(dir),
        };
        // The infrastructure warm-up would query every strong-listed name through the test
        // NSD: off unless a test turns it on with --warmup-rate (a flag beats the variable).
        cmd.arg("serve").env("RUST_BACKTRACE", "1").env("EMAIL_VERDICT_WARMUP_RATE", "0");
        // One lookup's DNS deadline (700 ms by default) well past what a loaded test machine's NSD
        // can take: tests of quotas and verdicts must not see DNS give up; the deadline's own
        // tests set theirs.
        cmd.env("EMAIL_VERDICT_LOOKUP_DEADLINE_MS", "5000");
        // The gateway's secret (the shipped --ext-authz-config counts signups, which needs it).
        cmd.env("EMAIL_VERDICT_MAILBOX_SECRET", crate::TEST_MAILBOX_SECRET);
        if self.via_config {
            let dns: Vec<String> = self.dns.iter().map(|d| format!("{d:?}")).collect();
            let toml = format!(
                "listen = \"{listen}\"\nadmin-listen = \"{admin}\"\nstate = {state:?}\ndns = [{}]\n{}",
                dns.join(", "),
                self.settings.as_deref().unwrap_or_default()
            );
            let file = dir.join("settings.toml");
            std::fs::write(&file, toml).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
            cmd.arg("--config").arg(file);
        } else if self.via_env {
            cmd.env("EMAIL_VERDICT_LISTEN", listen.to_string())
                .env("EMAIL_VERDICT_ADMIN_LISTEN", admin.to_string())
                .env("EMAIL_VERDICT_STATE", state);
            if !self.dns.is_empty() {
                cmd.env("EMAIL_VERDICT_DNS", self.dns.join(","));
            }
        } else {
            cmd.args(["--listen", &listen.to_string()])
                .args(["--admin-listen", &admin.to_string()])
                .args(["--state", state]);
            for d in &self.dns {
                cmd.args(["--dns", d]);
            }
        }
        if self.settings.is_some() && !self.via_config {
            cmd.arg("--config").arg(dir.join("plans.toml"));
        }
        cmd.args(&self.args);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }
}

/// Waits until `GET /healthz` on `admin` answers 200 `ok`; panics if the process exits first.
fn wait_ready(process: &mut ChildProcess, admin: SocketAddr) {
    wait_for(&format!("email-verdict to answer GET /healthz on {admin}"), READY_TIMEOUT, || {
        if let Some(status) = process.try_wait() {
            panic!("email-verdict serve exited during startup ({status})");
        }
        let r = Request::get("/healthz").timeout(Duration::from_millis(500)).try_send(admin).ok()?;
        (r.status == 200 && r.text().trim() == "ok").then_some(())
    });
}

/// A running `email-verdict serve`, killed on `Drop` (its logs printed if the test failed).
pub struct Sidecar {
    // `process` before `dir`: the process dies before its files are removed.
    process: ChildProcess,
    listen: SocketAddr,
    admin: SocketAddr,
    cli: Cli,
    keys: Vec<String>,
    startup: Duration,
    /// How it was started, for [`Sidecar::restart`] and [`Sidecar::spawn_upgrade`].
    builder: SidecarBuilder,
    dir: TestDir,
}

impl Sidecar {
    pub fn builder() -> SidecarBuilder {
        SidecarBuilder::default()
    }

    /// The public listener (`/api/v1/...`); a wildcard listener is reached through 127.0.0.1.
    pub fn addr(&self) -> SocketAddr {
        match self.listen.ip().is_unspecified() {
            true => SocketAddr::from(([127, 0, 0, 1], self.listen.port())),
            false => self.listen,
        }
    }

    /// The admin listener (`/healthz`).
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin
    }

    /// The CLI on the same `--state`.
    pub fn cli(&self) -> &Cli {
        &self.cli
    }

    /// The first key created before start.
    pub fn key(&self) -> &str {
        self.keys.first().expect("the sidecar was started without keys")
    }

    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The state database file (`<dir>/state.db`).
    pub fn state_db(&self) -> PathBuf {
        self.dir.join("state.db")
    }

    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    pub fn process(&mut self) -> &mut ChildProcess {
        &mut self.process
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Everything the sidecar wrote to stderr so far, the lines it still had queued included.
    /// Request lines reach stderr through a writer thread, a moment after the answer; an admin
    /// request's own line comes after every line queued before it, so once it is in the file,
    /// so are they ([`Sidecar::log_barrier`]).
    pub fn stderr_text(&self) -> String {
        self.log_barrier();
        self.process.stderr_text()
    }

    /// Sends an admin request (an unknown path: 404, or 401 where a token is set; no state
    /// touched) and waits until its line is in the file. A sidecar that does not answer
    /// (stopped, not started) has nothing queued that it will still write, or writes it at its
    /// exit: no wait then.
    pub fn log_barrier(&self) {
        let Ok(resp) = Request::get("/admin/v1/log-barrier").try_send(self.admin_addr()) else {
            return;
        };
        let id = resp.header("x-request-id").map(str::to_owned);
        let id = id.unwrap_or_else(|| panic!("the admin listener answered without x-request-id:\n{resp}"));
        wait_for("the sidecar's log line of a barrier request", Duration::from_secs(10), || {
            self.process.stderr_text().contains(&id).then_some(())
        });
    }

    pub fn stdout_text(&self) -> String {
        self.process.stdout_text()
    }

    /// Sends `req` to the public listener as is.
    pub fn send(&self, req: &Request) -> Response {
        req.send(self.addr())
    }

    /// `GET target` on the public listener, no key added.
    pub fn get(&self, target: &str) -> Response {
        self.send(&Request::get(target))
    }

    /// `GET /api/v1/domain/{segment}?key={first key}`. `segment` is sent byte for byte.
    /// A 429 (this key's burst limit; not what these tests are about) is retried after a second.
    pub fn lookup(&self, segment: &str) -> Response {
        self.lookup_with_key(segment, self.key())
    }

    pub fn lookup_with_key(&self, segment: &str, key: &str) -> Response {
        let req = Request::get(&format!("/api/v1/domain/{segment}?key={key}"));
        self.send_retrying_429(&req)
    }

    /// Sends `req`, retrying up to 5 times, a second apart, while the answer is 429.
    pub fn send_retrying_429(&self, req: &Request) -> Response {
        let mut resp = self.send(req);
        for _ in 0..5 {
            if resp.status != 429 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1100));
            resp = self.send(req);
        }
        resp
    }

    /// A successful lookup: asserts 200 and the checks of [`crate::verdict::check_ok`], returns
    /// the JSON body.
    pub fn lookup_ok(&self, segment: &str) -> serde_json::Value {
        let resp = self.lookup(segment);
        crate::verdict::check_ok(&resp, &format!("GET /api/v1/domain/{segment}"))
    }

    /// SIGKILL (`kill -9`) and reap: no chance to finish anything.
    pub fn kill(&mut self) {
        self.process.signal("KILL");
        assert!(self.process.wait_timeout(Duration::from_secs(10)).is_some(), "still running 10 s after SIGKILL");
    }

    /// `serve` again with the same settings, ports and state (no keys created), after
    /// [`Sidecar::kill`] or an exit; waits for `/healthz`. Output is appended to the same files.
    pub fn restart(&mut self) {
        self.process.kill();
        let cmd = self.builder.serve_command(self.dir.path(), self.cli.state(), self.listen, self.admin);
        self.process = ChildProcess::spawn("email-verdict", cmd, self.dir.path());
        wait_ready(&mut self.process, self.admin);
    }

    /// A second `serve` with the same settings plus `--upgrade`, not waited for: it takes the
    /// listeners over once this one gets SIGQUIT. Output in `<dir>/email-verdict-upgrade.*`.
    pub fn spawn_upgrade(&self) -> ChildProcess {
        let mut cmd = self.builder.serve_command(self.dir.path(), self.cli.state(), self.listen, self.admin);
        cmd.arg("--upgrade");
        ChildProcess::spawn("email-verdict-upgrade", cmd, self.dir.path())
    }

    /// Makes `process` this sidecar's process (the one that took over); returns the previous one.
    pub fn replace_process(&mut self, process: ChildProcess) -> ChildProcess {
        std::mem::replace(&mut self.process, process)
    }

    /// SIGTERM, then wait up to `timeout` for the exit.
    pub fn terminate(&mut self, timeout: Duration) -> Option<ExitStatus> {
        self.process.terminate();
        self.process.wait_timeout(timeout)
    }
}

/// `email-verdict check ARGS` with `stdin` on its standard input, NSD (`dns`) as its resolver, in
/// a directory of its own: (exit code, standard output, standard error).
pub fn run_check(dns: SocketAddr, args: &[&str], stdin: &str) -> (Option<i32>, String, String) {
    use std::io::Write;
    let dir = TestDir::new("check");
    let mut child = Command::new(binary())
        .arg("check")
        .args(["--dns", &dns.to_string()])
        .args(args)
        .current_dir(dir.path())
        .env_remove("EMAIL_VERDICT_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run email-verdict check");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}
