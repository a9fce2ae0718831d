//! Reviewers' marks on mail servers (issue 24): a server as the index knows it (the domains
//! that taught it, its mark and history, the queued domains on it) and one decision for all its
//! domains. The admin API, the CLI and the dashboard all go through here.

use std::collections::HashMap;

use email_verdict_core::{Catalog, Decision};

use super::ReviewError;
use crate::state::queue::on_server;
use crate::state::signups::{BOARD_KEPT, Board};
use crate::state::{MailServer, ServerKind, ServerMark, StateError, StateStore, Teacher};
use crate::verdicts::{FACT_LIFETIME_SECS, owner_of};

/// The mail servers with never-seen domains signing up on them: each one's distinct new domains
/// in the last hour (the waves board, at most `BOARD_KEPT` servers), for the queue's grouping.
pub async fn waves(store: &dyn StateStore, now: i64) -> Result<HashMap<String, u64>, StateError> {
    let board = store.busiest(Board::Waves, now, BOARD_KEPT).await?;
    Ok(board.into_iter().map(|r| (r.value, r.count)).collect())
}

/// Queued domains named in a report (the count is whole).
const SAMPLE: usize = 20;

/// What the index and the queue hold on one mail server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    pub server: MailServer,
    /// For a host: the registrable domain it is named under (the domain it belongs to).
    pub owner: Option<String>,
    /// For a host on shared multi-tenant infrastructure: the provider (never marked).
    pub shared: Option<String>,
    /// The mark in force, and every mark, oldest first.
    pub mark: Option<Decision>,
    pub marks: Vec<ServerMark>,
    /// Registrable domains known disposable / legitimate that use it (fresh facts).
    pub disposable: u64,
    pub legitimate: u64,
    /// Who taught that, most recent first.
    pub taught_by: Vec<Teacher>,
    /// Queued domains whose own servers include it, and the first [`SAMPLE`] of them by priority.
    pub queued: usize,
    pub queued_sample: Vec<String>,
}

impl ServerReport {
    /// What marking it `decision` does (or did), in one sentence.
    pub fn effect(&self, decision: Option<Decision>) -> String {
        let (server, n) = (&self.server.value, self.queued);
        let domains = if n == 1 { "domain" } else { "domains" };
        match decision {
            Some(Decision::Block) => format!(
                "blocks the {n} queued {domains} on {server}, and every other domain whose own mail server it is, \
                 from their next lookup"
            ),
            Some(Decision::Allow) => format!(
                "{server} never counts as disposable infrastructure: the {n} queued {domains} on it stay safe under \
                 review ({} known disposable domains use it)",
                self.disposable
            ),
            None => format!("withdraws the mark on {server}: what the index knows of it decides again"),
        }
    }
}

/// The report on `server` at `now` (Unix seconds).
pub async fn report(
    store: &dyn StateStore,
    catalog: &Catalog,
    server: &MailServer,
    now: i64,
) -> Result<ServerReport, StateError> {
    let fresh_since = now - FACT_LIFETIME_SECS;
    // As evidence about no domain at all (no registrable domain is "."): nothing left out.
    let evidence = store.infra_evidence(".", std::slice::from_ref(server), fresh_since).await?;
    let evidence = evidence.into_iter().next().unwrap_or_default();
    let mut queue = store.review_queue().await?;
    crate::state::queue::order(&mut queue, crate::state::queue::Sort::Priority);
    let on_it: Vec<&str> = on_server(&queue, &server.value).map(|i| i.domain.as_str()).collect();
    let is_host = server.kind == ServerKind::Host;
    Ok(ServerReport {
        owner: is_host.then(|| owner_of(&server.value)),
        shared: is_host.then(|| catalog.shared_mx_host(&server.value).map(str::to_owned)).flatten(),
        mark: evidence.mark,
        marks: store.server_marks(server).await?,
        disposable: evidence.disposable,
        legitimate: evidence.legitimate,
        taught_by: store.server_teachers(server, fresh_since, 100).await?,
        queued: on_it.len(),
        queued_sample: on_it.iter().take(SAMPLE).map(|d| d.to_string()).collect(),
        server: server.clone(),
    })
}

/// A mark recorded: the server's report after it, and what it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marked {
    pub report: ServerReport,
    /// [`ServerReport::effect`] as it was before the mark (the queued domains it settled).
    pub effect: String,
}

/// Marks the server `text` (a host name or an address) disposable or safe for all its domains
/// (`None` withdraws the mark). The queued domains on it leave the queue: the mark settles them
/// (a later lookup of one on a server marked safe is not queued again for nothing but its
/// server; one on a server marked disposable is disposable). Shared infrastructure is never
/// marked disposable (rule 3).
pub async fn mark(
    store: &dyn StateStore,
    catalog: &Catalog,
    text: &str,
    decision: Option<Decision>,
    reviewer: &str,
    note: &str,
    now: i64,
) -> Result<Marked, ReviewError> {
    let server = MailServer::parse(text).ok_or_else(|| ReviewError::BadServer(text.to_owned()))?;
    if decision == Some(Decision::Block)
        && server.kind == ServerKind::Host
        && let Some(provider) = catalog.shared_mx_host(&server.value)
    {
        return Err(ReviewError::SharedServer(server.value, provider.to_owned()));
    }
    let before = report(store, catalog, &server, now).await?;
    let record =
        ServerMark { server: server.clone(), decision, reviewer: reviewer.to_owned(), note: note.to_owned(), at: now };
    store.mark_server(record).await?;
    if decision.is_some() {
        let queue = store.review_queue().await?;
        let settled: Vec<String> = on_server(&queue, &server.value).map(|i| i.domain.clone()).collect();
        store.dismiss(&settled).await?;
    }
    Ok(Marked { effect: before.effect(decision), report: report(store, catalog, &server, now).await? })
}
