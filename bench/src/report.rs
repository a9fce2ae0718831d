//! The results: markdown sections, printed as they are made and written to one file.

use std::path::Path;

use anyhow::Context;

use crate::wrk::Run;

#[derive(Default)]
pub struct Report {
    text: String,
}

impl Report {
    pub fn add(&mut self, section: &str) {
        println!("{section}");
        self.text.push_str(section);
        self.text.push('\n');
    }

    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, &self.text).with_context(|| format!("write {}", path.display()))
    }
}

/// 12345.6 → "12,346".
pub fn count(v: f64) -> String {
    let s = format!("{:.0}", v);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::from(sign);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn ms(v: f64) -> String {
    if v < 1.0 { format!("{:.0} µs", v * 1000.0) } else { format!("{v:.2} ms") }
}

pub fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "**NOT met**" }
}

/// Non-2xx answers and socket errors of a run, when there were any.
pub fn errors(r: &Run) -> String {
    match (r.non_2xx, r.socket_errors) {
        (0, 0) => "0".to_owned(),
        (n, 0) => format!("{n} non-2xx"),
        (0, s) => format!("{s} socket errors"),
        (n, s) => format!("{n} non-2xx, {s} socket errors"),
    }
}

/// One table row of a wrk run: requests/s | p50 | p99 | errors | server CPU per request.
pub fn cells(r: &Run) -> String {
    let cpu = r.cpu_us.map_or_else(|| "?".to_owned(), |us| format!("{us:.1} µs"));
    format!("{} | {} | {} | {} | {cpu}", count(r.rps), ms(r.p50_ms), ms(r.p99_ms), errors(r))
}

/// `ours`' server CPU per request over `base`'s, as "1.23×" (empty when either is unknown).
pub fn cpu_ratio(ours: &Run, base: &Run) -> String {
    ours.cpu_us.zip(base.cpu_us).filter(|(_, b)| *b > 0.0).map_or_else(String::new, |(o, b)| format!("{:.2}×", o / b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(1234567.4), "1,234,567");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(-1234.0), "-1,234");
        assert_eq!(ms(0.6354), "635 µs");
        assert_eq!(ms(2.014), "2.01 ms");
    }
}
