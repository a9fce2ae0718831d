//! The local decision when the sidecar gives no verdict (`local_fallback` in `CONFIG.md`).
//!
//! A sidecar that refuses the gateway's key (burst or quota spent: 429/402; 401), errs, times
//! out or is down must not turn into a bypass for names the filter can judge itself: the
//! *strong* disposable lists (reviewed or observed sources; `data/README.md`) are embedded in
//! the module, and a domain they list, or a subdomain of one, is `disposable`. Everything else
//! still falls to `failure_mode`.
//!
//! The lists are loaded by core at build time (`build.rs`: normalized, public-suffix entries
//! dropped), so the module carries no Public Suffix List. The sidecar walks parents only up to
//! the registrable domain; walking every parent here matches the same names because no strong
//! name has a public suffix beneath it (`scripts/update-data.py` refuses a list where one does;
//! the tests below compare both walks over every name).
//!
//! The names are embedded deflated (`build.rs`), so the module stays under 1 MiB. A Wasm VM's
//! memory never shrinks, and Envoy runs one VM per worker: the lists are inflated only when the
//! fallback first needs them (the sidecar gave no verdict), never at configuration, so a proxy
//! whose sidecar answers never holds them. Then they are inflated once per VM into a buffer of
//! exactly their size (its length is embedded beside them) and searched where they lie: no
//! index, no copy (BENCHMARKS.md, section 8, "Where a Wasm worker's memory goes").

use std::sync::OnceLock;

use email_verdict_core::Domain;

/// The strong sources as core loads them, one name a line, sorted: their length in bytes (`u32`,
/// little-endian), then the text deflated (`build.rs`).
const STRONG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/strong.txt.deflate"));

/// The local fallback's lists, as the configuration holds them: a handle that inflates them on
/// first use ([`strong`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrongLists;

impl StrongLists {
    /// True when the strong lists name `domain` or one of its parents (inflates them once).
    pub fn is_listed(self, domain: &Domain) -> bool {
        strong().is_listed(domain)
    }

    pub fn len(self) -> usize {
        strong().len()
    }

    pub fn is_empty(self) -> bool {
        strong().is_empty()
    }
}

/// An embedded list of names (the strong lists here, the relay list in `relay.rs`): the text
/// `build.rs` writes, one name a line in byte order, searched in place (a binary search per
/// parent over the lines).
#[derive(Debug)]
pub struct NameSet(&'static str);

static SET: OnceLock<NameSet> = OnceLock::new();

/// The embedded strong lists, inflated on first use. The bytes are the build's own, checked by
/// the tests; were they ever unreadable, the set would be empty and every name fall to
/// `failure_mode`, as without `local_fallback`.
pub fn strong() -> &'static NameSet {
    SET.get_or_init(|| NameSet::from_text(inflate(STRONG).unwrap_or_default().leak()))
}

/// Whether this process (a Wasm VM) has inflated the strong lists yet.
pub fn inflated() -> bool {
    SET.get().is_some()
}

/// The text of `embedded` (its length, then its deflated bytes), inflated into a buffer of
/// exactly that length: no growing vector whose larger peak the VM would keep.
fn inflate(embedded: &[u8]) -> Option<String> {
    let (len, deflated) = embedded.split_first_chunk::<4>()?;
    let mut out = vec![0; usize::try_from(u32::from_le_bytes(*len)).ok()?];
    let n =
        miniz_oxide::inflate::decompress_slice_iter_to_slice(&mut out, std::iter::once(deflated), false, true).ok()?;
    (n == out.len()).then_some(())?;
    String::from_utf8(out).ok()
}

impl NameSet {
    /// One name a line as `build.rs` writes them: leading `#` comment lines skipped, then names
    /// in strictly ascending byte order. Text that is not (no build writes it) gives an empty
    /// set rather than a search that would miss names.
    pub fn from_text(text: &'static str) -> Self {
        let mut names = text;
        while names.starts_with('#') {
            names = names.split_once('\n').map_or("", |(_, rest)| rest);
        }
        let mut last: Option<&str> = None;
        let sorted = names.lines().all(|l| {
            let ok = !l.is_empty() && last.is_none_or(|p| p < l);
            last = Some(l);
            ok
        });
        Self(if sorted { names } else { "" })
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.0.lines()
    }

    pub fn len(&self) -> usize {
        self.names().count()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A binary search over the lines of the text, by byte position: each probe takes the line
    /// around the middle of the range.
    fn contains_name(&self, name: &str) -> bool {
        // Bytes, not `str`: a probe may fall inside a character.
        let (text, name) = (self.0.as_bytes(), name.as_bytes());
        let (mut lo, mut hi) = (0, text.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let start = text[lo..mid].iter().rposition(|&b| b == b'\n').map_or(lo, |i| lo + i + 1);
            let end = text[mid..hi].iter().position(|&b| b == b'\n').map_or(hi, |i| mid + i);
            match text[start..end].cmp(name) {
                std::cmp::Ordering::Equal => return true,
                std::cmp::Ordering::Less => lo = end + 1,
                std::cmp::Ordering::Greater => hi = start,
            }
        }
        false
    }

    /// True when the set names `domain` or one of its parents.
    pub fn is_listed(&self, domain: &Domain) -> bool {
        let mut name = domain.as_str();
        loop {
            if self.contains_name(name) {
                return true;
            }
            match name.split_once('.') {
                Some((_, parent)) => name = parent,
                None => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use email_verdict_core::DomainSet;
    use email_verdict_core::domain::is_public_suffix;

    use super::*;

    const SOURCES: [&str; 2] = [
        include_str!("../../data/disposable/disposable-email-domains.txt"),
        include_str!("../../data/disposable/fakefilter.txt"),
    ];

    /// The sidecar's view of the same lists: core's loader and its registrable-bounded walk.
    fn sidecar_view() -> DomainSet {
        let mut set = DomainSet::default();
        SOURCES.iter().for_each(|t| drop(set.load_text(t)));
        set
    }

    fn check(name: &str, listed: bool) {
        assert_eq!(strong().is_listed(&Domain::parse(name).unwrap()), listed, "{name}");
    }

    #[test]
    fn the_embedded_strong_lists_decide_listed_names_and_their_subdomains() {
        // Both files' entries: thousands of names, none lost beyond what core's loader drops.
        assert_eq!(strong().len(), sidecar_view().len());
        assert!(strong().len() > 10_000, "{} names", strong().len());
        for (name, listed) in [
            ("mailinator.com", true),
            ("MAILINATOR.COM.", true),
            ("x7.mailinator.com", true),
            ("gmail.com", false),
            ("shopco.example", false),
            ("co.uk", false),
        ] {
            check(name, listed);
        }
        // fakefilter's own names are in too.
        let fakefilter = SOURCES[1].lines().find(|l| !l.starts_with('#') && !l.trim().is_empty()).unwrap();
        check(fakefilter, true);
    }

    /// For every strong name, itself, a child, a grandchild and its parent: the same answer as
    /// the sidecar's registrable-bounded walk, and no public suffix in the set.
    #[test]
    fn the_unbounded_walk_matches_the_sidecars_on_every_name() {
        let sidecar = sidecar_view();
        for name in strong().names() {
            assert!(!is_public_suffix(name), "{name} is a public suffix");
            let parent = name.split_once('.').map(|(_, p)| p).unwrap_or(name);
            for probe in [name.to_owned(), format!("x.{name}"), format!("a.b.{name}"), parent.to_owned()] {
                let Ok(domain) = Domain::parse(&probe) else { continue };
                assert_eq!(strong().is_listed(&domain), sidecar.contains(&domain), "{probe}");
            }
        }
    }

    /// The in-place search: every name found, the names between and around them not, a probe
    /// inside a multi-byte character safe; text out of order or with an inner comment refused.
    #[test]
    fn the_text_is_searched_in_place() {
        let set =
            NameSet::from_text("# header\n# more\na.example\nb.example\nbb.example\nxn--d.example\n\u{e9}.example\n");
        assert_eq!(
            set.names().collect::<Vec<_>>(),
            ["a.example", "b.example", "bb.example", "xn--d.example", "\u{e9}.example"]
        );
        for name in set.names() {
            assert!(set.contains_name(name), "{name}");
        }
        for name in ["", "a", "a.exampl", "a.examplf", "ba.example", "c.example", "z", "\u{e9}", "\u{ff}.example"] {
            assert!(!set.contains_name(name), "{name}");
        }
        assert!(NameSet::from_text("b.example\na.example\n").is_empty(), "out of order");
        assert!(NameSet::from_text("a.example\n# c\nb.example\n").is_empty(), "an inner comment");
        assert!(NameSet::from_text("a.example\na.example\n").is_empty(), "a repeated name");
        let one = NameSet::from_text("only.example");
        assert!(one.contains_name("only.example") && !one.contains_name("a") && one.len() == 1);
        assert!(inflate(&[1, 2]).is_none() && inflate(&[5, 0, 0, 0, 0xff]).is_none(), "no panic on bad bytes");
    }
}
