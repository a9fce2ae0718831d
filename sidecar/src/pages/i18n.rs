//! The pages' messages: one TOML file per language under `sidecar/locales/` (flat
//! `key = "text"`), embedded at build time. Templates hold no translatable text; they call
//! `t("key", name=value)`. `{name}` placeholders are filled in before escaping.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::lang::Lang;

const SOURCES: [(Lang, &str); 6] = [
    (Lang::En, include_str!("../../locales/en.toml")),
    (Lang::De, include_str!("../../locales/de.toml")),
    (Lang::Fr, include_str!("../../locales/fr.toml")),
    (Lang::Es, include_str!("../../locales/es.toml")),
    (Lang::Pt, include_str!("../../locales/pt.toml")),
    (Lang::Ja, include_str!("../../locales/ja.toml")),
];

type Messages = HashMap<String, String>;

static CATALOG: LazyLock<HashMap<Lang, Messages>> = LazyLock::new(|| {
    SOURCES
        .iter()
        .map(|(lang, text)| {
            // The files are ours and checked by the tests below; a broken one must not take
            // the server down, so it degrades to the key names.
            let messages = toml::from_str::<Messages>(text).unwrap_or_else(|e| {
                tracing::error!(lang = lang.code(), error = %e, "cannot read the messages");
                Messages::new()
            });
            (*lang, messages)
        })
        .collect()
});

/// The message `key` in `lang` (English if that language lacks it, the key itself if English
/// does too), with `{name}` placeholders replaced from `args`.
pub fn text(lang: Lang, key: &str, args: &[(&str, &str)]) -> String {
    fill(raw(lang, key), args)
}

/// The message `key` in `lang` (as [`text`]) with its placeholders left in.
pub fn raw(lang: Lang, key: &str) -> &str {
    lookup(lang, key).or_else(|| lookup(Lang::En, key)).unwrap_or(key)
}

/// `{name}` placeholders of `template` replaced from `args`.
pub fn fill(template: &str, args: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (name, value) in args {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

fn lookup(lang: Lang, key: &str) -> Option<&'static str> {
    CATALOG.get(&lang).and_then(|m| m.get(key)).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn placeholders(s: &str) -> BTreeSet<&str> {
        s.split('{').skip(1).filter_map(|p| p.split_once('}').map(|(name, _)| name)).collect()
    }

    #[test]
    fn every_language_has_every_key_with_the_same_placeholders() {
        let parsed: Vec<(Lang, Messages)> =
            SOURCES.iter().map(|(l, t)| (*l, toml::from_str(t).unwrap_or_else(|e| panic!("{l:?}: {e}")))).collect();
        let english = &parsed[0].1;
        for (lang, messages) in &parsed {
            let keys: BTreeSet<_> = messages.keys().collect();
            let want: BTreeSet<_> = english.keys().collect();
            assert_eq!(keys, want, "{lang:?} has other keys than English");
            for (key, value) in messages {
                assert!(!value.trim().is_empty(), "{lang:?} {key} is empty");
                assert_eq!(placeholders(value), placeholders(&english[key]), "{lang:?} {key}: placeholders");
                // `[text]` marks a link's text (`t_link` in the templates): one where English has one.
                let links = |s: &str| (s.matches('[').count(), s.matches(']').count());
                assert_eq!(links(value), links(&english[key]), "{lang:?} {key}: [link] markers");
            }
        }
    }

    #[test]
    fn placeholders_are_filled() {
        assert_eq!(text(Lang::De, "back_link", &[("domain", "a.example")]), "Zurück zur Seite für a.example");
        assert_eq!(text(Lang::Ja, "no_such_key", &[]), "no_such_key");
    }
}
