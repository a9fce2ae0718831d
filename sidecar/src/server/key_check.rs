//! Which requests carry a valid API key, for the connection guard's reserved share
//! (`http_guard::KeyCheck`): the key as the API reads it (`Authorization: Bearer`, else
//! `?key=`) or as `/ext_authz` reads it (`x-email-verdict-key`), checked like every request's
//! (the store, through the authenticator's cache; the key's IP allowlist included).

use std::sync::Arc;

use async_trait::async_trait;
use pingora::protocols::http::ServerSession;

use crate::api::Api;
use crate::api::ext_authz::KEY_HEADER;
use crate::auth::presented_key;
use crate::client_ip::client_ip;
use crate::http_guard::KeyCheck;

/// The public listener's [`KeyCheck`].
pub struct ApiKeys(pub Arc<Api>);

#[async_trait]
impl KeyCheck for ApiKeys {
    async fn valid_key(&self, session: &ServerSession) -> bool {
        let header = session.req_header();
        let authorization = header.headers.get(http::header::AUTHORIZATION).map(|v| v.as_bytes());
        let gateway = header.headers.get(KEY_HEADER).and_then(|v| v.to_str().ok()).map(|v| v.trim().to_owned());
        let Some(key) = presented_key(authorization, header.uri.query()).or(gateway) else { return false };
        let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
        let forwarded: Vec<&str> =
            header.headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect();
        let client = client_ip(peer, &forwarded, &self.0.trusted_proxies);
        self.0.auth.authenticate(Some(&key), client).await.is_ok()
    }
}
