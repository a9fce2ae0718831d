//! A private directory per test: removed on drop, kept (and its path printed) when the test fails.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory under `$TMPDIR/email-verdict-tests/`.
#[derive(Debug)]
pub struct TestDir {
    path: PathBuf,
}

impl TestDir {
    /// Creates `<tmp>/email-verdict-tests/<label>-<pid>-<n>-<nanos>`.
    pub fn new(label: &str) -> TestDir {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("{label}-{}-{n}-{nanos}", std::process::id());
        let path = std::env::temp_dir().join("email-verdict-tests").join(name);
        // Another test's drop may remove the shared parent between its creation and ours: retry.
        let mut made = std::fs::create_dir_all(&path);
        for _ in 0..3 {
            if made.is_ok() {
                break;
            }
            made = std::fs::create_dir_all(&path);
        }
        made.unwrap_or_else(|e| panic!("cannot create test dir {}: {e}", path.display()));
        TestDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `self.path().join(name)`.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `contents` to `name` inside the directory and returns the full path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.join(name);
        std::fs::write(&p, contents).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
        p
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("EMAIL_VERDICT_KEEP_TEST_DIRS").is_some() {
            eprintln!("[harness] test files kept in {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
            // The shared parent too once the last test is done with it (fails while others use it).
            if let Some(parent) = self.path.parent() {
                let _ = std::fs::remove_dir(parent);
            }
        }
    }
}
