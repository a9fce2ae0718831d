//! IP → country and network (ASN) for the MX table of the public pages, from MaxMind DB files.
//!
//! The shipped databases (`data/ipdb/`, see its README for sources and licences) are embedded;
//! `--geoip-country-db` / `--geoip-asn-db` replace them with an operator's files. Records are
//! read tolerantly: GeoLite2/GeoIP2 Country and City (`country.iso_code`, `country.names`,
//! `city.names`), GeoLite2 ASN (`autonomous_system_number`, `autonomous_system_organization`),
//! IPinfo Lite (`country_code`, `country`, `asn` = "AS…", `as_name`) and ip-location-db
//! (`country_code`). This data is shown, never used for a verdict.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use maxminddb::Reader;
use serde::{Deserialize, Serialize};

use super::lang::Lang;

static SHIPPED_COUNTRY: &[u8] = include_bytes!("../../../data/ipdb/country.mmdb");
static SHIPPED_ASN: &[u8] = include_bytes!("../../../data/ipdb/asn.mmdb");

/// What the shipped databases require to be shown (CC BY 4.0; DB-IP asks for its link too), in
/// English. The pages write it in their own language (`ip_data_shipped` in `domain.html`).
pub const SHIPPED_ATTRIBUTION: &str = "Country: ip-location-db geo-whois-asn-country (NRO, CC BY 4.0). \
     ASN: ip-location-db asn (RouteViews, DB-IP, NRO; CC BY 4.0).";

/// Operator settings: files replacing the shipped databases, and what to credit for them.
#[derive(Debug, Clone, Default)]
pub struct IpDataSettings {
    pub country_db: Option<PathBuf>,
    pub asn_db: Option<PathBuf>,
    pub attribution: Option<String>,
}

/// What is known about one address; every part may be missing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IpInfo {
    /// ISO 3166-1 alpha-2.
    pub country_code: Option<String>,
    /// In the page's language when the database has it, else in English.
    pub country_name: Option<String>,
    pub city: Option<String>,
    pub asn: Option<u32>,
    pub as_org: Option<String>,
}

pub struct IpData {
    country: Reader<Cow<'static, [u8]>>,
    asn: Reader<Cow<'static, [u8]>>,
    /// The credit line shown under the MX table.
    pub attribution: String,
    /// True when the shipped data is in use (the page then links to DB-IP as its licence asks).
    pub shipped: bool,
}

impl IpData {
    pub fn open(settings: &IpDataSettings) -> anyhow::Result<Self> {
        let country = open(settings.country_db.as_deref(), SHIPPED_COUNTRY, "--geoip-country-db")?;
        let asn = open(settings.asn_db.as_deref(), SHIPPED_ASN, "--geoip-asn-db")?;
        let shipped = settings.country_db.is_none() && settings.asn_db.is_none();
        if shipped && settings.attribution.is_some() {
            // Said once at start rather than ignored silently: the flag credits the operator's files.
            tracing::warn!(
                "--geoip-attribution is not shown with the shipped IP databases: their licence (CC BY 4.0) asks for their own credit, which the pages show in their language"
            );
        }
        let attribution = match &settings.attribution {
            Some(text) => text.clone(),
            None if shipped => SHIPPED_ATTRIBUTION.to_owned(),
            None => [describe(&country), describe(&asn)].join(" "),
        };
        Ok(Self { country, asn, attribution, shipped })
    }

    /// Country from the country database (the ASN one as a fallback), network from the ASN
    /// database (the country one as a fallback: IPinfo Lite holds both).
    pub fn lookup(&self, ip: IpAddr, lang: Lang) -> IpInfo {
        let (c, a) = (record(&self.country, ip), record(&self.asn, ip));
        let mut info = c.info(lang);
        let net = a.info(lang);
        info.country_code = info.country_code.or(net.country_code);
        info.country_name = info.country_name.or(net.country_name);
        info.asn = net.asn.or(info.asn);
        info.as_org = net.as_org.or(info.as_org);
        info
    }
}

fn open(path: Option<&Path>, shipped: &'static [u8], flag: &str) -> anyhow::Result<Reader<Cow<'static, [u8]>>> {
    let bytes = match path {
        Some(p) => Cow::Owned(std::fs::read(p).with_context(|| format!("{flag} {}", p.display()))?),
        None => Cow::Borrowed(shipped),
    };
    let what = path.map_or_else(|| "the shipped database".to_owned(), |p| p.display().to_string());
    Reader::from_source(bytes).map_err(|e| crate::usage_error(format!("{flag}: {what} is not a MaxMind DB file: {e}")))
}

/// `database_type (description)` from a file's metadata, for its credit line.
fn describe(reader: &Reader<Cow<'static, [u8]>>) -> String {
    let m = reader.metadata();
    match m.description.get("en") {
        Some(d) if !d.is_empty() => format!("{} ({d}).", m.database_type),
        _ => format!("{}.", m.database_type),
    }
}

fn record(reader: &Reader<Cow<'static, [u8]>>, ip: IpAddr) -> Record {
    // An IPv6 address in an IPv4-only file, or a malformed record: nothing known.
    reader.lookup(ip).ok().and_then(|r| r.decode::<Record>().ok().flatten()).unwrap_or_default()
}

/// The union of the schemas read; unknown fields are ignored.
#[derive(Debug, Default, Deserialize)]
struct Record {
    country_code: Option<String>,
    country: Option<Country>,
    city: Option<Names>,
    autonomous_system_number: Option<u32>,
    autonomous_system_organization: Option<String>,
    asn: Option<Asn>,
    as_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Country {
    /// GeoLite2 / GeoIP2.
    Geo {
        iso_code: Option<String>,
        #[serde(default)]
        names: BTreeMap<String, String>,
    },
    /// IPinfo Lite: the English name.
    Name(String),
}

#[derive(Debug, Deserialize)]
struct Names {
    #[serde(default)]
    names: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Asn {
    Number(u32),
    /// IPinfo: `AS13335`.
    Text(String),
}

impl Record {
    fn info(self, lang: Lang) -> IpInfo {
        let (iso, name) = match self.country {
            Some(Country::Geo { iso_code, names }) => (iso_code, localized(&names, lang)),
            Some(Country::Name(name)) => (None, Some(name)),
            None => (None, None),
        };
        let asn = self.autonomous_system_number.or(match self.asn {
            Some(Asn::Number(n)) => Some(n),
            Some(Asn::Text(t)) => t.trim_start_matches(['A', 'S', 'a', 's']).parse().ok(),
            None => None,
        });
        IpInfo {
            country_code: iso.or(self.country_code).filter(|c| !c.is_empty()).map(|c| c.to_ascii_uppercase()),
            country_name: name,
            city: self.city.and_then(|c| localized(&c.names, lang)),
            asn,
            as_org: self.autonomous_system_organization.or(self.as_name).filter(|o| !o.is_empty()),
        }
    }
}

fn localized(names: &BTreeMap<String, String>, lang: Lang) -> Option<String> {
    names.get(lang.geo_names_key()).or_else(|| names.get("en")).cloned()
}

#[cfg(test)]
mod tests;
