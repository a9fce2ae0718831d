"""The Python app and client of the protocol matrix (tests/tests/protocols.rs; README.md here):
one process, two ports on 127.0.0.1.

    python protocols.py GRPC_PORT CONTROL_PORT

GRPC_PORT: a grpcio server of `acme.v1.Accounts` (tests/frameworks/proto, loaded at start with
`grpc.protos_and_services`, which compiles it with grpcio-tools' protoc in memory). Its SignUp
handler records, under the call's `x-protocols-case` metadata, every text it received: strings
at any depth, the `bytes` field as UTF-8, the `Any` unpacked; nothing is logged.

CONTROL_PORT (for the test only): GET /ready; GET /seen?case=ID: {"seen": [{"handler", "values"}]};
POST /run with a JSON command {"target": "host:port", "case", "request": proto3 JSON,
"compression": "gzip"|null, "metadata": {...}, "method": "signUp"|"ping"}: one call of grpcio's
own client, answering what it reported: {"ok": true} or {"code": "PERMISSION_DENIED",
"message": details}.
"""

import json
import os
import sys
import threading
import urllib.parse
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from google.protobuf import json_format

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto"))
protos, services = grpc.protos_and_services("acme/v1/accounts.proto")

seen: dict[str, list] = {}
lock = threading.Lock()


def record(case: str, handler: str, values: list[str]) -> None:
    with lock:
        seen.setdefault(case or "-", []).append({"handler": handler, "values": values})


def texts(req) -> list[str]:
    out = [req.email, req.name, req.profile.email, *req.profile.invitees]
    if req.blob:
        out.append(req.blob.decode("utf-8", "replace"))
    for k, v in req.attrs.items():
        out += [k, v]
    if req.HasField("extra"):
        profile = protos.Profile()
        if req.extra.Unpack(profile):
            out += [profile.email, *profile.invitees]
        else:
            out.append(req.extra.value.decode("utf-8", "replace"))
    return [s for s in out if s]


class Accounts(services.AccountsServicer):
    def SignUp(self, request, context):
        case = dict(context.invocation_metadata()).get("x-protocols-case", "")
        record(case, "grpcio", texts(request))
        return protos.SignUpResponse(account_id="acct-1")

    def Ping(self, request, context):
        return protos.PingResponse()


def call(cmd: dict) -> dict:
    metadata = [("x-protocols-case", cmd.get("case", ""))] + list((cmd.get("metadata") or {}).items())
    compression = grpc.Compression.Gzip if cmd.get("compression") == "gzip" else None
    with grpc.insecure_channel(cmd["target"]) as channel:
        stub = services.AccountsStub(channel)
        try:
            if cmd.get("method") == "ping":
                stub.Ping(protos.PingRequest(), metadata=metadata, timeout=10, compression=compression)
            else:
                req = json_format.ParseDict(cmd.get("request") or {}, protos.SignUpRequest())
                if cmd.get("blobZeros"):
                    req.blob = bytes(cmd["blobZeros"])
                stub.SignUp(req, metadata=metadata, timeout=10, compression=compression)
            return {"ok": True}
        except grpc.RpcError as e:
            return {"code": e.code().name, "message": e.details() or ""}


class Control(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, value) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/seen":
            case = urllib.parse.parse_qs(url.query).get("case", [""])[0]
            with lock:
                return self.reply({"seen": seen.get(case, [])})
        self.reply({"ok": True})

    def do_POST(self):
        cmd = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        self.reply(call(cmd))


def main() -> None:
    grpc_port, control_port = int(sys.argv[1]), int(sys.argv[2])
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    services.add_AccountsServicer_to_server(Accounts(), server)
    server.add_insecure_port(f"127.0.0.1:{grpc_port}")
    server.start()
    ThreadingHTTPServer(("127.0.0.1", control_port), Control).serve_forever()


if __name__ == "__main__":
    main()
