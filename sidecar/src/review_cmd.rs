//! `email-verdict review list|set|clear|history`; with `--server`, marks on mail servers.

use std::io::Write;

use email_verdict_core::Decision;

use crate::cli::{ReviewCommand, StoreArgs};
use crate::clock::{rfc3339, unix_now};
use crate::review::servers::{self, ServerReport};
use crate::review::{ReviewError, parse_verdict, set_decision};
use crate::state::queue::{self, Query, Sort};
use crate::state::{self, MailServer, ReviewReason, StateStore, decision_str, mark_str};
use crate::{keys_cmd, lists, usage_error};

pub async fn run(store_args: StoreArgs, command: ReviewCommand) -> anyhow::Result<()> {
    let keys_cmd::StoreSettings { state: url, lists, .. } = keys_cmd::store_settings(&store_args)?;
    let store = state::open(&url)?;
    let mut out = std::io::stdout().lock();
    match command {
        ReviewCommand::List { sort, reason, server, grep, limit, offset, by_server } => {
            let sort = Sort::parse(&sort).ok_or_else(|| usage_error(format!("--sort {sort:?}: oldest or priority")))?;
            let reason = match reason {
                None => None,
                Some(r) => Some(ReviewReason::parse(&r).ok_or_else(|| {
                    usage_error(format!("--reason {r:?}: ambiguous, no_mx, weak_listing or parent_listing"))
                })?),
            };
            let server = server.map(|s| MailServer::parse(&s).map_or(s, |m| m.value));
            let query = Query {
                reason,
                server,
                text: grep.map(|t| t.to_ascii_lowercase()),
                sort,
                offset,
                limit: limit.unwrap_or(usize::MAX),
            };
            if by_server {
                list_servers(&*store, &query, &mut out).await?;
            } else {
                list(&*store, &query, &mut out).await?;
            }
        }
        ReviewCommand::Set { domain, verdict, note, reviewer, server } => {
            let decision = parse_verdict(&verdict)
                .ok_or_else(|| usage_error(format!("verdict {verdict:?}: expected disposable or safe")))?;
            let catalog = lists::offline_catalog(&lists)?;
            if server {
                let marked = servers::mark(&*store, &catalog, &domain, Some(decision), &reviewer, &note, unix_now())
                    .await
                    .map_err(review_error)?;
                writeln!(out, "{}: {verdict} (by {reviewer}): {}", marked.report.server, marked.effect)?;
            } else {
                let domain = set_decision(&*store, &catalog, &domain, Some(decision), &reviewer, &note, unix_now())
                    .await
                    .map_err(review_error)?;
                writeln!(out, "{domain}: {verdict} (by {reviewer})")?;
            }
        }
        ReviewCommand::Clear { domain, note, reviewer, server } => {
            let catalog = lists::offline_catalog(&lists)?;
            if server {
                let marked = servers::mark(&*store, &catalog, &domain, None, &reviewer, &note, unix_now())
                    .await
                    .map_err(review_error)?;
                writeln!(out, "{}: mark withdrawn", marked.report.server)?;
            } else {
                let domain = set_decision(&*store, &catalog, &domain, None, &reviewer, &note, unix_now())
                    .await
                    .map_err(review_error)?;
                writeln!(out, "{domain}: decision withdrawn")?;
            }
        }
        ReviewCommand::History { domain, server: true } => {
            let server = MailServer::parse(&domain)
                .ok_or_else(|| usage_error(format!("{domain:?}: neither a host name nor an IP address")))?;
            let catalog = lists::offline_catalog(&lists)?;
            let report = servers::report(&*store, &catalog, &server, unix_now()).await?;
            server_history(&report, &mut out)?;
        }
        ReviewCommand::History { domain, server: false } => {
            let domain =
                email_verdict_core::Domain::parse(&domain).map_err(|e| usage_error(format!("{domain:?}: {e}")))?;
            writeln!(out, "AT\tDECISION\tREVIEWER\tNOTE")?;
            for r in store.decision_history(domain.as_str()).await? {
                writeln!(out, "{}\t{}\t{}\t{}", rfc3339(r.at), decision_str(r.decision), r.reviewer, r.note)?;
            }
            // The decision in force may be a parent's: say which (a decision covers subdomains).
            match store.decision(&state::covering(&domain)).await? {
                Some(a) => writeln!(out, "# applies: {} (decided on {})", decision_str(Some(a.decision)), a.on)?,
                None => writeln!(out, "# applies: none")?,
            }
        }
    }
    Ok(())
}

/// One line per queued domain (tab-separated, after a header); how many, and what the bound
/// dropped, on standard error.
async fn list(store: &dyn StateStore, query: &Query, out: &mut impl Write) -> anyhow::Result<()> {
    let page = queue::page(store.review_queue().await?, query);
    writeln!(out, "DOMAIN\tREASON\tFIRST_SEEN\tLAST_SEEN\tLOOKUPS\tSOURCES\tLISTED_AS\tSERVER\tPRIORITY")?;
    for item in &page.items {
        let (first, last) = (rfc3339(item.first_seen), rfc3339(item.last_seen));
        let sources = item.sources.join(",");
        let (reason, sources, listed_as) = (item.reason.as_str(), or_dash(&sources), or_dash(&item.listed_as));
        writeln!(
            out,
            "{}\t{reason}\t{first}\t{last}\t{}\t{sources}\t{listed_as}\t{}\t{}",
            item.domain,
            item.lookups,
            or_dash(item.server()),
            item.priority()
        )?;
    }
    summary(store, page.items.len(), page.matching, page.waiting).await
}

async fn list_servers(store: &dyn StateStore, query: &Query, out: &mut impl Write) -> anyhow::Result<()> {
    let mut items = store.review_queue().await?;
    let waiting = items.len();
    items.retain(|i| query.reason.is_none_or(|r| i.reason == r));
    let waves = crate::review::servers::waves(store, unix_now()).await?;
    let (groups, total) = queue::groups(items, &waves, query.offset, query.limit, 3);
    writeln!(out, "SERVER\tDOMAINS\tLOOKUPS\tPRIORITY\tREASONS\tSAMPLE\tNEW_LAST_HOUR")?;
    for g in &groups {
        let reasons: Vec<String> = g.reasons.iter().map(|(r, n)| format!("{r}:{n}")).collect();
        let server = if g.server.is_empty() { "-" } else { &g.server };
        writeln!(
            out,
            "{server}\t{}\t{}\t{}\t{}\t{}\t{}",
            g.domains,
            g.lookups,
            g.priority,
            reasons.join(","),
            g.sample.join(","),
            g.new_domains_last_hour
        )?;
    }
    summary(store, groups.len(), total, waiting).await
}

async fn summary(store: &dyn StateStore, shown: usize, matching: usize, waiting: usize) -> anyhow::Result<()> {
    let dropped: Vec<String> =
        store.review_dropped().await?.iter().map(|(r, n)| format!("{} {n}", r.as_str())).collect();
    let dropped = if dropped.is_empty() { "none".to_owned() } else { dropped.join(", ") };
    // The bound is `serve`'s (`--review-queue-capacity`), which this command does not know.
    eprintln!(
        "{shown} shown of {matching} matching; {waiting} waiting (dropped by the queue's bound so far: {dropped})"
    );
    Ok(())
}

/// A server's marks, then what the index and the queue know of it, as `#` lines.
fn server_history(r: &ServerReport, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "AT\tMARK\tREVIEWER\tNOTE")?;
    for m in &r.marks {
        writeln!(out, "{}\t{}\t{}\t{}", rfc3339(m.at), mark_str(m.decision), m.reviewer, m.note)?;
    }
    writeln!(out, "# applies: {}", r.mark.map_or("none", |m| mark_str(Some(m))))?;
    if let Some(owner) = &r.owner {
        writeln!(out, "# named under: {owner}")?;
    }
    let taught: Vec<String> = r
        .taught_by
        .iter()
        .map(|t| format!("{} ({})", t.domain, if t.disposable { "disposable" } else { "legitimate" }))
        .collect();
    writeln!(out, "# known: {} disposable, {} legitimate: {}", r.disposable, r.legitimate, taught.join(", "))?;
    writeln!(out, "# queued on it: {} {}", r.queued, r.queued_sample.join(","))?;
    writeln!(out, "# marking it disposable {}", r.effect(Some(Decision::Block)))
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

fn review_error(e: ReviewError) -> anyhow::Error {
    match e {
        ReviewError::Store(e) => e.into(),
        other => usage_error(other.to_string()),
    }
}
