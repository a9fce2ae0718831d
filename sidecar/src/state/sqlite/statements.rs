//! The statements of the paths every request takes (admission, leases, key records, decisions,
//! signup counts) are prepared once per connection: none is prepared again at a later use.
//! SQLite re-prepares a statement whose plan depends on a bound value (a `LIMIT ?`, for one)
//! whenever it comes out of the statement cache, so such a value is written into the text.

use std::ffi::CStr;

use email_verdict_core::signup::velocity::Scope;

use super::*;
use crate::keys::ApiKey;
use crate::state::signups::{Counter, NewDomain, SignupStore};
use crate::state::{Closing, GiveBack, LeaseAsk, Leased, ReviewStore};

/// Every statement the connection holds that was prepared again, with its text.
fn reprepared(c: &Connection) -> Vec<(String, i32)> {
    let mut found = Vec::new();
    // SAFETY: the handle is the live connection's, used on its own thread, and the statements
    // walked belong to it (rusqlite's cache keeps them alive while the closure runs).
    unsafe {
        let db = c.handle();
        let mut stmt = rusqlite::ffi::sqlite3_next_stmt(db, std::ptr::null_mut());
        while !stmt.is_null() {
            let n = rusqlite::ffi::sqlite3_stmt_status(stmt, rusqlite::ffi::SQLITE_STMTSTATUS_REPREPARE, 0);
            if n > 0 {
                let sql = CStr::from_ptr(rusqlite::ffi::sqlite3_sql(stmt)).to_string_lossy().into_owned();
                found.push((sql, n));
            }
            stmt = rusqlite::ffi::sqlite3_next_stmt(db, stmt);
        }
    }
    found
}

#[tokio::test]
async fn the_request_paths_prepare_their_statements_once() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-state/sqlite-statements");
    let _ = std::fs::remove_dir_all(&dir); // a previous run's database
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("state.db")).unwrap();
    let key = ApiKey::generate().unwrap();
    let record = KeyRecord {
        id: "key_1".into(),
        name: "test".into(),
        plan: "pro".parse().unwrap(),
        allow_ips: Vec::new(),
        created_at: 1_700_000_000,
        revoked: false,
    };
    store.insert_key(record, key.hash()).await.unwrap();
    let limits = Limits { daily_quota: 1_000_000, burst_per_second: 1_000 };
    let names = ["a.example".to_owned(), "example".to_owned()];
    for i in 0..12i64 {
        let now_ms = 1_700_000_000_000 + i * 1_500;
        let (now, day) = (now_ms / 1000, utc_day(now_ms / 1000));
        let ask = LeaseAsk {
            id: format!("lease-{i}"),
            units_min: 1,
            units_want: 5,
            places_min: 1,
            places_want: 5,
            hold_ms: 3_000,
            ..LeaseAsk::default()
        };
        let Leased::Granted { block, .. } = store.lease("key_1", limits, &ask, now_ms).await.unwrap() else {
            panic!("not granted")
        };
        // Renewed in place, then closed.
        let close = Some(Closing { block, spent: 2, last_ms: now_ms });
        let renewal = LeaseAsk { id: format!("renewal-{i}"), close, renew: true, places_min: 3, ..ask };
        let Leased::Granted { block, .. } = store.lease("key_1", limits, &renewal, now_ms).await.unwrap() else {
            panic!("not renewed")
        };
        let close = Some(Closing { block, spent: 2, last_ms: now_ms });
        let back = GiveBack { id: format!("back-{i}"), day: day.clone(), units: 3, close, ..GiveBack::default() };
        store.give_back("key_1", &back).await.unwrap();
        store.admit("key_1", limits, 1, now_ms).await.unwrap();
        store.usage("key_1", &[day]).await.unwrap();
        store.key_by_hash(&key.hash()).await.unwrap();
        store.decision(&names).await.unwrap();
        let counters =
            [Counter::new(Scope::Domain, &format!("d{}.example", i % 3)), Counter::new(Scope::Client, "192.0.2.1")];
        store.count_signup(&counters, now).await.unwrap();
        store.count_new_domain(&NewDomain::new("mx.example", &format!("d{i}.example")), now).await.unwrap();
    }
    let again = store.with_conn(|c| Ok(reprepared(c))).await.unwrap();
    assert!(again.is_empty(), "prepared again at a later use: {again:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}
