//! The command line of operations.md: `serve`, `keys create|list|revoke`, `review`, `check`,
//! `explain` and `validate-config`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::client_ip::parse_network;
use crate::config::ServeArgs;

#[derive(Debug, Parser)]
#[command(
    name = "email-verdict",
    version,
    about = "Disposable-email verdicts for signups: API server and operator CLI",
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the verdict API and the public pages
    Serve(Box<ServeArgs>),
    /// Create, list and revoke API keys
    #[command(arg_required_else_help = true)]
    Keys {
        #[command(flatten)]
        store: StoreArgs,
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Verdicts in bulk without a server: one input per line in, one record per line out
    Check(Box<crate::check_cmd::CheckArgs>),
    /// The manual review queue and reviewers' decisions
    #[command(arg_required_else_help = true)]
    Review {
        #[command(flatten)]
        store: StoreArgs,
        #[command(subcommand)]
        command: ReviewCommand,
    },
    /// Why a domain's (or an address's domain's) verdict is what it is, and how to undo it
    Explain(Box<crate::explain_cmd::ExplainArgs>),
    /// Check plugin and ext_authz configurations (JSON, or the YAML of Istio, Envoy Gateway and
    /// Envoy resources) with the filter's own parser before a proxy loads them
    #[command(arg_required_else_help = true)]
    ValidateConfig(Box<crate::validate_cmd::ValidateArgs>),
}

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// Domains waiting for review, oldest first, with why each is queued
    List {
        /// oldest (first seen) or priority (likelihood of being disposable × lookups)
        #[arg(long, default_value = "oldest", value_name = "ORDER")]
        sort: String,
        /// Only this reason: ambiguous, no_mx, weak_listing or parent_listing
        #[arg(long)]
        reason: Option<String>,
        /// Only the domains whose own mail servers include this host name or address
        #[arg(long, value_name = "HOST_OR_IP")]
        server: Option<String>,
        /// Only the domains containing this text
        #[arg(long, value_name = "TEXT")]
        grep: Option<String>,
        /// At most this many lines (default: all)
        #[arg(long)]
        limit: Option<usize>,
        /// Skip this many first
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// One line per mail server: its queued domains, the heaviest first
        #[arg(long)]
        by_server: bool,
    },
    /// Decide a domain (or, with --server, a mail server for all its domains): later lookups
    /// reflect it at once
    Set {
        domain: String,
        /// disposable or safe
        verdict: String,
        #[arg(long, default_value = "")]
        note: String,
        /// Who decides (default: $USER, else "operator")
        #[arg(long, env = "USER", default_value = "operator", hide_default_value = true, hide_env = true)]
        reviewer: String,
        /// DOMAIN is a mail server (host name or address): mark it for every domain on it
        #[arg(long)]
        server: bool,
    },
    /// Withdraw the current decision (the domain is judged by the lists again)
    Clear {
        domain: String,
        #[arg(long, default_value = "")]
        note: String,
        /// Who withdraws it (default: $USER, else "operator")
        #[arg(long, env = "USER", default_value = "operator", hide_default_value = true, hide_env = true)]
        reviewer: String,
        /// DOMAIN is a mail server: withdraw its mark
        #[arg(long)]
        server: bool,
    },
    /// Every decision about a domain, oldest first (with --server: a mail server's marks and the
    /// domains that taught the index about it)
    History {
        domain: String,
        #[arg(long)]
        server: bool,
    },
}

/// Where the state lives, for operator commands: `--state`, else the `--config` file's `state`
/// (the file's list settings are used too, to refuse decisions on free webmail).
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// State store: sqlite:PATH, redis://HOST:PORT[/DB] or redis+cluster://HOST:PORT[,HOST:PORT...] [default: sqlite:email-verdict.db]
    #[arg(long, env = "EMAIL_VERDICT_STATE", value_name = "URL", global = true)]
    pub state: Option<String>,
    /// Settings file to read `state` (and `[plans]`) from
    #[arg(long, env = "EMAIL_VERDICT_CONFIG", value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print it (alone, as the last line); only its hash is stored
    Create {
        /// free, basic, premium, pro, gateway (unlimited: the filter's or ext_authz's key), or a
        /// plan the --config file defines ([plans.NAME])
        #[arg(long)]
        plan: String,
        /// A label for the key
        #[arg(long, default_value = "")]
        name: String,
        /// Network (CIDR, or a single address) the key may be used from; repeatable; none means anywhere
        #[arg(long = "allow-ip", value_name = "CIDR", value_parser = parse_network)]
        allow_ip: Vec<ipnet::IpNet>,
    },
    /// List keys: id, name, plan, status, today's usage (never the key)
    List,
    /// Revoke a key by id
    Revoke {
        /// The key's id (from `keys list`)
        id: String,
    },
}
