// The Node apps and clients of the protocol matrix (tests/tests/protocols.rs; README.md here):
// one process, two ports on 127.0.0.1.
//
//   node protocols.js APP_PORT CONTROL_PORT DESCRIPTOR_SET
//
// APP_PORT: the apps behind the gateway, HTTP/1.1 and HTTP/2 cleartext (prior knowledge) on the
// same port: connect-node's `acme.v1.Accounts` (tests/frameworks/proto, from the descriptor set
// scripts/install-frameworks.sh compiles) answering Connect, gRPC and gRPC-Web; Express 5 with
// `express.json()` (which inflates gzip, deflate and br) and `express.urlencoded()` on /signup;
// graphql-yoga on /graphql (mutations `signUp`, `subscribeNewsletter`, query `hello`).
// Every handler records, under the request's `x-protocols-case` header, every text it received
// (strings at any depth, a `bytes` field as UTF-8, an `Any` unpacked); nothing is logged.
//
// CONTROL_PORT (for the test only): GET /ready; GET /seen?case=ID: {"seen": [{"handler", "values"}]};
// POST /run with a JSON command: runs one real client (connect-node's Connect, gRPC and gRPC-Web
// transports; fetch for GraphQL-over-HTTP and Express) and answers what the client reported:
// {"ok": true, ...} or {"code": "<Code name>", "message": "..."}; fetch: {"status", "body", ...}.
'use strict';

const fs = require('node:fs');
const http = require('node:http');
const http2 = require('node:http2');
const net = require('node:net');
const zlib = require('node:zlib');
const express = require('express');
const { createYoga, createSchema } = require('graphql-yoga');
const { Code, ConnectError, createClient } = require('@connectrpc/connect');
const {
  compressionGzip,
  connectNodeAdapter,
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} = require('@connectrpc/connect-node');
const { create, createFileRegistry, fromBinary, fromJson } = require('@bufbuild/protobuf');
const { FileDescriptorSetSchema, anyUnpack } = require('@bufbuild/protobuf/wkt');

const [appPort, controlPort] = process.argv.slice(2, 4).map(Number);
const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, fs.readFileSync(process.argv[4])));
const Accounts = registry.getService('acme.v1.Accounts');
const SignUpRequest = registry.getMessage('acme.v1.SignUpRequest');
const SignUpResponse = registry.getMessage('acme.v1.SignUpResponse');
const PingResponse = registry.getMessage('acme.v1.PingResponse');

// ---- what the handlers received, by case ----------------------------------------------------

const seen = new Map();
function record(caseId, handler, values) {
  const id = caseId || '-';
  if (!seen.has(id)) seen.set(id, []);
  seen.get(id).push({ handler, values });
}

function strings(v, out = []) {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => strings(x, out));
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => strings(x, out));
  return out;
}

// Every text of a SignUpRequest as the handler reads it.
function texts(msg) {
  const out = [msg.email, msg.name];
  if (msg.profile) out.push(msg.profile.email, ...msg.profile.invitees);
  if (msg.blob && msg.blob.length) out.push(Buffer.from(msg.blob).toString('utf8'));
  for (const [k, v] of Object.entries(msg.attrs || {})) out.push(k, v);
  if (msg.extra) {
    const inner = anyUnpack(msg.extra, registry);
    if (inner) out.push(...strings(JSON.parse(JSON.stringify(inner, (k, x) => (k === '$typeName' ? undefined : x instanceof Uint8Array ? Buffer.from(x).toString('utf8') : x)))));
    else out.push(Buffer.from(msg.extra.value).toString('utf8'));
  }
  return out.filter((s) => typeof s === 'string' && s.length > 0);
}

// ---- the apps ---------------------------------------------------------------------------------

const yoga = createYoga({
  graphqlEndpoint: '/graphql',
  logging: false,
  maskedErrors: false,
  batching: true,
  schema: createSchema({
    typeDefs: /* GraphQL */ `
      type Query { hello: String! }
      type SignUpResult { ok: Boolean! }
      type Mutation {
        signUp(email: String!, name: String, invitees: [String!]): SignUpResult!
        subscribeNewsletter(topic: String!): Boolean!
      }
    `,
    resolvers: {
      Query: { hello: () => 'hello' },
      Mutation: {
        signUp: (_root, args, ctx) => {
          record(ctx.request.headers.get('x-protocols-case'), 'graphql.signUp', strings(args));
          return { ok: true };
        },
        subscribeNewsletter: (_root, args, ctx) => {
          record(ctx.request.headers.get('x-protocols-case'), 'graphql.subscribeNewsletter', strings(args));
          return true;
        },
      },
    },
  }),
});

const app = express();
app.post('/signup', express.json(), express.urlencoded({ extended: true }), (req, res) => {
  record(req.get('x-protocols-case'), 'express', strings(req.body));
  res.json({ ok: true });
});
app.use('/graphql', yoga);
app.use((err, _req, res, _next) => res.status(err.status || 500).json({ error: String(err.type || err.message) }));

const handler = connectNodeAdapter({
  jsonOptions: { registry },
  routes: (router) =>
    router.service(Accounts, {
      signUp(req, ctx) {
        record(ctx.requestHeader.get('x-protocols-case'), `connect-node.${ctx.protocolName}`, texts(req));
        return create(SignUpResponse, { accountId: 'acct-1' });
      },
      ping() {
        return create(PingResponse, {});
      },
    }),
  fallback: app,
});

// HTTP/1.1 and HTTP/2 cleartext on one port: the first bytes of a connection say which.
const h1 = http.createServer(handler);
const h2 = http2.createServer(handler);
net
  .createServer((socket) => {
    socket.once('readable', () => {
      const head = socket.read();
      if (!head) return socket.destroy();
      socket.unshift(head);
      (head.subarray(0, 3).toString('latin1') === 'PRI' ? h2 : h1).emit('connection', socket);
    });
  })
  .listen(appPort, '127.0.0.1');

// ---- the clients ------------------------------------------------------------------------------

function transport(cmd) {
  const options = {
    baseUrl: cmd.target,
    httpVersion: cmd.httpVersion || '1.1',
    useBinaryFormat: cmd.format !== 'json',
    jsonOptions: { registry },
    defaultTimeoutMs: 10000,
  };
  if (cmd.compression === 'gzip') Object.assign(options, { sendCompression: compressionGzip, compressMinBytes: 0 });
  switch (cmd.client) {
    case 'connect':
      return createConnectTransport(options);
    case 'grpc':
      return createGrpcTransport({ ...options, httpVersion: '2' });
    case 'grpc-web':
      return createGrpcWebTransport(options);
  }
  throw new Error(`no client ${cmd.client}`);
}

async function rpc(cmd) {
  const client = createClient(Accounts, transport(cmd));
  const request = fromJson(SignUpRequest, cmd.request || {}, { registry });
  // A bomb as a client sends it: a blob of zeros, compressed by the client's own gzip.
  if (cmd.blobZeros) request.blob = new Uint8Array(cmd.blobZeros);
  const headers = { 'x-protocols-case': cmd.case };
  try {
    if (cmd.method === 'ping') await client.ping({}, { headers });
    else await client.signUp(request, { headers });
    return { ok: true };
  } catch (e) {
    const err = ConnectError.from(e);
    return { code: Code[err.code], message: err.rawMessage };
  }
}

// fetch as a GraphQL-over-HTTP client or a browser's code does: the body is given, or built from
// `graphql` ({query, variables}); `encoding` compresses it as Content-Encoding says.
async function fetchOnce(cmd) {
  const headers = { 'x-protocols-case': cmd.case, ...(cmd.headers || {}) };
  let body;
  if (cmd.graphql) {
    body = Buffer.from(JSON.stringify(cmd.graphql));
    headers['content-type'] ??= 'application/json';
    headers.accept ??= 'application/graphql-response+json, application/json';
  } else if (cmd.bombZeros) {
    body = Buffer.alloc(cmd.bombZeros);
  } else {
    body = Buffer.from(cmd.body ?? '', cmd.bodyBase64 ? 'base64' : 'utf8');
  }
  if (cmd.encoding) {
    body = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, br: zlib.brotliCompressSync }[cmd.encoding](body);
    headers['content-encoding'] = cmd.encoding;
  }
  try {
    const r = await fetch(cmd.target + cmd.path, { method: 'POST', headers, body, signal: AbortSignal.timeout(10000) });
    const text = await r.text();
    return { status: r.status, contentType: r.headers.get('content-type'), body: text.slice(0, 2000), sentBytes: body.length };
  } catch (e) {
    return { status: 0, error: String(e.cause || e), sentBytes: body.length };
  }
}

function run(cmd) {
  return cmd.client === 'fetch' ? fetchOnce(cmd) : rpc(cmd);
}

http
  .createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const reply = (v) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v));
    if (url.pathname === '/ready') return reply({ ok: true });
    if (url.pathname === '/seen') return reply({ seen: seen.get(url.searchParams.get('case')) || [] });
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      run(JSON.parse(Buffer.concat(chunks).toString('utf8'))).then(reply, (e) =>
        res.writeHead(500).end(String(e && e.stack)),
      );
    });
  })
  .listen(controlPort, '127.0.0.1');
