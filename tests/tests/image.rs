//! The shipped artifacts, built by their scripts and run: the sidecar's OCI image
//! (`scripts/image.sh`) started from its own configuration in a container runtime, and the
//! filter's OCI Wasm image (`scripts/filter-image.sh`) opened the way Istio and Envoy Gateway open
//! it and loaded by a real Envoy; the dynamic module's image (`scripts/module-image.sh`) opened as
//! an image volume would be, its module loaded by a real Envoy.
//!
//! Runtime: `runc` (Debian's), on the bundle `umoci unpack` makes from the image (its runtime
//! spec carries the image's user, entry point, environment and working directory), when the
//! tests run as root. Without root, runc cannot give the process the image's uid 65532, so the
//! unpacked root file system is run with bubblewrap instead (`bwrap --unshare-user --uid 65532`,
//! same entry point, environment and directory). `EMAIL_VERDICT_IMAGE_RUNTIME=runc|bwrap`
//! forces one. Either way the container shares the host's network (NSD and the test client are
//! on loopback) and its root file system is read-only, as `envoy/istio/sidecar.yaml` asks
//! (`readOnlyRootFilesystem`); the state directory is a bind mount, as a volume would be.

use email_verdict_tests::envoy::{self, FilterBuild, filter_module, filter_wasm, gateway, gateway_on};
use email_verdict_tests::sidecar::{self, is_key};
use email_verdict_tests::verdict::check_ok;
use email_verdict_tests::{ChildProcess, Nsd, Request, TestDir, free_port, wait_for, workspace_root};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

const SIDECAR_ARCHIVE: &str = "email-verdict-oci.tar";
const FILTER_ARCHIVE: &str = "email-verdict-filter-oci.tar";
const MODULE_ARCHIVE: &str = "email-verdict-module-oci.tar";
/// The image's state directory (a volume in the image config).
const STATE_DIR: &str = "/var/lib/email-verdict";
const NONROOT: u32 = 65532;

// ---- building ----------------------------------------------------------------------------------

/// What one run of an image script left in its output directory.
struct Built {
    archive: PathBuf,
    /// `sha256:...` of the manifest, as the script printed it.
    digest: String,
    stdout: String,
}

/// Runs `scripts/<script>` with its output in `out`, on the binary and module the other tests use.
fn build(script: &str, archive: &str, out: &Path, bin: &Path) -> Built {
    let mut cmd = Command::new("bash");
    cmd.arg(workspace_root().join("scripts").join(script))
        .env("IMAGE_OUT_DIR", out)
        .env("EMAIL_VERDICT_BIN", bin)
        .env_remove("SOURCE_DATE_EPOCH");
    if script == "filter-image.sh" {
        cmd.env("EMAIL_VERDICT_FILTER_WASM", filter_wasm());
    }
    if script == "module-image.sh" {
        cmd.env("EMAIL_VERDICT_FILTER_MODULE", filter_module());
    }
    let o = envoy::run(cmd);
    assert!(o.success(), "{script} failed (install its tools with scripts/install-deps.sh)\n{o}");
    let archive = out.join(archive);
    assert!(archive.is_file(), "{script} wrote no {}\n{o}", archive.display());
    let digest = o
        .stdout
        .split_whitespace()
        .find(|w| w.starts_with("sha256:"))
        .unwrap_or_else(|| panic!("{script} printed no sha256: digest\n{o}"))
        .to_string();
    Built { archive, digest, stdout: o.stdout }
}

fn build_sidecar(out: &Path) -> Built {
    build("image.sh", SIDECAR_ARCHIVE, out, &sidecar::binary())
}

fn build_filter(out: &Path) -> Built {
    build("filter-image.sh", FILTER_ARCHIVE, out, &sidecar::binary())
}

fn build_module(out: &Path) -> Built {
    build("module-image.sh", MODULE_ARCHIVE, out, &sidecar::binary())
}

/// Runs a tool to completion and returns its stdout; panics with its output unless it succeeds.
fn tool(program: &str, args: &[&str]) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let o = envoy::run(cmd);
    assert!(o.success(), "{program} {args:?} failed\n{o}");
    o.stdout
}

fn sha256_hex(file: &Path) -> String {
    let out = tool("sha256sum", &[&file.display().to_string()]);
    out.split_whitespace().next().expect("sha256sum output").to_string()
}

/// Copies the oci-archive into an OCI layout under `dir` with skopeo (which checks every blob
/// against its digest on the way) and returns (layout, its one manifest, the manifest's digest).
fn open_archive(archive: &Path, dir: &Path) -> (PathBuf, Value, String) {
    let layout = dir.join("layout");
    to_layout(archive, &layout, "test");
    let index: Value = read_json(&layout.join("index.json"));
    let digest = index["manifests"][0]["digest"].as_str().expect("a manifest in index.json").to_string();
    let manifest_file = blob(&layout, &digest);
    assert_eq!(format!("sha256:{}", sha256_hex(&manifest_file)), digest, "the manifest blob vs its name");
    (layout, read_json(&manifest_file), digest)
}

/// `skopeo copy oci-archive:ARCHIVE oci:LAYOUT:TAG`.
fn to_layout(archive: &Path, layout: &Path, tag: &str) {
    let (from, to) = (format!("oci-archive:{}", archive.display()), format!("oci:{}:{tag}", layout.display()));
    tool("skopeo", &["copy", "--quiet", &from, &to]);
}

fn blob(layout: &Path, digest: &str) -> PathBuf {
    layout.join("blobs/sha256").join(digest.strip_prefix("sha256:").expect("a sha256 digest"))
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()))
}

// ---- the sidecar image -------------------------------------------------------------------------

#[test]
fn two_builds_of_each_image_are_byte_identical() {
    let dir = TestDir::new("image-repro");
    // The second build packages a copy with another mtime: file times must not reach the image.
    let copy = dir.join("email-verdict");
    std::fs::copy(sidecar::binary(), &copy).expect("copy the binary");
    let f = std::fs::File::options().write(true).open(&copy).expect("open the copy");
    f.set_modified(SystemTime::now() + Duration::from_secs(3600)).expect("set the copy's mtime");
    drop(f);

    let a = build_sidecar(&dir.join("a"));
    let b = build("image.sh", SIDECAR_ARCHIVE, &dir.join("b"), &copy);
    assert_eq!(
        a.digest, b.digest,
        "two builds of the same binary: different image digests\n{}\n{}",
        a.stdout, b.stdout
    );
    let (bytes_a, bytes_b) = (std::fs::read(&a.archive).unwrap(), std::fs::read(&b.archive).unwrap());
    assert!(bytes_a == bytes_b, "same digest, but the two oci-archives differ");

    let fa = build_filter(&dir.join("fa"));
    let fb = build_filter(&dir.join("fb"));
    assert_eq!(fa.digest, fb.digest, "two builds of the filter image: different digests");
    assert!(std::fs::read(&fa.archive).unwrap() == std::fs::read(&fb.archive).unwrap(), "filter archives differ");

    let ma = build_module(&dir.join("ma"));
    let mb = build_module(&dir.join("mb"));
    assert_eq!(ma.digest, mb.digest, "two builds of the module image: different digests");
    assert!(std::fs::read(&ma.archive).unwrap() == std::fs::read(&mb.archive).unwrap(), "module archives differ");
}

#[test]
fn sidecar_image_carries_the_binary_and_its_configuration() {
    let dir = TestDir::new("image-config");
    let built = build_sidecar(&dir.join("out"));
    let (layout, manifest, digest) = open_archive(&built.archive, dir.path());
    assert_eq!(built.digest, digest, "the printed digest vs the archive's manifest");
    let size = std::fs::metadata(&built.archive).unwrap().len();
    assert!(size < 40 * 1024 * 1024, "the image archive is {size} bytes, over the 40 MiB target");

    let config = read_json(&blob(&layout, manifest["config"]["digest"].as_str().expect("config digest")));
    let c = &config["config"];
    assert_eq!(c["User"], json!("65532:65532"), "{config:#}");
    assert_eq!(c["Entrypoint"], json!(["/usr/local/bin/email-verdict"]), "{config:#}");
    assert_eq!(c["Cmd"], json!(["serve"]), "{config:#}");
    assert_eq!(c["ExposedPorts"], json!({"8080/tcp": {}, "8081/tcp": {}}), "{config:#}");
    let env: Vec<&str> = c["Env"].as_array().expect("Env").iter().filter_map(Value::as_str).collect();
    for want in [
        "EMAIL_VERDICT_LISTEN=0.0.0.0:8080",
        "EMAIL_VERDICT_ADMIN_LISTEN=0.0.0.0:8081",
        "EMAIL_VERDICT_STATE=sqlite:/var/lib/email-verdict/state.db",
    ] {
        assert!(env.contains(&want), "Env lacks {want}: {env:?}");
    }
    assert!(!env.iter().any(|e| e.starts_with("EMAIL_VERDICT_ADMIN_TOKEN=")), "a token baked into the image: {env:?}");
    let labels = &c["Labels"];
    assert_eq!(labels["org.opencontainers.image.licenses"], json!("Apache-2.0"), "{labels:#}");
    assert_eq!(labels["org.opencontainers.image.version"], json!(env!("CARGO_PKG_VERSION")), "{labels:#}");
    assert!(labels["org.opencontainers.image.source"].as_str().is_some_and(|s| s.starts_with("http")), "{labels:#}");

    // One layer; the binary in it is the one the other tests run, byte for byte.
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "{manifest:#}");
    let unpacked = dir.join("layer");
    std::fs::create_dir_all(&unpacked).unwrap();
    let layer = blob(&layout, layers[0]["digest"].as_str().unwrap());
    tool("tar", &["-xzf", &layer.display().to_string(), "-C", &unpacked.display().to_string()]);
    let packaged = std::fs::read(unpacked.join("usr/local/bin/email-verdict")).expect("the binary in the layer");
    assert!(packaged == std::fs::read(sidecar::binary()).unwrap(), "the image's binary differs from the built one");
    let listing = tool("tar", &["-tvzf", &layer.display().to_string(), "--numeric-owner"]);
    let state_line = listing.lines().find(|l| l.trim_end().ends_with("var/lib/email-verdict/"));
    assert!(
        state_line.is_some_and(|l| l.contains("65532/65532")),
        "the state directory must belong to 65532: {state_line:?}\n{listing}"
    );
}

#[test]
fn sidecar_image_serves_lookups_as_a_non_root_user_and_stops_on_sigterm() {
    let dir = TestDir::new("image-run");
    let built = build_sidecar(&dir.join("out"));
    let nsd = Nsd::start();
    let image = Unpacked::new(&built.archive, &dir);

    // The image's own configuration: an admin listener off loopback without a token is refused.
    let refused = image.run_once(
        "no-token",
        &image.args(),
        &[
            ("EMAIL_VERDICT_LISTEN", format!("127.0.0.1:{}", free_port())),
            ("EMAIL_VERDICT_ADMIN_LISTEN", format!("0.0.0.0:{}", free_port())),
            ("EMAIL_VERDICT_DNS", nsd.addr().to_string()),
        ],
    );
    assert_eq!(refused.code, Some(2), "serve without EMAIL_VERDICT_ADMIN_TOKEN must refuse\n{refused}");
    assert!(refused.stderr.contains("admin-token"), "{refused}");

    let api = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let admin = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let token = "image-test-admin-token-5f1c0d2e9b7a4c3d";
    let mut server = image.start(
        "serve",
        &[
            ("EMAIL_VERDICT_LISTEN", api.to_string()),
            ("EMAIL_VERDICT_ADMIN_LISTEN", admin.to_string()),
            ("EMAIL_VERDICT_ADMIN_TOKEN", token.to_string()),
            ("EMAIL_VERDICT_DNS", nsd.addr().to_string()),
        ],
    );
    let health = wait_for("the image's /healthz to answer 200", Duration::from_secs(30), || {
        if let Some(status) = server.process.try_wait() {
            panic!("the container exited during startup ({status})\n{}", server.process.dump());
        }
        Request::get("/healthz").timeout(Duration::from_millis(500)).try_send(admin).ok().filter(|r| r.status == 200)
    });
    assert_eq!(health.text().trim(), "ok", "{health}");

    // Not root: the kernel's view of the server process (the host's uids).
    let pid = server.server_pid();
    let uids = uids(pid);
    assert!(uids.iter().all(|&u| u != 0), "the server runs as root: Uid {uids:?}");
    if image.runtime == Runtime::Runc {
        assert_eq!(uids, [NONROOT; 4], "the image's user (runc maps no uids)");
    }

    // A key made by the image's own binary, inside the container, on the running server's state.
    let state = format!("sqlite:{STATE_DIR}/state.db");
    let created = image.exec(&server, &["keys", "create", "--plan", "pro", "--name", "image-test", "--state", &state]);
    assert_eq!(created.code, Some(0), "keys create in the container\n{created}");
    let key = created.stdout.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("").to_string();
    assert!(is_key(&key), "keys create: no key on the last line\n{created}");

    let v = check_ok(&Request::get("/api/v1/domain/gmail.com").bearer(&key).send(api), "gmail.com via the image");
    assert_eq!(v["result"]["verdict"], json!("safe"), "{v:#}");
    assert_eq!(v["result"]["has_mx"], json!(true), "the image's server reached NSD: {v:#}");
    let v = check_ok(&Request::get("/api/v1/domain/mailinator.com").bearer(&key).send(api), "mailinator.com");
    assert_eq!(v["result"]["verdict"], json!("disposable"), "the lists are in the image's binary: {v:#}");

    // The state file was written through the volume by the image's user.
    if image.runtime == Runtime::Runc {
        use std::os::unix::fs::MetadataExt;
        let db = std::fs::metadata(image.state.join("state.db")).expect("state.db in the volume");
        assert_eq!((db.uid(), db.gid()), (NONROOT, NONROOT), "state.db owner");
    }

    // SIGTERM to the server (what the kubelet sends): exit 0 within a few seconds.
    let started = Instant::now();
    signal(pid, "TERM");
    let status = server.process.wait_timeout(Duration::from_secs(10));
    let status = status.unwrap_or_else(|| panic!("still running 10 s after SIGTERM\n{}", server.process.dump()));
    assert_eq!(status.code(), Some(0), "exit status after SIGTERM\n{}", server.process.dump());
    assert!(started.elapsed() < Duration::from_secs(8), "took {:?} to stop", started.elapsed());
}

// ---- the filter image --------------------------------------------------------------------------

#[test]
fn filter_image_holds_the_built_module_where_istio_reads_it_and_envoy_runs_it() {
    let dir = TestDir::new("filter-image");
    let built = build_filter(&dir.join("out"));
    let (layout, manifest, digest) = open_archive(&built.archive, dir.path());
    assert_eq!(built.digest, digest, "the printed digest vs the archive's manifest");
    let wasm_sha = sha256_hex(&filter_wasm());
    assert!(built.stdout.contains(&wasm_sha), "the module's sha256 {wasm_sha} is not printed\n{}", built.stdout);

    // Istio's (and Envoy Gateway's) reading of a non-Docker manifest, "compat" variant
    // (pkg/wasm/imagefetcher.go, extractOCIStandardImage): the LAST layer, of media type
    // application/vnd.oci.image.layer.v1.tar+gzip, holding a file whose base name is plugin.wasm.
    assert!(manifest.get("mediaType").is_none_or(|m| m == "application/vnd.oci.image.manifest.v1+json"));
    assert_eq!(manifest["annotations"]["module.wasm.image/variant"], json!("compat"), "{manifest:#}");
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "one layer: {manifest:#}");
    assert_eq!(layers[0]["mediaType"], json!("application/vnd.oci.image.layer.v1.tar+gzip"), "{manifest:#}");
    let extracted_dir = dir.join("layer");
    std::fs::create_dir_all(&extracted_dir).unwrap();
    let layer = blob(&layout, layers[0]["digest"].as_str().unwrap());
    tool("tar", &["-xzf", &layer.display().to_string(), "-C", &extracted_dir.display().to_string()]);
    let listing = tool("tar", &["-tzf", &layer.display().to_string()]);
    let wasm_entries: Vec<&str> = listing.lines().filter(|l| l.rsplit('/').next() == Some("plugin.wasm")).collect();
    assert_eq!(wasm_entries, ["plugin.wasm"], "{listing}");
    let extracted = extracted_dir.join("plugin.wasm");
    assert!(
        std::fs::read(&extracted).unwrap() == std::fs::read(filter_wasm()).unwrap(),
        "plugin.wasm in the image differs from {}",
        filter_wasm().display()
    );

    // That module, not the build output, in a real Envoy in front of the real sidecar.
    let original = filter_wasm().display().to_string();
    let g = gateway(|b| b.edit_config(&original, &extracted.display().to_string()));
    let config = std::fs::read_to_string(g.envoy.config_path()).unwrap();
    assert!(config.contains(&extracted.display().to_string()) && !config.contains(&original), "{config}");
    let blocked = g.envoy.signup_json("temp.user@mailinator.com");
    assert_eq!(blocked.status, 403, "a disposable signup through the image's module\n{blocked}");
    assert_eq!(g.app.count(), 0, "the app saw a blocked signup");
    let passed = g.envoy.signup_json("ann@gmail.com");
    assert_eq!(passed.status, 200, "a good signup through the image's module\n{passed}");
    assert_eq!(g.app.last().header("x-email-verdict"), Some("safe"), "{:?}", g.app.last().headers);
}

// ---- the dynamic module's image ----------------------------------------------------------------

#[test]
fn module_image_holds_the_built_module_for_amd64_and_envoy_loads_it() {
    let dir = TestDir::new("module-image");
    let built = build_module(&dir.join("out"));
    let (layout, manifest, digest) = open_archive(&built.archive, dir.path());
    assert_eq!(built.digest, digest, "the printed digest vs the archive's manifest");
    let module_sha = sha256_hex(&filter_module());
    assert!(built.stdout.contains(&module_sha), "the module's sha256 {module_sha} is not printed\n{}", built.stdout);
    // Which Envoy it is for: printed, and in the labels (what `skopeo inspect` shows).
    let version = tool("bash", &[&workspace_root().join("scripts/module-version.sh").display().to_string()]);
    let field = |name: &str| -> String {
        version.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string()).expect(name)
    };
    let (envoy_version, abi) = (field("envoy "), field("abi "));
    assert!(built.stdout.contains(&format!("for Envoy {envoy_version} (dynamic-module ABI {abi}")), "{}", built.stdout);
    let config = read_json(&blob(&layout, manifest["config"]["digest"].as_str().expect("config digest")));
    assert_eq!((config["architecture"].as_str(), config["os"].as_str()), (Some("amd64"), Some("linux")), "{config:#}");
    let labels = &config["config"]["Labels"];
    assert_eq!(labels["io.email-verdict.envoy-version"], json!(envoy_version), "{config:#}");
    assert_eq!(labels["io.email-verdict.envoy-abi"], json!(abi), "{config:#}");
    assert_eq!(labels["io.email-verdict.envoy-loads-in"], json!(field("loads-in ")), "{config:#}");
    assert!(
        config["config"]["Entrypoint"].is_null() && config["config"]["Cmd"].is_null(),
        "nothing to run: {config:#}"
    );

    // One layer: the module at the root, what an image volume shows at its mount path.
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "one layer: {manifest:#}");
    let layer = blob(&layout, layers[0]["digest"].as_str().unwrap());
    let listing = tool("tar", &["-tzvf", &layer.display().to_string()]);
    let files: Vec<&str> = listing.lines().filter(|l| !l.starts_with('d')).collect();
    assert_eq!(files.len(), 1, "one file in the layer:\n{listing}");
    assert!(files[0].ends_with(" libemail_verdict_filter.so") && files[0].starts_with("-rwxr-xr-x"), "{listing}");
    let extracted_dir = dir.join("layer");
    std::fs::create_dir_all(&extracted_dir).unwrap();
    tool("tar", &["-xzf", &layer.display().to_string(), "-C", &extracted_dir.display().to_string()]);
    let extracted = extracted_dir.join("libemail_verdict_filter.so");
    assert!(
        std::fs::read(&extracted).unwrap() == std::fs::read(filter_module()).unwrap(),
        "the image's module differs from {}",
        filter_module().display()
    );

    // That module, not the build output, in a real Envoy in front of the real sidecar.
    let g = gateway_on(FilterBuild::Module, |b| b.placeholder("MODULE_FILE", &extracted.display().to_string()));
    let config = std::fs::read_to_string(g.envoy.config_path()).unwrap();
    assert!(config.contains(&format!("filename: {}", extracted.display())), "{config}");
    let blocked = g.envoy.signup_json("temp.user@mailinator.com");
    assert_eq!(blocked.status, 403, "a disposable signup through the image's module\n{blocked}");
    assert_eq!(g.app.count(), 0, "the app saw a blocked signup");
    let passed = g.envoy.signup_json("ann@gmail.com");
    assert_eq!(passed.status, 200, "a good signup through the image's module\n{passed}");
    assert_eq!(g.app.last().header("x-email-verdict"), Some("safe"), "{:?}", g.app.last().headers);
}

// ---- running the image -------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runtime {
    Runc,
    Bwrap,
}

fn runtime() -> Runtime {
    match std::env::var("EMAIL_VERDICT_IMAGE_RUNTIME").as_deref() {
        Ok("runc") => Runtime::Runc,
        Ok("bwrap") => {
            // As root, bwrap's user namespace would map the image's 65532 to the host's root.
            assert!(!is_root(), "EMAIL_VERDICT_IMAGE_RUNTIME=bwrap runs the image as root when the tests are root");
            Runtime::Bwrap
        }
        Ok(other) => panic!("EMAIL_VERDICT_IMAGE_RUNTIME must be runc or bwrap, not {other:?}"),
        Err(_) if is_root() => Runtime::Runc,
        Err(_) => Runtime::Bwrap,
    }
}

/// `runc` from PATH, else Debian's /usr/sbin/runc (often not on a user's PATH).
fn runc() -> Command {
    let in_path =
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("runc")).find(|p| p.is_file()));
    let path = in_path.unwrap_or_else(|| PathBuf::from("/usr/sbin/runc"));
    assert!(path.is_file(), "runc not found in PATH or /usr/sbin: run scripts/install-deps.sh");
    Command::new(path)
}

fn is_root() -> bool {
    uids(std::process::id())[1] == 0
}

/// The Uid line of /proc/PID/status: real, effective, saved, file-system.
fn uids(pid: u32) -> [u32; 4] {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:")).expect("a Uid line");
    let v: Vec<u32> = line.split_whitespace().map(|s| s.parse().expect("a uid")).collect();
    v.try_into().unwrap_or_else(|v| panic!("Uid line {v:?}"))
}

fn signal(pid: u32, name: &str) {
    let ok = Command::new("kill").arg(format!("-{name}")).arg(pid.to_string()).status().is_ok_and(|s| s.success());
    assert!(ok, "kill -{name} {pid}");
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// The image unpacked by umoci into a runtime bundle, and a state directory standing for the volume.
struct Unpacked {
    runtime: Runtime,
    rootfs: PathBuf,
    /// The OCI runtime spec umoci derived from the image config.
    spec: Value,
    state: PathBuf,
    dir: PathBuf,
}

impl Unpacked {
    fn new(archive: &Path, dir: &TestDir) -> Unpacked {
        let runtime = runtime();
        let layout = dir.join("layout");
        let bundle = dir.join("bundle");
        to_layout(archive, &layout, "run");
        let mut args = vec!["unpack"];
        if !is_root() {
            args.push("--rootless");
        }
        let image = format!("{}:run", layout.display());
        let bundle_s = bundle.display().to_string();
        args.extend(["--image", &image, &bundle_s]);
        tool("umoci", &args);
        let spec = read_json(&bundle.join("config.json"));
        assert_eq!(spec["process"]["user"]["uid"], json!(NONROOT), "umoci's runtime spec: {:#}", spec["process"]);
        let state = dir.join("state");
        std::fs::create_dir_all(&state).unwrap();
        if runtime == Runtime::Runc {
            std::os::unix::fs::chown(&state, Some(NONROOT), Some(NONROOT)).expect("chown the state directory");
        }
        Unpacked { runtime, rootfs: bundle.join("rootfs"), spec, state, dir: dir.path().to_path_buf() }
    }

    /// The image's entry point + command.
    fn args(&self) -> Vec<String> {
        self.spec["process"]["args"].as_array().expect("args").iter().map(|a| a.as_str().unwrap().to_string()).collect()
    }

    /// The image's environment with `env` set over it.
    fn env(&self, env: &[(&str, String)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self.spec["process"]["env"]
            .as_array()
            .expect("env")
            .iter()
            .filter_map(|e| e.as_str()?.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .filter(|(k, _)| !env.iter().any(|(n, _)| n == k))
            .collect();
        out.extend(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
        out
    }

    /// The command that runs `args` in the image (a new container), named `name`.
    fn command(&self, name: &str, args: &[String], env: &[(&str, String)]) -> (Command, String) {
        let id = format!("ev-image-{}-{}-{name}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let env = self.env(env);
        let cwd = self.spec["process"]["cwd"].as_str().unwrap_or("/").to_string();
        match self.runtime {
            Runtime::Runc => {
                let mut spec = self.spec.clone();
                spec["process"]["terminal"] = json!(false);
                spec["process"]["args"] = json!(args);
                spec["process"]["env"] = json!(env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>());
                spec["root"] = json!({"path": self.rootfs, "readonly": true});
                // The host's network: NSD and the client are on the host's loopback.
                let ns = spec["linux"]["namespaces"].as_array_mut().expect("namespaces");
                ns.retain(|n| n["type"] != "network");
                // The volume: umoci makes it a tmpfs; here a directory of ours, as a PVC would be.
                let mounts = spec["mounts"].as_array_mut().expect("mounts");
                mounts.retain(|m| m["destination"] != STATE_DIR);
                mounts.push(
                    json!({"destination": STATE_DIR, "type": "bind", "source": self.state, "options": ["rbind", "rw"]}),
                );
                let bundle = self.dir.join(&id);
                std::fs::create_dir_all(&bundle).unwrap();
                std::fs::write(bundle.join("config.json"), serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
                let mut cmd = runc();
                cmd.arg("--root").arg(self.dir.join("runc")).arg("run").arg("--bundle").arg(&bundle).arg(&id);
                (cmd, id)
            }
            Runtime::Bwrap => {
                let uid = self.spec["process"]["user"]["uid"].as_u64().unwrap().to_string();
                let gid = self.spec["process"]["user"]["gid"].as_u64().unwrap().to_string();
                let mut cmd = Command::new("bwrap");
                cmd.args(["--unshare-user", "--uid", &uid, "--gid", &gid])
                    .args(["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"])
                    .arg("--bind")
                    .arg(&self.rootfs)
                    .arg("/")
                    .args(["--proc", "/proc", "--dev", "/dev"])
                    .arg("--bind")
                    .arg(&self.state)
                    .arg(STATE_DIR)
                    .args(["--remount-ro", "/", "--chdir", &cwd, "--clearenv"]);
                for (k, v) in &env {
                    cmd.args(["--setenv", k, v]);
                }
                cmd.arg("--").args(args);
                (cmd, id)
            }
        }
    }

    /// Runs `args` in a new container to completion.
    fn run_once(&self, name: &str, args: &[String], env: &[(&str, String)]) -> envoy::Output {
        let (cmd, _) = self.command(name, args, env);
        envoy::run(cmd)
    }

    /// Starts the image's entry point and command in a new container.
    fn start(&self, name: &str, env: &[(&str, String)]) -> Container {
        let (cmd, id) = self.command(name, &self.args(), env);
        let process = ChildProcess::spawn(name, cmd, &self.dir);
        Container {
            process,
            id,
            runc_root: self.dir.join("runc"),
            runtime: self.runtime,
            entry: self.args()[0].clone(),
        }
    }

    /// Runs `args` (after the entry point) inside the running container: `runc exec`; with bwrap,
    /// a second sandbox on the same root file system and volume.
    fn exec(&self, c: &Container, args: &[&str]) -> envoy::Output {
        let mut full = vec![c.entry.clone()];
        full.extend(args.iter().map(|a| a.to_string()));
        match self.runtime {
            Runtime::Runc => {
                let mut cmd = runc();
                cmd.arg("--root").arg(&c.runc_root).arg("exec").arg(&c.id).args(&full);
                envoy::run(cmd)
            }
            Runtime::Bwrap => self.run_once("exec", &full, &[]),
        }
    }
}

/// A running container: the runtime's process (`runc run` / `bwrap`) is a guarded child; runc's
/// container is killed and deleted on drop (killing `runc run` alone would leave it running).
struct Container {
    process: ChildProcess,
    id: String,
    runc_root: PathBuf,
    runtime: Runtime,
    entry: String,
}

impl Container {
    /// The server process: the runtime's descendant running the entry point.
    fn server_pid(&self) -> u32 {
        let root = self.process.pid();
        let mut todo = vec![root];
        while let Some(p) = todo.pop() {
            let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            if p != root && cmdline.split(|&b| b == 0).next() == Some(self.entry.as_bytes()) {
                return p;
            }
            for task in std::fs::read_dir(format!("/proc/{p}/task")).into_iter().flatten().flatten() {
                let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
                todo.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
            }
        }
        panic!("no process running {} under the runtime (pid {root})\n{}", self.entry, self.process.dump());
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if self.runtime == Runtime::Runc {
            for args in [vec!["kill", self.id.as_str(), "KILL"], vec!["delete", "--force", self.id.as_str()]] {
                let _ = runc()
                    .arg("--root")
                    .arg(&self.runc_root)
                    .args(&args)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
        }
    }
}
