//! The HTML templates of the public pages and the dashboard (`sidecar/templates/`, embedded),
//! rendered with minijinja. Autoescaping is on for every `.html` template, so anything a
//! template prints — a domain, a host name from DNS, an organisation name from an IP database,
//! a key name — is escaped. Templates hold no translatable text: they call `t("key", name=…)`,
//! which reads the `lang` variable of the page.

use minijinja::value::{Kwargs, Serde};
use minijinja::{AutoEscape, Environment, Error, Output, State, UndefinedBehavior, Value, escape_formatter};
use serde::Serialize;

use super::i18n;
use super::lang::Lang;

const SOURCES: [(&str, &str); 11] = [
    ("page.html", include_str!("../../templates/page.html")),
    ("domain.html", include_str!("../../templates/domain.html")),
    ("message.html", include_str!("../../templates/message.html")),
    ("home.html", include_str!("../../templates/home.html")),
    ("dashboard/layout.html", include_str!("../../templates/dashboard/layout.html")),
    ("dashboard/login.html", include_str!("../../templates/dashboard/login.html")),
    ("dashboard/home.html", include_str!("../../templates/dashboard/home.html")),
    ("dashboard/revoke.html", include_str!("../../templates/dashboard/revoke.html")),
    ("dashboard/reviews.html", include_str!("../../templates/dashboard/reviews.html")),
    ("dashboard/server.html", include_str!("../../templates/dashboard/server.html")),
    ("dashboard/decide.html", include_str!("../../templates/dashboard/decide.html")),
];

/// The stylesheet of every page (served as a file: the CSP allows no inline style).
pub const SITE_CSS: &str = include_str!("../../templates/site.css");

pub struct Templates {
    env: Environment<'static>,
}

impl Templates {
    pub fn new() -> anyhow::Result<Self> {
        let mut env = Environment::new();
        // A misspelt variable fails the render (and so the tests) instead of printing nothing.
        env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
        // Block tags leave no blank lines behind: the page source stays readable.
        let syntax = minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build()?;
        env.set_syntax(syntax);
        for (name, source) in SOURCES {
            env.add_template(name, source).map_err(|e| anyhow::anyhow!("template {name}: {e}"))?;
        }
        env.add_function("t", translate);
        env.add_function("t_link", translate_link);
        env.set_formatter(escape_html);
        Ok(Self { env })
    }

    /// Renders `name` with `context`; a failure (a bug in a template) is logged and answered
    /// with a bare page rather than a half-written one.
    pub fn render(&self, name: &str, context: &impl Serialize) -> String {
        let result = self.env.get_template(name).and_then(|t| t.render(Value::from(Serde(context))));
        result.unwrap_or_else(|e| {
            tracing::error!(template = name, error = %e, "template failed");
            "<!doctype html><title>Error</title><p>Internal error.</p>".to_owned()
        })
    }
}

/// HTML escaping of the five characters that matter in text and quoted attributes; unlike
/// minijinja's default it leaves `/` alone, so URLs read as URLs in the page source.
fn escape_html(out: &mut Output, state: &mut State, value: &Value) -> Result<(), Error> {
    if *state.auto_escape() != AutoEscape::Html || value.is_safe() || value.is_none() || value.is_undefined() {
        return escape_formatter(out, state, value);
    }
    out.write_str(&escape(&value.to_string())).map_err(Error::from)
}

fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// `t("key", name=value, …)`: the message in the page's `lang`.
fn translate(state: &State, key: &str, kwargs: Kwargs) -> Result<String, Error> {
    let (lang, args) = lang_and_args(state, &kwargs)?;
    let args: Vec<(&str, &str)> = args.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Ok(i18n::text(lang, key, &args))
}

/// `t_link("key", href=url, name=value, …)`: the message with its `[text]` part as a link to
/// `href`; everything escaped (the link's text and URL too), so it is printed as it is.
fn translate_link(state: &State, key: &str, kwargs: Kwargs) -> Result<Value, Error> {
    let href: String = kwargs.get("href")?;
    let (lang, args) = lang_and_args(state, &kwargs)?;
    let args: Vec<(&str, &str)> =
        args.iter().filter(|(k, _)| k != "href").map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let template = i18n::raw(lang, key);
    let part = |s: &str| escape(&i18n::fill(s, &args));
    let html = match template.split_once('[').and_then(|(before, rest)| Some((before, rest.split_once(']')?))) {
        Some((before, (text, after))) => {
            format!("{}<a href=\"{}\">{}</a>{}", part(before), escape(&href), part(text), part(after))
        }
        None => part(template),
    };
    Ok(Value::from_safe_string(html))
}

/// The page's language and the keyword arguments as text.
fn lang_and_args(state: &State, kwargs: &Kwargs) -> Result<(Lang, Vec<(String, String)>), Error> {
    let lang = state.lookup("lang").and_then(|v| v.as_str().and_then(Lang::parse)).unwrap_or(Lang::En);
    let mut args = Vec::new();
    for name in kwargs.args() {
        args.push((name.to_owned(), kwargs.get::<Value>(name)?.to_string()));
    }
    kwargs.assert_all_used()?;
    Ok((lang, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Ctx {
        lang: Lang,
        domain: String,
    }

    #[test]
    fn translated_and_escaped() {
        let mut env = Environment::new();
        env.add_function("t", translate);
        env.add_function("t_link", translate_link);
        env.set_formatter(escape_html);
        env.add_template("x.html", "{{ t('back_link', domain=domain) }}|<a href=\"/x/{{ domain }}\">").unwrap();
        let ctx = Ctx { lang: Lang::Fr, domain: "<b>&\"'/".into() };
        let out = env.get_template("x.html").unwrap().render(Value::from(Serde(&ctx))).unwrap();
        assert_eq!(out, "Retour à la page de &lt;b&gt;&amp;&quot;&#39;/|<a href=\"/x/&lt;b&gt;&amp;&quot;&#39;/\">");
        assert!(Templates::new().is_ok(), "every template compiles");
    }

    #[test]
    fn a_link_inside_a_translated_message() {
        let mut env = Environment::new();
        env.add_function("t_link", translate_link);
        env.set_formatter(escape_html);
        env.add_template(
            "x.html",
            "{{ t_link('footer_api', href=href) }}|{{ t_link('back_link', href=href, domain=domain) }}",
        )
        .unwrap();
        #[derive(Serialize)]
        struct Link {
            lang: Lang,
            href: String,
            domain: String,
        }
        let ctx = Link { lang: Lang::De, href: "/x?a=1&b=\"".into(), domain: "<b>".into() };
        let out = env.get_template("x.html").unwrap().render(Value::from(Serde(&ctx))).unwrap();
        assert_eq!(
            out,
            "Dasselbe Ergebnis liefert Entwicklern die <a href=\"/x?a=1&amp;b=&quot;\">JSON-API</a>.\
             |Zurück zur Seite für &lt;b&gt;"
        );
    }
}
