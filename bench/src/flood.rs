//! Section 7: cached lookups alone and during a flood of never-seen names, with the review queue
//! full (issue 31). Each new name joins the queue and, the queue being full, pushes an entry
//! out: that must cost the store O(log n), or every lookup waiting behind it stalls. Per store
//! (SQLite, Redis) and queue bound, a fresh sidecar; its queue is filled first through the store
//! API (`ReviewStore::note_for_review`, the call a lookup makes: not a million DNS lookups),
//! then wrk runs cached lookups alone and while paced clients send new names under a
//! wildcard-MX zone (`flood.example`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use email_verdict::state::{ReviewCause, ReviewReason, StateStore, open_with_capacity};
use email_verdict_tests::{Redis, Request, Sidecar, api_target};

use crate::Ctx;
use crate::bare::write;
use crate::report::{cells, count, met};
use crate::wrk::{Run, rotating_get_script};

/// Cached lookups during the flood must keep this share of their rate alone.
const TARGET: f64 = 0.5;
/// Clients sending the flood's names (each paced to its share of the rate).
const FLOOD_CLIENTS: u32 = 16;

/// The section, for each store at each queue bound in `capacities`, the flood at `rate` new
/// names a second.
pub fn run(ctx: &Ctx, dns: SocketAddr, capacities: &[usize], rate: u32) -> anyhow::Result<String> {
    let mut rows = Vec::new();
    for &capacity in capacities {
        for store in ["SQLite", "Redis"] {
            eprintln!("7. cached lookups during a flood of new names: {store}, queue full at {capacity}");
            let redis = (store == "Redis").then(Redis::start);
            rows.extend(measure(ctx, dns, store, redis.as_ref(), capacity, rate)?);
        }
    }
    Ok(format!(
        "## 7. Cached lookups during a flood of new names, the review queue full\n\n\
         `GET /api/v1/domain/gmail.com` (cached) with an unlimited `gateway` key, {conns} wrk connections, \
         alone and while {FLOOD_CLIENTS} clients send never-seen names under one wildcard-MX zone at \
         {rate} a second in all (each one joins the review queue and pushes an entry out). A fresh sidecar \
         per row, its queue filled first through the store API to `--review-queue-capacity`. Best of \
         {rounds} alternating {secs} s runs. Reproduce: `target/release/email-verdict-bench --sections 7 \
         --seconds {secs} --rounds {rounds}`.\n\n\
         | store | queue full at | load | requests/s | p50 | p99 | errors | server CPU / request | new names/s | ratio to alone | target ≥ {TARGET} |\n\
         |---|---:|---|---:|---:|---:|---|---:|---:|---:|---|\n{}\n",
        rows.join("\n"),
        conns = ctx.wrk.connections,
        rounds = ctx.rounds,
        secs = ctx.wrk.seconds,
    ))
}

/// The two rows (alone, during the flood) of one store at one bound.
fn measure(
    ctx: &Ctx,
    dns: SocketAddr,
    store: &str,
    redis: Option<&Redis>,
    capacity: usize,
    rate: u32,
) -> anyhow::Result<Vec<String>> {
    let bound = capacity.to_string();
    let mut builder = Sidecar::builder().dns(dns).keys(&["gateway"]).args(&["--review-queue-capacity", &bound]);
    if let Some(r) = redis {
        builder = builder.state(&r.url());
    }
    let sidecar = builder.start();
    let url = redis.map_or_else(|| format!("sqlite:{}", sidecar.state_db().display()), Redis::url);
    let filling = Instant::now();
    fill(&url, capacity)?;
    eprintln!("  queue filled with {capacity} entries in {:.1} s", filling.elapsed().as_secs_f64());
    let target = api_target("gmail.com", sidecar.key());
    for _ in 0..2 {
        Request::get(&target).try_send(sidecar.addr())?;
    }
    let label = format!("flood-{store}-{capacity}");
    let script = write(ctx.dir.path(), &format!("{label}.lua"), &rotating_get_script(&[target]))?;
    let pids: Vec<u32> = [Some(sidecar.pid()), redis.and_then(Redis::pid)].into_iter().flatten().collect();
    let (mut alone, mut during, mut names_per_s) = (Run::default(), Run::default(), 0.0);
    for round in 1..=ctx.rounds {
        eprintln!("  round {round}/{}: alone, then during the flood", ctx.rounds);
        keep_best(&mut alone, timed(&pids, || ctx.wrk.run(sidecar.addr(), "/", Some(&script)))?);
        let (run, sent) =
            with_flood(&sidecar, rate, || timed(&pids, || ctx.wrk.run(sidecar.addr(), "/", Some(&script))))?;
        if run.rps > during.rps {
            names_per_s = sent as f64 / ctx.wrk.seconds as f64;
        }
        keep_best(&mut during, run);
    }
    let ratio = during.rps / alone.rps;
    let ok = ratio >= TARGET && alone.clean() && during.clean();
    let size = count(capacity as f64);
    Ok(vec![
        format!("| {store} | {size} | alone | {} | | | |", cells(&alone)),
        format!(
            "| {store} | {size} | flood | {} | {} | {ratio:.2} | {} |",
            cells(&during),
            count(names_per_s),
            met(ok)
        ),
    ])
}

fn keep_best(best: &mut Run, run: Run) {
    if run.rps > best.rps {
        *best = run;
    }
}

/// `f`'s wrk run with the serving processes' CPU time per request.
fn timed(pids: &[u32], f: impl FnOnce() -> anyhow::Result<Run>) -> anyhow::Result<Run> {
    let before = crate::cpu::total(pids);
    let run = f()?;
    let spent = before.zip(crate::cpu::total(pids)).map(|(b, a)| a - b);
    let cpu_us = spent.filter(|_| run.requests > 0).map(|s| s * 1e6 / run.requests as f64);
    Ok(Run { cpu_us, ..run })
}

/// Runs `f` while [`FLOOD_CLIENTS`] clients look up new names at `rate` in all; `f`'s result and
/// the names sent.
fn with_flood<T>(sidecar: &Sidecar, rate: u32, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(T, usize)> {
    let (stop, sent, failed) = (AtomicBool::new(false), AtomicUsize::new(0), AtomicUsize::new(0));
    let interval = Duration::from_secs(1) * FLOOD_CLIENTS / rate.max(1);
    let out = std::thread::scope(|s| {
        for client in 0..FLOOD_CLIENTS {
            let (stop, sent, failed) = (&stop, &sent, &failed);
            s.spawn(move || {
                let mut next = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    let n = sent.fetch_add(1, Ordering::Relaxed);
                    let name = format!("c{client}n{n}-{}.flood.example", std::process::id());
                    match Request::get(&api_target(&name, sidecar.key())).try_send(sidecar.addr()) {
                        Ok(r) if r.status == 200 => {}
                        _ => _ = failed.fetch_add(1, Ordering::Relaxed),
                    }
                    next += interval;
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
            });
        }
        // The flood under way (and the queue past its bound) before the measurement starts.
        std::thread::sleep(Duration::from_secs(1));
        let from = sent.load(Ordering::Relaxed);
        let out = f();
        let during = sent.load(Ordering::Relaxed) - from;
        stop.store(true, Ordering::Relaxed);
        out.map(|o| (o, during))
    });
    match failed.load(Ordering::Relaxed) {
        0 => out,
        n => bail!("{n} lookups of the flood's new names did not answer 200"),
    }
}

/// Puts `n` names in the review queue of the store at `url`, through the store API, 500 calls
/// at a time (the SQLite store commits the calls waiting together).
pub fn fill(url: &str, n: usize) -> anyhow::Result<()> {
    let store = open_with_capacity(url, n)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let cause = ReviewCause {
        likelihood: 100,
        servers: vec!["mx.fill.example".to_owned()],
        ..ReviewCause::new(ReviewReason::Ambiguous)
    };
    let an_hour_ago = email_verdict::clock::unix_now() - 3600;
    runtime.block_on(async {
        for start in (0..n).step_by(500) {
            let mut calls = tokio::task::JoinSet::new();
            for i in start..(start + 500).min(n) {
                let (store, cause): (Arc<dyn StateStore>, _) = (store.clone(), cause.clone());
                calls.spawn(
                    async move { store.note_for_review(&format!("f{i}.fill.example"), &cause, an_hour_ago).await },
                );
            }
            while let Some(done) = calls.join_next().await {
                done.context("a store call panicked")?.context("queue a name")?;
            }
        }
        Ok(())
    })
}
