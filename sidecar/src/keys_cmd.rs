//! `email-verdict keys create|list|revoke`.

use std::io::Write;

use crate::cli::{KeysCommand, StoreArgs};
use crate::clock::{unix_now, utc_day};
use crate::config::{DEFAULT_STATE, ServeArgs};
use crate::keys::{ApiKey, new_key_id};
use crate::lists::ListSettings;
use crate::plans::Plans;
use crate::state::{self, KeyRecord, Replication};
use crate::usage_error;

pub async fn run(store: StoreArgs, command: KeysCommand) -> anyhow::Result<()> {
    let settings = store_settings(&store)?;
    let store = state::open(&settings.state)?;
    let mut out = std::io::stdout().lock();
    match command {
        KeysCommand::Create { plan, name, allow_ip } => {
            let plan = settings.plans.resolve(&plan).map_err(|e| usage_error(format!("--plan: {e}")))?.name.clone();
            let key = ApiKey::generate()?;
            let record = KeyRecord {
                id: new_key_id()?,
                name,
                plan,
                allow_ips: allow_ip,
                created_at: unix_now(),
                revoked: false,
            };
            let replication = store.insert_key(record.clone(), key.hash()).await?;
            // Which store: a key created in another store than the server's is refused as
            // `api_key_invalid`, and this line is where the operator can see it.
            let where_ = crate::lists::source::redact(&settings.state);
            writeln!(
                out,
                "created {} (plan {}) in {where_}; the key is shown once, store it now:",
                record.id, record.plan
            )?;
            writeln!(out, "{}", key.expose())?;
            if replication == Replication::Pending {
                eprintln!("{NOT_REPLICATED}");
            }
        }
        KeysCommand::List => {
            writeln!(out, "ID\tNAME\tPLAN\tSTATUS\tUSED_TODAY")?;
            for listing in store.list_keys(&utc_day(unix_now())).await? {
                let k = &listing.key;
                let status = if k.revoked { "revoked" } else { "active" };
                writeln!(out, "{}\t{}\t{}\t{}\t{}", k.id, k.name, k.plan, status, listing.used_today)?;
            }
        }
        KeysCommand::Revoke { id } => {
            if !store.revoke_key(&id).await? {
                return Err(usage_error(format!("no key with id {id:?}")));
            }
            writeln!(out, "revoked {id}")?;
        }
    }
    Ok(())
}

/// On stderr when Redis has replicas and none had the key within the wait (issue 31).
const NOT_REPLICATED: &str = "warning: the key is stored but not yet on a replica: \
     a failover of the Redis primary now could lose it (check with `keys list` after a while)";

/// What the operator commands take from `--state` and the `--config` file.
pub struct StoreSettings {
    /// `--state`, else the file's `state`, else the default.
    pub state: String,
    /// The file's list settings (to refuse decisions on free webmail).
    pub lists: ListSettings,
    /// The built-in plans and the file's `[plans]`.
    pub plans: Plans,
}

pub fn store_settings(store: &StoreArgs) -> anyhow::Result<StoreSettings> {
    let (state, lists, plans) = match &store.config {
        Some(path) => {
            let config = ServeArgs { config: Some(path.clone()), ..Default::default() }.resolve()?;
            (config.state, config.lists, (*config.plans).clone())
        }
        None => (DEFAULT_STATE.to_owned(), ListSettings::default(), Plans::builtin()),
    };
    Ok(StoreSettings { state: store.state.clone().unwrap_or(state), lists, plans })
}
