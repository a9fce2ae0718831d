//! `email-verdict validate-config FILE...`: checks plugin and ext_authz configurations before a
//! proxy loads them, with the very parsers that will read them: the filter's
//! (`email_verdict_filter::config::PluginConfig`, shared by the Wasm filter and the dynamic
//! module) and `serve`'s `--ext-authz-config` reader. One line per configuration on stdout
//! (`ok: ...`), one per mistake on stderr naming the file, the resource and the field; exit
//! status 0 when every configuration is good, 1 otherwise. Where the configurations are in a
//! file: `found.rs`.
//!
//! What needs the proxy's environment (the API key and mailbox secret read from `*_env`
//! variables) is not checked: only that the variable is named.

pub mod found;

use std::io::Read;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use email_verdict_filter::config::PluginConfig;

use crate::config::ext_authz_from_json;
use crate::logging::redact;
use found::{Found, Kind};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files to check (`-` for stdin): JSON, or YAML of an Istio WasmPlugin or EnvoyFilter, an
    /// Envoy Gateway EnvoyExtensionPolicy or an Envoy bootstrap (every document of a file)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// What a bare configuration is [default: plugin when it has sidecar or signup_routes,
    /// else ext-authz]; one inside an Envoy, Istio or Envoy Gateway resource is always plugin
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// The Wasm filter's and the dynamic module's (filter/CONFIG.md)
    Plugin,
    /// serve's --ext-authz-config
    ExtAuthz,
}

/// Checks every file; the exit status says whether all were good (2: a file cannot be read).
pub fn run(args: ValidateArgs) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for file in &args.files {
        let text = match read(file) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("email-verdict: cannot read {file}: {e}");
                return ExitCode::from(2);
            }
        };
        let name = if file == "-" { "<stdin>" } else { file };
        if !check_file(name, &text, args.kind) {
            code = ExitCode::from(1);
        }
    }
    code
}

fn read(file: &str) -> std::io::Result<String> {
    if file == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        Ok(text)
    } else {
        std::fs::read_to_string(file)
    }
}

/// Prints the file's lines; true when it holds at least one configuration and all are good.
fn check_file(name: &str, text: &str, kind: Option<KindArg>) -> bool {
    let contents = match found::configurations(text) {
        Ok(contents) => contents,
        Err(e) => return fail(&format!("{name}: {e}")),
    };
    for skipped in &contents.skipped {
        eprintln!("{}", redact(&format!("{name}: skipped {skipped}")));
    }
    if contents.found.is_empty() {
        return fail(&format!(
            "{name}: no configuration found (a plugin or ext_authz configuration, a WasmPlugin, an EnvoyExtensionPolicy, \
             or an Envoy Wasm or dynamic-module filter of email-verdict)"
        ));
    }
    let mut good = true;
    for found in &contents.found {
        good &= check(name, found, kind);
    }
    good
}

/// One configuration through its parser.
fn check(name: &str, found: &Found, kind: Option<KindArg>) -> bool {
    let kind = found.kind.unwrap_or_else(|| chosen(found, kind));
    let what = match kind {
        Kind::Plugin => "plugin configuration",
        Kind::ExtAuthz => "ext_authz configuration",
    };
    let at = if found.place.is_empty() { name.to_owned() } else { format!("{name}: {}", found.place) };
    let result = found.json.as_deref().map_err(Clone::clone).and_then(|json| match kind {
        Kind::Plugin => PluginConfig::parse(json).and_then(|c| c.validate()).map_err(|e| e.to_string()),
        Kind::ExtAuthz => ext_authz_from_json(json).map(drop),
    });
    // ext_authz's reader writes the document anew without its failure_mode: no position holds.
    let rewritten = found.rewritten || kind == Kind::ExtAuthz;
    let result = result.map_err(|e| if rewritten { without_position(&e).to_owned() } else { e });
    match result {
        Ok(()) => {
            println!("{}", redact(&format!("ok: {at}: {what}")));
            true
        }
        Err(e) if found.kind.is_none() => fail(&format!("{at}: {what}: {e}")),
        Err(e) => fail(&format!("{at}: {e}")),
    }
}

/// A bare document's kind: `--kind`, else plugin when it names either field only the plugin
/// configuration has, or is no JSON object at all (the plugin parser's syntax errors keep
/// their line and column).
fn chosen(found: &Found, kind: Option<KindArg>) -> Kind {
    match kind {
        Some(KindArg::Plugin) => Kind::Plugin,
        Some(KindArg::ExtAuthz) => Kind::ExtAuthz,
        None => {
            let object = found.json.as_deref().ok().and_then(|j| serde_json::from_slice::<serde_json::Value>(j).ok());
            let plugin = object
                .as_ref()
                .and_then(serde_json::Value::as_object)
                .is_none_or(|o| o.contains_key("sidecar") || o.contains_key("signup_routes"));
            if plugin { Kind::Plugin } else { Kind::ExtAuthz }
        }
    }
}

/// `message` without serde_json's ` at line L column C`.
fn without_position(message: &str) -> &str {
    match message.rsplit_once(" at line ") {
        Some((head, tail))
            if tail.split(" column ").all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            head
        }
        _ => message,
    }
}

fn fail(line: &str) -> bool {
    eprintln!("{}", redact(line));
    false
}
