use std::path::PathBuf;

use super::*;

fn fixture(name: &str) -> Option<PathBuf> {
    Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ipdb").join(name))
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn shipped_databases_know_public_addresses() {
    let data = IpData::open(&IpDataSettings::default()).unwrap();
    assert!(data.shipped);
    let cloudflare = data.lookup(ip("1.1.1.1"), Lang::En);
    assert_eq!(cloudflare.asn, Some(13335), "{cloudflare:?}");
    assert!(cloudflare.as_org.as_deref().unwrap_or("").contains("Cloudflare"), "{cloudflare:?}");
    let google = data.lookup(ip("8.8.8.8"), Lang::En);
    assert_eq!((google.country_code.as_deref(), google.asn), (Some("US"), Some(15169)), "{google:?}");
    let v6 = data.lookup(ip("2001:4860:4860::8888"), Lang::En);
    assert_eq!(v6.asn, Some(15169), "{v6:?}");
    assert_eq!(data.lookup(ip("192.0.2.1"), Lang::En), IpInfo::default(), "documentation range");
}

#[test]
fn geolite2_city_and_asn_schemas() {
    let settings =
        IpDataSettings { country_db: fixture("test-city.mmdb"), asn_db: fixture("test-asn.mmdb"), attribution: None };
    let data = IpData::open(&settings).unwrap();
    assert!(!data.shipped);
    assert!(data.attribution.contains("GeoLite2-City") && data.attribution.contains("GeoLite2-ASN"));
    let v4 = data.lookup(ip("192.0.2.10"), Lang::De);
    assert_eq!(v4.country_code.as_deref(), Some("US"));
    assert_eq!(v4.country_name.as_deref(), Some("Vereinigte Staaten"));
    assert_eq!(v4.city.as_deref(), Some("Springfield"), "English when the language is missing");
    assert_eq!((v4.asn, v4.as_org.as_deref()), (Some(64500), Some("Example Mail <Networks> & Co")));
    assert_eq!(data.lookup(ip("192.0.2.200"), Lang::Pt).country_name.as_deref(), Some("Japão"));
    let v6 = data.lookup(ip("2001:db8::21"), Lang::Ja);
    assert_eq!((v6.country_name.as_deref(), v6.asn), (Some("ドイツ"), Some(64501)));
}

#[test]
fn ipinfo_lite_schema_in_one_file() {
    let file = fixture("test-ipinfo.mmdb");
    let settings =
        IpDataSettings { country_db: file.clone(), asn_db: file, attribution: Some("IP data by IPinfo".into()) };
    let data = IpData::open(&settings).unwrap();
    assert_eq!(data.attribution, "IP data by IPinfo");
    let info = data.lookup(ip("192.0.2.30"), Lang::Fr);
    assert_eq!(info.country_code.as_deref(), Some("NL"));
    assert_eq!(info.country_name.as_deref(), Some("Netherlands"));
    assert_eq!((info.asn, info.as_org.as_deref()), (Some(64502), Some("IPinfo Example")));
}

#[test]
fn a_file_that_is_not_a_database_is_a_usage_error() {
    let settings = IpDataSettings { country_db: fixture("make-test-mmdb.py"), ..Default::default() };
    let err = IpData::open(&settings).err().expect("not a database");
    assert!(err.is::<crate::UsageError>(), "{err}");
}
