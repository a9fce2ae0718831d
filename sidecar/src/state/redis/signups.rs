//! Redis side of [`SignupStore`]: a counter is one hash, `ev:{signup:<scope>:<sha256>}`, of at
//! most 36 fields (its ring of buckets, `signup.lua`), expiring a day and a bucket after its
//! last signup.
//!
//! Each counter is its own hash tag, so on Redis Cluster the counters spread over every node
//! (one tag for all of them would put every signup of every replica on one node: a hot slot).
//! On one server a signup is one script over its counters (one round trip); on a cluster it is
//! the same script once per counter, sent together (one round trip's time, the counters'
//! nodes in parallel). Counters are independent, so each being atomic is all a count needs.
//!
//! A server's new domains (its wave, `wave.lua`): `ev:{signup:server:<sha256>}:new`, a zset of
//! domain hashes by their last signup, beside the server's counter (same slot), expiring an hour
//! after its last one. The boards (`board.lua`): `ev:{signup-board}:<board>` (zset: value →
//! count) and `…:<board>:at` (zset: value → when), at most `BOARD_KEPT` values each, all under
//! one hash tag so a signup ranks its values in one script; a value is ranked only when it can
//! enter its board (`signups.rs` remembers each board's floor), so that slot sees few writes.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use super::{RedisStore, Target, unavailable};
use crate::state::StateError;
use crate::state::signups::{
    BOARD_KEPT, Board, Buckets, COUNTER_TTL, Counter, DAY_BUCKETS, Entry, HOUR_BUCKETS, NewDomain, Ranked, SignupStore,
    WAVE_DOMAINS_KEPT, WAVE_WINDOW, Wave, live,
};
use email_verdict_core::signup::velocity::Window;

static COUNT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("signup.lua")));
static WAVE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("wave.lua")));
static BOARD: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("board.lua")));

fn board_keys(board: Board) -> [String; 2] {
    let counts = format!("ev:{{signup-board}}:{}", board.as_str());
    let times = format!("{counts}:at");
    [counts, times]
}

fn key(counter: &Counter) -> String {
    format!("ev:{{signup:{}}}", counter.name())
}

#[async_trait]
impl SignupStore for RedisStore {
    async fn count_signup(&self, counters: &[Counter], now: i64) -> Result<Vec<Window>, StateError> {
        if counters.is_empty() {
            return Ok(Vec::new());
        }
        let at = Buckets::at(now);
        let keys: Vec<String> = counters.iter().map(key).collect();
        let counts: Vec<u64> = match self.target {
            Target::Single(_) => {
                self.call(async |c| {
                    let mut call = COUNT.prepare_invoke();
                    for k in &keys {
                        call.key(k);
                    }
                    call.arg(at.hour).arg(at.day).arg(COUNTER_TTL).invoke_async(c).await
                })
                .await?
            }
            Target::Cluster(_) => {
                let each: Vec<Vec<u64>> = self
                    .call(async |c| {
                        let calls =
                            keys.iter().map(|k| {
                                let mut c = c.clone();
                                async move {
                                    COUNT.key(k).arg(at.hour).arg(at.day).arg(COUNTER_TTL).invoke_async(&mut c).await
                                }
                            });
                        futures::future::try_join_all(calls).await
                    })
                    .await?;
                each.concat()
            }
        };
        if counts.len() != 2 * counters.len() {
            return Err(unavailable(format!("the count script answered {} numbers", counts.len())));
        }
        Ok(counts.chunks(2).map(|w| Window { hour: w[0], day: w[1] }).collect())
    }

    async fn count_new_domain(&self, new: &NewDomain, now: i64) -> Result<Wave, StateError> {
        let set = format!("ev:{{signup:{}}}:new", new.server().name());
        let (n, added): (u64, u64) = self
            .call(async |c| {
                WAVE.key(&set).arg(new.member()).arg(now).arg(WAVE_WINDOW).arg(WAVE_DOMAINS_KEPT).invoke_async(c).await
            })
            .await?;
        Ok(Wave { new_domains: n, added: added == 1 })
    }

    async fn rank(&self, entries: &[Entry], now: i64) -> Result<Vec<u64>, StateError> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let floors: Vec<u64> = self
            .call(async |c| {
                let mut call = BOARD.prepare_invoke();
                call.arg(now);
                for e in entries {
                    let [counts, times] = board_keys(e.board);
                    call.key(counts).key(times);
                    call.arg(&e.value).arg(e.count).arg(e.board.lifetime()).arg(e.board.bucket()).arg(BOARD_KEPT);
                }
                call.invoke_async(c).await
            })
            .await?;
        if floors.len() != entries.len() {
            return Err(unavailable(format!("the board script answered {} numbers", floors.len())));
        }
        Ok(floors)
    }

    async fn signup_counts(&self, counters: &[Counter], now: i64) -> Result<Vec<Window>, StateError> {
        let at = Buckets::at(now);
        let mut windows = Vec::with_capacity(counters.len());
        // One read per counter: each is its own hash tag (its own slot on a cluster).
        for counter in counters {
            let fields: Vec<(String, String)> =
                self.call(async |c| redis::cmd("HGETALL").arg(key(counter)).query_async(c).await).await?;
            windows.push(ring_windows(&fields, at));
        }
        Ok(windows)
    }

    async fn busiest(&self, board: Board, now: i64, limit: usize) -> Result<Vec<Ranked>, StateError> {
        let [counts, times] = board_keys(board);
        let (counts, times): (Vec<(String, u64)>, Vec<(String, i64)>) = self
            .call(async |c| {
                redis::pipe()
                    .cmd("ZRANGE")
                    .arg(&counts)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .cmd("ZRANGE")
                    .arg(&times)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query_async(c)
                    .await
            })
            .await?;
        let times: std::collections::HashMap<String, i64> = times.into_iter().collect();
        let values = counts
            .into_iter()
            .filter_map(|(value, count)| Some(Ranked { at: *times.get(&value)?, value, count }))
            .collect();
        Ok(live(board, values, now, limit))
    }
}

/// A counter's windows from its hash's fields (`h<slot>` / `d<slot>` → `"<bucket>:<count>"`), as
/// `signup.lua` adds them up: the buckets within each ring's window, a newer one included.
fn ring_windows(fields: &[(String, String)], at: Buckets) -> Window {
    let mut window = Window::default();
    for (field, value) in fields {
        let Some((bucket, count)) = value.split_once(':') else { continue };
        let (Ok(bucket), Ok(count)) = (bucket.parse::<i64>(), count.parse::<u64>()) else { continue };
        if field.starts_with('h') && bucket > at.hour - HOUR_BUCKETS {
            window.hour += count;
        } else if field.starts_with('d') && bucket > at.day - DAY_BUCKETS {
            window.day += count;
        }
    }
    window
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_add_the_buckets_within_each_ring() {
        let at = Buckets { hour: 100, day: 10 };
        let f = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let fields =
            [f("h0", "96:2"), f("h1", "88:5"), f("h2", "89:1"), f("d3", "10:3"), f("d4", "-14:9"), f("d5", "x")];
        assert_eq!(ring_windows(&fields, at), Window { hour: 3, day: 3 });
    }
}
