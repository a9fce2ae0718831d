#!/usr/bin/env python3
"""Validates every Kubernetes manifest in envoy/istio/, envoy/gateway/ and deploy/kubernetes/ against the schemas of
registry packages, and prints one line per YAML document:

    FILE  KIND  NAME  ok (what it was validated against)
    FILE  KIND  NAME  no schema (why)
    FILE  KIND  NAME  ERROR (against what), then one indented line per error: FIELD: MESSAGE

Exit status: 0 when no document has an error, 1 when one has, 2 when the validators are missing
(run scripts/install-deps.sh). Run it with the project's .venv python:

    .venv/bin/python3 scripts/validate-manifests.py [FILE.yaml ...]

Built-in kinds (Namespace, Deployment, Service, Secret, PersistentVolumeClaim, ConfigMap, ...):
PyPI `kubernetes-validate` (in .venv; pinned in scripts/install-deps.sh), which ships the upstream
JSON schemas of each Kubernetes version; its `-strict` schemas, so an unknown field is an error
(as `kubectl apply`'s default --validate=strict makes it).

Custom resources (Istio, Gateway API, Envoy Gateway): the npm packages
@kubernetes-models/{istio,gateway-api,envoy-gateway}, installed from
tests/fixtures/k8s-schemas/package-lock.json into tests/fixtures/k8s-schemas/node_modules by
scripts/install-deps.sh (tests/fixtures/k8s-schemas/README.md). Each ships every CRD's
openAPIV3Schema compiled by ajv into a JavaScript validate function, run here with node. Those
check types, enums, required fields, patterns, formats and bounds, but not unknown fields (a CRD
schema does not forbid them: the API server prunes them, or refuses them under strict field
validation). This script adds that check: the validator runs on a Proxy of the document that
records which keys it looks up in each object, and a key of an object the validator looked into
but never looked up is a field the schema does not declare. An object the validator never looks
into (x-kubernetes-preserve-unknown-fields: a WasmPlugin's pluginConfig, an EnvoyFilter patch's
value, an EnvoyPatchPolicy's value) is free-form and not checked; a map (additionalProperties)
is checked value by value.

A document without apiVersion/kind is checked only when PARTIALS below says what it patches
(envoy/istio/app-proxy-env.yaml, a strategic-merge patch of a Deployment): against that kind's
strict schema with the `required` rule ignored. A kind no package has a schema for is printed as
`no schema (...)`, never counted as validated.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST_DIRS = ["envoy/istio", "envoy/gateway", "deploy/kubernetes"]
# The Kubernetes version whose schemas built-in kinds are checked against: the newest that the
# pinned kubernetes-validate ships.
KUBERNETES_VERSION = "1.37"
SCHEMAS_DIR = ROOT / "tests/fixtures/k8s-schemas"
NODE_MODULES = SCHEMAS_DIR / "node_modules"

# Documents that are patches, not resources: file -> (apiVersion, kind, what it is).
PARTIALS = {
    "envoy/istio/app-proxy-env.yaml": (
        "apps/v1",
        "Deployment",
        "strategic-merge patch of a Deployment, checked as a partial Deployment",
    ),
    "envoy/istio/app-proxy-module.yaml": (
        "apps/v1",
        "Deployment",
        "strategic-merge patch of a Deployment, checked as a partial Deployment",
    ),
}

# Custom resource groups -> (npm package, the prefix of its compiled schema modules). A module is
# node_modules/PACKAGE/_schemas/PREFIX + Version + Kind + ".js", e.g.
# @kubernetes-models/istio/_schemas/NetworkingIstioIoV1alpha3EnvoyFilter.js.
CRD_GROUPS = {
    "networking.istio.io": ("@kubernetes-models/istio", "NetworkingIstioIo"),
    "security.istio.io": ("@kubernetes-models/istio", "SecurityIstioIo"),
    "extensions.istio.io": ("@kubernetes-models/istio", "ExtensionsIstioIo"),
    "telemetry.istio.io": ("@kubernetes-models/istio", "TelemetryIstioIo"),
    "gateway.networking.k8s.io": ("@kubernetes-models/gateway-api", "IoK8sSigsGatewayApiApis"),
    "gateway.envoyproxy.io": ("@kubernetes-models/envoy-gateway", "ComGithubEnvoyproxyGatewayApi"),
    "monitoring.coreos.com": (
        "@kubernetes-models/prometheus-operator",
        "ComGithubPrometheusOperatorPrometheusOperatorPkgApisMonitoring",
    ),
}

# What each package's schemas were generated from (printed with the package's version; the
# Istio release is read from the package). Keep in step with tests/fixtures/k8s-schemas/.
UPSTREAM = {
    "@kubernetes-models/istio": "Istio CRDs",
    "@kubernetes-models/gateway-api": "Gateway API Go types, sigs.k8s.io/gateway-api v1.5",
    "@kubernetes-models/envoy-gateway": "Envoy Gateway Go types, github.com/envoyproxy/gateway v1.7",
    "@kubernetes-models/prometheus-operator": "Prometheus Operator Go types (pkg/apis/monitoring/v1)",
}

# Fields a manifest uses on purpose that the package's schema is too old to know: (kind, field)
# -> why. Such a field is not an error; the line says it was not checked. Anything else the
# schema does not declare is an error.
NEWER_THAN_SCHEMA = {
    ("SecurityPolicy", "spec.extAuth.statusOnError"):
        "Envoy Gateway >= v1.8 (the schema package is generated from v1.7)",
    # envoy/gateway/module.yaml: the dynamic module's registration and its use. Everything else
    # in those two documents is checked; these fields (the point of the file) are not.
    ("EnvoyProxy", "spec.dynamicModules"):
        "no schema: @kubernetes-models/envoy-gateway 2.0.0 predates dynamicModules "
        "(Envoy Gateway after v1.9, api/v1alpha1/dynamic_module_types.go)",
    ("EnvoyExtensionPolicy", "spec.dynamicModule"):
        "no schema: @kubernetes-models/envoy-gateway 2.0.0 predates dynamicModule "
        "(Envoy Gateway after v1.9, api/v1alpha1/dynamic_module_types.go)",
}

# Runs the compiled validators. stdin: {"jobs": [{"module": PATH, "data": DOC}, ...]};
# stdout: [{"errors": [{"path", "message"}], "unknown": [FIELD, ...]}, ...] in the same order.
NODE_VALIDATOR = r"""
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const input = JSON.parse(readFileSync(0, "utf8"));
const load = (p) => import(pathToFileURL(p).href);
const localize = (await load(path.join(input.node_modules, "ajv-i18n/localize/en/index.js"))).default;

function fieldPath(pointer) {
  // "/spec/rules/0/to" -> "spec.rules[0].to"
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(seg) ? `[${seg}]` : (out ? "." : "") + seg;
  }
  return out || "(document)";
}

const results = [];
for (const job of input.jobs) {
  const { validate } = await load(job.module);
  // Every object and array of the document, with the keys the validator looked up in it.
  const seen = new WeakMap();
  const proxies = new WeakMap();
  const wrap = (value) => {
    if (value === null || typeof value !== "object") return value;
    let proxy = proxies.get(value);
    if (proxy) return proxy;
    const t = { keys: new Set(), enumerated: false };
    seen.set(value, t);
    proxy = new Proxy(value, {
      get(o, k) { if (typeof k === "string") t.keys.add(k); return wrap(Reflect.get(o, k)); },
      has(o, k) { if (typeof k === "string") t.keys.add(k); return Reflect.has(o, k); },
      ownKeys(o) { t.enumerated = true; return Reflect.ownKeys(o); },
    });
    proxies.set(value, proxy);
    return proxy;
  };
  const ok = validate(wrap(job.data));
  const errors = ok ? [] : [...(validate.errors || [])];
  localize(errors);
  const unknown = [];
  const walk = (value, at) => {
    if (value === null || typeof value !== "object") return;
    const t = seen.get(value);
    if (!t) return; // the validator never reached it
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, `${at}[${i}]`));
      return;
    }
    // Looked into (some key looked up) and not a map (keys not enumerated): a closed object.
    const closed = t.keys.size > 0 && !t.enumerated;
    for (const k of Object.keys(value)) {
      const field = at ? `${at}.${k}` : k;
      if (closed && !t.keys.has(k)) unknown.push(field);
      else walk(value[k], field);
    }
  };
  walk(job.data, "");
  results.push({
    errors: errors.map((e) => ({
      path: fieldPath(e.instancePath),
      message: e.message + (e.params && e.params.allowedValues
        ? ` (${e.params.allowedValues.map((v) => JSON.stringify(v)).join(", ")})` : ""),
    })),
    unknown,
  });
}
process.stdout.write(JSON.stringify(results));
"""


class Missing(Exception):
    """A validator is not installed."""


def package_version(package):
    manifest = NODE_MODULES / package / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except FileNotFoundError:
        raise Missing(f"{manifest} not found: run scripts/install-deps.sh")


def package_upstream(package):
    """What PACKAGE's schemas come from; for Istio, the release its CRD files were read from."""
    text = UPSTREAM[package]
    if package == "@kubernetes-models/istio":
        inputs = json.loads((NODE_MODULES / package / "package.json").read_text())
        for url in inputs.get("crd-generate", {}).get("input", []):
            if "crd-all" in url:  # .../istio/istio/1.29.2/manifests/charts/base/files/crd-all.gen.yaml
                text += " " + url.split("/istio/istio/")[1].split("/")[0]
    return text


def field_of(error):
    """The dotted field path of a jsonschema error."""
    out = ""
    for seg in error.absolute_path:
        out += f"[{seg}]" if isinstance(seg, int) else ("." if out else "") + str(seg)
    return out or "(document)"


class BuiltIn:
    """kubernetes-validate's strict schemas for one Kubernetes version."""

    def __init__(self):
        try:
            import jsonschema  # noqa: F401  (kubernetes-validate's dependency)
            import kubernetes_validate.utils as kv
        except ImportError:
            raise Missing(
                f"kubernetes-validate is not importable by {sys.executable}: run "
                "scripts/install-deps.sh and use .venv/bin/python3"
            )
        import importlib.metadata

        self.kv = kv
        self.label = (
            f"PyPI kubernetes-validate@{importlib.metadata.version('kubernetes-validate')}, "
            f"Kubernetes {KUBERNETES_VERSION} strict"
        )
        version = [v for v in kv.all_versions() if kv.major_minor(v) == KUBERNETES_VERSION]
        if not version:
            raise Missing(f"kubernetes-validate ships no Kubernetes {KUBERNETES_VERSION} schemas")
        self.dir = f"kubernetes-json-schema/v{version[-1]}-local-strict"

    def schema_file(self, api_version, kind):
        # As kubernetes-validate names them: apps/v1 -> apps-v1, rbac.authorization.k8s.io/v1 -> rbac-v1.
        group, _, version = api_version.rpartition("/")
        prefix = f"{group.split('.')[0]}-{version}" if group else version
        return f"{self.dir}/{kind.lower()}-{prefix}.json"

    def has(self, api_version, kind):
        import importlib_resources

        ref = importlib_resources.files("kubernetes_validate").joinpath(
            self.schema_file(api_version, kind)
        )
        return ref.is_file()

    def errors(self, doc, ignore_required=False):
        import jsonschema
        from referencing import Registry, Resource

        schema = self.kv.schema_contents(self.schema_file(doc["apiVersion"], doc["kind"]), KUBERNETES_VERSION)
        defs = self.kv.schema_contents(f"{self.dir}/_definitions.json", KUBERNETES_VERSION)
        registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
        validator = jsonschema.Draft202012Validator(schema, registry=registry)
        out = []
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
            if ignore_required and e.validator == "required":
                continue
            out.append((field_of(e), e.message))
        return out


def crd_module(api_version, kind):
    """(package, module path) of the compiled schema of a custom resource kind, or None."""
    group, _, version = api_version.rpartition("/")
    if group not in CRD_GROUPS:
        return None
    package, prefix = CRD_GROUPS[group]
    module = NODE_MODULES / package / "_schemas" / f"{prefix}{version[:1].upper()}{version[1:]}{kind}.js"
    return package, module


def documents(files):
    import yaml

    for f in files:
        rel = f.relative_to(ROOT).as_posix() if f.is_absolute() and ROOT in f.parents else str(f)
        with open(f) as fh:
            for doc in yaml.safe_load_all(fh):
                if doc is not None:  # an empty document (only comments)
                    yield rel, doc


def main(argv):
    files = [Path(a).resolve() for a in argv] or sorted(
        p for d in MANIFEST_DIRS for p in (ROOT / d).glob("*.yaml")
    )
    try:
        builtin = BuiltIn()
    except Missing as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    rows = []  # [file, kind, name, status, [error lines]]
    crd_jobs = []  # (row, package, module, doc)
    for rel, doc in documents(files):
        if not isinstance(doc, dict):
            rows.append([rel, "?", "?", "ERROR (not a mapping)", [f"(document): {type(doc).__name__}"]])
            continue
        kind = doc.get("kind")
        api_version = doc.get("apiVersion")
        name = (doc.get("metadata") or {}).get("name", "-")
        ignore_required = False
        note = ""
        if kind is None or api_version is None:
            if rel not in PARTIALS:
                rows.append([rel, "?", name, "no schema (no apiVersion/kind, and not a known patch)", []])
                continue
            api_version, kind, note = PARTIALS[rel]
            doc = {"apiVersion": api_version, "kind": kind, **doc}
            ignore_required = True
            name = "(patch)"
        row = [rel, kind, name, None, []]
        rows.append(row)
        found = crd_module(api_version, kind)
        if found is None and builtin.has(api_version, kind):
            errs = builtin.errors(doc, ignore_required)
            against = builtin.label + (f"; {note}" if note else "")
            row[3] = f"ERROR (against {against})" if errs else f"ok ({against})"
            row[4] = [f"{field}: {msg}" for field, msg in errs]
            continue
        if found is None:
            row[3] = (
                f"no schema (kubernetes-validate {KUBERNETES_VERSION} has no {api_version} {kind}, "
                "and no custom resource package covers its group)"
            )
            continue
        package, module = found
        try:
            version = package_version(package)
        except Missing as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if not module.is_file():
            row[3] = f"no schema ({package}@{version} has no {api_version} {kind})"
            continue
        crd_jobs.append((row, package, version, module, doc))

    if crd_jobs:
        node = os.environ.get("NODE") or shutil.which("node")
        if not node:
            print("error: node not found (scripts/install-deps.sh installs it)", file=sys.stderr)
            return 2
        payload = {
            "node_modules": str(NODE_MODULES),
            "jobs": [{"module": str(module), "data": doc} for _, _, _, module, doc in crd_jobs],
        }
        proc = subprocess.run(
            [node, "--input-type=module", "-e", NODE_VALIDATOR],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=SCHEMAS_DIR,
        )
        if proc.returncode != 0:
            print(f"error: the node validator failed (exit {proc.returncode}):\n{proc.stderr}", file=sys.stderr)
            return 2
        for (row, package, version, _, _), result in zip(crd_jobs, json.loads(proc.stdout)):
            kind = row[1]
            against = f"npm {package}@{version}, {package_upstream(package)}"
            errs = [f"{e['path']}: {e['message']}" for e in result["errors"]]
            unchecked = []
            for field in result["unknown"]:
                why = NEWER_THAN_SCHEMA.get((kind, field))
                if why:
                    unchecked.append(f"{field}: {why}")
                else:
                    errs.append(f"{field}: unknown field (not in the schema)")
            if unchecked:
                against += "; not in the schema, so not checked: " + "; ".join(unchecked)
            row[3] = f"ERROR (against {against})" if errs else f"ok ({against})"
            row[4] = errs

    failed = 0
    for f, kind, name, status, errs in rows:
        print(f"{f}  {kind}  {name}  {status}")
        for e in errs:
            print(f"    {e}")
        failed += bool(errs)
    skipped = sum(1 for r in rows if r[3].startswith("no schema"))
    print(
        f"{len(rows)} documents: {len(rows) - skipped - failed} valid, {failed} with errors, "
        f"{skipped} without a schema"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
