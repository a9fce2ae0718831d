//! A running `bench-bare`, killed on drop.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use email_verdict_tests::{ChildProcess, Request, TestDir, free_port};

use crate::capture::Captured;

pub struct Bare {
    // `process` before `dir`: the process dies before its files are removed.
    process: ChildProcess,
    addr: SocketAddr,
    _dir: TestDir,
}

/// `bench-bare`, built next to the running binary.
pub fn binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe.with_file_name("bench-bare");
    if !path.is_file() {
        bail!("{} does not exist: cargo build --release -p email-verdict-bench", path.display());
    }
    Ok(path)
}

impl Bare {
    /// Starts it answering `answer` and checks that it answers exactly that.
    pub fn start(name: &str, answer: &Captured, threads: usize) -> anyhow::Result<Bare> {
        let dir = TestDir::new(name);
        let file = dir.write("response.json", &answer.to_json());
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let mut cmd = Command::new(binary()?);
        cmd.arg("--listen")
            .arg(addr.to_string())
            .arg("--threads")
            .arg(threads.to_string())
            .arg("--response")
            .arg(&file);
        let process = ChildProcess::spawn(name, cmd, dir.path());
        let bare = Bare { process, addr, _dir: dir };
        let got = bare.wait_ready()?;
        if !got.same_answer(answer) {
            bail!("{name} answers\n{}\nnot the capture\n{}", got.to_json(), answer.to_json());
        }
        Ok(bare)
    }

    fn wait_ready(&self) -> anyhow::Result<Captured> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(r) = Request::get("/").timeout(Duration::from_secs(2)).try_send(self.addr) {
                return Captured::from_response(&r);
            }
            if Instant::now() > deadline {
                bail!("bench-bare did not answer on {} within 10 s:\n{}", self.addr, self.process.stderr_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    Ok(path)
}
