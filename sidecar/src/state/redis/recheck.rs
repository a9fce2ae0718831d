//! Redis side of [`RecheckStore`]: `ev:{recheck:<domain>}` holds the time of the domain's last
//! re-check and expires after the interval. `SET NX` in a script makes the check and the write
//! one step for every replica.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;

use super::RedisStore;
use crate::state::{Recheck, RecheckStore, StateError};

/// Returns -1 when recorded, else the stored time of the last re-check.
static TRY_RECHECK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then return -1 end
         return tonumber(redis.call('GET', KEYS[1]) or ARGV[1])",
    )
});

/// Deletes the key only when it still holds the re-check being undone.
static GIVE_BACK: LazyLock<Script> = LazyLock::new(|| {
    Script::new("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0")
});

#[async_trait]
impl RecheckStore for RedisStore {
    async fn try_recheck(&self, domain: &str, now: i64, interval: i64) -> Result<Recheck, StateError> {
        let key = format!("ev:{{recheck:{domain}}}");
        let last: i64 =
            self.call(async |c| TRY_RECHECK.key(&key).arg(now).arg(interval.max(1)).invoke_async(c).await).await?;
        Ok(if last < 0 { Recheck::Allowed } else { Recheck::Refused { next_at: last + interval } })
    }

    async fn give_back_recheck(&self, domain: &str, at: i64) -> Result<(), StateError> {
        let key = format!("ev:{{recheck:{domain}}}");
        let _: i64 = self.call(async |c| GIVE_BACK.key(&key).arg(at).invoke_async(c).await).await?;
        Ok(())
    }
}
