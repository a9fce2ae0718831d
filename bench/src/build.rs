//! The builds a run measures: this checkout's (`target/release/email-verdict`, the filter of
//! `make filter`, or `$EMAIL_VERDICT_BIN` / `$EMAIL_VERDICT_FILTER_WASM`) and, with `--baseline
//! DIR` (`make bench BASELINE=DIR`), an older one measured beside it case by case.
//!
//! A build is its sidecar binary, its enforcement point in Envoy ([`Filter`]) and the tree of
//! configuration files that go with them (`envoy/plugin-config.json`, `envoy/*.template.yaml`,
//! `scripts/render-envoy.py`, `envoy/ext-authz-config.json`): an older filter refuses a newer
//! plugin configuration (unknown fields), so each build runs with its own.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use email_verdict_tests::{EnvoyBuilder, Sidecar, SidecarBuilder, workspace_root};

/// How a build's filter runs in Envoy. Section 4's filter rows take it as a parameter; the
/// ext_authz rows depend only on the sidecar and the tree's `envoy/ext-authz.template.yaml`.
#[derive(Debug, Clone)]
pub enum Filter {
    /// The proxy-wasm module, loaded through the tree's `envoy/envoy.template.yaml`.
    Wasm(PathBuf),
    /// The dynamic module (`make module`), loaded through `envoy/module.template.yaml`.
    Module(PathBuf),
}

impl Filter {
    /// What the tables say of it.
    pub fn describe(&self) -> String {
        match self {
            Filter::Wasm(path) => format!("Wasm module {}", file_name(path)),
            Filter::Module(path) => format!("dynamic module {}", file_name(path)),
        }
    }
}

/// One build under test.
#[derive(Debug, Clone)]
pub struct Build {
    /// "this build (eeea9e3)", "baseline (ad8c4f5)".
    pub label: String,
    /// Its `email-verdict` binary.
    pub sidecar_bin: PathBuf,
    pub filter: Filter,
    /// The tree whose configuration files go with it.
    pub tree: PathBuf,
}

impl Build {
    /// This checkout's build: the binary and module the test harness finds.
    pub fn current() -> Build {
        let tree = workspace_root();
        Build {
            label: format!("this build ({})", commit_of(&tree)),
            sidecar_bin: email_verdict_tests::sidecar::binary(),
            filter: Filter::Wasm(email_verdict_tests::envoy::filter_wasm()),
            tree,
        }
    }

    /// This build with the dynamic module as its filter (`make module`).
    pub fn current_module() -> Build {
        let mut build = Build::current();
        build.label = format!("{}, dynamic module", build.label);
        build.filter = Filter::Module(email_verdict_tests::envoy::filter_module());
        build
    }

    /// An older build in `dir`: a checkout after `make build filter` (`target/release/email-verdict`,
    /// `target/email_verdict_filter.wasm`), or what `scripts/baseline.sh` leaves (the same
    /// layout, only those files and the configuration files). Fails naming what is missing.
    pub fn baseline(dir: &Path) -> anyhow::Result<Build> {
        let dir = dir.canonicalize().with_context(|| format!("BASELINE {}", dir.display()))?;
        let find = |candidates: &[&str]| candidates.iter().map(|c| dir.join(c)).find(|p| p.is_file());
        let sidecar_bin = find(&["target/release/email-verdict", "email-verdict"])
            .with_context(|| format!("{}: no target/release/email-verdict (run `make build` there)", dir.display()))?;
        let wasm = find(&["target/email_verdict_filter.wasm", "email_verdict_filter.wasm"]).with_context(|| {
            format!("{}: no target/email_verdict_filter.wasm (run `make filter` there)", dir.display())
        })?;
        for needed in [
            "envoy/plugin-config.json",
            "envoy/envoy.template.yaml",
            "envoy/ext-authz.template.yaml",
            "scripts/render-envoy.py",
        ] {
            if !dir.join(needed).is_file() {
                bail!("{}: no {needed} (the build's own configuration files are needed beside it)", dir.display());
            }
        }
        Ok(Build {
            label: format!("baseline ({})", commit_of(&dir)),
            sidecar_bin,
            filter: Filter::Wasm(wasm),
            tree: dir,
        })
    }

    /// The same baseline with its dynamic module (`target/libemail_verdict_filter.so` beside
    /// the Wasm module), when it has one.
    pub fn baseline_module(&self) -> Option<Build> {
        let path = self.tree.join("target/libemail_verdict_filter.so");
        path.is_file().then(|| Build {
            label: format!("{}, dynamic module", self.label),
            filter: Filter::Module(path),
            ..self.clone()
        })
    }

    /// A sidecar of this build; no key is made with the CLI (the state is this build's own:
    /// keys are made through the admin API, [`crate::keys`]).
    pub fn sidecar(&self) -> SidecarBuilder {
        Sidecar::builder().binary(&self.sidecar_bin).keys(&[])
    }

    /// An Envoy with this build's filter and plugin configuration.
    pub fn filter_envoy(&self, sidecar: std::net::SocketAddr, app: std::net::SocketAddr) -> EnvoyBuilder {
        let builder = EnvoyBuilder::in_tree(&self.tree, sidecar, app);
        match &self.filter {
            Filter::Wasm(path) => builder.wasm(path),
            Filter::Module(path) => builder.module(path),
        }
    }

    /// An Envoy with Envoy's ext_authz against the sidecar, from this build's template.
    pub fn ext_authz_envoy(&self, sidecar: std::net::SocketAddr, app: std::net::SocketAddr) -> EnvoyBuilder {
        EnvoyBuilder::in_tree(&self.tree, sidecar, app).ext_authz()
    }

    /// `envoy/ext-authz-config.json` of this build.
    pub fn ext_authz_config(&self) -> anyhow::Result<serde_json::Value> {
        let path = self.tree.join("envoy/ext-authz-config.json");
        let text = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
    }

    /// Whether this build counts signups at `/ext_authz`: its `serve` takes `--mailbox-secret`
    /// and its tree has `envoy/ext-authz-config.json` (an older build has neither).
    pub fn counts_at_ext_authz(&self) -> bool {
        self.tree.join("envoy/ext-authz-config.json").is_file() && self.serve_knows("--mailbox-secret")
    }

    /// Whether `email-verdict serve` of this build takes `flag` (an older build may not).
    pub fn serve_knows(&self, flag: &str) -> bool {
        let out = std::process::Command::new(&self.sidecar_bin).args(["serve", "--help"]).output();
        out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(flag))
    }
}

/// The short commit of the checkout at `dir`, or of the commit `scripts/baseline.sh` wrote into
/// `dir/COMMIT`; "unknown commit" otherwise.
fn commit_of(dir: &Path) -> String {
    if let Ok(text) = std::fs::read_to_string(dir.join("COMMIT")) {
        return text.trim().chars().take(7).collect();
    }
    let out = std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(dir).output();
    out.ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown commit".into())
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
