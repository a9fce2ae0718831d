//! The on-call kit's files, without a running service: `deploy/prometheus/email-verdict.rules.yml`
//! passes `promtool check rules` and its unit tests (`promtool test rules`: every alert fires
//! when it should and stays quiet when it should not); the `PrometheusRule` holds the very same
//! groups; every alert pages with a severity and a runbook that exists in the operator guide; the
//! monitors scrape under the job names the rules use; the Grafana dashboard is importable as is.
//! What the rules and panels see from real processes: `tests/tests/oncall.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

use email_verdict_tests::envoy::run;
use email_verdict_tests::{TestDir, workspace_root};
use serde_json::Value;

fn deploy(path: &str) -> PathBuf {
    workspace_root().join("deploy").join(path)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn promtool() -> PathBuf {
    let found = ["/usr/bin/promtool", "/usr/local/bin/promtool"].into_iter().map(PathBuf::from).find(|p| p.is_file());
    found.unwrap_or_else(|| panic!("promtool not found: run scripts/install-deps.sh (Debian's prometheus package)"))
}

/// The rules without their `annotations:` blocks: promtool's unit tests compare annotations
/// exactly, and their wording is checked here rather than there.
fn without_annotations(rules: &str) -> String {
    let mut out = String::new();
    let mut skipping: Option<usize> = None;
    for line in rules.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(at) = skipping {
            if line.trim().is_empty() || indent > at {
                continue;
            }
            skipping = None;
        }
        if line.trim_start() == "annotations:" {
            skipping = Some(indent);
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Each alert of the rules file: (name, the text of its rule up to the next one).
fn alerts(rules: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for line in rules.lines() {
        let trimmed = line.trim_start();
        if let Some(name) = trimmed.strip_prefix("- alert: ") {
            found.push((name.trim().to_owned(), String::new()));
        } else if trimmed.starts_with("- record: ") || trimmed.starts_with("- name: ") {
            found.push((String::new(), String::new())); // ends the alert before it
        } else if let Some(last) = found.last_mut() {
            last.1.push_str(trimmed);
            last.1.push('\n');
        }
    }
    found.into_iter().filter(|(name, _)| !name.is_empty()).collect()
}

#[test]
fn the_rules_pass_promtool_and_every_alert_has_unit_tests() {
    let rules_path = deploy("prometheus/email-verdict.rules.yml");
    let check = run({
        let mut c = Command::new(promtool());
        c.arg("check").arg("rules").arg(&rules_path);
        c
    });
    assert!(check.success(), "promtool check rules\n{check}");

    let dir = TestDir::new("promtool");
    dir.write("email-verdict.rules.yml", &without_annotations(&read(&rules_path)));
    let tests = read(&deploy("prometheus/email-verdict.rules.test.yml"));
    let test_file = dir.write("email-verdict.rules.test.yml", &tests);
    let unit = run({
        let mut c = Command::new(promtool());
        c.arg("test").arg("rules").arg(&test_file);
        c
    });
    assert!(unit.success() && unit.text().contains("SUCCESS"), "promtool test rules\n{unit}");

    // Every alert is tested both ways: once expected to fire, once expected quiet.
    let rules = read(&rules_path);
    let names: Vec<String> = alerts(&rules).into_iter().map(|(n, _)| n).collect();
    assert!(names.len() >= 18, "{names:?}");
    let cases: Vec<(&str, bool)> = tests
        .split("alertname: ")
        .skip(1)
        .map(|case| {
            let name = case.lines().next().unwrap_or_default().trim();
            let quiet = case.lines().nth(1).is_some_and(|l| l.trim() == "exp_alerts: []");
            (name, quiet)
        })
        .collect();
    for name in &names {
        assert!(cases.contains(&(name.as_str(), false)), "no unit test where {name} fires");
        assert!(cases.contains(&(name.as_str(), true)), "no unit test where {name} stays quiet");
    }
    for (name, _) in &cases {
        assert!(names.iter().any(|n| n == name), "the tests name an alert the rules lack: {name}");
    }
}

#[test]
fn every_alert_has_a_severity_and_a_runbook_in_the_operator_guide() {
    let rules = read(&deploy("prometheus/email-verdict.rules.yml"));
    let guide = read(&workspace_root().join("docs/operator-guide.md"));
    // (anchor as GitHub makes it, the heading's text)
    let headings: Vec<(String, &str)> = guide
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(|h| (h.trim().to_lowercase().chars().filter(|c| c.is_alphanumeric() || *c == '-').collect(), h.trim()))
        .collect();
    for (name, rule) in alerts(&rules) {
        let severity = rule.lines().find_map(|l| l.strip_prefix("severity: ")).unwrap_or_default();
        assert!(["critical", "warning"].contains(&severity), "{name}: severity {severity:?}");
        for field in ["summary: ", "description: "] {
            assert!(rule.contains(field), "{name}: no {field}");
        }
        let url = rule.lines().find_map(|l| l.strip_prefix("runbook_url: ")).unwrap_or_default();
        let anchor =
            url.strip_prefix("docs/operator-guide.md#").unwrap_or_else(|| panic!("{name}: runbook_url {url:?}"));
        let heading = headings.iter().find(|(a, _)| a == anchor).map(|(_, h)| *h);
        let heading = heading.unwrap_or_else(|| panic!("{name}: no heading for #{anchor} in docs/operator-guide.md"));
        // The section says what it means, how to confirm it and what to do (a slow burn shares
        // its fast alert's section, which names both).
        let section = guide.split(&format!("### {heading}\n")).nth(1).unwrap_or_default();
        let section = section.split("\n### ").next().unwrap_or_default();
        for part in ["**Means**", "**Confirm**", "**Act**"] {
            assert!(section.contains(part), "the runbook of {name} lacks {part}");
        }
        assert!(
            heading == name || section.contains(&format!("`{name}`")),
            "the runbook under {heading} names not {name}"
        );
    }
}

#[test]
fn the_prometheus_rule_holds_the_same_groups() {
    let rules = read(&deploy("prometheus/email-verdict.rules.yml"));
    let operator = read(&deploy("kubernetes/prometheusrule.yaml"));
    let groups = &rules[rules.find("\ngroups:").expect("groups:") + 1..];
    let indented: String =
        groups.lines().map(|l| if l.trim().is_empty() { "\n".to_owned() } else { format!("  {l}\n") }).collect();
    let spec = operator.split_once("\nspec:\n").map(|(_, s)| s).expect("spec:");
    assert!(
        spec == indented,
        "deploy/kubernetes/prometheusrule.yaml is stale: run python3 scripts/render-prometheusrule.py"
    );
    for want in ["apiVersion: monitoring.coreos.com/v1\n", "kind: PrometheusRule\n", "  name: email-verdict\n"] {
        assert!(operator.contains(want), "{want:?}");
    }
}

#[test]
fn the_monitors_scrape_under_the_jobs_the_rules_use() {
    let monitors = read(&deploy("kubernetes/monitors.yaml"));
    let docs: Vec<&str> = monitors.split("\n---\n").collect();
    assert_eq!(docs.len(), 3, "the sidecar, Istio's proxies, Envoy Gateway's proxies");
    let mut jobs = Vec::new();
    for doc in docs {
        for want in ["apiVersion: monitoring.coreos.com/v1", "kind: PodMonitor", "  namespace: ", "  selector:"] {
            assert!(doc.contains(want), "{want:?} in\n{doc}");
        }
        assert!(doc.contains("podMetricsEndpoints:\n    - port: "), "{doc}");
        let job = doc.split("targetLabel: job\n").nth(1).and_then(|r| r.lines().next()).unwrap_or_default();
        jobs.push(job.trim().trim_start_matches("replacement: ").to_owned());
        let path = if jobs.last().is_some_and(|j| j == "email-verdict") { "/metrics" } else { "/stats/prometheus" };
        assert!(doc.contains(&format!("path: {path}\n")), "{doc}");
    }
    assert_eq!(jobs, ["email-verdict", "email-verdict-envoy", "email-verdict-envoy"]);
    let rules = read(&deploy("prometheus/email-verdict.rules.yml"));
    for job in ["up{job=\"email-verdict\"}", "up{job=\"email-verdict-envoy\"}"] {
        assert!(rules.contains(job), "{job}");
    }
    let plain = read(&deploy("prometheus/prometheus.yml"));
    for job in ["job_name: email-verdict\n", "job_name: email-verdict-envoy\n", "email-verdict.rules.yml"] {
        assert!(plain.contains(job), "{job:?} in deploy/prometheus/prometheus.yml");
    }
}

#[test]
fn the_dashboard_is_importable_and_every_panel_says_what_it_shows() {
    let text = read(&deploy("grafana/email-verdict.json"));
    let dash: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    assert_eq!(dash["uid"], "email-verdict");
    assert!(dash["id"].is_null(), "no instance id: Grafana assigns one on import");
    assert!(dash.get("__inputs").is_none(), "imported as is: a data source variable, no import inputs");
    let vars = dash["templating"]["list"].as_array().expect("templating");
    assert!(
        vars.iter().any(|v| v["type"] == "datasource" && v["name"] == "datasource" && v["query"] == "prometheus"),
        "a Prometheus data source variable"
    );
    let panels = dash["panels"].as_array().expect("panels");
    let mut ids = std::collections::HashSet::new();
    let mut queries = 0;
    for p in panels {
        let title = p["title"].as_str().unwrap_or_default();
        assert!(!title.is_empty(), "a panel without a title: {p}");
        assert!(ids.insert(p["id"].as_u64().expect("an id")), "id of {title} used twice");
        if p["type"] == "row" {
            continue;
        }
        let desc = p["description"].as_str().unwrap_or_default();
        assert!(desc.len() >= 60, "{title}: describe it in words an operator uses");
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{title}");
        for t in p["targets"].as_array().expect("targets") {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{title}");
            assert!(!t["expr"].as_str().unwrap_or_default().is_empty(), "{title}");
            queries += 1;
        }
    }
    assert!(queries >= 40, "{queries} queries");
}

#[test]
fn the_annotation_filter_keeps_everything_else() {
    let rules = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: x > 1\n        annotations:\n          summary: >-\n            s\n\n          runbook_url: u\n      - alert: B\n        expr: y\n";
    assert_eq!(
        without_annotations(rules),
        "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: x > 1\n      - alert: B\n        expr: y\n"
    );
}
