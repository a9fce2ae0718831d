//! The languages of the public pages, and choosing one from `Accept-Language` (RFC 9110 §12.5.4:
//! q-values; a range matches a language by its primary subtag, so `pt-BR` picks `pt`).

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "&'static str")]
pub enum Lang {
    En,
    De,
    Fr,
    Es,
    Pt,
    Ja,
}

impl Lang {
    /// Every language, in the order the language switcher shows them.
    pub const ALL: [Lang; 6] = [Lang::En, Lang::De, Lang::Fr, Lang::Es, Lang::Pt, Lang::Ja];

    /// The URL segment, `lang` attribute and `hreflang` value.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::De => "de",
            Lang::Fr => "fr",
            Lang::Es => "es",
            Lang::Pt => "pt",
            Lang::Ja => "ja",
        }
    }

    pub fn parse(code: &str) -> Option<Lang> {
        Lang::ALL.into_iter().find(|l| l.code() == code)
    }

    /// The key of this language in MaxMind `names` maps (GeoLite2 has `pt-BR`, not `pt`).
    pub fn geo_names_key(self) -> &'static str {
        match self {
            Lang::Pt => "pt-BR",
            other => other.code(),
        }
    }
}

impl From<Lang> for &'static str {
    fn from(l: Lang) -> Self {
        l.code()
    }
}

/// The best language for an `Accept-Language` header; English when nothing acceptable is offered.
pub fn negotiate(header: Option<&str>) -> Lang {
    let ranges: Vec<(String, f32)> = header.map(parse_ranges).unwrap_or_default();
    let wildcard = ranges.iter().find(|(r, _)| r == "*").map(|(_, q)| *q);
    let mut best: Option<(f32, usize, Lang)> = None;
    for (order, lang) in Lang::ALL.into_iter().enumerate() {
        // An explicit range for the language wins over `*`, whatever their q-values.
        let explicit = ranges
            .iter()
            .enumerate()
            .filter(|(_, (r, _))| primary(r) == lang.code())
            .max_by(|a, b| a.1.1.total_cmp(&b.1.1));
        let (q, position) = match (explicit, wildcard) {
            (Some((i, (_, q))), _) => (*q, i),
            (None, Some(q)) => (q, ranges.len() + order),
            (None, None) => continue,
        };
        if q > 0.0 && best.is_none_or(|(bq, bp, _)| q > bq || (q == bq && position < bp)) {
            best = Some((q, position, lang));
        }
    }
    best.map_or(Lang::En, |(_, _, l)| l)
}

fn primary(range: &str) -> &str {
    range.split('-').next().unwrap_or(range)
}

/// `de-CH, fr;q=0.8` → `[("de-ch", 1.0), ("fr", 0.8)]`; malformed q-values count as 0.
fn parse_ranges(header: &str) -> Vec<(String, f32)> {
    header
        .split(',')
        .take(32) // a header is short; a hostile one costs no more than this
        .filter_map(|item| {
            let mut parts = item.split(';');
            let range = parts.next()?.trim().to_ascii_lowercase();
            if range.is_empty() {
                return None;
            }
            let q = parts
                .find_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
                .map_or(Some(1.0), |v| v.trim().parse::<f32>().ok().filter(|q| (0.0..=1.0).contains(q)))
                .unwrap_or(0.0);
            Some((range, q))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(header: Option<&str>, want: Lang) {
        assert_eq!(negotiate(header), want, "{header:?}");
    }

    #[test]
    fn accept_language() {
        check(None, Lang::En);
        check(Some(""), Lang::En);
        check(Some("de"), Lang::De);
        check(Some("de-CH, fr;q=0.8"), Lang::De);
        check(Some("fr;q=0.8, de-CH;q=0.9"), Lang::De);
        check(Some("pt-BR,pt;q=0.9,en;q=0.5"), Lang::Pt);
        check(Some("ja-JP"), Lang::Ja);
        check(Some("zh-CN, es;q=0.3"), Lang::Es);
        check(Some("zh-CN"), Lang::En);
        check(Some("fr;q=0, *;q=0.5"), Lang::En); // fr refused; * ties broken by our order
        check(Some("*"), Lang::En);
        check(Some("es;q=0.5, fr;q=0.5"), Lang::Es); // a tie goes to the first named
        check(Some("de;q=nonsense, ja"), Lang::Ja);
        check(Some("de;q=2, fr"), Lang::Fr);
        check(Some("EN-us;Q=0.1, JA;q=0.2"), Lang::Ja);
    }
}
