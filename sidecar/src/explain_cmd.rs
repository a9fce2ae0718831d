//! `email-verdict explain DOMAIN|ADDRESS`: why the verdict is what it is (`explain.rs`), as
//! aligned lines for people or, with `--format json`, the admin API's JSON. Reads the server's
//! state and lists (works while `serve` runs on them) and resolves like `check`; it never
//! writes to the state. An address's local part is never printed: only its domain is judged.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};

use crate::clock::{SystemClock, unix_now};
use crate::config::ServeArgs;
use crate::dns::{HickoryResolver, MxCache};
use crate::explain::{ExplainError, Explainer, Explanation, WindowFacts};
use crate::lists::Lists;
use crate::metrics::Metrics;
use crate::verdicts::Verdicts;
use crate::{state, usage_error};

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A domain, or an email address (only its domain is looked at and shown)
    pub query: String,
    /// Output: aligned lines for people, or the JSON of GET /admin/v1/explain
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// State store whose decisions, mail-server index and signup counts apply (read only) [default: the --config file's, else sqlite:email-verdict.db]
    #[arg(long, env = "EMAIL_VERDICT_STATE", value_name = "URL")]
    pub state: Option<String>,
    /// Settings file (TOML, as for serve): its state, lists, DNS settings and velocity limits apply
    #[arg(long, env = "EMAIL_VERDICT_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Nameserver ADDR[:PORT] to query instead of the system resolver; repeatable
    #[arg(long, env = "EMAIL_VERDICT_DNS", value_name = "ADDR[:PORT]", value_delimiter = ',')]
    pub dns: Vec<String>,
    /// serve's --ext-authz-config: its `velocity` limits are shown beside the signup counts
    #[arg(long, env = "EMAIL_VERDICT_EXT_AUTHZ_CONFIG", value_name = "FILE")]
    pub ext_authz_config: Option<PathBuf>,
    /// serve's --mailbox-secret, which a configuration with `velocity` requires (checked, never used)
    #[arg(long, env = "EMAIL_VERDICT_MAILBOX_SECRET", hide = true, hide_env_values = true)]
    pub mailbox_secret: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

pub async fn run(args: ExplainArgs) -> anyhow::Result<()> {
    let config = ServeArgs {
        dns: args.dns.clone(),
        config: args.config.clone(),
        ext_authz_config: args.ext_authz_config.clone(),
        mailbox_secret: args.mailbox_secret.clone(),
        ..Default::default()
    }
    .resolve()?;
    let store = state::open(args.state.as_deref().unwrap_or(&config.state))?;
    let metrics = Arc::new(Metrics::new());
    // The lists as `serve` has them: files, and the kept copies of URL lists (nothing fetched).
    let lists = Lists::start(config.lists.clone(), metrics.clone(), false)?.live();
    let resolver =
        Arc::new(HickoryResolver::new(&config.resolver, metrics.clone()).context("cannot set up the DNS resolver")?);
    let verdicts = Verdicts::new(
        lists.clone(),
        MxCache::new(resolver, config.cache.clone(), metrics.clone()),
        store.clone(),
        Arc::new(SystemClock),
        config.infra_threshold,
        metrics,
    )
    .with_dns_deadline(config.lookup_deadline)
    .read_only();
    let explainer = Explainer {
        verdicts: &verdicts,
        store: &*store,
        lists: &lists,
        limits: config.ext_authz.velocity.as_ref(),
        now: unix_now(),
    };
    let explained = explainer.explain(&args.query).await.map_err(|e| match e {
        ExplainError::BadInput(_) => usage_error(e.to_string()),
        ExplainError::Store(e) => e.into(),
    })?;
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&explained)?)?,
        Format::Text => text(&explained, &mut out)?,
    }
    Ok(())
}

/// Width of the label column.
const LABEL: usize = 16;

fn line(out: &mut impl Write, label: &str, value: impl std::fmt::Display) -> std::io::Result<()> {
    writeln!(out, "{label:<LABEL$}{value}")
}

/// The explanation as aligned `label value` lines, the deciding facts first.
pub fn text(e: &Explanation, out: &mut impl Write) -> std::io::Result<()> {
    let of_address = if e.input_type == "email" { " (the address's domain)" } else { "" };
    line(out, "domain", format!("{}{of_address}", e.domain))?;
    line(out, "verdict", e.verdict.unwrap_or("unknown (DNS did not answer)"))?;
    let source = serde_json::to_value(e.source).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    line(out, "source", format!("{source}: {}", e.reason))?;
    listing(e, out)?;
    decision(e, out)?;
    infrastructure(e, out)?;
    line(out, "free webmail", yes_no(e.free_webmail))?;
    line(out, "relay", yes_no(e.relay))?;
    dns(e, out)?;
    line(out, "review", if e.review_required { "queued for review by lookups" } else { "not required" })?;
    signups(e, out)?;
    let undo = e.next.undo.as_deref().unwrap_or("none: free webmail stays safe (rule 2)");
    line(out, "undo", undo)?;
    if let Some(withdraw) = &e.next.withdraw {
        line(out, "or withdraw", withdraw)?;
    }
    // One clause a line: the sentence is written for the JSON form.
    for (i, clause) in e.next.takes_effect.split("; ").enumerate() {
        line(out, if i == 0 { "takes effect" } else { "" }, clause)?;
    }
    Ok(())
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn listing(e: &Explanation, out: &mut impl Write) -> std::io::Result<()> {
    let Some(l) = &e.listing else { return line(out, "listing", "none") };
    let how = if !l.via_parent {
        "the domain itself".to_owned()
    } else if l.parent_mail {
        "a parent; its mail goes where the parent's does".to_owned()
    } else {
        "a parent; its mail does not go where the parent's does".to_owned()
    };
    line(out, "listing", format!("{} ({how})", l.entry))?;
    for s in &l.sources {
        let version = s.version.as_deref().map_or_else(String::new, |v| format!(" {v}"));
        let loaded = s.loaded_at.as_deref().map_or_else(String::new, |t| format!(", loaded {t}"));
        line(out, "  listed by", format!("{}{version} ({}; {}{loaded})", s.name, s.tier, s.location))?;
    }
    Ok(())
}

fn decision(e: &Explanation, out: &mut impl Write) -> std::io::Result<()> {
    let Some(d) = &e.decision else { return line(out, "decision", "none") };
    if d.by == "operator" {
        let files = if d.files.is_empty() { "-".to_owned() } else { d.files.join(", ") };
        return line(out, "decision", format!("{} by the operator's list on {} (files: {files})", d.verdict, d.on));
    }
    let who = d.reviewer.as_deref().unwrap_or("not recorded");
    let at = d.at.as_deref().unwrap_or("not recorded");
    line(out, "decision", format!("{} by reviewer {who} on {} at {at}", d.verdict, d.on))?;
    line(out, "  note", d.note.as_deref().filter(|n| !n.is_empty()).unwrap_or("-"))
}

fn infrastructure(e: &Explanation, out: &mut impl Write) -> std::io::Result<()> {
    if e.infrastructure.is_empty() {
        return line(out, "infrastructure", "none");
    }
    for (i, f) in e.infrastructure.iter().enumerate() {
        let why = match (f.reason, &f.owner) {
            ("marked", _) => "a reviewer marked it disposable".to_owned(),
            ("owner", Some(owner)) => format!("named under {owner}, which is listed"),
            _ => "used by disposable domains and no legitimate one".to_owned(),
        };
        let label = if i == 0 { "infrastructure" } else { "" };
        let n = f.disposable_domains;
        line(out, label, format!("{} {} serves {n} disposable domain(s): {why}", f.kind, f.server))?;
    }
    Ok(())
}

fn dns(e: &Explanation, out: &mut impl Write) -> std::io::Result<()> {
    if !e.dns.available {
        let error = e.dns.error.as_deref().unwrap_or("no answer");
        return line(out, "mail servers", format!("unknown: DNS unavailable ({error}); lists and decisions shown"));
    }
    match (e.dns.domain_exists, e.dns.mx.is_empty()) {
        (false, _) => line(out, "mail servers", "none: the domain does not exist"),
        (true, true) => line(out, "mail servers", "none: no MX"),
        (true, false) => line(out, "mail servers", e.dns.mx.join("; ")),
    }
}

fn signups(e: &Explanation, out: &mut impl Write) -> std::io::Result<()> {
    let s = &e.signups;
    line(out, "signups", window("domain", &s.domain))?;
    if let Some(server) = &s.server {
        line(out, "", window("server", server))?;
    }
    if !s.limits_configured {
        line(out, "", "no velocity limits in this configuration (a gateway's filter has its own)")?;
    }
    Ok(())
}

fn window(what: &str, w: &WindowFacts) -> String {
    let limit = match &w.limit {
        Some(l) if l.reached => {
            let effect = if l.action == "block" { "refused (429)" } else { "flagged" };
            format!("; {} limit {}/{} reached: the next signup is {effect}", l.action, l.max, l.window)
        }
        Some(l) => format!("; {} limit {}/{} not reached", l.action, l.max, l.window),
        None => String::new(),
    };
    format!("{what} {}: {} in the last hour, {} in the last day{limit}", w.name, w.hour, w.day)
}
