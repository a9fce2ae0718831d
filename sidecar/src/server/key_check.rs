//! Which requests carry a key in good standing, for the connection guard's reserved share
//! (`http_guard::KeyCheck`): the key as the API reads it (`Authorization: Bearer`, else
//! `?key=`) or as `/ext_authz` reads it (`x-email-verdict-key`), checked like every request's
//! (the store, through the authenticator's cache; the key's IP allowlist included), then its
//! standing: a `gateway` key always, another while its next request would be admitted, under
//! both its daily quota and its per-second burst (one store read, nothing spent).

use std::sync::Arc;

use async_trait::async_trait;
use pingora::protocols::http::ServerSession;

use crate::api::Api;
use crate::api::ext_authz::KEY_HEADER;
use crate::auth::presented_key;
use crate::client_ip::client_ip;
use crate::http_guard::{KeyCheck, Standing};
use crate::plans::GATEWAY_PLAN;

/// The public listener's [`KeyCheck`].
pub struct ApiKeys(pub Arc<Api>);

#[async_trait]
impl KeyCheck for ApiKeys {
    async fn standing(&self, session: &ServerSession) -> Option<Standing> {
        let header = session.req_header();
        let authorization = header.headers.get(http::header::AUTHORIZATION).map(|v| v.as_bytes());
        let gateway = header.headers.get(KEY_HEADER).and_then(|v| v.to_str().ok()).map(|v| v.trim().to_owned());
        let key = presented_key(authorization, header.uri.query()).or(gateway)?;
        let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
        let forwarded: Vec<&str> =
            header.headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect();
        let client = client_ip(peer, &forwarded, &self.0.trusted_proxies);
        let key = self.0.auth.authenticate(Some(&key), client).await.ok()?;
        let gateway = key.plan.as_str() == GATEWAY_PLAN;
        (gateway || self.0.limiter.would_admit(&key).await).then(|| Standing { key_id: key.id.clone(), gateway })
    }
}
