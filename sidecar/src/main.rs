//! `email-verdict`: the sidecar's server and operator CLI in one binary (see `lib.rs`).

use std::process::ExitCode;

use clap::Parser;
use email_verdict::cli::{Cli, Command};
use email_verdict::{UsageError, check_cmd, explain_cmd, keys_cmd, logging, review_cmd, server, validate_cmd};

/// A cached lookup makes a few dozen small allocations across two server threads; glibc's
/// malloc was about 6 % of their time (BENCHMARKS.md, section 2). The binary only: the library
/// and its tests keep the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print(); // --help, --version
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // `email-verdict`, `email-verdict keys`: the usage and the subcommands, as git does.
            let _ = e.print();
            return ExitCode::from(2);
        }
        Err(e) => {
            // One line naming the problem; clap's usage hint is for people at a prompt.
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or_default();
            eprintln!("email-verdict: {}", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Serve(args) => (*args).resolve().and_then(|config| {
            logging::register_secrets(config.admin_token.iter().cloned().chain(config.lists.secrets()).collect());
            logging::init(config.log_format);
            server::run(config)
        }),
        Command::Keys { store, command } => block_on(keys_cmd::run(store, command)),
        Command::Review { store, command } => block_on(review_cmd::run(store, command)),
        Command::Explain(args) => block_on(explain_cmd::run(*args)),
        // Its own lines and exit status: one line per mistake, not one error.
        Command::ValidateConfig(args) => return validate_cmd::run(*args),
        Command::Check(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(check_cmd::run(*args))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            logging::flush(); // the lines logged before it come first
            eprintln!("email-verdict: {}", logging::redact(&format!("{e:#}")));
            if e.is::<UsageError>() || e.chain().any(|c| c.is::<email_verdict::state::StateUrlError>()) {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn block_on(f: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(f)
}
