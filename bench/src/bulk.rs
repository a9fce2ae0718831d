//! Section 6: `email-verdict check` over N distinct domains served by NSD, against `dnsperf`
//! sending the same queries to the same NSD: the limit a DNS-only bulk check can reach.
//!
//! Each domain `dN.bulk.test` has one MX host of its own, `mx.dN.bulk.test`, with an A and an
//! AAAA record, so a check resolves three names per domain (MX, then both addresses of its
//! host); dnsperf gets exactly those queries, once each. The checker's memory is sampled while it
//! runs: it must stay flat, whatever the input's length.

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use email_verdict_tests::{Nsd, TestDir, dns};

use crate::footprint::rss_kib;

const ZONE: &str = "bulk.test";
/// The checker's `--cache-size`: a tenth of the default domains, so that the run shows memory
/// flat once the cache is full (the default, 100,000, would only fill at the end).
const CACHE: &str = "10000";

/// The zone file and the checker's input for `n` domains, and dnsperf's query file.
fn generate(dir: &TestDir, n: usize) -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    let mut zone = format!(
        "$ORIGIN {ZONE}.\n$TTL 3600\n@ IN SOA ns1 hostmaster 1 3600 600 86400 60\n@ IN NS ns1\nns1 IN A 192.0.2.53\n"
    );
    let (mut input, mut queries) = (String::new(), String::new());
    for i in 0..n {
        let (a, b) = (i / 250 % 250 + 1, i % 250 + 1);
        writeln!(
            zone,
            "d{i} IN MX 10 mx.d{i}\nmx.d{i} IN A 198.18.{a}.{b}\nmx.d{i} IN AAAA 2001:db8::{:x}:{:x}",
            i >> 16,
            i & 0xffff
        )?;
        writeln!(input, "user@d{i}.{ZONE}")?;
        writeln!(queries, "d{i}.{ZONE} MX\nmx.d{i}.{ZONE} A\nmx.d{i}.{ZONE} AAAA")?;
    }
    Ok((dir.write("bulk.test.zone", &zone), dir.write("input.txt", &input), dir.write("queries.txt", &queries)))
}

/// What one run of the checker did.
struct CheckRun {
    elapsed: Duration,
    lines: usize,
    errors: usize,
    /// VmRSS samples (KiB) after the first second.
    rss: Vec<u64>,
}

fn run_check(nsd: &Nsd, input: &std::path::Path) -> anyhow::Result<CheckRun> {
    let bin = email_verdict_tests::sidecar::binary();
    let started = Instant::now();
    let mut child = Command::new(bin)
        .args(["check", "--dns", &nsd.addr().to_string(), "--concurrency", "256", "--cache-size", CACHE])
        .arg("--no-resolver-check") // the bench zone is all this NSD serves
        .arg(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("run email-verdict check")?;
    let pid = child.id();
    let stdout = child.stdout.take().context("stdout")?;
    // Count the output while it streams (holding it would measure this process, not the checker).
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let (mut lines, mut errors) = (0usize, 0usize);
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            lines += 1;
            errors += usize::from(line.contains("\"error\""));
        }
        (lines, errors)
    });
    let mut rss = Vec::new();
    while child.try_wait()?.is_none() {
        std::thread::sleep(Duration::from_millis(100));
        if started.elapsed() > Duration::from_secs(1)
            && let Some((now, _)) = rss_kib(pid)
        {
            rss.push(now);
        }
    }
    let elapsed = started.elapsed();
    let status = child.wait()?;
    ensure!(status.success(), "email-verdict check exited with {status}");
    let (lines, errors) = reader.join().map_err(|_| anyhow::anyhow!("the output reader panicked"))?;
    Ok(CheckRun { elapsed, lines, errors, rss })
}

/// dnsperf's queries per second over the query file, sent once, 256 at a time.
fn run_dnsperf(nsd: &Nsd, queries: &std::path::Path) -> anyhow::Result<f64> {
    let out = Command::new("dnsperf")
        .args(["-s", "127.0.0.1", "-p", &nsd.port().to_string(), "-n", "1", "-q", "256", "-c", "1"])
        .arg("-d")
        .arg(queries)
        .output()
        .context("cannot run dnsperf (apt-get install dnsperf; make bench installs it)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    ensure!(out.status.success(), "dnsperf failed:\n{text}");
    let qps = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Queries per second:"))
        .and_then(|v| v.trim().parse::<f64>().ok());
    match qps {
        Some(q) => Ok(q),
        None => bail!("no 'Queries per second' in dnsperf's output:\n{text}"),
    }
}

pub fn run(n: usize) -> anyhow::Result<String> {
    eprintln!("6. bulk: email-verdict check over {n} domains, and dnsperf");
    let dir = TestDir::new("bench-bulk");
    let (zone, input, queries) = generate(&dir, n)?;
    let nsd = Nsd::start_zones(vec![(ZONE.to_owned(), zone)]);
    // NSD answers before a large zone is loaded (errors, which its rate limiting then drops):
    // wait for the last domain's MX.
    let last = format!("d{}.{ZONE}", n - 1);
    email_verdict_tests::wait_for("NSD to serve the generated zone", Duration::from_secs(120), || {
        let reply = dns::query_udp(nsd.addr(), &last, dns::qtype::MX, Duration::from_millis(200)).ok()?;
        (reply.rcode == 0 && reply.answers > 0).then_some(())
    });
    // dnsperf first, alone: also warms NSD's own caches, as the checker runs after it.
    let dnsperf_qps = run_dnsperf(&nsd, &queries)?;
    let check = run_check(&nsd, &input)?;
    ensure!(check.lines == n, "email-verdict check wrote {} lines for {n} inputs", check.lines);
    let domains_per_s = n as f64 / check.elapsed.as_secs_f64();
    let implied_qps = domains_per_s * 3.0;
    let ratio = implied_qps / dnsperf_qps;
    let mb = |kib: Option<&u64>| kib.copied().unwrap_or(0) as f64 / 1024.0;
    let second_half = &check.rss[check.rss.len() / 2..];
    let (lo, hi) = (mb(second_half.iter().min()), mb(second_half.iter().max()));
    let target = if ratio >= 0.5 { "met" } else { "**NOT met**" };
    Ok(format!(
        "## 6. Bulk: `email-verdict check` against dnsperf\n\n\
         {n} distinct domains in one zone served by NSD on loopback, each with its own MX host (A + AAAA): three \
         queries per domain. `email-verdict check --concurrency 256 --cache-size {CACHE} FILE` (JSON lines to a pipe \
         read by this runner), \
         then `dnsperf -q 256` with those {} queries once each, against the same NSD.\n\n\
         | | figure |\n|---|---:|\n\
         | checker: domains/s | {domains_per_s:.0} ({:.1} s for {n}; {} error lines) |\n\
         | checker: DNS queries/s implied (×3) | {implied_qps:.0} |\n\
         | dnsperf: queries/s (the limit) | {dnsperf_qps:.0} |\n\
         | ratio | {ratio:.2} (target ≥ 0.5: {target}) |\n\
         | checker RSS, first sample after 1 s; max | {:.1} MB; {:.1} MB |\n\
         | checker RSS over the second half of the run, min–max | {lo:.1}–{hi:.1} MB ({} samples) |\n",
        n * 3,
        check.elapsed.as_secs_f64(),
        check.errors,
        mb(check.rss.first()),
        mb(check.rss.iter().max()),
        second_half.len(),
    ))
}
