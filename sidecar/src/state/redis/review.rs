//! Redis side of [`ReviewStore`]. Layout: `ev:review:queue` (zset of domains by first seen);
//! per domain, under the hash tag `{review:<domain>}`: `…:item` (hash: reason, sources,
//! listed_as, first_seen, last_seen, lookups), `…:current` (the current decision), `…:history` (list of JSON records);
//! `ev:review:decided` (set of every name that ever got a decision: the index of `…:current`).
//! Infrastructure: `ev:{infra:<kind>:<value>}:disposable` and `…:legitimate`, sets of
//! registrable domains. The warm-up's progress: `ev:warmup` (hash).

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::json;

use email_verdict_core::Decision;

use super::RedisStore;
use crate::state::{
    AppliedDecision, DecisionRecord, InfraCount, ReviewCause, ReviewItem, ReviewReason, ReviewStore, StateError,
    WarmupProgress, covering_names, decision_str, parse_decision,
};

const QUEUE: &str = "ev:review:queue";
const DECIDED: &str = "ev:review:decided";
const WARMUP: &str = "ev:warmup";

fn review_key(domain: &str, what: &str) -> String {
    format!("ev:{{review:{domain}}}:{what}")
}

fn infra_key(kind: &str, value: &str, set: &str) -> String {
    format!("ev:{{infra:{kind}:{value}}}:{set}")
}

fn infra_entries<'a>(hosts: &'a [String], ips: &'a [String]) -> impl Iterator<Item = (&'static str, &'a String)> {
    hosts.iter().map(|h| ("host", h)).chain(ips.iter().map(|ip| ("ip", ip)))
}

fn invalid(what: &str) -> StateError {
    StateError::Invalid(format!("review data: bad {what}"))
}

#[async_trait]
impl ReviewStore for RedisStore {
    async fn note_for_review(&self, domain: &str, cause: &ReviewCause, now: i64) -> Result<(), StateError> {
        let item = review_key(domain, "item");
        let mut queue = redis::pipe();
        queue.cmd("ZADD").arg(QUEUE).arg("NX").arg(now).arg(domain).ignore();
        let mut details = redis::pipe();
        details
            .cmd("HSETNX")
            .arg(&item)
            .arg("first_seen")
            .arg(now)
            .ignore()
            .cmd("HSET")
            .arg(&item)
            .arg("reason")
            .arg(cause.reason.as_str())
            .arg("sources")
            .arg(cause.sources_text())
            .arg("listed_as")
            .arg(&cause.listed_as)
            .arg("last_seen")
            .arg(now)
            .ignore()
            .cmd("HINCRBY")
            .arg(&item)
            .arg("lookups")
            .arg(1)
            .ignore();
        // The queue and the item are in two slots: two requests, sent together.
        self.each::<()>(vec![queue, details]).await.map(drop)
    }

    async fn review_queue(&self) -> Result<Vec<ReviewItem>, StateError> {
        let domains: Vec<String> =
            self.call(async |c| redis::cmd("ZRANGE").arg(QUEUE).arg(0).arg(-1).query_async(c).await).await?;
        let mut items = Vec::new();
        for domain in domains {
            if self.decision(&covering_names(&domain)).await?.is_some() {
                continue;
            }
            let fields: HashMap<String, String> = self
                .call(async |c| redis::cmd("HGETALL").arg(review_key(&domain, "item")).query_async(c).await)
                .await?;
            if fields.is_empty() {
                continue;
            }
            let number = |name: &str| fields.get(name).and_then(|v| v.parse::<i64>().ok()).ok_or_else(|| invalid(name));
            let text = |name: &str| fields.get(name).cloned().unwrap_or_default();
            let reason = fields.get("reason").and_then(|r| ReviewReason::parse(r)).ok_or_else(|| invalid("reason"))?;
            items.push(ReviewItem {
                reason,
                sources: ReviewCause::parse_sources(&text("sources")),
                listed_as: text("listed_as"),
                first_seen: number("first_seen")?,
                last_seen: number("last_seen")?,
                lookups: number("lookups")?.max(0) as u64,
                domain,
            });
        }
        Ok(items)
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
        self.call(async |c| redis::cmd("SADD").arg(DECIDED).arg(&record.domain).exec_async(c).await).await
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
        // Each name's key is in its own slot: one request each, all sent together.
        let requests = names.iter().map(|name| redis::pipe().cmd("GET").arg(review_key(name, "current")).clone());
        let current: Vec<(Option<String>,)> = self.each(requests.collect()).await?;
        let current = current.into_iter().map(|(c,)| c);
        Ok(names.iter().zip(current).find_map(|(name, current)| {
            let decision = current.as_deref().and_then(parse_decision).flatten()?;
            Some(AppliedDecision { decision, on: name.clone() })
        }))
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

    async fn learn_infra(
        &self,
        domain: &str,
        disposable: bool,
        hosts: &[String],
        ips: &[String],
    ) -> Result<(), StateError> {
        let (add, remove) = if disposable { ("disposable", "legitimate") } else { ("legitimate", "disposable") };
        let requests = infra_entries(hosts, ips)
            .map(|(kind, value)| {
                let mut pipe = redis::pipe();
                pipe.cmd("SADD").arg(infra_key(kind, value, add)).arg(domain).ignore();
                pipe.cmd("SREM").arg(infra_key(kind, value, remove)).arg(domain).ignore();
                pipe
            })
            .collect();
        self.each::<()>(requests).await.map(drop)
    }

    async fn infra_counts(&self, hosts: &[String], ips: &[String]) -> Result<Vec<InfraCount>, StateError> {
        let entries: Vec<_> = infra_entries(hosts, ips).collect();
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let requests = entries
            .iter()
            .map(|(kind, value)| {
                let mut pipe = redis::pipe();
                pipe.cmd("SCARD").arg(infra_key(kind, value, "disposable"));
                pipe.cmd("SCARD").arg(infra_key(kind, value, "legitimate"));
                pipe
            })
            .collect();
        let counts: Vec<(u64, u64)> = self.each(requests).await?;
        Ok(counts.into_iter().map(|(disposable, legitimate)| InfraCount { disposable, legitimate }).collect())
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
