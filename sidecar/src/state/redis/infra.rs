//! Redis side of [`InfraStore`]. Per server, under the hash tag `{infra:<kind>:<value>}` (one
//! cluster slot, so each server's update is one request): `…:d` and `…:l` (sorted sets of the
//! registrable domains known disposable / legitimate that use it, scored by when last seen),
//! `…:o:<owner>` (the disposable ones among them that reach it through a host `<owner>` owns),
//! `…:mark` (the reviewer's mark in force) and `…:marks` (its history, JSON). Per teaching
//! domain: `ev:{infradom:<domain>}` (hash: `<kind>\t<value>` → `d|l\t<owners>`), what it taught,
//! so that learning it again replaces that. `ev:infra:servers`: every server with a fact or a
//! mark (member `<kind>\t<value>`), scored by minus its disposable domains (most first).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_trait::async_trait;
use serde_json::json;

use super::RedisStore;
use crate::state::infra::{mark_in_force, mark_str, split_owners};
use crate::state::{
    InfraStore, LearnedServer, MailServer, ServerEvidence, ServerFact, ServerKind, ServerMark, ServerPage, StateError,
    Teacher,
};

const SERVERS: &str = "ev:infra:servers";

fn server_key(server: &MailServer, what: &str) -> String {
    format!("ev:{{infra:{}:{}}}:{what}", server.kind.as_str(), server.value)
}

fn taught_key(domain: &str) -> String {
    format!("ev:{{infradom:{domain}}}")
}

fn member(server: &MailServer) -> String {
    format!("{}\t{}", server.kind.as_str(), server.value)
}

fn invalid(what: &str) -> StateError {
    StateError::Invalid(format!("infrastructure data: bad {what}"))
}

fn parse_member(m: &str) -> Result<MailServer, StateError> {
    let (kind, value) = m.split_once('\t').ok_or_else(|| invalid("server"))?;
    Ok(MailServer { kind: ServerKind::stored(kind)?, value: value.to_owned() })
}

/// What a domain taught about one server, as kept in its hash: class (`d`/`l`) and owners
/// (joined, see [`split_owners`]).
fn parse_taught(text: &str) -> (&str, &str) {
    text.split_once('\t').unwrap_or((text, ""))
}

/// A score at or after `since` (Redis scores come back as floats).
fn fresh(score: Option<f64>, since: i64) -> bool {
    score.is_some_and(|s| s >= since as f64)
}

#[async_trait]
impl InfraStore for RedisStore {
    async fn learn_infra(
        &self,
        domain: &str,
        disposable: bool,
        facts: &[ServerFact],
        now: i64,
    ) -> Result<(), StateError> {
        let old: HashMap<String, String> =
            self.call(async |c| redis::cmd("HGETALL").arg(taught_key(domain)).query_async(c).await).await?;
        let mut new: BTreeMap<String, (MailServer, BTreeSet<&str>)> = BTreeMap::new();
        for f in facts {
            new.entry(member(&f.server)).or_insert_with(|| (f.server.clone(), BTreeSet::new())).1.insert(&f.via);
        }
        let class = if disposable { "d" } else { "l" };
        let mut touched: Vec<MailServer> = new.values().map(|(s, _)| s.clone()).collect();
        for m in old.keys().filter(|m| !new.contains_key(*m)) {
            touched.push(parse_member(m)?);
        }
        // Per server, one request: what the domain taught before removed, what it teaches now
        // added, then the counts the servers' index is ordered by.
        let requests = touched
            .iter()
            .map(|server| {
                let m = member(server);
                let mut pipe = redis::pipe();
                if let Some(before) = old.get(&m) {
                    let (old_class, old_owners) = parse_taught(before);
                    pipe.cmd("ZREM").arg(server_key(server, old_class)).arg(domain).ignore();
                    for owner in split_owners(old_owners) {
                        pipe.cmd("ZREM").arg(server_key(server, &format!("o:{owner}"))).arg(domain).ignore();
                    }
                }
                if let Some((_, owners)) = new.get(&m) {
                    pipe.cmd("ZADD").arg(server_key(server, class)).arg(now).arg(domain).ignore();
                    for owner in owners.iter().filter(|_| disposable) {
                        pipe.cmd("ZADD").arg(server_key(server, &format!("o:{owner}"))).arg(now).arg(domain).ignore();
                    }
                }
                pipe.cmd("ZCARD").arg(server_key(server, "d"));
                pipe.cmd("ZCARD").arg(server_key(server, "l"));
                pipe.cmd("EXISTS").arg(server_key(server, "marks"));
                pipe
            })
            .collect();
        let counts: Vec<(u64, u64, u64)> = self.each(requests).await?;
        // What the domain teaches now, in its own slot.
        let mut taught = redis::pipe();
        taught.atomic().cmd("DEL").arg(taught_key(domain)).ignore();
        for (m, (_, owners)) in &new {
            let owners: Vec<&str> = owners.iter().copied().collect();
            taught.cmd("HSET").arg(taught_key(domain)).arg(m).arg(format!("{class}\t{}", owners.join(","))).ignore();
        }
        let mut index = redis::pipe();
        let mut requests = vec![taught];
        for (server, (d, l, marked)) in touched.iter().zip(&counts) {
            if *d == 0 && *l == 0 && *marked == 0 {
                index.cmd("ZREM").arg(SERVERS).arg(member(server)).ignore();
            } else {
                index.cmd("ZADD").arg(SERVERS).arg(-(*d as i64)).arg(member(server)).ignore();
            }
        }
        if !touched.is_empty() {
            requests.push(index);
        }
        self.each::<()>(requests).await.map(drop)
    }

    async fn infra_evidence(
        &self,
        judged: &str,
        servers: &[MailServer],
        fresh_since: i64,
    ) -> Result<Vec<ServerEvidence>, StateError> {
        if servers.is_empty() {
            return Ok(Vec::new());
        }
        let requests = servers
            .iter()
            .map(|s| {
                let mut pipe = redis::pipe();
                for set in ["d".to_owned(), format!("o:{judged}"), "l".to_owned()] {
                    pipe.cmd("ZCOUNT").arg(server_key(s, &set)).arg(fresh_since).arg("+inf");
                    pipe.cmd("ZSCORE").arg(server_key(s, &set)).arg(judged);
                }
                pipe.cmd("GET").arg(server_key(s, "mark"));
                pipe
            })
            .collect();
        type Row = (u64, Option<f64>, u64, Option<f64>, u64, Option<f64>, Option<String>);
        let rows: Vec<Row> = self.each(requests).await?;
        Ok(rows
            .into_iter()
            .map(|(d, in_d, o, in_o, l, in_l, mark)| {
                // |S \ {judged}| - |T \ {judged}|, T (through the judged domain's hosts) within S.
                let all = d - u64::from(fresh(in_d, fresh_since));
                let through_own = o - u64::from(fresh(in_o, fresh_since));
                ServerEvidence {
                    disposable: all.saturating_sub(through_own),
                    legitimate: l - u64::from(fresh(in_l, fresh_since)),
                    mark: mark_in_force(mark.as_deref()),
                }
            })
            .collect())
    }

    async fn mark_server(&self, mark: ServerMark) -> Result<(), StateError> {
        let entry = json!({
            "decision": mark_str(mark.decision),
            "reviewer": mark.reviewer,
            "note": mark.note,
            "at": mark.at,
        })
        .to_string();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg(server_key(&mark.server, "mark"))
            .arg(mark_str(mark.decision))
            .ignore()
            .cmd("RPUSH")
            .arg(server_key(&mark.server, "marks"))
            .arg(&entry)
            .ignore();
        let mut index = redis::pipe();
        index.cmd("ZADD").arg(SERVERS).arg("NX").arg(0).arg(member(&mark.server)).ignore();
        // The mark first: a server in the index without one is listed with its facts only.
        self.each::<()>(vec![pipe]).await?;
        self.each::<()>(vec![index]).await.map(drop)
    }

    async fn server_marks(&self, server: &MailServer) -> Result<Vec<ServerMark>, StateError> {
        let entries: Vec<String> = self
            .call(async |c| redis::cmd("LRANGE").arg(server_key(server, "marks")).arg(0).arg(-1).query_async(c).await)
            .await?;
        entries
            .iter()
            .map(|e| {
                let v: serde_json::Value = serde_json::from_str(e).map_err(|_| invalid("mark entry"))?;
                let text = |name: &str| v[name].as_str().unwrap_or_default().to_owned();
                let at = v["at"].as_i64().ok_or_else(|| invalid("at"))?;
                ServerMark::stored(server.clone(), &text("decision"), text("reviewer"), text("note"), at)
            })
            .collect()
    }

    async fn learned_servers(&self, fresh_since: i64, offset: usize, limit: usize) -> Result<ServerPage, StateError> {
        let total: u64 = self.call(async |c| redis::cmd("ZCARD").arg(SERVERS).query_async(c).await).await?;
        if limit == 0 || offset as u64 >= total {
            return Ok(ServerPage { servers: Vec::new(), total });
        }
        let last = offset.saturating_add(limit) - 1;
        let members: Vec<String> =
            self.call(async |c| redis::cmd("ZRANGE").arg(SERVERS).arg(offset).arg(last).query_async(c).await).await?;
        let servers = members.iter().map(|m| parse_member(m)).collect::<Result<Vec<_>, _>>()?;
        let requests = servers
            .iter()
            .map(|s| {
                let mut pipe = redis::pipe();
                for set in ["d", "l"] {
                    pipe.cmd("ZCOUNT").arg(server_key(s, set)).arg(fresh_since).arg("+inf");
                    pipe.cmd("ZRANGE").arg(server_key(s, set)).arg(-1).arg(-1).arg("WITHSCORES");
                }
                pipe.cmd("GET").arg(server_key(s, "mark"));
                pipe
            })
            .collect();
        type Row = (u64, Vec<(String, f64)>, u64, Vec<(String, f64)>, Option<String>);
        let rows: Vec<Row> = self.each(requests).await?;
        let servers = servers
            .into_iter()
            .zip(rows)
            .map(|(server, (disposable, last_d, legitimate, last_l, mark))| {
                let last_seen = last_d
                    .iter()
                    .chain(&last_l)
                    .map(|(_, s)| *s as i64)
                    .filter(|s| *s >= fresh_since)
                    .max()
                    .unwrap_or(0);
                let mark = mark_in_force(mark.as_deref());
                LearnedServer { server, disposable, legitimate, last_seen, mark }
            })
            .collect();
        Ok(ServerPage { servers, total })
    }

    async fn server_teachers(
        &self,
        server: &MailServer,
        fresh_since: i64,
        limit: usize,
    ) -> Result<Vec<Teacher>, StateError> {
        let mut pipe = redis::pipe();
        for set in ["d", "l"] {
            pipe.cmd("ZRANGE")
                .arg(server_key(server, set))
                .arg("+inf")
                .arg(fresh_since)
                .arg("BYSCORE")
                .arg("REV")
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
                .arg("WITHSCORES");
        }
        let lists: Vec<(Vec<(String, f64)>, Vec<(String, f64)>)> = self.each(vec![pipe]).await?;
        let Some((disposable, legitimate)) = lists.into_iter().next() else { return Ok(Vec::new()) };
        let mut all: Vec<(String, bool, i64)> = disposable
            .into_iter()
            .map(|(d, s)| (d, true, s as i64))
            .chain(legitimate.into_iter().map(|(d, s)| (d, false, s as i64)))
            .collect();
        all.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        all.truncate(limit);
        let m = member(server);
        let requests =
            all.iter().map(|(d, _, _)| redis::pipe().cmd("HGET").arg(taught_key(d)).arg(&m).clone()).collect();
        let owners: Vec<(Option<String>,)> = self.each(requests).await?;
        Ok(all
            .into_iter()
            .zip(owners)
            .map(|((domain, disposable, seen), (taught,))| {
                Teacher::stored(domain, disposable, taught.as_deref().map_or("", |t| parse_taught(t).1), seen)
            })
            .collect())
    }
}
