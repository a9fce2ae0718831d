//! `email-verdict review list|set|clear|history`.

use std::io::Write;

use crate::cli::{ReviewCommand, StoreArgs};
use crate::clock::{rfc3339, unix_now};
use crate::review::{ReviewError, parse_verdict, set_decision};
use crate::state::{self, covering_names, decision_str};
use crate::{keys_cmd, lists, usage_error};

pub async fn run(store_args: StoreArgs, command: ReviewCommand) -> anyhow::Result<()> {
    let keys_cmd::StoreSettings { state: url, lists, .. } = keys_cmd::store_settings(&store_args)?;
    let store = state::open(&url)?;
    let mut out = std::io::stdout().lock();
    match command {
        ReviewCommand::List => {
            writeln!(out, "DOMAIN\tREASON\tFIRST_SEEN\tLAST_SEEN\tLOOKUPS\tSOURCES\tLISTED_AS")?;
            for item in store.review_queue().await? {
                let (first, last) = (rfc3339(item.first_seen), rfc3339(item.last_seen));
                let sources = item.sources.join(",");
                let (reason, sources, listed_as) = (item.reason.as_str(), or_dash(&sources), or_dash(&item.listed_as));
                writeln!(out, "{}\t{reason}\t{first}\t{last}\t{}\t{sources}\t{listed_as}", item.domain, item.lookups)?;
            }
        }
        ReviewCommand::Set { domain, verdict, note, reviewer } => {
            let decision = parse_verdict(&verdict)
                .ok_or_else(|| usage_error(format!("verdict {verdict:?}: expected disposable or safe")))?;
            let catalog = lists::offline_catalog(&lists)?;
            let domain = set_decision(&*store, &catalog, &domain, Some(decision), &reviewer, &note, unix_now())
                .await
                .map_err(review_error)?;
            writeln!(out, "{domain}: {verdict} (by {reviewer})")?;
        }
        ReviewCommand::Clear { domain, note, reviewer } => {
            let catalog = lists::offline_catalog(&lists)?;
            let domain = set_decision(&*store, &catalog, &domain, None, &reviewer, &note, unix_now())
                .await
                .map_err(review_error)?;
            writeln!(out, "{domain}: decision withdrawn")?;
        }
        ReviewCommand::History { domain } => {
            let domain =
                email_verdict_core::Domain::parse(&domain).map_err(|e| usage_error(format!("{domain:?}: {e}")))?;
            writeln!(out, "AT\tDECISION\tREVIEWER\tNOTE")?;
            for r in store.decision_history(domain.as_str()).await? {
                writeln!(out, "{}\t{}\t{}\t{}", rfc3339(r.at), decision_str(r.decision), r.reviewer, r.note)?;
            }
            // The decision in force may be a parent's: say which (a decision covers subdomains).
            match store.decision(&covering_names(domain.as_str())).await? {
                Some(a) => writeln!(out, "# applies: {} (decided on {})", decision_str(Some(a.decision)), a.on)?,
                None => writeln!(out, "# applies: none")?,
            }
        }
    }
    Ok(())
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
