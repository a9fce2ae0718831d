//! The cases of the protocol matrix: what each real client sends, and what must come of it.
//!
//! A real address (`bob@gmail.com`: safe in the fixture zones) signs up through every protocol
//! and client; a disposable one (`mailinator.com`, strong-listed) is put in every field, nesting
//! and encoding issue 43 names, beside a real address in the configured field where the case is
//! about another field. Commands are those of `tests/frameworks/node/protocols.js` and
//! `python/protocols.py`; the driver adds `target` and `case`.

use email_verdict_tests::envoy::FilterBuild;
use email_verdict_tests::protocols::Runner;
use serde_json::{Value, json};

use super::Via;

pub const REAL: &str = "bob@gmail.com";
pub const DISPOSABLE: &str = "bob@mailinator.com";
/// A symbol in a domain label: validators and Django accept it (issue 43, the regression).
pub const SYMBOL: &str = "bob@i\u{2764}.mailinator.com";
/// 50 MiB of zeros, compressed by the client into about 50 KB.
pub const BOMB_ZEROS: u64 = 50 * 1024 * 1024;

/// What must come of a case.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// The client reports success and a handler received this address.
    SignsUp(&'static str),
    /// Not a signup: the client reports success and a handler ran.
    Passes,
    /// The client library reports this status code (its own name for it) with a message.
    Code(&'static str),
    /// A GraphQL response with `errors` (and no `signUp` data).
    GraphQlErrors,
    /// This HTTP status.
    Status(u16),
    /// A decompression bomb: any refusal the client can read (a 4xx, or an RPC error code).
    Bomb,
}

pub struct Case {
    /// The table's row, e.g. "gRPC (grpcio) profile.email".
    pub name: String,
    pub runner: Runner,
    pub command: Value,
    pub expect: Expect,
    /// What the Wasm filter does instead, where it differs by design: it decodes gzip and
    /// deflate but not br (the module's size budget; filter/CONFIG.md, `on_unreadable_body`), so
    /// a br body is unreadable there (400), never judged and never forwarded.
    pub on_wasm: Option<Expect>,
}

impl Case {
    pub fn expect(&self, via: Via) -> Expect {
        match (via, self.on_wasm) {
            (Via::Filter(FilterBuild::Wasm), Some(e)) => e,
            _ => self.expect,
        }
    }
}

const PERMISSION_DENIED_GRPCIO: &str = "PERMISSION_DENIED";
const PERMISSION_DENIED_CONNECT: &str = "PermissionDenied";

/// Standard base64 (proto3's JSON mapping of `bytes`).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The request messages (proto3 JSON) that put `d` in each field the issue names; the real
/// address is in field 1 unless the case is field 1.
fn messages(d: &str) -> Vec<(&'static str, Value)> {
    let blob = base64(json!({ "email": d }).to_string().as_bytes());
    vec![
        ("field 1", json!({ "email": d, "name": "Bob" })),
        ("profile.email", json!({ "email": REAL, "profile": { "email": d } })),
        ("profile.invitees", json!({ "email": REAL, "profile": { "invitees": ["ann@gmail.com", d] } })),
        ("bytes holding JSON", json!({ "email": REAL, "blob": blob })),
        ("map value", json!({ "email": REAL, "attrs": { "backup": d } })),
        ("Any", json!({ "email": REAL, "extra": { "@type": "type.googleapis.com/acme.v1.Profile", "email": d } })),
    ]
}

fn grpcio(name: &str, request: Value, compression: Option<&str>, expect: Expect) -> Case {
    let command =
        json!({ "request": request, "compression": compression, "metadata": { "x-protocols-server": "python" } });
    Case { name: format!("gRPC (grpcio) {name}"), runner: Runner::Python, command, expect, on_wasm: None }
}

/// connect-node's transports: `connect` (format binary or json), `grpc`, `grpc-web`.
fn connect(label: &str, client: &str, format: &str, compression: Option<&str>, request: Value, expect: Expect) -> Case {
    let command = json!({ "client": client, "format": format, "compression": compression, "request": request });
    Case { name: label.to_owned(), runner: Runner::Node, command, expect, on_wasm: None }
}

fn fetch(name: &str, command: Value, expect: Expect) -> Case {
    let mut command = command;
    command["client"] = json!("fetch");
    Case { name: name.to_owned(), runner: Runner::Node, command, expect, on_wasm: None }
}

fn graphql(name: &str, query: &str, variables: Value, expect: Expect) -> Case {
    fetch(
        &format!("GraphQL {name}"),
        json!({ "path": "/graphql", "graphql": { "query": query, "variables": variables } }),
        expect,
    )
}

fn express(name: &str, body: Value, encoding: Option<&str>, expect: Expect) -> Case {
    let command = json!({
        "path": "/signup", "headers": { "content-type": "application/json" },
        "body": body.to_string(), "encoding": encoding,
    });
    let mut case = fetch(&format!("Express JSON {name}"), command, expect);
    if encoding == Some("br") {
        case.on_wasm = Some(Expect::Status(400));
    }
    case
}

const SIGN_UP: &str = "mutation SignUp($email: String!) { signUp(email: $email) { ok } }";

fn form(fields: &[(&str, &str)]) -> String {
    let enc = |s: &str| email_verdict_tests::envoy::form_encode(s);
    fields.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}

pub fn cases() -> Vec<Case> {
    use Expect::*;
    let mut out = Vec::new();

    // A real address, every protocol and client.
    let real = json!({ "email": REAL, "name": "Bob" });
    out.push(grpcio("sign up", real.clone(), None, SignsUp(REAL)));
    out.push(grpcio("sign up, grpc-encoding gzip", real.clone(), Some("gzip"), SignsUp(REAL)));
    out.push(connect("Connect binary: sign up", "connect", "binary", None, real.clone(), SignsUp(REAL)));
    out.push(connect("Connect JSON: sign up", "connect", "json", None, real.clone(), SignsUp(REAL)));
    out.push(connect("Connect JSON gzip: sign up", "connect", "json", Some("gzip"), real.clone(), SignsUp(REAL)));
    out.push(connect("gRPC (connect-node): sign up", "grpc", "binary", None, real.clone(), SignsUp(REAL)));
    out.push(connect("gRPC (connect-node) gzip: sign up", "grpc", "binary", Some("gzip"), real.clone(), SignsUp(REAL)));
    out.push(connect("gRPC-Web: sign up", "grpc-web", "binary", None, real.clone(), SignsUp(REAL)));
    let mut ping = connect("gRPC (connect-node): Ping, not a signup", "grpc", "binary", None, json!({}), Passes);
    ping.command["method"] = json!("ping");
    out.push(ping);
    out.push(graphql("signUp, variables: sign up", SIGN_UP, json!({ "email": REAL }), SignsUp(REAL)));
    let body = format!("mutation {{ signUp(email: \"{REAL}\") {{ ok }} }}");
    let command = json!({ "path": "/graphql", "headers": { "content-type": "application/graphql" }, "body": body });
    out.push(fetch("GraphQL application/graphql: sign up", command, SignsUp(REAL)));
    out.push(graphql("query hello, not a signup", "query { hello }", json!({}), Passes));
    let newsletter = "mutation { subscribeNewsletter(topic: \"news\") }";
    out.push(graphql("mutation subscribeNewsletter, not a signup", newsletter, json!({}), Passes));
    for enc in ["gzip", "deflate", "br"] {
        out.push(express(&format!("{enc}: sign up"), json!({ "email": REAL }), Some(enc), SignsUp(REAL)));
    }

    // A disposable address in every field and nesting, through each protocol.
    for (field, msg) in messages(DISPOSABLE) {
        out.push(grpcio(field, msg, None, Code(PERMISSION_DENIED_GRPCIO)));
    }
    let field1 = json!({ "email": DISPOSABLE });
    out.push(grpcio("field 1, grpc-encoding gzip", field1.clone(), Some("gzip"), Code(PERMISSION_DENIED_GRPCIO)));
    let nested = messages(DISPOSABLE).remove(1).1;
    let deny = Code(PERMISSION_DENIED_CONNECT);
    out.push(connect("gRPC (connect-node) field 1", "grpc", "binary", None, field1.clone(), deny));
    out.push(connect(
        "gRPC (connect-node) gzip profile.invitees",
        "grpc",
        "binary",
        Some("gzip"),
        messages(DISPOSABLE).remove(2).1,
        deny,
    ));
    out.push(connect("gRPC-Web field 1", "grpc-web", "binary", None, field1.clone(), deny));
    out.push(connect("gRPC-Web profile.email", "grpc-web", "binary", None, nested.clone(), deny));
    out.push(connect("Connect binary field 1", "connect", "binary", None, field1.clone(), deny));
    out.push(connect("Connect binary map value", "connect", "binary", None, messages(DISPOSABLE).remove(4).1, deny));
    for (field, msg) in messages(DISPOSABLE) {
        out.push(connect(&format!("Connect JSON {field}"), "connect", "json", None, msg, deny));
    }
    out.push(connect("Connect JSON gzip field 1", "connect", "json", Some("gzip"), field1.clone(), deny));

    // GraphQL: escapes, block strings, variables in every carrier, batches.
    let inline = |email: &str| format!("mutation {{ signUp(email: \"{email}\") {{ ok }} }}");
    out.push(graphql("inline literal \\u0040", &inline("bob\\u0040mailinator.com"), json!({}), GraphQlErrors));
    out.push(graphql("inline literal \\u{40}", &inline("bob\\u{40}mailinator.com"), json!({}), GraphQlErrors));
    let block = format!("mutation {{ signUp(email: \"\"\"{DISPOSABLE}\"\"\") {{ ok }} }}");
    out.push(graphql("block string", &block, json!({}), GraphQlErrors));
    out.push(graphql("variables", SIGN_UP, json!({ "email": DISPOSABLE }), GraphQlErrors));
    let escaped_vars = r#"{"email":"bob\u0040mailinator.com"}"#;
    let body = form(&[("query", SIGN_UP), ("variables", escaped_vars)]);
    let command = json!({
        "path": "/graphql", "body": body,
        "headers": { "content-type": "application/x-www-form-urlencoded", "accept": "application/graphql-response+json" },
    });
    out.push(fetch("GraphQL form POST, stringified variables \\u0040", command, GraphQlErrors));
    let operations = format!(r#"{{"query":{},"variables":{escaped_vars}}}"#, json!(SIGN_UP));
    let boundary = "protocols-matrix-boundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"operations\"\r\n\r\n{operations}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"map\"\r\n\r\n{{}}\r\n--{boundary}--\r\n"
    );
    let command = json!({
        "path": "/graphql", "body": body,
        "headers": { "content-type": format!("multipart/form-data; boundary={boundary}"), "accept": "application/graphql-response+json" },
    });
    out.push(fetch("GraphQL multipart operations \\u0040", command, GraphQlErrors));
    let batch = json!([
        { "query": "query { hello }" },
        { "query": SIGN_UP, "variables": { "email": DISPOSABLE } },
    ]);
    let command = json!({
        "path": "/graphql", "body": batch.to_string(),
        "headers": { "content-type": "application/json", "accept": "application/graphql-response+json" },
    });
    out.push(fetch("GraphQL batch", command, GraphQlErrors));
    let command = json!({
        "path": "/graphql", "body": inline(DISPOSABLE),
        "headers": { "content-type": "application/graphql", "accept": "application/graphql-response+json" },
    });
    out.push(fetch("GraphQL application/graphql", command, GraphQlErrors));

    // Compressed JSON that Express inflates; a symbol in a domain label in a second field.
    for enc in ["gzip", "deflate", "br"] {
        out.push(express(enc, json!({ "email": DISPOSABLE }), Some(enc), Status(403)));
    }
    out.push(express(
        "second field bob@i\u{2764}.mailinator.com",
        json!({ "email": REAL, "backup": SYMBOL }),
        None,
        Status(403),
    ));

    // Bombs, each followed by a real signup: the gateway still serves.
    let command = json!({
        "path": "/signup", "headers": { "content-type": "application/json" },
        "bombZeros": BOMB_ZEROS, "encoding": "gzip",
    });
    out.push(fetch("Express JSON gzip bomb (50 MiB of zeros)", command, Bomb));
    out.push(express("gzip: sign up after the bomb", json!({ "email": REAL }), Some("gzip"), SignsUp(REAL)));
    let mut bomb =
        connect("gRPC (connect-node) gzip bomb (50 MiB of zeros)", "grpc", "binary", Some("gzip"), real.clone(), Bomb);
    bomb.command["blobZeros"] = json!(BOMB_ZEROS);
    out.push(bomb);
    out.push(connect("gRPC (connect-node): sign up after the bomb", "grpc", "binary", None, real, SignsUp(REAL)));
    out
}
