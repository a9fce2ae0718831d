//! The thread that owns the SQLite connection, and group commit.
//!
//! Calls reach the thread over a channel. Calls on the lookup path (admission, key and decision
//! reads, refunds, review and infrastructure notes) are *grouped*: the thread takes every grouped
//! call already waiting (up to [`MAX_GROUP`]) and runs them in one `BEGIN IMMEDIATE` transaction,
//! each under its own savepoint (an error undoes that call alone), then answers them all after
//! `COMMIT`. A caller is never answered before its writes are committed, so usage that was
//! answered survives `kill -9`; a failed commit fails every call of the group, none of whose
//! writes then happened. One transaction a group instead of one a call spares the file locks,
//! WAL frames and checkpoints that dominated a lookup's cost (BENCHMARKS.md, section 2).
//! Other calls (key management, listings) run on their own, in arrival order.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;

use rusqlite::Connection;

use super::unavailable;
use crate::state::StateError;

/// The most calls one transaction takes; more wait for the next.
const MAX_GROUP: usize = 256;

/// A call to run on the connection's thread.
pub(super) enum Job {
    /// Runs on its own, managing its own transaction if it needs one.
    Alone(Box<dyn FnOnce(&Connection) + Send>),
    /// Runs inside the group transaction.
    Grouped(Box<dyn GroupedJob>),
}

/// A call of a group: run inside the open transaction, answered once the group's fate is known.
pub(super) trait GroupedJob: Send {
    /// Runs the call; whether it succeeded (when not, its savepoint is rolled back).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answers the caller: with the call's own result when the group committed, else with `failed`.
    fn answer(self: Box<Self>, failed: Option<&StateError>);
}

/// A grouped call and the channel its answer goes to.
pub(super) struct Pending<T, F> {
    call: Option<F>,
    result: Option<Result<T, StateError>>,
    reply: tokio::sync::oneshot::Sender<Result<T, StateError>>,
}

impl<T, F> Pending<T, F> {
    pub(super) fn new(call: F, reply: tokio::sync::oneshot::Sender<Result<T, StateError>>) -> Self {
        Self { call: Some(call), result: None, reply }
    }
}

impl<T, F> GroupedJob for Pending<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, StateError> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(call) = self.call.take() else { return false };
        let result = guarded(|| call(conn));
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn answer(self: Box<Self>, failed: Option<&StateError>) {
        let result = match (failed, self.result) {
            (None, Some(result)) => result,
            (Some(e), _) => Err(unavailable(e)),
            (None, None) => Err(unavailable("the call did not run")),
        };
        let _ = self.reply.send(result);
    }
}

/// Runs `f`; a panic becomes an error, so it cannot take the connection's thread down.
pub(super) fn guarded<T>(f: impl FnOnce() -> Result<T, StateError>) -> Result<T, StateError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(unavailable("a state store call panicked")))
}

/// The thread's loop: until every sender is gone (the store was dropped).
pub(super) fn serve(conn: &Connection, queue: &mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut group: Vec<Box<dyn GroupedJob>> = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Alone(call) => {
                    commit_group(conn, std::mem::take(&mut group));
                    call(conn);
                }
                Job::Grouped(call) => group.push(call),
            }
            if group.len() < MAX_GROUP {
                next = queue.try_recv().ok();
            }
        }
        commit_group(conn, group);
    }
}

/// Runs `group` in one transaction, each call under a savepoint, and answers every call.
fn commit_group(conn: &Connection, mut group: Vec<Box<dyn GroupedJob>>) {
    if group.is_empty() {
        return;
    }
    let outcome = run_group(conn, &mut group);
    if outcome.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    let failed = outcome.err();
    group.into_iter().for_each(|job| job.answer(failed.as_ref()));
}

fn run_group(conn: &Connection, group: &mut [Box<dyn GroupedJob>]) -> Result<(), StateError> {
    let exec = |sql: &str| conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map_err(unavailable);
    exec("BEGIN IMMEDIATE")?;
    for job in group.iter_mut() {
        exec("SAVEPOINT call")?;
        if !job.run(conn) {
            exec("ROLLBACK TO call")?;
        }
        exec("RELEASE call")?;
    }
    exec("COMMIT").map(drop)
}
