//! The command line of operations.md: `serve`, `keys create|list|revoke`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::ServeArgs;

#[derive(Debug, Parser)]
#[command(
    name = "email-verdict",
    version,
    about = "Disposable-email verdicts for signups: API server and operator CLI"
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
    Keys {
        #[command(flatten)]
        store: StoreArgs,
        #[command(subcommand)]
        command: KeysCommand,
    },
}

/// Where the state lives, for operator commands: `--state`, else the `--config` file's `state`.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// State store: sqlite:PATH [default: sqlite:email-verdict.db]
    #[arg(long, env = "EMAIL_VERDICT_STATE", value_name = "URL", global = true)]
    pub state: Option<String>,
    /// Settings file to read `state` from
    #[arg(long, env = "EMAIL_VERDICT_CONFIG", value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print it (alone, as the last line); only its hash is stored
    Create {
        /// free, basic, premium or pro
        #[arg(long)]
        plan: crate::plans::Plan,
        /// A label for the key
        #[arg(long, default_value = "")]
        name: String,
        /// Network (CIDR) the key may be used from; repeatable; none means anywhere
        #[arg(long = "allow-ip", value_name = "CIDR")]
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
