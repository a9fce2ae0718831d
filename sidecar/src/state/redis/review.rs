//! Redis side of [`ReviewStore`]. The queue, under the one hash tag `{review}` so that a lookup
//! counted and the bound kept are one atomic script (`note.lua`, `settle.lua`): `ev:{review}:first`
//! (zset of domains by first seen), `…:causes` (hash: domain → the cause as JSON: reason,
//! sources, listed_as, likelihood, servers), `…:lookups` and `…:last` (hashes), `…:rank` (zset of
//! the undecided by priority, then last seen), `…:decided` (set), `…:dropped` (hash: reason →
//! entries the bound dropped). Decisions, per domain under the hash tag `{review:<domain>}`:
//! `…:current` (the current decision), `…:history` (list of JSON records); `ev:review:decided`
//! (set of every name that ever got a decision: the index of `…:current`).
//! The warm-up's progress: `ev:warmup` (hash). The infrastructure index: `infra.rs`.
//!
//! A store written before issue 24 kept the queue in `ev:review:queue` and `…:item` hashes:
//! that queue is not read (it fills again from lookups); decisions are where they were.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;
use serde_json::json;

use email_verdict_core::Decision;

use super::RedisStore;
use crate::state::{
    AppliedDecision, DecisionRecord, ReviewCause, ReviewItem, ReviewReason, ReviewStore, StateError, WarmupProgress,
    covering_names, decision_str, parse_decision,
};

const DECIDED: &str = "ev:review:decided";
/// Moved by every decision, after it is in force (`versioned_cache.rs`).
const DECISIONS_VERSION: &str = "ev:review:decided:version";
const WARMUP: &str = "ev:warmup";

/// The queue's keys, in the order the scripts take them.
const QUEUE_KEYS: [&str; 7] = [
    "ev:{review}:first",
    "ev:{review}:causes",
    "ev:{review}:lookups",
    "ev:{review}:last",
    "ev:{review}:rank",
    "ev:{review}:decided",
    "ev:{review}:dropped",
];

static NOTE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("note.lua")));
static SETTLE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("settle.lua")));

fn review_key(domain: &str, what: &str) -> String {
    format!("ev:{{review:{domain}}}:{what}")
}

fn invalid(what: &str) -> StateError {
    StateError::Invalid(format!("review data: bad {what}"))
}

impl RedisStore {
    /// The queued domains that are `name` or under it.
    async fn queued_under(&self, name: &str) -> Result<Vec<String>, StateError> {
        let mut found = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            let (next, page): (u64, Vec<(String, String)>) = self
                .call(async |c| {
                    redis::cmd("HSCAN")
                        .arg(QUEUE_KEYS[1])
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(format!("*.{name}"))
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(c)
                        .await
                })
                .await?;
            found.extend(page.into_iter().map(|(domain, _)| domain));
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let exact: bool =
            self.call(async |c| redis::cmd("HEXISTS").arg(QUEUE_KEYS[1]).arg(name).query_async(c).await).await?;
        if exact {
            found.push(name.to_owned());
        }
        Ok(found)
    }

    /// Takes the queued `domain` out of the ranked queue, or puts it back, by the decisions in
    /// force now.
    async fn settle(&self, domain: &str) -> Result<(), StateError> {
        let decided = self.decision(&covering_names(domain)).await?.is_some();
        let mut call = SETTLE.prepare_invoke();
        call.key(&QUEUE_KEYS[..6]).arg(domain).arg(if decided { "1" } else { "0" });
        let _: i64 = self.call(async |c| call.invoke_async(c).await).await?;
        Ok(())
    }

    /// The decision in force for the first of `names`, read from the store.
    async fn read_decision(&self, names: &[String]) -> Result<Option<AppliedDecision>, StateError> {
        // Each name's key is in its own slot: one request each, all sent together.
        let requests = names.iter().map(|name| redis::pipe().cmd("GET").arg(review_key(name, "current")).clone());
        let current: Vec<(Option<String>,)> = self.each(requests.collect()).await?;
        let current = current.into_iter().map(|(c,)| c);
        Ok(names.iter().zip(current).find_map(|(name, current)| {
            let decision = current.as_deref().and_then(parse_decision).flatten()?;
            Some(AppliedDecision { decision, on: name.clone() })
        }))
    }
}

#[async_trait]
impl ReviewStore for RedisStore {
    fn queue_capacity(&self) -> usize {
        self.queue_capacity
    }

    async fn note_for_review(&self, domain: &str, cause: &ReviewCause, now: i64) -> Result<(), StateError> {
        let cause_json = json!({
            "reason": cause.reason.as_str(),
            "sources": cause.sources,
            "listed_as": cause.listed_as,
            "likelihood": cause.likelihood,
            "servers": cause.servers,
        })
        .to_string();
        let mut call = NOTE.prepare_invoke();
        call.key(&QUEUE_KEYS[..]).arg(domain).arg(now).arg(cause_json).arg(cause.likelihood).arg(self.queue_capacity);
        let lookups: i64 = self.call(async |c| call.invoke_async(c).await).await?;
        // A new entry may be covered by a decision already (made on a parent).
        if lookups == 1 {
            self.settle(domain).await?;
        }
        Ok(())
    }

    async fn review_queue_len(&self) -> Result<usize, StateError> {
        // What note.lua bounds: the zset of every entry's first sighting.
        self.call(async |c| redis::cmd("ZCARD").arg(QUEUE_KEYS[0]).query_async(c).await).await
    }

    async fn review_queue(&self) -> Result<Vec<ReviewItem>, StateError> {
        let mut pipe = redis::pipe();
        pipe.cmd("ZRANGE").arg(QUEUE_KEYS[0]).arg(0).arg(-1).arg("WITHSCORES");
        for key in &QUEUE_KEYS[1..4] {
            pipe.cmd("HGETALL").arg(*key);
        }
        pipe.cmd("SMEMBERS").arg(QUEUE_KEYS[5]);
        type Queue =
            (Vec<(String, f64)>, HashMap<String, String>, HashMap<String, u64>, HashMap<String, i64>, HashSet<String>);
        let (first, causes, lookups, last, decided): Queue = self.call(async |c| pipe.query_async(c).await).await?;
        let mut items = Vec::with_capacity(first.len());
        for (domain, first_seen) in first {
            if decided.contains(&domain) {
                continue;
            }
            let Some(cause) = causes.get(&domain) else { continue };
            let v: serde_json::Value = serde_json::from_str(cause).map_err(|_| invalid("cause"))?;
            let texts = |name: &str| -> Vec<String> {
                v[name]
                    .as_array()
                    .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default()
            };
            let reason = v["reason"].as_str().and_then(ReviewReason::parse).ok_or_else(|| invalid("reason"))?;
            items.push(ReviewItem {
                reason,
                sources: texts("sources"),
                listed_as: v["listed_as"].as_str().unwrap_or_default().to_owned(),
                first_seen: first_seen as i64,
                last_seen: last.get(&domain).copied().unwrap_or(first_seen as i64),
                lookups: lookups.get(&domain).copied().unwrap_or(1),
                likelihood: v["likelihood"].as_u64().and_then(|l| u32::try_from(l).ok()).unwrap_or(100),
                servers: texts("servers"),
                domain,
            });
        }
        Ok(items)
    }

    async fn review_dropped(&self) -> Result<Vec<(ReviewReason, u64)>, StateError> {
        let counts: HashMap<String, u64> =
            self.call(async |c| redis::cmd("HGETALL").arg(QUEUE_KEYS[6]).query_async(c).await).await?;
        let mut out: Vec<(ReviewReason, u64)> =
            counts.into_iter().filter_map(|(r, n)| ReviewReason::parse(&r).map(|r| (r, n))).collect();
        out.sort_by_key(|(r, _)| r.as_str());
        Ok(out)
    }

    async fn dismiss(&self, domains: &[String]) -> Result<(), StateError> {
        if domains.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        for key in [QUEUE_KEYS[0], QUEUE_KEYS[4]] {
            pipe.cmd("ZREM").arg(key).arg(domains).ignore();
        }
        for key in &QUEUE_KEYS[1..4] {
            pipe.cmd("HDEL").arg(*key).arg(domains).ignore();
        }
        pipe.cmd("SREM").arg(QUEUE_KEYS[5]).arg(domains).ignore();
        self.call(async |c| pipe.exec_async(c).await).await
    }

    async fn decide(&self, record: DecisionRecord) -> Result<(), StateError> {
        let entry = json!({
            "decision": decision_str(record.decision),
            "reviewer": record.reviewer,
            "note": record.note,
            "at": record.at,
        })
        .to_string();
        self.call(async |c| {
            redis::pipe()
                .atomic()
                .cmd("SET")
                .arg(review_key(&record.domain, "current"))
                .arg(decision_str(record.decision))
                .ignore()
                .cmd("RPUSH")
                .arg(review_key(&record.domain, "history"))
                .arg(&entry)
                .ignore()
                .exec_async(c)
                .await
        })
        .await?;
        // Another slot than the decision's own keys: a separate write, after the decision (a
        // name in the index without a current decision is skipped when listed).
        self.call(async |c| redis::cmd("SADD").arg(DECIDED).arg(&record.domain).exec_async(c).await).await?;
        self.decisions.invalidate();
        self.call(async |c| redis::cmd("INCR").arg(DECISIONS_VERSION).exec_async(c).await).await?;
        // The queued entries it may cover: the name and its subdomains.
        for domain in self.queued_under(&record.domain).await? {
            self.settle(&domain).await?;
        }
        self.replicate("decision", &[review_key(&record.domain, "current"), DECIDED.to_owned()]).await;
        Ok(())
    }

    async fn decisions_in_force(&self, limit: usize) -> Result<Vec<(String, Decision)>, StateError> {
        let mut names: Vec<String> =
            self.call(async |c| redis::cmd("SMEMBERS").arg(DECIDED).query_async(c).await).await?;
        names.sort();
        let requests = names.iter().map(|name| redis::pipe().cmd("GET").arg(review_key(name, "current")).clone());
        let current: Vec<(Option<String>,)> = self.each(requests.collect()).await?;
        let in_force = names.into_iter().zip(current).filter_map(|(name, (current,))| {
            let decision = current.as_deref().and_then(parse_decision).flatten()?;
            Some((name, decision))
        });
        Ok(in_force.take(limit).collect())
    }

    async fn decision(&self, names: &[String]) -> Result<Option<AppliedDecision>, StateError> {
        if names.is_empty() {
            return Ok(None);
        }
        self.decisions
            .get(names, async || self.decisions_version().await, async || self.read_decision(names).await)
            .await
    }

    async fn decisions_version(&self) -> Result<u64, StateError> {
        let v: Option<u64> = self.call(async |c| redis::cmd("GET").arg(DECISIONS_VERSION).query_async(c).await).await?;
        Ok(v.unwrap_or(0))
    }

    async fn decision_history(&self, domain: &str) -> Result<Vec<DecisionRecord>, StateError> {
        let entries: Vec<String> = self
            .call(async |c| redis::cmd("LRANGE").arg(review_key(domain, "history")).arg(0).arg(-1).query_async(c).await)
            .await?;
        entries
            .iter()
            .map(|e| {
                let v: serde_json::Value = serde_json::from_str(e).map_err(|_| invalid("history entry"))?;
                let text = |name: &str| v[name].as_str().unwrap_or_default().to_owned();
                Ok(DecisionRecord {
                    domain: domain.to_owned(),
                    decision: parse_decision(&text("decision")).ok_or_else(|| invalid("decision"))?,
                    reviewer: text("reviewer"),
                    note: text("note"),
                    at: v["at"].as_i64().ok_or_else(|| invalid("at"))?,
                })
            })
            .collect()
    }

    async fn queued_server(&self, domain: &str) -> Result<Option<String>, StateError> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(QUEUE_KEYS[1]).arg(domain).cmd("SISMEMBER").arg(QUEUE_KEYS[5]).arg(domain);
        let (cause, decided): (Option<String>, bool) = self.call(async |c| pipe.query_async(c).await).await?;
        let Some(cause) = cause.filter(|_| !decided) else { return Ok(None) };
        let v: serde_json::Value = serde_json::from_str(&cause).map_err(|_| invalid("cause"))?;
        Ok(v["servers"].as_array().and_then(|a| a.first()).and_then(|s| s.as_str()).map(str::to_owned))
    }

    async fn warmup_progress(&self) -> Result<WarmupProgress, StateError> {
        let fields: HashMap<String, String> =
            self.call(async |c| redis::cmd("HGETALL").arg(WARMUP).query_async(c).await).await?;
        if fields.is_empty() {
            return Ok(WarmupProgress::default());
        }
        let number = |name: &str| fields.get(name).and_then(|v| v.parse::<i64>().ok()).ok_or_else(|| invalid(name));
        Ok(WarmupProgress {
            cursor: fields.get("cursor").cloned().unwrap_or_default(),
            resolved: number("resolved")?.max(0) as u64,
            learned: number("learned")?.max(0) as u64,
            failed: number("failed")?.max(0) as u64,
            updated_at: number("updated_at")?,
        })
    }

    async fn save_warmup_progress(&self, p: &WarmupProgress) -> Result<(), StateError> {
        self.call(async |c| {
            redis::cmd("HSET")
                .arg(WARMUP)
                .arg("cursor")
                .arg(&p.cursor)
                .arg("resolved")
                .arg(p.resolved)
                .arg("learned")
                .arg(p.learned)
                .arg("failed")
                .arg(p.failed)
                .arg("updated_at")
                .arg(p.updated_at)
                .exec_async(c)
                .await
        })
        .await
    }
}
