#!/usr/bin/env python3
"""Writes deploy/kubernetes/prometheusrule.yaml: the groups of deploy/prometheus/email-verdict.rules.yml,
unchanged, as a PrometheusRule for the Prometheus Operator. Text only (no YAML library): the
rules file's `groups:` and everything after it, indented under `spec:`.
tests/tests/oncall_rules.rs makes the same transformation and fails when the file is stale.

    python3 scripts/render-prometheusrule.py
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy/prometheus/email-verdict.rules.yml"
OUT = ROOT / "deploy/kubernetes/prometheusrule.yaml"

HEADER = """\
# Generated from deploy/prometheus/email-verdict.rules.yml by scripts/render-prometheusrule.py:
# edit the rules there, then run the script (a test fails when this file is stale).
#
# The same alert and recording rules for the Prometheus Operator. Its `ruleSelector` must match
# these labels (kube-prometheus-stack's default selects `release: <its release name>`: add that
# label here, or set ruleSelectorNilUsesHelmValues=false). The rules expect the sidecar's job to
# be "email-verdict" and the proxies' "email-verdict-envoy": monitors.yaml sets both.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: email-verdict
  labels:
    app.kubernetes.io/name: email-verdict
    app.kubernetes.io/component: alerting
spec:
"""


def render(rules: str) -> str:
    start = rules.index("\ngroups:") + 1
    body = "".join(("  " + line if line.strip() else line) for line in rules[start:].splitlines(keepends=True))
    return HEADER + body


if __name__ == "__main__":
    OUT.write_text(render(RULES.read_text()))
    print(f"wrote {OUT.relative_to(ROOT)}")
