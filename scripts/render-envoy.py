#!/usr/bin/env python3
"""Renders envoy/envoy.template.yaml into a concrete Envoy configuration.

    scripts/render-envoy.py                      # the defaults: what envoy/envoy.yaml holds
    scripts/render-envoy.py -o envoy/envoy.yaml  # regenerate it (make envoy-config)
    scripts/render-envoy.py --template envoy/module.template.yaml -o envoy/module.yaml  # the module's
    scripts/render-envoy.py --tracing otel-collector:4317  # Envoy's spans to that OTLP/gRPC port
    scripts/render-envoy.py --set LISTEN_PORT=10001 --set WASM_FILE=/abs/x.wasm \\
        --plugin-config my-config.json -o /tmp/envoy.yaml

Every {{NAME}} of the template must get a value (defaults below, --set overrides) and every
--set must name a placeholder: a typo fails instead of silently leaving a default. A placeholder
alone on its line takes a multi-line value indented to its column (the plugin config's JSON in a
YAML block scalar). The template's leading comment block is replaced by a short header.
Standard library only (used by `make demo` and the end-to-end tests).
"""

import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "envoy", "envoy.template.yaml")
MODULE_TEMPLATE = os.path.join(ROOT, "envoy", "module.template.yaml")
PLUGIN_CONFIG = os.path.join(ROOT, "envoy", "plugin-config.json")

DEFAULTS = {
    "LISTEN_ADDRESS": "127.0.0.1",
    "LISTEN_PORT": "10000",
    "ADMIN_PORT": "9901",
    "SIDECAR_ADDRESS": "127.0.0.1",
    "SIDECAR_PORT": "8080",
    "APP_ADDRESS": "127.0.0.1",
    "APP_PORT": "3000",
    # the app's gRPC service (cluster app_grpc, HTTP/2): envoy/envoy.template.yaml,
    # envoy/module.template.yaml and envoy/ext-authz.template.yaml
    "GRPC_APP_ADDRESS": "127.0.0.1",
    "GRPC_APP_PORT": "50051",
    "WASM_FILE": "target/email_verdict_filter.wasm",
    # envoy/module.template.yaml only (`make module` copies the shared object there)
    "MODULE_FILE": "target/libemail_verdict_filter.so",
    # envoy/ext-authz.template.yaml only
    # /signup in any case, with a trailing slash or sub-path, ;params (or an encoded %3B) or a
    # .suffix; also after any earlier segment holding a ;param (`/;x/signup`, `/%3Bx/signup`,
    # `/x/..;/signup`), which servlet containers drop before routing.
    "SIGNUP_PATH_REGEX": r"(?i)(?:.*(?:;|%3b).*)?/signup(?:(?:[/;.]|%3b).*)?",
    "FAILURE_MODE_ALLOW": "false",
    # Proxies in front of Envoy that append to X-Forwarded-For (0: the client is the TCP peer).
    "XFF_NUM_TRUSTED_HOPS": "0",
    # The OpenTelemetry collector's OTLP/gRPC port, used only with --tracing (which sets them).
    "OTLP_ADDRESS": "127.0.0.1",
    "OTLP_PORT": "4317",
}

# envoy/*-grpc.template.yaml: the port of `serve --ext-authz-grpc-listen` in the docs' examples.
GRPC_PORT = "8082"

PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")

EXT_AUTHZ_GRPC_HEADER = """\
# Envoy in front of a signup app, enforcing with Envoy's ext_authz filter over gRPC
# (envoy.service.auth.v3.Authorization/Check) and the email-verdict sidecar's gRPC listener
# (serve --ext-authz-grpc-listen), no Wasm module.
# GENERATED from {TEMPLATE} by scripts/render-envoy.py: edit the
# template (its own leading comment says what it reproduces), then render it again.
#
# Listener {LISTEN_ADDRESS}:{LISTEN_PORT}, admin 127.0.0.1:{ADMIN_PORT}, sidecar gRPC {SIDECAR_ADDRESS}:{SIDECAR_PORT},
# app {APP_ADDRESS}:{APP_PORT}.
# The key comes from Envoy's environment (EMAIL_VERDICT_API_KEY), never from this file.
"""

EXT_AUTHZ_HEADER = """\
# Envoy in front of a signup app, enforcing with Envoy's HTTP ext_authz filter and the
# email-verdict sidecar's /ext_authz endpoint (no Wasm module).
# GENERATED from {TEMPLATE} by scripts/render-envoy.py: edit the
# template (its own leading comment says what it reproduces), then render it again.
#
# Listener {LISTEN_ADDRESS}:{LISTEN_PORT}, admin 127.0.0.1:{ADMIN_PORT}, sidecar {SIDECAR_ADDRESS}:{SIDECAR_PORT},
# app {APP_ADDRESS}:{APP_PORT}.
# The key comes from Envoy's environment (EMAIL_VERDICT_API_KEY), never from this file.
"""

HEADER = """\
# Envoy in front of a signup app, with the email-verdict filter on every request whose method a
# signup route of the plugin config names (it matches the paths itself).
# GENERATED from envoy/envoy.template.yaml by scripts/render-envoy.py: edit the template (and
# envoy/plugin-config.json), then `make envoy-config`.
#
# Listener {LISTEN_ADDRESS}:{LISTEN_PORT}, admin 127.0.0.1:{ADMIN_PORT}, sidecar (cluster email_verdict)
# {SIDECAR_ADDRESS}:{SIDECAR_PORT}, app (cluster app) {APP_ADDRESS}:{APP_PORT}, its gRPC service
# (cluster app_grpc, HTTP/2) {GRPC_APP_ADDRESS}:{GRPC_APP_PORT}, filter module {WASM_FILE}.
# A relative module path is resolved against Envoy's working directory: run from the repo root:
#   make filter
#   EMAIL_VERDICT_API_KEY=ev_... "$(scripts/envoy-path.sh)" -c envoy/envoy.yaml
# The filter refuses to start without that variable (also under --mode validate, which
# configures the filter): the key comes from the environment, never from this file.
"""

GENERATED_MODULE_HEADER = """\
# Envoy in front of a signup app, with the email-verdict filter as an Envoy DYNAMIC MODULE, in the
# shape a control plane generates for the shipped manifests.
# GENERATED from {TEMPLATE} by scripts/render-envoy.py: edit the
# template (its own leading comment says what it reproduces), then render it again.
#
# Listener {LISTEN_ADDRESS}:{LISTEN_PORT}, admin 127.0.0.1:{ADMIN_PORT}, sidecar {SIDECAR_ADDRESS}:{SIDECAR_PORT},
# app {APP_ADDRESS}:{APP_PORT}.
# The key comes from Envoy's environment (EMAIL_VERDICT_API_KEY), never from this file.
"""

MODULE_HEADER = """\
# Envoy in front of a signup app, with the email-verdict filter as an Envoy DYNAMIC MODULE (a
# native shared object, no Wasm) on every request whose method a signup route of the plugin
# config names (it matches the paths itself).
# GENERATED from envoy/module.template.yaml by scripts/render-envoy.py: edit the template (and
# envoy/plugin-config.json), then `make envoy-config`.
#
# Listener {LISTEN_ADDRESS}:{LISTEN_PORT}, admin 127.0.0.1:{ADMIN_PORT}, sidecar (cluster email_verdict)
# {SIDECAR_ADDRESS}:{SIDECAR_PORT}, app (cluster app) {APP_ADDRESS}:{APP_PORT}, its gRPC service
# (cluster app_grpc, HTTP/2) {GRPC_APP_ADDRESS}:{GRPC_APP_PORT}, module {MODULE_FILE}.
# A relative module path is resolved against Envoy's working directory: run from the repo root:
#   make module
#   EMAIL_VERDICT_API_KEY=ev_... "$(scripts/envoy-path.sh)" -c envoy/module.yaml
# The filter refuses its configuration without that variable (also under --mode validate): the
# key comes from Envoy's environment, never from this file.
"""


def render(template, values, header=HEADER, template_path=TEMPLATE):
    # Drop the template's own leading comment block (it documents the placeholders).
    lines = template.splitlines(keepends=True)
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    body = "".join(lines)
    used = set()

    def substitute_line(line):
        stripped = line.strip()
        m = PLACEHOLDER.fullmatch(stripped)
        if m:  # alone on the line: a multi-line value keeps the indentation
            name = m.group(1)
            if name not in values:
                raise KeyError(name)
            used.add(name)
            indent = line[: len(line) - len(line.lstrip())]
            value = values[name].rstrip("\n").split("\n")
            return "".join(indent + v + "\n" if v else "\n" for v in value)

        def one(m):
            name = m.group(1)
            if name not in values:
                raise KeyError(name)
            used.add(name)
            v = values[name]
            if "\n" in v:
                raise ValueError(f"{{{{{name}}}}} has a multi-line value but is not alone on its line")
            return v

        return PLACEHOLDER.sub(one, line)

    out = "".join(substitute_line(l) for l in body.splitlines(keepends=True))
    header = header.format(**values, TEMPLATE=os.path.relpath(template_path, ROOT))
    return header + "\n" + out, used


TRACING_START = re.compile(r"^\s*# >>> tracing\b")
TRACING_END = re.compile(r"^\s*# <<< tracing\b")


def enable_tracing(text):
    """Uncomments each `# >>> tracing` ... `# <<< tracing` block of a rendered configuration
    (the tracer in the HCM and its collector cluster); a template without one is an error."""
    out, inside, blocks = [], False, 0
    for line in text.splitlines(keepends=True):
        if TRACING_START.match(line):
            inside, blocks = True, blocks + 1
        elif TRACING_END.match(line):
            inside = False
        elif inside:
            indent = line[: len(line) - len(line.lstrip())]
            rest = line.lstrip()
            if not rest.startswith("# "):
                raise ValueError(f"a line of a tracing block is not commented: {line.strip()!r}")
            line = indent + rest[2:]
        out.append(line)
    if blocks == 0:
        raise ValueError("the template has no tracing block")
    return "".join(out)


def signup_method_regex(config):
    """The RE2 regex (Envoy full-matches it) for the methods the plugin config's signup_routes
    name: the route that runs the filter. Derived, so the two cannot drift apart. A config
    without any (which the filter itself rejects, naming the field) gets every method."""
    routes = config.get("signup_routes") if isinstance(config, dict) else None
    routes = routes if isinstance(routes, list) else []
    methods = sorted({r["method"].upper() for r in routes if isinstance(r, dict) and isinstance(r.get("method"), str)})
    if not methods:
        return ".+"
    return "(?i)(?:" + "|".join(re.escape(m) for m in methods) + ")"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a placeholder's value")
    ap.add_argument("--plugin-config", default=PLUGIN_CONFIG, metavar="FILE", help="the filter's JSON config")
    ap.add_argument("--template", default=TEMPLATE, metavar="FILE")
    ap.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    ap.add_argument(
        "--tracing", metavar="HOST:PORT", help="turn Envoy's OpenTelemetry tracer on, exporting to this OTLP/gRPC port"
    )
    args = ap.parse_args(argv)

    values = dict(DEFAULTS)
    explicit = set()
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--set {item!r}: expected NAME=VALUE")
        values[name] = value
        explicit.add(name)
    with open(args.plugin_config, encoding="utf-8") as f:
        text = f.read()
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        ap.error(f"{args.plugin_config}: not JSON: {e}")
    values["PLUGIN_CONFIG"] = json.dumps(config, indent=2, ensure_ascii=False)
    values["SIGNUP_METHOD_REGEX"] = signup_method_regex(config)
    if args.tracing:
        host, sep, port = args.tracing.rpartition(":")
        if not sep or not host or not port.isdigit():
            ap.error(f"--tracing {args.tracing!r}: expected HOST:PORT")
        values["OTLP_ADDRESS"], values["OTLP_PORT"] = host.strip("[]"), port

    with open(args.template, encoding="utf-8") as f:
        template = f.read()
    try:
        # The other templates are the control planes' shapes: *-module.template.yaml with the
        # dynamic module, the others Envoy's ext_authz against the sidecar.
        template_path = os.path.abspath(args.template)
        if template_path == TEMPLATE:
            header = HEADER
        elif template_path == MODULE_TEMPLATE:
            header = MODULE_HEADER
        elif os.path.basename(template_path).endswith("-module.template.yaml"):
            header = GENERATED_MODULE_HEADER
        elif os.path.basename(template_path).endswith("-grpc.template.yaml"):
            header = EXT_AUTHZ_GRPC_HEADER
            # The sidecar's gRPC listener, not its HTTP one (docs/gateway.md).
            if "SIDECAR_PORT" not in explicit:
                values["SIDECAR_PORT"] = GRPC_PORT
        else:
            header = EXT_AUTHZ_HEADER
        out, used = render(template, values, header, template_path)
        if args.tracing:
            out = enable_tracing(out)
    except KeyError as e:
        ap.error(f"the template uses {{{{{e.args[0]}}}}} but it has no value")
    except ValueError as e:
        ap.error(str(e))
    # A --set the template has no placeholder for is a typo; a default it does not use is not.
    unused = sorted(explicit - used)
    if unused:
        ap.error(f"no placeholder named {', '.join(unused)} in {args.template}")

    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(out)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(out)


if __name__ == "__main__":
    main(sys.argv[1:])
