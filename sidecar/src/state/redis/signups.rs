//! Redis side of [`SignupStore`]: a counter is one hash, `ev:{signup:<scope>:<sha256>}`, of at
//! most 36 fields (its ring of buckets, `signup.lua`), expiring a day and a bucket after its
//! last signup.
//!
//! Each counter is its own hash tag, so on Redis Cluster the counters spread over every node
//! (one tag for all of them would put every signup of every replica on one node: a hot slot).
//! On one server a signup is one script over its counters (one round trip); on a cluster it is
//! the same script once per counter, sent together (one round trip's time, the counters'
//! nodes in parallel). Counters are independent, so each being atomic is all a count needs.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use super::{RedisStore, Target, unavailable};
use crate::state::StateError;
use crate::state::signups::{Buckets, COUNTER_TTL, Counter, SignupStore};
use email_verdict_core::signup::velocity::Window;

static COUNT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("signup.lua")));

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
}
