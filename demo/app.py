#!/usr/bin/env python3
"""The demo signup app behind Envoy (standard library only).

    python3 demo/app.py [--listen 127.0.0.1:3000]

GET /         a short page saying what this is
POST /signup  "signs up" whoever is in the body (JSON {"email": ...}, a urlencoded or a
              multipart form field email) and answers JSON echoing what it received, above all the
              x-email-* headers that the email-verdict filter in Envoy added
anything else 404 JSON

It trusts the x-email-* headers because Envoy's filter removes any copy a client sends; an app
reachable without the gateway must not.
"""

import argparse
import email.parser
import email.policy
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>email-verdict demo app</title></head>
<body>
<h1>Signup demo</h1>
<p>This app sits behind Envoy. Envoy's email-verdict filter checks the email of every
<code>POST /signup</code>: a disposable address is refused before it gets here; any other arrives
with <code>x-email-verdict</code>, <code>x-email-domain</code> and <code>x-email-flags</code> headers,
<code>x-email-normalized</code>, <code>x-email-role</code> and <code>x-email-relay</code> (the address as the
provider delivers it, a role account, a relay service),
and <code>x-email-suggestion</code> (a provider's domain) when the domain looks like a typo of one.</p>
<form method="post" action="/signup">
  <input name="email" type="email" placeholder="you@example.com" required>
  <button>Sign up</button>
</form>
</body></html>
"""


def did_you_mean(email, suggested_domain):
    """The address to offer back: the gateway passes only the suggested domain (the local part
    never leaves the proxy), so the app puts the local part it received in front of it."""
    if not email or not suggested_domain or "@" not in email:
        return None
    return email.rsplit("@", 1)[0] + "@" + suggested_domain


def email_headers(headers):
    return {k.lower(): v for k, v in headers.items() if k.lower().startswith("x-email-")}


def parse_body(content_type, raw):
    """Returns (fields, error): the body's fields as a dict, as the app sees them."""
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype == "application/json":
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            return None, f"body is not JSON: {e}"
        return value if isinstance(value, dict) else {"value": value}, None
    if ctype == "application/x-www-form-urlencoded":
        pairs = urllib.parse.parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
        return dict(pairs), None
    if ctype == "multipart/form-data":
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + raw
        )
        fields = {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name:
                fields[name] = part.get_content() if part.get_content_maintype() == "text" else "(binary)"
        return fields, None
    return {}, None if not raw else f"unsupported content-type {content_type!r}"


class Handler(BaseHTTPRequestHandler):
    server_version = "email-verdict-demo-app"
    protocol_version = "HTTP/1.1"

    def send_json(self, status, value):
        body = (json.dumps(value, indent=2) + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.split("?")[0] == "/":
            body = PAGE.encode("utf-8")
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_json(404, {"error": "not_found", "path": self.path})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?")[0] != "/signup":
            self.send_json(404, {"error": "not_found", "path": self.path})
            return
        fields, error = parse_body(self.headers.get("content-type"), raw)
        if error:
            self.send_json(400, {"error": "bad_request", "message": error})
            return
        verdict = self.headers.get("x-email-verdict")
        self.send_json(
            200,
            {
                "signed_up": fields.get("email"),
                "did_you_mean": did_you_mean(fields.get("email"), self.headers.get("x-email-suggestion")),
                "verdict_headers": email_headers(self.headers),
                "note": (
                    f"the gateway says {verdict}"
                    if verdict
                    else "no verdict header: the gateway let this through without a verdict "
                    "(see x-email-verdict-bypass)"
                ),
                "received": {
                    "method": self.command,
                    "path": self.path,
                    "content_type": self.headers.get("content-type"),
                    "fields": fields,
                },
            },
        )

    def log_message(self, fmt, *args):
        sys.stderr.write("app: %s %s\n" % (self.address_string(), fmt % args))


def main():
    ap = argparse.ArgumentParser(description="email-verdict demo signup app")
    ap.add_argument("--listen", default="127.0.0.1:3000", help="HOST:PORT (default 127.0.0.1:3000)")
    args = ap.parse_args()
    host, _, port = args.listen.rpartition(":")
    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    server.daemon_threads = True
    print(f"app: listening on http://{args.listen}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
