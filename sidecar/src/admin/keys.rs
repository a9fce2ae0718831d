//! `/admin/v1/keys`: create, list, read, change, revoke keys, and read their usage.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/admin/v1/keys` | | `{"keys": [key...]}` |
//! | POST | `/admin/v1/keys` | `{"plan", "name"?, "allow_ips"?}` | 201 key + `"key"` (shown once), `"replicated"` |
//! | GET | `/admin/v1/keys/{id}` | | key |
//! | PATCH | `/admin/v1/keys/{id}` | `{"plan"?, "name"?, "allow_ips"?}` | key |
//! | POST | `/admin/v1/keys/{id}/revoke` (or DELETE `/admin/v1/keys/{id}`) | | key |
//! | GET | `/admin/v1/keys/{id}/usage?days=N` | | `{"id", "days": [{"day", "used"}]}` (N ≤ 40, default 7) |

use http::{Method, StatusCode};
use ipnet::IpNet;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Admin, AdminError, AdminResult, Json};
use crate::clock::utc_day;
use crate::keys::{ApiKey, new_key_id};
use crate::plans::PlanName;
use crate::state::{KeyChange, KeyRecord, Replication};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFields {
    plan: Option<String>,
    name: Option<String>,
    allow_ips: Option<Vec<String>>,
}

pub async fn route(admin: &Admin, method: &Method, rest: &[&str], body: &[u8], query: &str) -> AdminResult {
    match (method, rest) {
        (&Method::GET, [] | [""]) => list(admin).await,
        (&Method::POST, [] | [""]) => create(admin, parse(body)?).await,
        (&Method::GET, [id]) => show(admin, id).await,
        (&Method::PATCH, [id]) => change(admin, id, parse(body)?).await,
        (&Method::DELETE, [id]) | (&Method::POST, [id, "revoke"]) => revoke(admin, id).await,
        (&Method::GET, [id, "usage"]) => usage(admin, id, query).await,
        _ => Err(AdminError::not_found("no such endpoint or method")),
    }
}

fn parse(body: &[u8]) -> Result<KeyFields, AdminError> {
    serde_json::from_slice(body).map_err(|e| AdminError::bad_request(format!("invalid JSON body: {e}")))
}

/// Makes and stores a new key (the admin API and the dashboard alike): the record, and the
/// secret, which exists nowhere else and must be shown once; and whether it is on a replica yet.
pub(crate) async fn create_key(
    admin: &Admin,
    plan: PlanName,
    name: String,
    allow_ips: Vec<IpNet>,
) -> Result<(KeyRecord, ApiKey, Replication), AdminError> {
    let secret = ApiKey::generate().map_err(|e| AdminError::bad_request(format!("no randomness: {e}")))?;
    let id = new_key_id().map_err(|e| AdminError::bad_request(format!("no randomness: {e}")))?;
    let created_at = admin.clock.now_ms().div_euclid(1000);
    let key = KeyRecord { id, name, plan, allow_ips, created_at, revoked: false };
    let replication = admin.store.insert_key(key.clone(), secret.hash()).await?;
    Ok((key, secret, replication))
}

/// A plan keys may take: built in or defined by the `--config` file.
pub(crate) fn plan(admin: &Admin, s: &str) -> Result<PlanName, AdminError> {
    admin.plans.current().resolve(s).map(|p| p.name.clone()).map_err(|e| AdminError::bad_request(e.to_string()))
}

pub(crate) fn networks(list: &[String]) -> Result<Vec<IpNet>, AdminError> {
    list.iter().map(|s| crate::client_ip::parse_network(s).map_err(AdminError::bad_request)).collect()
}

fn today(admin: &Admin) -> String {
    utc_day(admin.clock.now_ms().div_euclid(1000))
}

fn key_json(admin: &Admin, key: &KeyRecord, used_today: u64) -> Value {
    let plans = admin.plans.current();
    let plan = plans.get(&key.plan);
    let figure = |f: fn(&crate::plans::Plan) -> crate::plans::Limit| plan.map_or(Value::Null, |p| f(p).to_json());
    json!({
        "id": key.id,
        "name": key.name,
        "plan": key.plan.as_str(),
        "status": if key.revoked { "revoked" } else { "active" },
        "allow_ips": key.allow_ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "created_at": key.created_at,
        // null: the plan is not defined here, and the key is refused.
        "daily_quota": figure(|p| p.daily_quota),
        "burst_per_second": figure(|p| p.burst_per_second),
        "used_today": used_today,
    })
}

async fn with_usage(admin: &Admin, key: &KeyRecord) -> Result<Value, AdminError> {
    let used = admin.store.usage(&key.id, &[today(admin)]).await?;
    Ok(key_json(admin, key, used.first().copied().unwrap_or(0)))
}

async fn list(admin: &Admin) -> AdminResult {
    let keys = admin.store.list_keys(&today(admin)).await?;
    let keys: Vec<Value> = keys.iter().map(|l| key_json(admin, &l.key, l.used_today)).collect();
    Ok(Json(StatusCode::OK, json!({ "keys": keys })))
}

async fn create(admin: &Admin, fields: KeyFields) -> AdminResult {
    let plan = plan(admin, fields.plan.as_deref().ok_or_else(|| AdminError::bad_request("\"plan\" is required"))?)?;
    let allow_ips = networks(&fields.allow_ips.unwrap_or_default())?;
    let (key, secret, replication) = create_key(admin, plan, fields.name.unwrap_or_default(), allow_ips).await?;
    let mut body = key_json(admin, &key, 0);
    body["key"] = Value::String(secret.expose().to_owned());
    // false: Redis has replicas and none had the key within the wait; a failover now loses it.
    body["replicated"] = Value::Bool(replication != Replication::Pending);
    Ok(Json(StatusCode::CREATED, body))
}

async fn show(admin: &Admin, id: &str) -> AdminResult {
    let key = admin.store.key_by_id(id).await?.ok_or_else(|| no_key(id))?;
    Ok(Json(StatusCode::OK, with_usage(admin, &key).await?))
}

async fn change(admin: &Admin, id: &str, fields: KeyFields) -> AdminResult {
    let change = KeyChange {
        name: fields.name,
        plan: fields.plan.as_deref().map(|p| plan(admin, p)).transpose()?,
        allow_ips: fields.allow_ips.as_deref().map(networks).transpose()?,
    };
    let key = admin.store.update_key(id, change).await?.ok_or_else(|| no_key(id))?;
    Ok(Json(StatusCode::OK, with_usage(admin, &key).await?))
}

async fn revoke(admin: &Admin, id: &str) -> AdminResult {
    if !admin.store.revoke_key(id).await? {
        return Err(no_key(id));
    }
    show(admin, id).await
}

async fn usage(admin: &Admin, id: &str, query: &str) -> AdminResult {
    admin.store.key_by_id(id).await?.ok_or_else(|| no_key(id))?;
    let days: i64 = match crate::auth::query_param(query, "days") {
        Some(n) => n
            .parse()
            .ok()
            .filter(|n| (1..=40).contains(n))
            .ok_or_else(|| AdminError::bad_request("days must be 1 to 40"))?,
        None => 7,
    };
    let now = admin.clock.now_ms().div_euclid(1000);
    let names: Vec<String> = (0..days).map(|i| utc_day(now - i * 86_400)).collect();
    let counts = admin.store.usage(id, &names).await?;
    let days: Vec<Value> = names.iter().zip(counts).map(|(day, used)| json!({ "day": day, "used": used })).collect();
    Ok(Json(StatusCode::OK, json!({ "id": id, "days": days })))
}

fn no_key(id: &str) -> AdminError {
    AdminError::not_found(format!("no key with id {id:?}"))
}
