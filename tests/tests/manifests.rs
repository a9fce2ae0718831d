//! Every Kubernetes manifest in envoy/istio/, envoy/gateway/ and deploy/kubernetes/ against the schemas of registry
//! packages: `scripts/validate-manifests.py` (run with the project's .venv python) checks the
//! built-in kinds with PyPI's kubernetes-validate (strict: unknown fields are errors) and the
//! Istio, Gateway API, Envoy Gateway and Prometheus Operator custom resources with npm's @kubernetes-models CRD
//! schemas (tests/fixtures/k8s-schemas/). It prints one line per YAML document and exits non-zero
//! on any error. Beyond its exit status, this checks that the kinds it must cover were really
//! validated, not skipped as `no schema`.
//!
//! The sidecar's Kustomize overlays (deploy/kubernetes/sidecar/overlays/*) are rendered with
//! `kubectl kustomize` (or `kustomize build`) and the rendered YAML goes through the same check;
//! then the properties a rollout and a node loss depend on are read off it (`manifests/sidecar.rs`).

#[path = "manifests/sidecar.rs"]
mod sidecar;
#[path = "envoy_configs/yaml.rs"]
mod yaml;

use std::path::{Path, PathBuf};
use std::process::Command;

use email_verdict_tests::workspace_root;

fn python() -> PathBuf {
    let path = std::env::var_os("MANIFESTS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/python3"));
    assert!(path.exists(), "{} not found: run scripts/install-deps.sh", path.display());
    path
}

/// Runs scripts/validate-manifests.py on `files` (none: its own list): (exit success, report).
fn validate(files: &[&Path]) -> (bool, String) {
    let out = Command::new(python())
        .arg(workspace_root().join("scripts/validate-manifests.py"))
        .args(files)
        .current_dir(workspace_root())
        .output()
        .expect("run scripts/validate-manifests.py");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), report)
}

/// (file, kind, name, status) of each document line of the script's output.
fn documents(report: &str) -> Vec<(&str, &str, &str, &str)> {
    report
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| {
            let mut parts = l.splitn(4, "  ");
            Some((parts.next()?, parts.next()?, parts.next()?, parts.next()?))
        })
        .collect()
}

#[test]
fn every_manifest_matches_its_kubernetes_or_crd_schema() {
    let (ok, report) = validate(&[]);
    assert!(ok, "scripts/validate-manifests.py found problems:\n{report}");
    println!("{report}");

    let docs = documents(&report);
    for kind in ["Deployment", "Service", "Secret"] {
        let lines: Vec<_> = docs.iter().filter(|d| d.1 == kind).collect();
        assert!(!lines.is_empty(), "no {kind} in envoy/istio or envoy/gateway?\n{report}");
        for (file, _, name, status) in lines {
            assert!(
                status.starts_with("ok (PyPI kubernetes-validate@"),
                "{file} {kind} {name} was not validated against kubernetes-validate: {status}\n{report}"
            );
        }
    }
    // The custom resources: at least one document against each schema package (a kind none of
    // them covers would say `no schema`, and must say why).
    for package in
        ["istio", "gateway-api", "envoy-gateway", "prometheus-operator"].map(|p| format!("@kubernetes-models/{p}@"))
    {
        assert!(
            docs.iter().any(|d| d.3.starts_with(&format!("ok (npm {package}"))),
            "nothing validated against {package}\n{report}"
        );
    }
    // envoy/gateway/module.yaml: the rest of each document is checked, the dynamic module's fields
    // are said not to be (the schema package predates them), never passed off as validated.
    for kind in ["EnvoyProxy", "EnvoyExtensionPolicy"] {
        let line = docs
            .iter()
            .find(|d| d.0 == "envoy/gateway/module.yaml" && d.1 == kind)
            .unwrap_or_else(|| panic!("no {kind} of envoy/gateway/module.yaml in the report\n{report}"));
        assert!(
            line.3.starts_with("ok (npm @kubernetes-models/envoy-gateway@")
                && line.3.contains("not checked: spec.dynamicModule")
                && line.3.contains("predates dynamicModule"),
            "envoy/gateway/module.yaml {kind}: {}",
            line.3
        );
    }
    for (file, kind, name, status) in &docs {
        if status.starts_with("no schema") {
            assert!(status.len() > "no schema ()".len(), "{file} {kind} {name}: skipped without a reason");
            eprintln!("not validated: {file} {kind} {name}: {status}");
        }
    }
}

/// The traces settings shipped commented in the Envoy Gateway recipe (`# >>> tracing`) are valid
/// once uncommented, as the operator guide tells the operator to do.
#[test]
fn the_gateway_recipes_commented_tracing_block_is_valid_when_turned_on() {
    let text = std::fs::read_to_string(workspace_root().join("envoy/gateway/gateway.yaml")).unwrap();
    let on = email_verdict_tests::envoy::enable_tracing(&text);
    assert_ne!(on, text, "no tracing block in envoy/gateway/gateway.yaml");
    let dir = TestDir::new("gateway-tracing");
    let file = dir.join("gateway.yaml");
    std::fs::write(&file, &on).unwrap();
    let (ok, report) = validate(&[&file]);
    assert!(ok, "the recipe with tracing on:\n{report}");
    let proxy = yaml::load_yaml(&file).into_iter().find(|d| d["kind"] == "EnvoyProxy").expect("an EnvoyProxy");
    let tracing = &proxy["spec"]["telemetry"]["tracing"];
    assert_eq!(tracing["provider"]["type"], "OpenTelemetry", "{proxy}");
    assert_eq!(tracing["provider"]["backendRefs"][0]["port"], 4317);
}

// ---- the sidecar's Kustomize overlays (deploy/kubernetes/sidecar/) ------------------------------

use email_verdict_tests::TestDir;
use serde_json::Value;
use sidecar::{OVERLAYS, PRODUCTION, doc, docs_of, env, quantity, rendered, selects, server_constant};

#[test]
fn every_sidecar_overlay_renders_and_matches_the_kubernetes_schemas() {
    // Every overlay directory is rendered here: a new one is not silently left out.
    let root = workspace_root().join("deploy/kubernetes/sidecar/overlays");
    let mut on_disk: Vec<String> = std::fs::read_dir(&root)
        .expect("read deploy/kubernetes/sidecar/overlays")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = OVERLAYS.iter().map(|(o, _)| o.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "overlays on disk vs the ones this test renders");

    let renderer = sidecar::Renderer::find();
    println!("rendering with {renderer}");
    let dir = TestDir::new("manifests");
    for (overlay, kinds) in OVERLAYS {
        let file = dir.join(&format!("{overlay}.yaml"));
        std::fs::write(&file, renderer.render(overlay)).expect("write the rendered overlay");
        let (ok, report) = validate(&[&file]);
        assert!(ok, "overlay {overlay}, rendered, has problems:\n{report}");
        println!("{report}");
        let docs = documents(&report);
        assert_eq!(docs.len(), rendered(overlay).len(), "{overlay}: a document per rendered one\n{report}");
        for (_, kind, name, status) in &docs {
            assert!(
                status.starts_with("ok (PyPI kubernetes-validate@") && status.contains("strict"),
                "{overlay}: {kind} {name} not validated against the strict schemas: {status}"
            );
        }
        for kind in *kinds {
            assert!(docs.iter().any(|d| d.1 == *kind), "{overlay}: no {kind} validated\n{report}");
        }
    }
}

#[test]
fn the_sidecar_pod_is_hardened_probed_and_sized_in_every_overlay() {
    for (overlay, _) in OVERLAYS {
        let (dep, pod, c) = sidecar::sidecar(overlay);
        assert_eq!(dep["metadata"]["namespace"], "email-verdict", "{overlay}");
        let (psc, csc) = (&pod["securityContext"], &c["securityContext"]);
        let either = |field: &str| if csc[field].is_null() { &psc[field] } else { &csc[field] };
        assert_eq!(*either("runAsNonRoot"), true, "{overlay}: runAsNonRoot");
        assert_eq!(either("seccompProfile")["type"], "RuntimeDefault", "{overlay}: seccompProfile");
        assert_eq!(csc["readOnlyRootFilesystem"], true, "{overlay}: readOnlyRootFilesystem");
        assert_eq!(csc["allowPrivilegeEscalation"], false, "{overlay}: allowPrivilegeEscalation");
        assert_eq!(csc["capabilities"]["drop"], serde_json::json!(["ALL"]), "{overlay}: capabilities");
        assert!(csc["capabilities"]["add"].is_null(), "{overlay}: capabilities added");
        assert_eq!(pod["automountServiceAccountToken"], false, "{overlay}: no API token in the pod");

        // A read-only root: every path the sidecar writes is a volume ($TMPDIR; the image's
        // working directory, where the state file or the lists' copies go).
        let volumes = pod["volumes"].as_array().expect("volumes");
        for path in ["/tmp", "/var/lib/email-verdict"] {
            let mount = c["volumeMounts"].as_array().and_then(|m| m.iter().find(|m| m["mountPath"] == path));
            let mount = mount.unwrap_or_else(|| panic!("{overlay}: nothing mounted at {path}"));
            assert!(volumes.iter().any(|v| v["name"] == mount["name"]), "{overlay}: no volume {}", mount["name"]);
        }

        // Probes on the admin listener, which is where it listens: readiness on /readyz (the
        // store answers too), startup and liveness on /healthz (a restart mends no store).
        let admin = env(c, "EMAIL_VERDICT_ADMIN_LISTEN").expect("EMAIL_VERDICT_ADMIN_LISTEN")["value"].clone();
        let port = c["ports"].as_array().unwrap().iter().find(|p| p["name"] == "http-admin").expect("http-admin");
        assert_eq!(admin, format!("0.0.0.0:{}", port["containerPort"]), "{overlay}");
        for (probe, path) in
            [("startupProbe", "/healthz"), ("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")]
        {
            assert_eq!(c[probe]["httpGet"]["path"], path, "{overlay}: {probe}");
            assert_eq!(c[probe]["httpGet"]["port"], "http-admin", "{overlay}: {probe}");
        }
        assert!(env(c, "EMAIL_VERDICT_ADMIN_TOKEN").is_some_and(|e| e["valueFrom"]["secretKeyRef"].is_object()));

        // Pod deletion: the preStop sleep, then the sidecar's drain, within the grace period.
        let sleep = c["lifecycle"]["preStop"]["sleep"]["seconds"].as_u64().expect("a preStop sleep");
        let drain = server_constant("GRACE_PERIOD") + server_constant("SHUTDOWN_TIMEOUT");
        let grace = pod["terminationGracePeriodSeconds"].as_u64().expect("terminationGracePeriodSeconds");
        assert!(grace >= sleep + drain + 5, "{overlay}: grace {grace} s < preStop {sleep} s + drain {drain} s + 5");
        let istio = pod_annotation(dep, "proxy.istio.io/config");
        assert!(istio.contains("terminationDrainDuration"), "{overlay}: istio-proxy must outlive the drain");

        // Sized from BENCHMARKS.md: the memory request covers the measured peak (53.6 MB after
        // the whole `make bench` run), the CPU limit the two threads at full speed (1.25 CPU).
        let res = &c["resources"];
        assert!(quantity(&res["requests"]["memory"], false) >= 53_600_000, "{overlay}: {res}");
        assert!(quantity(&res["limits"]["memory"], false) >= 2 * quantity(&res["requests"]["memory"], false));
        assert!(quantity(&res["requests"]["cpu"], true) >= 100, "{overlay}: {res}");
        let threads: u64 =
            env(c, "EMAIL_VERDICT_THREADS").expect("threads")["value"].as_str().unwrap().parse().unwrap();
        assert!(quantity(&res["limits"]["cpu"], true) >= 1000 * threads, "{overlay}: a thread per CPU of the limit");
    }
}

fn pod_annotation(dep: &Value, name: &str) -> String {
    dep["spec"]["template"]["metadata"]["annotations"][name].as_str().unwrap_or_default().to_owned()
}

#[test]
fn production_overlays_roll_without_losing_a_ready_replica_and_survive_a_node() {
    for overlay in PRODUCTION {
        let (dep, pod, c) = sidecar::sidecar(overlay);
        let labels = &dep["spec"]["template"]["metadata"]["labels"];
        let strategy = &dep["spec"]["strategy"];
        assert_eq!(strategy["type"], "RollingUpdate", "{overlay}");
        assert!(matches!(&strategy["rollingUpdate"]["maxUnavailable"], v if *v == 0 || *v == "0%"), "{overlay}");
        assert_eq!(strategy["rollingUpdate"]["maxSurge"], 1, "{overlay}");

        // The autoscaler owns the count: at least 2 replicas, never fought by a count in the
        // Deployment (every `kubectl apply` would reset it).
        let hpa = doc(overlay, "HorizontalPodAutoscaler", "email-verdict");
        assert_eq!(hpa["apiVersion"], "autoscaling/v2", "{overlay}");
        assert_eq!(hpa["spec"]["scaleTargetRef"]["kind"], "Deployment");
        assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "email-verdict");
        let min = hpa["spec"]["minReplicas"].as_u64().expect("minReplicas");
        assert!(min >= 2, "{overlay}: minReplicas {min}");
        assert!(hpa["spec"]["maxReplicas"].as_u64().unwrap() > min);
        let cpu = hpa["spec"]["metrics"].as_array().unwrap().iter().any(|m| m["resource"]["name"] == "cpu");
        assert!(cpu, "{overlay}: the HPA scales on CPU");
        assert!(dep["spec"]["replicas"].is_null(), "{overlay}: replicas set beside the HPA");

        // Voluntary disruptions take one replica at a time, and never block on all of them.
        let pdbs = docs_of(overlay, "PodDisruptionBudget");
        let pdb = pdbs.iter().find(|p| selects(&p["spec"]["selector"], labels)).expect("a PDB for the sidecar");
        assert_eq!(pdb["apiVersion"], "policy/v1");
        let allows = match (&pdb["spec"]["maxUnavailable"], &pdb["spec"]["minAvailable"]) {
            (Value::Number(n), _) => n.as_u64().is_some_and(|n| n >= 1 && n < min),
            (_, Value::Number(n)) => n.as_u64().is_some_and(|n| n >= 1 && n < min),
            other => panic!("{overlay}: PDB {other:?}"),
        };
        assert!(allows, "{overlay}: the PDB must keep replicas and still let a drain proceed: {pdb}");

        // Spread over zones and nodes.
        let spread = pod["topologySpreadConstraints"].as_array().expect("topologySpreadConstraints");
        for key in ["topology.kubernetes.io/zone", "kubernetes.io/hostname"] {
            let t = spread.iter().find(|t| t["topologyKey"] == key).unwrap_or_else(|| panic!("{overlay}: {key}"));
            assert!(selects(&t["labelSelector"], labels), "{overlay}: {key} spreads other pods");
            assert_eq!(t["maxSkew"], 1);
        }

        // Shared state only: the store's URL from a Secret, no volume a replica would own.
        let state = env(c, "EMAIL_VERDICT_STATE").expect("EMAIL_VERDICT_STATE");
        assert!(state["value"].is_null() && state["valueFrom"]["secretKeyRef"]["key"] == "url", "{state}");
        let volumes = pod["volumes"].as_array().unwrap();
        assert!(volumes.iter().all(|v| v["persistentVolumeClaim"].is_null()), "{overlay}: a PVC per Deployment");
    }
}

#[test]
fn the_sqlite_overlay_runs_one_writer() {
    let (dep, pod, c) = sidecar::sidecar("sqlite");
    assert_eq!(dep["spec"]["replicas"], 1);
    assert_eq!(dep["spec"]["strategy"]["type"], "Recreate", "two pods must never share the SQLite file");
    assert!(docs_of("sqlite", "HorizontalPodAutoscaler").is_empty(), "an HPA would add a second writer");
    assert!(docs_of("sqlite", "PodDisruptionBudget").is_empty(), "a PDB on one replica blocks every drain");
    let state = env(c, "EMAIL_VERDICT_STATE").expect("EMAIL_VERDICT_STATE")["value"].as_str().unwrap();
    assert_eq!(state, "sqlite:/var/lib/email-verdict/state.db");
    let mount = c["volumeMounts"].as_array().unwrap().iter().find(|m| m["mountPath"] == "/var/lib/email-verdict");
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == mount.unwrap()["name"]).unwrap();
    let claim = volume["persistentVolumeClaim"]["claimName"].as_str().expect("the state on a PVC");
    doc("sqlite", "PersistentVolumeClaim", claim);
}

#[test]
fn the_network_policy_admits_only_gateways_prometheus_and_admin_clients() {
    for (overlay, _) in OVERLAYS {
        let (dep, _, c) = sidecar::sidecar(overlay);
        let labels = &dep["spec"]["template"]["metadata"]["labels"];
        let policies = docs_of(overlay, "NetworkPolicy");
        let np = policies.iter().find(|p| selects(&p["spec"]["podSelector"], labels)).expect("a NetworkPolicy");
        assert!(np["spec"]["policyTypes"].as_array().unwrap().contains(&"Ingress".into()), "{overlay}");
        let port_names: Vec<&str> =
            c["ports"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        // port -> the namespace labels that admit it
        let mut admitted: Vec<(String, String)> = Vec::new();
        for rule in np["spec"]["ingress"].as_array().expect("ingress rules") {
            let from = rule["from"].as_array().filter(|f| !f.is_empty());
            let from = from.unwrap_or_else(|| panic!("{overlay}: a rule open to everyone: {rule}"));
            let ports = rule["ports"].as_array().filter(|p| !p.is_empty());
            let ports = ports.unwrap_or_else(|| panic!("{overlay}: a rule open on every port: {rule}"));
            for peer in from {
                let ns = peer["namespaceSelector"]["matchLabels"].as_object();
                let ns = ns.filter(|l| !l.is_empty()).unwrap_or_else(|| panic!("{overlay}: any namespace: {peer}"));
                assert!(peer["ipBlock"].is_null(), "{overlay}: {peer}");
                for port in ports {
                    let name = port["port"].as_str().expect("a named port");
                    assert!(port_names.contains(&name), "{overlay}: no container port {name}");
                    for (k, v) in ns {
                        admitted.push((name.to_owned(), format!("{k}={}", v.as_str().unwrap())));
                    }
                }
            }
        }
        let admits = |port: &str, label: &str| admitted.iter().any(|(p, l)| p == port && l == label);
        for port in ["http-api", "grpc-authz"] {
            assert!(admits(port, "email-verdict/gateway=true"), "{overlay}: gateways to {port}");
            assert!(admitted.iter().filter(|(p, _)| p == port).all(|(_, l)| l == "email-verdict/gateway=true"));
        }
        assert!(admits("http-admin", "email-verdict/metrics=true"), "{overlay}: Prometheus to the admin port");
        assert!(admits("http-admin", "email-verdict/admin=true"), "{overlay}: admin clients to the admin port");
        assert!(!admits("http-admin", "email-verdict/gateway=true"), "{overlay}: gateways to the admin port");
    }
}

#[test]
fn the_valkey_overlay_points_the_sidecar_at_its_own_valkey() {
    use base64::Engine as _;
    let overlay = "redis-with-valkey";
    let (_, _, c) = sidecar::sidecar(overlay);
    let secret_ref = &env(c, "EMAIL_VERDICT_STATE").expect("EMAIL_VERDICT_STATE")["valueFrom"]["secretKeyRef"];
    let secret = doc(overlay, "Secret", secret_ref["name"].as_str().expect("a Secret's name"));
    let url = secret["data"]["url"].as_str().expect("url in the Secret");
    let url = base64::engine::general_purpose::STANDARD.decode(url).expect("base64");
    let url = String::from_utf8(url).unwrap();
    let svc = doc(overlay, "Service", "email-verdict-valkey");
    let port = &svc["spec"]["ports"][0]["port"];
    assert_eq!(url, format!("redis://email-verdict-valkey:{port}/0"));
    let sts = doc(overlay, "StatefulSet", "email-verdict-valkey");
    let pod_labels = &sts["spec"]["template"]["metadata"]["labels"];
    let svc_selector = svc["spec"]["selector"].as_object().expect("the Service's selector");
    assert!(svc_selector.iter().all(|(k, v)| pod_labels[k] == *v), "the Service selects the Valkey pod");
    // Only the sidecar's pods reach it.
    let np = doc(overlay, "NetworkPolicy", "email-verdict-valkey");
    let from = &np["spec"]["ingress"][0]["from"];
    assert_eq!(from.as_array().map(Vec::len), Some(1), "{np}");
    assert_eq!(from[0]["podSelector"]["matchLabels"], serde_json::json!({"app": "email-verdict"}));
    let vsc = &sts["spec"]["template"]["spec"]["containers"][0]["securityContext"];
    assert_eq!(vsc["readOnlyRootFilesystem"], true);
    assert_eq!(vsc["capabilities"]["drop"], serde_json::json!(["ALL"]));
}

#[test]
fn istio_sidecar_yaml_agrees_with_the_overlays() {
    // The one-file quick start and the overlays expose the same Service, so the filter's
    // cluster (outbound|8080||email-verdict.email-verdict.svc.cluster.local) is the same.
    let path = workspace_root().join("envoy/istio/sidecar.yaml");
    let quick: Vec<Value> = yaml::load_yaml(&path);
    let quick_svc = quick.iter().find(|d| d["kind"] == "Service").expect("a Service in sidecar.yaml");
    for (overlay, _) in OVERLAYS {
        let svc = doc(overlay, "Service", "email-verdict");
        assert_eq!(svc["metadata"]["namespace"], quick_svc["metadata"]["namespace"], "{overlay}");
        assert_eq!(svc["spec"], quick_svc["spec"], "{overlay}: the Service differs from sidecar.yaml's");
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("deploy/kubernetes/sidecar"), "sidecar.yaml should point to the HA manifests");
}

#[test]
fn the_pod_monitor_scrapes_every_overlays_admin_port() {
    // deploy/kubernetes/monitors.yaml's PodMonitor finds each overlay's pods and their admin port,
    // which the NetworkPolicy opens to Prometheus (the test above).
    let monitors = yaml::load_yaml(&workspace_root().join("deploy/kubernetes/monitors.yaml"));
    let pm = monitors.iter().find(|d| d["kind"] == "PodMonitor" && d["metadata"]["name"] == "email-verdict");
    let pm = pm.expect("the sidecar's PodMonitor");
    let port = pm["spec"]["podMetricsEndpoints"][0]["port"].as_str().expect("a named port");
    assert_eq!(pm["spec"]["podMetricsEndpoints"][0]["path"], "/metrics");
    for (overlay, _) in OVERLAYS {
        let (dep, _, c) = sidecar::sidecar(overlay);
        assert_eq!(pm["metadata"]["namespace"], dep["metadata"]["namespace"], "{overlay}");
        assert!(selects(&pm["spec"]["selector"], &dep["spec"]["template"]["metadata"]["labels"]), "{overlay}");
        assert!(c["ports"].as_array().unwrap().iter().any(|p| p["name"] == port), "{overlay}: no port {port}");
    }
}
