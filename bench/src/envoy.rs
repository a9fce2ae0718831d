//! The Envoys of the gateway comparison that are not the shipped configuration: rendered from
//! `bench/envoy/*.template.yaml` (every `{{NAME}}` must get a value, every value must be used),
//! started like the harness starts its own (free ports, own `--base-id`, no hot restart, ready when
//! admin `/ready` says LIVE, killed by PID on drop).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use email_verdict_tests::envoy::envoy_binary;
use email_verdict_tests::{ChildProcess, Request, TestDir, free_port};

/// `bench/envoy/NAME.template.yaml`.
pub fn template(name: &str) -> PathBuf {
    email_verdict_tests::workspace_root().join("bench/envoy").join(format!("{name}.template.yaml"))
}

/// Fills in the `{{NAME}}` placeholders of `text`.
pub fn render(text: &str, values: &[(&str, String)]) -> anyhow::Result<String> {
    let mut out = text.to_owned();
    for (name, value) in values {
        let placeholder = format!("{{{{{name}}}}}");
        if !out.contains(&placeholder) {
            bail!("the template has no {placeholder}");
        }
        out = out.replace(&placeholder, value);
    }
    if let Some(start) = out.find("{{") {
        let rest = &out[start..];
        bail!("no value for {}", &rest[..rest.find("}}").map_or(rest.len(), |e| e + 2)]);
    }
    Ok(out)
}

/// A running Envoy, killed on drop.
pub struct BenchEnvoy {
    process: ChildProcess,
    addr: SocketAddr,
    admin: SocketAddr,
    _dir: TestDir,
}

impl BenchEnvoy {
    /// Renders `bench/envoy/{name}.template.yaml` with free listener and admin ports plus `values`
    /// and starts Envoy with one worker.
    pub fn start(name: &str, values: &[(&str, String)]) -> anyhow::Result<BenchEnvoy> {
        Self::start_workers(name, values, 1)
    }

    /// [`start`](Self::start) with `workers` worker threads (`--concurrency`).
    pub fn start_workers(name: &str, values: &[(&str, String)], workers: u32) -> anyhow::Result<BenchEnvoy> {
        let path = template(name);
        let text = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let (listen, admin) = (free_port(), free_port());
        let mut all = vec![("LISTEN_PORT", listen.to_string()), ("ADMIN_PORT", admin.to_string())];
        all.extend(values.iter().cloned());
        let dir = TestDir::new(&format!("envoy-{name}"));
        let config = dir.write("envoy.yaml", &render(&text, &all)?);
        let mut cmd = Command::new(envoy_binary());
        cmd.arg("-c")
            .arg(&config)
            .args(["--base-id", &admin.to_string(), "--disable-hot-restart", "--concurrency", &workers.to_string()])
            .args(["--log-level", "info", "--drain-time-s", "0"])
            .current_dir(dir.path());
        let mut process = ChildProcess::spawn("envoy", cmd, dir.path());
        let admin = SocketAddr::from(([127, 0, 0, 1], admin));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = process.try_wait() {
                bail!("Envoy ({name}) exited during startup ({status}):\n{}", process.stderr_text());
            }
            let ready = Request::get("/ready").timeout(Duration::from_millis(500)).try_send(admin).ok();
            if ready.is_some_and(|r| r.status == 200 && r.text().trim() == "LIVE") {
                break;
            }
            if Instant::now() > deadline {
                bail!("Envoy ({name}) not LIVE after 30 s:\n{}", process.stderr_text());
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Ok(BenchEnvoy { process, addr: SocketAddr::from(([127, 0, 0, 1], listen)), admin, _dir: dir })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn admin_addr(&self) -> SocketAddr {
        self.admin
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

/// Pins every thread of `pid` to `cpu` (so the Envoy worker and wrk do not share a core).
pub fn pin(pid: u32, cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        let _ = Command::new("taskset").args(["-a", "-p", "-c", &cpu.to_string(), &pid.to_string()]).output();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_fills_every_placeholder_or_fails() {
        assert_eq!(render("a {{X}} b {{X}}", &[("X", "1".into())]).unwrap(), "a 1 b 1");
        assert!(render("a {{X}} {{Y}}", &[("X", "1".into())]).unwrap_err().to_string().contains("{{Y}}"));
        assert!(render("a", &[("X", "1".into())]).is_err());
    }

    #[test]
    fn bench_templates_render() {
        let ports = |names: &[&'static str]| names.iter().map(|n| (*n, "1".to_string())).collect::<Vec<_>>();
        let base = ["LISTEN_PORT", "ADMIN_PORT", "APP_PORT"];
        let text = std::fs::read_to_string(template("no-filter")).unwrap();
        render(&text, &ports(&base)).unwrap();
        let text = std::fs::read_to_string(template("ext-authz")).unwrap();
        render(&text, &ports(&[base[0], base[1], base[2], "AUTHZ_PORT"])).unwrap();
    }
}
