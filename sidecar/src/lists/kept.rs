//! The last good copy of each URL list on disk (`--list-cache-dir`), so that a restart without
//! the network starts from it. One file per URL, named by a hash of the URL as given (which may
//! carry credentials: never written in clear): a first comment line holding the copy's metadata
//! as JSON (redacted source, fetch time, validators), then the list text. Written to a
//! temporary file and renamed, so a crash leaves the old copy or the new one, never half.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::fetch::Validators;
use super::source::ListUrl;

const HEADER: &str = "# email-verdict kept copy ";

/// A copy read back.
pub struct Kept {
    pub text: String,
    /// Unix seconds of the fetch that gave it.
    pub fetched_at: i64,
    pub validators: Validators,
}

#[derive(Serialize, Deserialize)]
struct Meta {
    source: String,
    fetched_at: i64,
    #[serde(flatten)]
    validators: Validators,
}

#[derive(Debug, Clone)]
pub struct KeptCopies {
    dir: PathBuf,
}

impl KeptCopies {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, url: &ListUrl) -> PathBuf {
        let digest = hex::encode(Sha256::digest(url.full().as_bytes()));
        self.dir.join(format!("{}.list", &digest[..32]))
    }

    /// The copy kept for `url`; `None` when there is none or it cannot be read back.
    pub fn load(&self, url: &ListUrl) -> Option<Kept> {
        let path = self.path(url);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot read a kept list copy");
                return None;
            }
        };
        let (first, body) = text.split_once('\n').unwrap_or((&text, ""));
        let meta: Meta = match first.strip_prefix(HEADER).map(serde_json::from_str) {
            Some(Ok(meta)) => meta,
            _ => {
                tracing::warn!(file = %path.display(), "a kept list copy has no valid header; ignored");
                return None;
            }
        };
        Some(Kept { text: body.to_owned(), fetched_at: meta.fetched_at, validators: meta.validators })
    }

    /// Keeps `text` as the last good copy of `url`.
    pub fn save(&self, url: &ListUrl, text: &str, fetched_at: i64, validators: &Validators) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let meta = Meta { source: url.redacted().to_owned(), fetched_at, validators: validators.clone() };
        let header = serde_json::to_string(&meta).map_err(std::io::Error::other)?;
        let path = self.path(url);
        let tmp = path.with_extension("tmp");
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(format!("{HEADER}{header}\n").as_bytes())?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_round_trips_without_the_secret_in_clear() {
        let dir = std::env::temp_dir().join(format!("ev-kept-{}", std::process::id()));
        let kept = KeptCopies::new(dir.join("lists"));
        let url = ListUrl::parse("https://u:secret@l.example/x?token=t0ken").unwrap();
        assert!(kept.load(&url).is_none());
        let validators = Validators { etag: Some("\"v1\"".into()), last_modified: None };
        kept.save(&url, "a.example\nb.example\n", 1_795_330_023, &validators).unwrap();
        let back = kept.load(&url).unwrap();
        assert_eq!(
            (back.text.as_str(), back.fetched_at, back.validators),
            ("a.example\nb.example\n", 1_795_330_023, validators)
        );
        for entry in std::fs::read_dir(kept.dir()).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(entry.path()).unwrap();
            assert!(!name.contains("secret") && !text.contains("secret") && !text.contains("t0ken"), "{name}: {text}");
        }
        let other = ListUrl::parse("https://l.example/x?token=other").unwrap();
        assert!(kept.load(&other).is_none(), "a copy belongs to its URL");
        std::fs::remove_dir_all(&dir).ok();
    }
}
