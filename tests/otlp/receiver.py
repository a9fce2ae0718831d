"""A real OTLP trace receiver for the tests, on the official opentelemetry-proto definitions.

    python receiver.py HTTP_PORT GRPC_PORT

Serves, on 127.0.0.1:
  HTTP_PORT  OTLP/HTTP protobuf: POST /v1/traces (gzip accepted); GET /spans, every span
             received as a JSON list (trace_id, span_id, parent_span_id, name, kind,
             service.name, attributes); GET /healthz.
  GRPC_PORT  OTLP/gRPC: opentelemetry.proto.collector.trace.v1.TraceService/Export.
Both ports store into the one list. Nothing is written to disk; stop it with SIGTERM.
"""

import gzip
import json
import signal
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2

SPANS = []
LOCK = threading.Lock()


def value_of(any_value):
    """An AnyValue as the JSON value it holds."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def store(request):
    """Keeps every span of an ExportTraceServiceRequest; returns how many."""
    found = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: value_of(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append({
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": trace_pb2.Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
                    "service.name": resource.get("service.name"),
                    "scope": scope_spans.scope.name,
                    "status": span.status.code,
                    "attributes": {kv.key: value_of(kv.value) for kv in span.attributes},
                })
    with LOCK:
        SPANS.extend(found)
    return len(found)


class Http(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path.split("?")[0] != "/v1/traces":
            return self.answer(404, b"not found", "text/plain")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if not (self.headers.get("Content-Type") or "").startswith("application/x-protobuf"):
            return self.answer(415, b"only application/x-protobuf", "text/plain")
        request = trace_service_pb2.ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception:  # noqa: BLE001 - any undecodable body is the client's error
            return self.answer(400, b"not an ExportTraceServiceRequest", "text/plain")
        store(request)
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.answer(200, reply, "application/x-protobuf")

    def do_GET(self):
        if self.path == "/spans":
            with LOCK:
                body = json.dumps(SPANS).encode()
            return self.answer(200, body, "application/json")
        if self.path == "/healthz":
            return self.answer(200, b"ok", "text/plain")
        self.answer(404, b"not found", "text/plain")

    def answer(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Grpc(trace_service_pb2_grpc.TraceServiceServicer):
    def Export(self, request, context):
        store(request)
        return trace_service_pb2.ExportTraceServiceResponse()


def main():
    http_port, grpc_port = int(sys.argv[1]), int(sys.argv[2])
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Grpc(), server)
    if server.add_insecure_port(f"127.0.0.1:{grpc_port}") == 0:
        sys.exit(f"receiver: cannot listen on gRPC port {grpc_port}")
    server.start()
    # The HTTP port answers only once gRPC listens: one readiness check covers both.
    http = ThreadingHTTPServer(("127.0.0.1", http_port), Http)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=http.shutdown).start())
    try:
        http.serve_forever()
    finally:
        server.stop(0)


if __name__ == "__main__":
    main()
