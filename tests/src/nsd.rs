//! NSD, a real authoritative DNS server, serving `tests/fixtures/zones/*.zone` on loopback.

use crate::dns::{self, qtype};
use crate::process::{ChildProcess, free_udp_tcp_port, wait_for};
use crate::tempdir::TestDir;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A zone every readiness probe asks for (its SOA).
const PROBE_ZONE: &str = "example";

/// An unprivileged NSD on 127.0.0.1:PORT with its config, database-less zone loading and logs in
/// a private directory. Can be stopped and started again on the same port.
pub struct Nsd {
    // `process` before `dir`: the process dies before its files are removed.
    process: Option<ChildProcess>,
    conf: PathBuf,
    port: u16,
    dir: TestDir,
}

impl Nsd {
    /// Starts NSD on a free port with every fixture zone and waits until it answers. Names
    /// outside the zones are REFUSED (NSD is not authoritative for them).
    pub fn start() -> Nsd {
        Nsd::start_zones(fixture_zones())
    }

    /// Like [`Nsd::start`], and authoritative for the root too, so every other name is
    /// NXDOMAIN: for tests that look up arbitrary generated domains.
    pub fn start_with_root() -> Nsd {
        let mut zones = fixture_zones();
        zones.push((".".to_string(), crate::fixtures_dir().join("root").join("root.zone")));
        Nsd::start_zones(zones)
    }

    /// NSD serving exactly `zones` (zone name, file), e.g. a generated root zone.
    pub fn start_zones(zones: Vec<(String, PathBuf)>) -> Nsd {
        let mut dir = TestDir::new("nsd");
        // The port was free a moment ago, but a resolver's random UDP source port (hickory's in a
        // concurrent test) can take it before NSD binds it: then try another.
        for attempt in 1.. {
            let port = free_udp_tcp_port();
            let conf = dir.write("nsd.conf", &config(dir.path(), port, &zones));
            let mut nsd = Nsd { process: None, conf, port, dir };
            match nsd.try_spawn() {
                Ok(()) => return nsd,
                Err(dump) if attempt < 5 && dump.contains("Address already in use") => dir = nsd.into_dir(),
                Err(dump) => panic!("nsd exited during startup\n{dump}"),
            }
        }
        unreachable!()
    }

    fn into_dir(self) -> TestDir {
        let Nsd { dir, .. } = self;
        dir
    }

    /// The address NSD answers on (UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops NSD and waits until the port no longer answers.
    pub fn stop(&mut self) {
        // Dropping the guard stops and reaps NSD; its output files stay in `dir` (a restart
        // appends to them).
        self.process = None;
        let addr = self.addr();
        wait_for(&format!("the stopped NSD to go quiet on {addr}"), Duration::from_secs(10), || {
            dns::query_udp(addr, PROBE_ZONE, qtype::SOA, Duration::from_millis(100)).is_err().then_some(())
        });
    }

    /// Starts NSD again on the same port with the same zones.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    fn spawn(&mut self) {
        if let Err(dump) = self.try_spawn() {
            panic!("nsd exited during startup\n{dump}");
        }
    }

    /// Starts NSD and waits until it answers; `Err` with its output when it exits first.
    fn try_spawn(&mut self) -> Result<(), String> {
        let mut cmd = Command::new(nsd_binary());
        cmd.arg("-d").arg("-c").arg(&self.conf);
        let mut p = ChildProcess::spawn("nsd", cmd, self.dir.path());
        p.add_log(self.dir.join("nsd.log"));
        p.stop_gracefully();
        let addr = self.addr();
        let started = wait_for(&format!("NSD to answer on {addr}"), Duration::from_secs(10), || {
            if let Some(status) = p.try_wait() {
                return Some(Err(format!("({status})\n{}", p.dump())));
            }
            dns::query_udp(addr, PROBE_ZONE, qtype::SOA, Duration::from_millis(100)).ok().map(Ok)
        });
        started?;
        self.process = Some(p);
        Ok(())
    }
}

/// `nsd` from PATH, else `/usr/sbin/nsd` (Debian puts it there, often not on a user's PATH).
pub fn nsd_binary() -> PathBuf {
    find_in_path("nsd")
        .or_else(|| Some(PathBuf::from("/usr/sbin/nsd")).filter(|p| p.exists()))
        .unwrap_or_else(|| panic!("nsd not found in PATH or /usr/sbin: install it first (scripts/install-deps.sh)"))
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Every `<zone>.zone` under `tests/fixtures/zones/`, as (zone name, file).
pub fn fixture_zones() -> Vec<(String, PathBuf)> {
    let dir = crate::fixtures_dir().join("zones");
    let mut zones: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.strip_suffix(".zone")?.to_string();
            Some((name, p))
        })
        .collect();
    zones.sort();
    assert!(!zones.is_empty(), "no zone files in {}", dir.display());
    zones
}

/// The config of toolchain.md: unprivileged, no chroot, no database, every file in `dir`.
fn config(dir: &Path, port: u16, zones: &[(String, PathBuf)]) -> String {
    let d = dir.display();
    let mut c = format!(
        "server:\n\
         \x20   ip-address: 127.0.0.1@{port}\n\
         \x20   do-ip4: yes\n\
         \x20   do-ip6: no\n\
         \x20   username: \"\"\n\
         \x20   chroot: \"\"\n\
         \x20   database: \"\"\n\
         \x20   server-count: 1\n\
         \x20   verbosity: 1\n\
         \x20   hide-version: yes\n\
         \x20   zonesdir: \"{d}\"\n\
         \x20   zonelistfile: \"{d}/zone.list\"\n\
         \x20   xfrdfile: \"{d}/xfrd.state\"\n\
         \x20   xfrdir: \"{d}\"\n\
         \x20   pidfile: \"{d}/nsd.pid\"\n\
         \x20   logfile: \"{d}/nsd.log\"\n\
         remote-control:\n\
         \x20   control-enable: no\n"
    );
    for (name, file) in zones {
        c.push_str(&format!("zone:\n    name: \"{name}\"\n    zonefile: \"{}\"\n", file.display()));
    }
    c
}
