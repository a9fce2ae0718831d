//! The name resolver of an outbound client without `--allow-private-outbound`: ureq's own
//! (the system's), with every address that is not public dropped, and a refusal when none is
//! left. Checking the resolved addresses (not the URL's text) is what stops a name that points
//! at `127.0.0.1`; the client connects to exactly the addresses kept here, so a second, different
//! answer cannot slip in between the check and the connection.

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

use super::Refusal;
use super::address::is_public;

#[derive(Debug, Default)]
pub(super) struct PublicOnly {
    inner: DefaultResolver,
}

impl Resolver for PublicOnly {
    fn resolve(&self, uri: &Uri, config: &Config, timeout: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let found = self.inner.resolve(uri, config, timeout)?;
        // The proxy the operator configured (HTTP(S)_PROXY) is reached wherever it is; it then
        // resolves the target's name itself.
        if is_the_proxy(uri, config) {
            return Ok(found);
        }
        let mut kept = self.empty();
        for addr in found.iter().filter(|a| is_public(a.ip())) {
            kept.push(*addr);
        }
        if kept.is_empty() {
            return Err(ureq::Error::Other(Box::new(Refusal::NotPublic)));
        }
        Ok(kept)
    }
}

fn is_the_proxy(uri: &Uri, config: &Config) -> bool {
    let Some(proxy) = config.proxy() else { return false };
    let port = uri.port_u16().or_else(|| match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    });
    uri.host().is_some_and(|h| h.eq_ignore_ascii_case(proxy.host())) && port == Some(proxy.port())
}
