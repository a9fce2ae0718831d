//! Section 3: cold lookups. 1,000 concurrent requests for one uncached domain must cause one
//! DNS resolution (the queries are counted at the forwarder in front of NSD); and the latency of
//! a cold lookup against the DNS round trip it waits for, measured side by side.

use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::Context;
use email_verdict_tests::dns::{qtype, query_udp};
use email_verdict_tests::{DnsCounter, Request, Sidecar, api_target};

use crate::Ctx;
use crate::report::{count, met, ms};

/// In the fixture zones: MX `mx1` and `mx2.ownmail.example`, each with addresses.
const BURST_DOMAIN: &str = "ownmail.example";
const BURST: usize = 1_000;
/// Samples of the latency comparison.
const SAMPLES: usize = 40;

/// What one request of the burst got.
struct Answer {
    millis: f64,
    status: u16,
    cached: Option<bool>,
}

pub fn run(ctx: &Ctx, sidecar: &Sidecar, dns: &DnsCounter) -> anyhow::Result<String> {
    eprintln!("3. cold lookups");
    let before = dns.queries().len();
    let answers = burst(ctx, sidecar.addr())?;
    let queries = dns.queries()[before..].to_vec();
    let mx = dns.count(BURST_DOMAIN, qtype::MX);
    let ok = answers.iter().filter(|a| a.status == 200).count();
    let resolved_here = answers.iter().filter(|a| a.cached == Some(false)).count();
    let mut lat: Vec<f64> = answers.iter().map(|a| a.millis).collect();
    let listed: Vec<String> = queries.iter().map(|(n, t)| format!("{} {n}", type_name(*t))).collect();
    let latency = latency(ctx, sidecar, dns)?;
    Ok(format!(
        "## 3. Cold lookups\n\n\
         {BURST} concurrent requests (threads released together) for the uncached `{BURST_DOMAIN}`:\n\n\
         | what | figure | target |\n|---|---:|---|\n\
         | answered 200 | {} of {BURST} | |\n\
         | answers with `cached: false` (they shared the one resolution) | {} | |\n\
         | MX queries for `{BURST_DOMAIN}` at the DNS server | {mx} | 1: {} |\n\
         | all DNS queries during the burst | {} ({}) | |\n\
         | request latency p50 / p99 / max | {} / {} / {} | |\n\n{latency}",
        count(ok as f64),
        count(resolved_here as f64),
        met(mx == 1 && ok == BURST),
        queries.len(),
        listed.join(", "),
        ms(percentile(&mut lat, 50.0)),
        ms(percentile(&mut lat, 99.0)),
        ms(percentile(&mut lat, 100.0)),
    ))
}

fn burst(ctx: &Ctx, addr: SocketAddr) -> anyhow::Result<Vec<Answer>> {
    let barrier = Arc::new(Barrier::new(BURST));
    let threads: Vec<_> = (0..BURST)
        .map(|i| {
            let (barrier, target) = (barrier.clone(), api_target(BURST_DOMAIN, &ctx.keys[i % ctx.keys.len()]));
            std::thread::Builder::new().stack_size(128 * 1024).spawn(move || {
                barrier.wait();
                let started = Instant::now();
                let r = Request::get(&target).timeout(Duration::from_secs(30)).try_send(addr);
                let millis = started.elapsed().as_secs_f64() * 1000.0;
                match r {
                    Ok(r) => Answer { millis, status: r.status, cached: cached(&r) },
                    Err(_) => Answer { millis, status: 0, cached: None },
                }
            })
        })
        .collect::<Result<_, _>>()
        .context("cannot start the burst's threads")?;
    Ok(threads.into_iter().filter_map(|t| t.join().ok()).collect())
}

fn cached(r: &email_verdict_tests::Response) -> Option<bool> {
    serde_json::from_slice::<serde_json::Value>(&r.body).ok()?["result"]["cached"].as_bool()
}

/// Alternates: one MX query through the same forwarder the sidecar uses, a cold lookup of a
/// fresh name (NXDOMAIN under `example`: one MX query), then the same lookup again (cached).
fn latency(ctx: &Ctx, sidecar: &Sidecar, dns: &DnsCounter) -> anyhow::Result<String> {
    let (mut rtt, mut cold, mut warm, mut per_lookup) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let stamp = std::process::id();
    for i in 0..SAMPLES {
        let started = Instant::now();
        query_udp(dns.addr(), &format!("rtt-{stamp}-{i}.example"), qtype::MX, Duration::from_secs(5))?;
        rtt.push(started.elapsed().as_secs_f64() * 1000.0);
        let target = api_target(&format!("cold-{stamp}-{i}.example"), &ctx.keys[i % ctx.keys.len()]);
        let before = dns.queries().len();
        for (samples, want_cached) in [(&mut cold, false), (&mut warm, true)] {
            let started = Instant::now();
            let r = Request::get(&target).try_send(sidecar.addr())?;
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            anyhow::ensure!(r.status == 200 && cached(&r) == Some(want_cached), "GET {target}: unexpected answer\n{r}");
        }
        per_lookup.push(dns.queries().len() - before);
    }
    let (rtt, cold, warm) = (percentile(&mut rtt, 50.0), percentile(&mut cold, 50.0), percentile(&mut warm, 50.0));
    per_lookup.sort_unstable();
    Ok(format!(
        "Latency, {SAMPLES} samples each, alternating, medians (one new connection per lookup, like the DNS query's \
         new socket):\n\n\
         | what | median |\n|---|---:|\n\
         | DNS round trip (one MX query through the same forwarder) | {} |\n\
         | cold lookup of a new name ({}–{} DNS queries each) | {} |\n\
         | the same lookup again, cached | {} |\n\
         | cold lookup / DNS round trip | {:.1}× |\n\
         | cold − cached (what the DNS part cost the lookup) / DNS round trip | {:.1}× |\n",
        ms(rtt),
        per_lookup.first().unwrap_or(&0),
        per_lookup.last().unwrap_or(&0),
        ms(cold),
        ms(warm),
        cold / rtt,
        (cold - warm) / rtt,
    ))
}

fn type_name(t: u16) -> String {
    match t {
        qtype::MX => "MX".into(),
        qtype::A => "A".into(),
        qtype::AAAA => "AAAA".into(),
        other => format!("type {other}"),
    }
}

/// The `p`th percentile (nearest rank) of `v`; 0 when empty.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank() {
        let mut v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(percentile(&mut v, 50.0), 3.0);
        assert_eq!(percentile(&mut v, 100.0), 5.0);
        assert_eq!(percentile(&mut v, 1.0), 1.0);
        assert_eq!(percentile(&mut [], 50.0), 0.0);
    }
}
