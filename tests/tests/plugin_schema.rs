//! `envoy/schema/plugin-config.schema.json` says what the filter's parser says: the same
//! property names at every level (the parser refuses unknown fields and names the ones it
//! knows), and for every field the same answer to a set of good and bad values. The few
//! differences a JSON Schema cannot avoid are listed in `known_differences`, each checked to still
//! be one. Every shipped plugin configuration is valid against the schema.
//!
//! A new field in the parser fails `the_schema_knows_every_field_the_parser_knows` until it is
//! in the schema, and `every_field_has_good_and_bad_values` until it has cases here.

use std::collections::{BTreeMap, BTreeSet};

use email_verdict::validate_cmd::found::{Kind, configurations};
use email_verdict_filter::config::PluginConfig;
use email_verdict_tests::schema::{fields, objects, plugin_schema, shipped_recipes};
use email_verdict_tests::workspace_root;
use serde_json::{Value, json};

fn schema() -> Value {
    plugin_schema()
}

fn validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema()).expect("the schema compiles")
}

/// The parser's answer: `Err(message)` as Envoy would log it.
fn parse(doc: &Value) -> Result<(), String> {
    PluginConfig::parse(&serde_json::to_vec(doc).unwrap()).and_then(|c| c.validate()).map_err(|e| e.to_string())
}

/// The smallest valid configuration.
fn base() -> Value {
    json!({
        "sidecar": { "cluster": "email_verdict", "api_key_env": "EMAIL_VERDICT_API_KEY" },
        "signup_routes": [{ "method": "POST", "path": "/signup" }]
    })
}

/// `doc` with the value at a JSON pointer set (`None`: removed).
fn set(doc: &mut Value, pointer: &str, value: Option<Value>) {
    email_verdict_tests::envoy::put_pointer(doc, pointer, value);
}

struct Case {
    /// The fields it is about (JSON pointers into the document).
    fields: Vec<String>,
    doc: Value,
    valid: bool,
}

/// The base document with these fields changed.
fn case(changes: &[(&str, Option<Value>)], valid: bool) -> Case {
    let mut doc = base();
    for (pointer, value) in changes {
        set(&mut doc, pointer, value.clone());
    }
    Case { fields: changes.iter().map(|(p, _)| p.to_string()).collect(), doc, valid }
}

/// One field: each good value, then each bad one.
fn field(cases: &mut Vec<Case>, pointer: &str, good: &[Value], bad: &[Value]) {
    for (values, valid) in [(good, true), (bad, false)] {
        for v in values {
            cases.push(case(&[(pointer, Some(v.clone()))], valid));
        }
    }
}

const FLAG_HEADERS: [&str; 11] = [
    "verdict",
    "domain",
    "flags",
    "bypass",
    "suggestion",
    "normalized_email",
    "role_account",
    "relay",
    "mailbox_signups",
    "client_signups",
    "velocity",
];

fn cases() -> Vec<Case> {
    let mut c = Vec::new();
    let secret = json!("EMAIL_VERDICT_MAILBOX_SECRET");
    // sidecar
    field(
        &mut c,
        "/sidecar/cluster",
        &[json!("outbound|8080||ev.ns.svc.cluster.local")],
        &[json!(""), json!("a\u{1}b"), json!("a\u{85}b"), json!(5)],
    );
    field(
        &mut c,
        "/sidecar/authority",
        &[json!("email-verdict:8080"), Value::Null, json!("a".repeat(255))],
        &[json!(""), json!("a b"), json!("a".repeat(256)), json!("é")],
    );
    field(
        &mut c,
        "/sidecar/timeout_ms",
        &[json!(1), json!(60000)],
        &[json!(0), json!(60001), json!(-1), json!("1000")],
    );
    field(&mut c, "/sidecar/api_key_env", &[json!("KEY")], &[json!(""), json!("A=B"), json!("A\u{0}"), json!(5)]);
    let key_only = |key: Value, valid| case(&[("/sidecar/api_key_env", None), ("/sidecar/api_key", Some(key))], valid);
    c.push(key_only(json!("ev_0123"), true));
    c.push(key_only(json!(""), false));
    c.push(key_only(json!("a b"), false));
    c.push(key_only(Value::Null, false)); // neither
    c.push(case(&[("/sidecar/api_key", Some(json!("ev_0123")))], false)); // both
    c.push(case(&[("/sidecar/api_key", Some(Value::Null))], true));
    c.push(case(&[("/sidecar/cluster", None)], false));
    c.push(case(&[("/sidecar/port", Some(json!(1)))], false));
    // signup_routes
    field(
        &mut c,
        "/signup_routes",
        &[json!([{ "method": "PUT", "path_prefix": "/api/" }])],
        &[json!([]), json!("/signup")],
    );
    field(&mut c, "/signup_routes/0/method", &[json!("post"), json!("M-SEARCH")], &[json!(""), json!("PO ST")]);
    field(
        &mut c,
        "/signup_routes/0/path",
        &[json!("/a/b.json"), json!("/")],
        &[
            json!("signup"),
            json!("/a?b"),
            json!("/a#b"),
            json!("/a b"),
            json!("/é"),
            Value::Null, // then neither path nor path_prefix
        ],
    );
    c.push(case(&[("/signup_routes/0/path", None), ("/signup_routes/0/path_prefix", Some(json!("/api")))], true));
    c.push(case(&[("/signup_routes/0/path", None), ("/signup_routes/0/path_prefix", Some(json!("api")))], false));
    c.push(case(&[("/signup_routes/0/path_prefix", Some(json!("/api")))], false)); // both
    c.push(case(&[("/signup_routes/0/path_prefix", Some(Value::Null))], true));
    // email
    field(&mut c, "/email/headers", &[json!(["x-signup-email"]), json!([])], &[json!(["x email"]), json!([""])]);
    field(&mut c, "/email/query_params", &[json!(["email"])], &[json!([""]), json!("email")]);
    field(&mut c, "/email/json_pointers", &[json!(["", "/user/email"]), json!([])], &[json!(["email"]), json!([1])]);
    field(&mut c, "/email/form_fields", &[json!(["user[email]"]), json!([])], &[json!([""])]);
    field(&mut c, "/email/secret_fields", &[json!(["token"]), json!([])], &[json!([""])]);
    field(
        &mut c,
        "/email/proto_fields",
        &[json!(["1", "3.1", "536870911", "2.536870911"])],
        &[json!(["0"]), json!(["01"]), json!(["536870912"]), json!(["999999999"]), json!(["1."]), json!(["a"])],
    );
    let no_source = [("/email/json_pointers", Some(json!([]))), ("/email/form_fields", Some(json!([])))];
    c.push(case(&no_source, false));
    c.push(case(&[no_source[0].clone(), no_source[1].clone(), ("/email/proto_fields", Some(json!(["1"])))], true));
    c.push(case(&[("/email/password", Some(json!([])))], false));
    // graphql
    field(
        &mut c,
        "/graphql",
        &[json!({ "paths": ["/graphql"], "operations": ["signUp"] }), Value::Null],
        &[json!({ "paths": ["/graphql"] }), json!("/graphql")],
    );
    let graphql = |f: &str, v: Value, valid| {
        let full = json!({ "paths": ["/graphql"], "operations": ["signUp"] });
        case(&[("/graphql", Some(full)), (&format!("/graphql/{f}"), Some(v))], valid)
    };
    c.push(graphql("paths", json!(["/graphql", "/gql"]), true));
    c.push(graphql("paths", json!([]), false));
    c.push(graphql("paths", json!(["graphql"]), false));
    c.push(graphql("operations", json!(["signUp", "_create2"]), true));
    c.push(graphql("operations", json!([]), false));
    c.push(graphql("operations", json!(["sign-up"]), false));
    c.push(graphql("operations", json!(["2x"]), false));
    // The objects themselves.
    field(&mut c, "/sidecar", &[json!({ "cluster": "c", "api_key": "k" })], &[json!("c"), Value::Null]);
    for pointer in ["/email", "/block_response", "/flag_headers", "/detail_headers", "/cache"] {
        field(&mut c, pointer, &[json!({})], &[json!("x"), json!(5), Value::Null]);
    }
    for (pointer, good, bad) in [
        ("/max_domains", [1, 64], [0, 65]),
        ("/enforce_percent", [0, 100], [-1, 101]),
        ("/block_response/status", [400, 599], [399, 600]),
        ("/failure_status", [400, 599], [200, 600]),
        ("/decision_sync_seconds", [0, 3600], [-1, 3601]),
        ("/cache/ttl_seconds", [0, 86400], [-1, -300]),
        ("/cache/max_entries", [1, 1_000_000], [0, 1_000_001]),
        ("/max_body_bytes", [1, 10_485_760], [0, 10_485_761]),
    ] {
        field(&mut c, pointer, &good.map(|n| json!(n)), &[json!(bad[0]), json!(bad[1]), json!("1")]);
    }
    field(&mut c, "/mode", &[json!("block"), json!("flag"), json!("shadow")], &[json!("dry_run"), json!("Block")]);
    field(&mut c, "/block_response/body", &[json!("text"), Value::Null, json!({ "error": "x" })], &[]);
    for name in FLAG_HEADERS {
        field(
            &mut c,
            &format!("/flag_headers/{name}"),
            &[json!(format!("x-my-{name}"))],
            &[json!("cookie"), json!("Content-Type"), json!("x y"), json!("")],
        );
    }
    for name in ["normalized_email", "role_account", "relay", "mailbox_signups", "client_signups"] {
        field(&mut c, &format!("/detail_headers/{name}"), &[json!(false)], &[json!("no"), Value::Null]);
    }
    for pointer in ["/on_missing_email", "/on_invalid_email", "/on_unreadable_body"] {
        field(&mut c, pointer, &[json!("allow"), json!("deny")], &[json!("block"), Value::Null]);
    }
    field(
        &mut c,
        "/failure_mode",
        &[json!("deny"), json!({})],
        &[json!("block"), json!({ "timeout": "deny" }), json!(5)],
    );
    for name in ["sidecar_error", "sidecar_timeout", "sidecar_rejected"] {
        field(&mut c, &format!("/failure_mode/{name}"), &[json!("deny")], &[json!("block")]);
    }
    for pointer in ["/local_fallback", "/hold_headers"] {
        field(&mut c, pointer, &[json!(true), json!(false)], &[json!("yes"), json!(1)]);
    }
    c.push(case(&[("/hold_headers", Some(json!(false))), ("/mode", Some(json!("flag")))], false));
    c.push(case(&[("/hold_headers", Some(json!(false))), ("/mode", Some(json!("shadow")))], true));
    field(&mut c, "/on_subaddressed", &[json!("allow"), json!("flag"), json!("deny")], &[json!("block")]);
    field(&mut c, "/no_mx", &[json!("allow"), json!("flag"), json!("block")], &[json!("deny"), json!(true)]);
    // velocity and its secret
    let with_env = |changes: &[(&str, Value)], valid| {
        let mut all: Vec<(&str, Option<Value>)> = vec![("/mailbox_secret_env", Some(secret.clone()))];
        all.extend(changes.iter().map(|(p, v)| (*p, Some(v.clone()))));
        case(&all, valid)
    };
    c.push(with_env(&[("/velocity", json!({}))], true));
    c.push(with_env(&[("/velocity", Value::Null)], true));
    c.push(with_env(&[("/velocity", json!({ "everyone": { "per_day": 1, "action": "flag" } }))], false));
    for scope in ["mailbox", "client", "domain", "server"] {
        let at = |f: &str| format!("/velocity/{scope}{f}");
        c.push(with_env(&[(&at(""), json!({ "per_day": 3, "action": "flag" }))], true));
        c.push(with_env(&[(&at(""), Value::Null)], true));
        c.push(with_env(&[(&at(""), json!({ "per_hour": 3, "per_day": 9, "action": "flag" }))], false));
        c.push(with_env(&[(&at(""), json!({ "action": "flag" }))], false));
        c.push(with_env(&[(&at(""), json!({ "per_day": 3, "per_hour": null, "action": "block" }))], true));
        c.push(with_env(&[(&at("/per_hour"), json!(10)), (&at("/action"), json!("block"))], true));
        c.push(with_env(&[(&at("/per_hour"), json!(0)), (&at("/action"), json!("block"))], false));
        c.push(with_env(&[(&at("/per_day"), json!(1)), (&at("/action"), json!("flag"))], true));
        c.push(with_env(&[(&at("/per_day"), json!(-1)), (&at("/action"), json!("flag"))], false));
        c.push(with_env(&[(&at("/per_day"), json!(1)), (&at("/action"), json!("drop"))], false));
    }
    c.push(case(&[("/velocity", Some(json!({ "client": { "per_hour": 10, "action": "flag" } })))], false));
    field(&mut c, "/mailbox_secret", &[json!("s".repeat(32)), Value::Null], &[json!("short"), json!(32)]);
    field(&mut c, "/mailbox_secret_env", &[secret.clone(), Value::Null], &[json!(5)]);
    c.push(case(&[("/mailbox_secret", Some(json!("s".repeat(32)))), ("/mailbox_secret_env", Some(secret))], false));
    c.push(case(&[("/unknown", Some(json!(1)))], false));
    c
}

/// Where the schema and the parser cannot agree, each kept a difference on purpose: `(what, the
/// document, parser valid, schema valid)`.
fn known_differences() -> Vec<(&'static str, Value, bool, bool)> {
    let mut d = Vec::new();
    let mut with = |what, changes: &[(&str, Value)], parser, schema| {
        let mut doc = base();
        for (p, v) in changes {
            set(&mut doc, p, Some(v.clone()));
        }
        d.push((what, doc, parser, schema));
    };
    with(
        "an integer written 1000.0 (JSON Schema calls it an integer; serde does not)",
        &[("/sidecar/timeout_ms", json!(1000.0))],
        false,
        true,
    );
    with(
        "an object written as an array, by position (serde's derive reads one)",
        &[("/cache", json!([300, 10000]))],
        true,
        false,
    );
    with("two flag headers with one name", &[("/flag_headers/relay", json!("X-Email-Verdict"))], false, true);
    with("an email header that is a flag header", &[("/email/headers", json!(["x-email-flags"]))], false, true);
    with(
        "a mailbox secret of 32 characters, 30 once trimmed",
        &[("/mailbox_secret", json!(format!(" {} ", "s".repeat(30))))],
        false,
        true,
    );
    with("a mailbox secret of 16 characters, 32 bytes", &[("/mailbox_secret", json!("é".repeat(16)))], true, false);
    d
}

#[test]
fn the_schema_is_a_draft_2020_12_schema() {
    let schema = schema();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(jsonschema::meta::is_valid(&schema), "{:?}", jsonschema::meta::validate(&schema));
}

#[test]
fn the_schema_and_the_parser_agree_on_every_case() {
    let validator = validator();
    let mut wrong = Vec::new();
    for case in cases() {
        let parser = parse(&case.doc);
        let schema: Vec<String> =
            validator.iter_errors(&case.doc).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        if parser.is_ok() != case.valid || schema.is_empty() != case.valid {
            wrong.push(format!("{} expected valid={}: parser {parser:?}, schema {schema:?}", case.doc, case.valid));
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_known_differences_are_still_the_only_ones_of_their_kind() {
    let validator = validator();
    for (what, doc, parser, schema) in known_differences() {
        assert_eq!(parse(&doc).is_ok(), parser, "{what}: the parser changed: {doc}");
        assert_eq!(validator.is_valid(&doc), schema, "{what}: the schema changed: {doc}");
    }
}

/// The names the parser knows at `path`, from its own message for an unknown field there.
fn parser_fields(path: &str) -> BTreeSet<String> {
    let mut doc = base();
    let probe = json!({ "__unknown__": true });
    if path.is_empty() {
        doc = probe;
    } else {
        let pointer = format!("/{}", path.replace('.', "/"));
        let value = if path == "signup_routes" { json!([probe]) } else { probe };
        set(&mut doc, &pointer, Some(value));
    }
    let message = parse(&doc).unwrap_err();
    let expected = message.split_once("expected").map(|(_, names)| names).unwrap_or_default();
    expected.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

#[test]
fn the_schema_knows_every_field_the_parser_knows() {
    let objects = objects(&schema());
    for (path, names) in &objects {
        if path == "failure_mode" {
            // An untagged enum: its message names the three reasons, checked one by one.
            for name in names {
                assert!(parse(&case(&[(&format!("/failure_mode/{name}"), Some(json!("deny")))], true).doc).is_ok());
            }
            continue;
        }
        let parser = parser_fields(path);
        assert_eq!(
            &parser, names,
            "the properties of {path:?}: the parser's (left) and envoy/schema/plugin-config.schema.json's (right): \
             describe a new field in the schema, and give it cases in cases()"
        );
    }
    let expected: BTreeSet<&str> =
        ["", "sidecar", "signup_routes", "email", "graphql", "block_response", "flag_headers"]
            .into_iter()
            .chain(["detail_headers", "failure_mode", "cache", "velocity"])
            .chain(["velocity.mailbox", "velocity.client", "velocity.domain", "velocity.server"])
            .collect();
    let found: BTreeSet<&str> = objects.keys().map(String::as_str).collect();
    assert_eq!(found, expected, "the schema's objects");
}

#[test]
fn every_field_has_good_and_bad_values() {
    let fields = fields(&schema());
    let mut seen: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for case in cases() {
        for pointer in &case.fields {
            let name: Vec<&str> = pointer.split('/').skip(1).filter(|s| s.parse::<usize>().is_err()).collect();
            let entry = seen.entry(name.join(".")).or_default();
            if case.valid { entry.0 = true } else { entry.1 = true }
        }
    }
    // Any JSON value is a block body: there is no bad one.
    let missing: Vec<String> = fields
        .iter()
        .filter(|f| *f != "block_response.body" || !seen.get(*f).is_some_and(|s| s.0))
        .filter(|f| !seen.get(*f).is_some_and(|&(good, bad)| good && bad))
        .cloned()
        .collect();
    assert!(missing.is_empty(), "fields without a good and a bad value in cases(): {missing:?}");
}

/// Every plugin configuration in the shipped recipes (`envoy/`, templates left out), found as
/// `validate-config` finds them: `(where, the JSON text)`.
fn shipped_plugin_configs() -> Vec<(String, Vec<u8>)> {
    let root = workspace_root();
    let mut configs = Vec::new();
    for file in shipped_recipes() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        for found in configurations(&text).unwrap_or_else(|e| panic!("{name}: {e}")).found {
            let json = found.json.unwrap_or_else(|e| panic!("{name}: {}: {e}", found.place));
            let bare_plugin = || serde_json::from_slice::<Value>(&json).is_ok_and(|d| d.get("sidecar").is_some());
            if found.kind == Some(Kind::Plugin) || (found.kind.is_none() && bare_plugin()) {
                configs.push((format!("{name}: {}", found.place), json));
            }
        }
    }
    configs
}

#[test]
fn every_shipped_plugin_configuration_is_valid_against_the_schema() {
    let validator = validator();
    let configs = shipped_plugin_configs();
    let names: Vec<&str> = configs.iter().map(|c| c.0.as_str()).collect();
    assert!(configs.len() >= 9, "{names:?}");
    for (name, json) in configs {
        let doc: Value = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        let errors: Vec<String> =
            validator.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
        assert_eq!(parse(&doc), Ok(()), "{name}");
    }
}

// The ext_authz configuration's schema: the plugin configuration's shared fields, word for word,
// and its own failure_mode; checked against `serve`'s reader of `--ext-authz-config`.

fn ext_authz_schema() -> Value {
    let path = workspace_root().join("envoy/schema/ext-authz-config.schema.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn parse_ext_authz(doc: &Value) -> Result<(), String> {
    email_verdict::config::ext_authz_from_json(&serde_json::to_vec(doc).unwrap()).map(drop)
}

#[test]
fn the_ext_authz_schema_is_the_plugin_schemas_shared_fields() {
    let (plugin, ext) = (schema(), ext_authz_schema());
    assert!(jsonschema::meta::is_valid(&ext));
    assert_eq!(ext["$defs"], plugin["$defs"], "copy $defs from plugin-config.schema.json");
    let properties = ext["properties"].as_object().unwrap();
    for (name, definition) in properties.iter().filter(|(name, _)| *name != "failure_mode") {
        let (mut mine, mut theirs) = (definition.clone(), plugin["properties"][name].clone());
        if name == "velocity" {
            // Where the secret comes from differs; the field does not.
            mine.as_object_mut().unwrap().remove("description");
            theirs.as_object_mut().unwrap().remove("description");
        }
        assert_eq!(mine, theirs, "{name}: copy it from plugin-config.schema.json");
    }
    let names: BTreeSet<String> = properties.keys().filter(|n| *n != "failure_mode").cloned().collect();
    let message = parse_ext_authz(&json!({ "__unknown__": true })).unwrap_err();
    let expected = message.split_once("expected").map(|(_, names)| names).unwrap_or_default();
    let parser: BTreeSet<String> = expected.split('`').skip(1).step_by(2).map(str::to_owned).collect();
    assert_eq!(parser, names, "the ext_authz reader's fields (left) and the schema's (right)");
}

#[test]
fn the_ext_authz_schema_and_reader_agree() {
    let validator = jsonschema::draft202012::new(&ext_authz_schema()).expect("the schema compiles");
    let shared: BTreeSet<String> = ext_authz_schema()["properties"].as_object().unwrap().keys().cloned().collect();
    let mut docs: Vec<Value> = cases()
        .into_iter()
        .filter(|c| c.fields.iter().all(|f| shared.contains(f.split('/').nth(1).unwrap_or_default())))
        .map(|c| {
            let mut doc = c.doc;
            let o = doc.as_object_mut().unwrap();
            o.remove("sidecar");
            o.remove("signup_routes");
            doc
        })
        .collect();
    assert!(docs.len() > 100, "{}", docs.len());
    for mode in [json!("allow"), json!("deny"), json!("maybe"), json!({ "sidecar_error": "deny" }), Value::Null] {
        docs.push(json!({ "failure_mode": mode }));
    }
    docs.push(json!({ "velocity": { "client": { "per_hour": 10, "action": "flag" } } }));
    let mut wrong = Vec::new();
    for doc in docs {
        let (reader, schema) = (parse_ext_authz(&doc), validator.is_valid(&doc));
        if reader.is_ok() != schema {
            wrong.push(format!("{doc}: reader {reader:?}, schema valid={schema}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let shipped = std::fs::read_to_string(workspace_root().join("envoy/ext-authz-config.json")).unwrap();
    let shipped: Value = serde_json::from_str(&shipped).unwrap();
    let errors: Vec<String> = validator.iter_errors(&shipped).map(|e| e.to_string()).collect();
    assert!(errors.is_empty() && parse_ext_authz(&shipped).is_ok(), "envoy/ext-authz-config.json: {errors:?}");
}
