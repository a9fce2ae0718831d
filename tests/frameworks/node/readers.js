// The Node readers of tests/frameworks (README.md there): an HTTP server on 127.0.0.1:PORT that
// hands every request it gets to Express 5's body parsers and query parsers, multer, busboy and
// formidable 3, each on its own copy of the request, and answers what each read.
//
//   node readers.js PORT UPLOAD_DIR
//
// Answer: {"readers": {"<name>": {"values": [every string value, any depth], "error": null|"..."}}}
// With a request header `x-validators`, also "validators": what each email validator of
// validators.js would store from those values (and from JSON object keys and query names).
'use strict';

const http = require('node:http');
const { Readable, Writable } = require('node:stream');
const express = require('express');
const parseurl = require('parseurl');
const multer = require('multer');
const busboy = require('busboy');
const { formidable } = require('formidable');
const { validate } = require('./validators.js');

const port = Number(process.argv[2]);
const uploadDir = process.argv[3];

// Express compiles its 'query parser' setting into the function req.query calls.
function queryParser(setting) {
  const app = express();
  app.set('query parser', setting);
  return app.get('query parser fn');
}
const extendedQuery = queryParser('extended');
const simpleQuery = queryParser('simple');

// Every string at any depth (object keys are names, not values).
function strings(v, out = []) {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => strings(x, out));
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => strings(x, out));
  return out;
}

// A fresh request stream with the received head and body: what a middleware would get.
function copy(req, body) {
  const r = Readable.from(body.length ? [body] : []);
  Object.assign(r, { method: req.method, url: req.url, headers: { ...req.headers }, httpVersion: '1.1' });
  return r;
}

// Runs a connect-style middleware; resolves with req.body, rejects with the error it passed on.
function middleware(mw, req) {
  return new Promise((resolve, reject) => {
    const res = new Writable({ write: (_c, _e, cb) => cb() });
    mw(req, res, (err) => (err ? reject(err) : resolve(req.body)));
  });
}

function viaBusboy(req) {
  return new Promise((resolve, reject) => {
    const values = [];
    const bb = busboy({ headers: req.headers });
    bb.on('field', (_name, value) => values.push(value));
    bb.on('file', (_name, file) => file.resume());
    bb.on('close', () => resolve(values));
    bb.on('error', reject);
    req.pipe(bb);
  });
}

async function viaFormidable(req) {
  const form = formidable({
    uploadDir,
    // File contents are not values: discard them instead of writing files.
    fileWriteStreamHandler: () => new Writable({ write: (_c, _e, cb) => cb() }),
  });
  const [fields] = await form.parse(req);
  return fields;
}

const readers = {
  'express.urlencoded-extended': (r) => middleware(express.urlencoded({ extended: true }), r),
  'express.urlencoded-simple': (r) => middleware(express.urlencoded({ extended: false }), r),
  'express.json': (r) => middleware(express.json(), r),
  'express.query-extended': (r) => extendedQuery(parseurl(r).query || ''),
  'express.query-simple': (r) => simpleQuery(parseurl(r).query || ''),
  'multer.any': (r) => middleware(multer({ storage: multer.memoryStorage() }).any(), r),
  busboy: viaBusboy,
  formidable: viaFormidable,
};

async function readAll(req, body) {
  const out = {};
  for (const [name, read] of Object.entries(readers)) {
    try {
      out[name] = { values: strings(await read(copy(req, body))), error: null };
    } catch (e) {
      out[name] = { values: [], error: String((e && (e.code || e.type || e.message)) || e).slice(0, 200) };
    }
  }
  return out;
}

// Object keys at any depth (an app may take addresses from them), and the query's names.
function keys(v, out = []) {
  if (Array.isArray(v)) v.forEach((x) => keys(x, out));
  else if (v && typeof v === 'object') {
    out.push(...Object.keys(v));
    Object.values(v).forEach((x) => keys(x, out));
  }
  return out;
}

function names(req, body) {
  const out = keys(extendedQuery(parseurl(req).query || ''));
  try {
    keys(JSON.parse(body.toString('utf8')), out);
  } catch {
    // not JSON
  }
  return out;
}

async function answer(req, body) {
  const out = { readers: await readAll(req, body) };
  if (req.headers['x-validators'] !== undefined) {
    const values = new Set([...Object.values(out.readers).flatMap((r) => r.values), ...names(req, body)]);
    out.validators = await validate([...values].filter((v) => v.includes('@') || v.includes('\uff20')).sort());
  }
  return out;
}

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const text = JSON.stringify(await answer(req, Buffer.concat(chunks)));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text);
    });
  })
  .listen(port, '127.0.0.1');
