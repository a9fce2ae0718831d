"""The Python readers of tests/frameworks (README.md there): an HTTP server on 127.0.0.1:PORT that
hands every request it gets to Django, Starlette, FastAPI and Flask/Werkzeug, each with its own
copy of the request (a WSGI environ or an ASGI scope built as gunicorn/uvicorn build them), and
answers what each read.

    python readers.py PORT

Answer: {"readers": {"<name>": {"values": [every string value, any depth], "error": null|"..."}}}
With a request header `x-validators`, also "validators": what each email validator of
validators.py would store from those values (and from JSON object keys and form field names).
`x-delivery` with a JSON list of stored addresses as the body answers {"delivery": [[domain, ...]]}:
where mail to each would go (validators.delivery).
"""

import asyncio
import io
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import django
from django.conf import settings

settings.configure(DEBUG=False, SECRET_KEY="framework-readers", ALLOWED_HOSTS=["*"], USE_TZ=True)
django.setup()

from django.core.handlers.wsgi import WSGIRequest  # noqa: E402 (after settings)
from fastapi import Body, FastAPI  # noqa: E402
from flask import Flask, request as flask_request  # noqa: E402
from starlette.requests import Request as StarletteRequest  # noqa: E402

import validators  # noqa: E402 (Django must be set up first)

flask_app = Flask("readers")
fastapi_app = FastAPI()
fastapi_seen: dict[int, Any] = {}


@fastapi_app.post("/{path:path}")
async def fastapi_body(payload: dict | list = Body()):
    """A FastAPI route with a JSON body parameter: FastAPI decides when the body is JSON."""
    return {"payload": payload}


def strings(v, out=None):
    """Every string at any depth (object keys are names, not values)."""
    out = [] if out is None else out
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            strings(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            strings(x, out)
    return out


def multidict(md):
    """Every text value of a Django QueryDict, a Werkzeug MultiDict or a Starlette multi-dict
    (uploaded files are not values)."""
    items = md.multi_items() if hasattr(md, "multi_items") else ((k, v) for k, vs in md.lists() for v in vs)
    return [v for _, v in items if isinstance(v, str)]


def environ(req):
    path, _, query = req["target"].partition("?")
    env = {
        "REQUEST_METHOD": req["method"],
        "SCRIPT_NAME": "",
        "PATH_INFO": urllib.parse.unquote(path, "latin-1"),
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(req["body"]),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "CONTENT_LENGTH": str(len(req["body"])),
    }
    for name, value in req["headers"]:
        key = name.upper().replace("-", "_")
        if key == "CONTENT_LENGTH":
            continue
        if key != "CONTENT_TYPE":
            key = "HTTP_" + key
        env[key] = env[key] + "," + value if key in env else value
    return env


def scope(req):
    path, _, query = req["target"].partition("?")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": req["method"],
        "scheme": "http",
        "path": urllib.parse.unquote(path),
        "raw_path": path.encode("latin-1"),
        "root_path": "",
        "query_string": query.encode("latin-1"),
        "headers": [(n.lower().encode("latin-1"), v.encode("latin-1")) for n, v in req["headers"]],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "app": None,
    }


def receiver(body):
    sent = False

    async def receive():
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def starlette_read(req, what):
    r = StarletteRequest(scope(req), receiver(req["body"]))
    if what == "form":
        async with r.form() as form:
            return multidict(form)
    if what == "json":
        return strings(await r.json())
    return multidict(r.query_params)


async def fastapi_read(req):
    status, chunks = [], []

    async def send(message):
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await fastapi_app(scope(req), receiver(req["body"]), send)
    body = b"".join(chunks)
    if status[0] != 200:
        raise RuntimeError(f"{status[0]} {body[:150].decode('utf-8', 'replace')}")
    return strings(json.loads(body)["payload"])


def flask_read(req, what):
    with flask_app.request_context(environ(req)):
        if what == "form":
            return multidict(flask_request.form)
        if what == "args":
            return multidict(flask_request.args)
        return strings(flask_request.get_json())


def django_read(req, what):
    r = WSGIRequest(environ(req))
    if what == "POST":
        return multidict(r.POST)
    if what == "GET":
        return multidict(r.GET)
    return strings(json.loads(r.body))


READERS = {
    "django.POST": lambda r: django_read(r, "POST"),
    "django.GET": lambda r: django_read(r, "GET"),
    "django.json.loads(body)": lambda r: django_read(r, "json"),
    "starlette.form": lambda r: asyncio.run(starlette_read(r, "form")),
    "starlette.json": lambda r: asyncio.run(starlette_read(r, "json")),
    "starlette.query_params": lambda r: asyncio.run(starlette_read(r, "query")),
    "fastapi.Body": lambda r: asyncio.run(fastapi_read(r)),
    "flask.form": lambda r: flask_read(r, "form"),
    "flask.args": lambda r: flask_read(r, "args"),
    "flask.get_json": lambda r: flask_read(r, "json"),
}


def read_all(req):
    out = {}
    for name, read in READERS.items():
        try:
            out[name] = {"values": read(req), "error": None}
        except Exception as e:  # noqa: BLE001 (any refusal is the answer)
            out[name] = {"values": [], "error": f"{type(e).__name__}: {e}"[:200]}
    return out


def keys(v, out):
    """Object keys at any depth (an app may take addresses from them)."""
    if isinstance(v, dict):
        out.extend(k for k in v if isinstance(k, str))
        v = list(v.values())
    if isinstance(v, list):
        for x in v:
            keys(x, out)
    return out


def names(req):
    """JSON object keys and form field names, as Django reads them."""
    out = []
    for read in (lambda r: keys(json.loads(WSGIRequest(environ(r)).body), []),
                 lambda r: list(WSGIRequest(environ(r)).POST.keys()),
                 lambda r: list(WSGIRequest(environ(r)).GET.keys())):
        try:
            out += read(req)
        except Exception:  # noqa: BLE001 (not JSON, not a form)
            pass
    return out


def answer(req):
    headers = {n.lower() for n, _ in req["headers"]}
    if "x-delivery" in headers:
        return {"delivery": [validators.delivery(s) for s in json.loads(req["body"])]}
    out = {"readers": read_all(req)}
    if "x-validators" in headers:
        values = {v for r in out["readers"].values() for v in r["values"]} | set(names(req))
        out["validators"] = validators.validate(sorted(v for v in values if "@" in v or "\uff20" in v))
    return out


class Handler(BaseHTTPRequestHandler):
    def do(self):
        length = int(self.headers.get("content-length") or 0)
        req = {
            "method": self.command,
            "target": self.path,
            "headers": list(self.headers.items()),
            "body": self.rfile.read(length),
        }
        body = json.dumps(answer(req)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
