//! Typo suggestions (`did_you_mean`): whether a domain is very probably a mistyped popular mail
//! provider, and which one.
//!
//! Careful by design (peers are criticised for suggesting `gmail.com` to a `hotmail.com` user
//! and for telling the real owner of a small domain to change it):
//! - only for a domain that cannot receive mail (NXDOMAIN, no MX, null MX) and that nothing
//!   vouches for or decided (free, relay, operator allow/block, a reviewer): [`did_you_mean`].
//!   A disposable listing does not stop it: the lists carry the typosquatted typos (`gmial.com`),
//!   and without mail the name serves no one;
//! - only towards a provider of a small shipped set ([`Providers`], `data/popular.txt`), and only
//!   one edit away in the name: one transposition, one missing or extra character, or one
//!   character replaced by a neighbouring QWERTY key; a provider name shorter than
//!   [`MIN_FUZZY_NAME`] is matched only exactly (one edit of `aol` is too many real names);
//! - a mistyped suffix (`.con`, `.cmo`, `.comm`, `.vom`...: one such edit of the provider's
//!   suffix) is corrected alone only when it is no real public suffix: `gmail.co`, `gmail.cm`
//!   and `gmail.om` are real names under real TLDs and get nothing, `gmial.co` (the name
//!   mistyped too) gets `gmail.com`;
//! - when two providers are equally close, nothing.
//!
//! A provider splits into its name (the first label) and its suffix (the rest, a public suffix:
//! every entry is its own registrable domain); a typed domain splits the same way, so a name
//! under a subdomain (`mail.gmial.com`) matches nothing.
//!
//! Pure and total: no I/O, no panics (indexes are checked), bounded work (one pass over at most
//! [`MAX_PROVIDERS`] names, each compared in linear time).

use crate::Domain;
use crate::lists::{EntryError, LoadReport, load_lines};
use crate::verdict::{MxInfo, Signals};

/// The most names a [`Providers`] set takes: every suggestion compares the domain with each.
pub const MAX_PROVIDERS: usize = 1000;
/// A provider name (its first label) shorter than this is matched only exactly.
pub const MIN_FUZZY_NAME: usize = 5;

/// The popular mail providers a suggestion may point to, each its own registrable domain under
/// a known public suffix; kept sorted so that every answer is reproducible.
#[derive(Debug, Clone, Default)]
pub struct Providers {
    names: Vec<Box<str>>,
}

/// `did_you_mean` for a lookup: the provider `domain` is very probably a typo of, when the
/// domain cannot receive mail (`mx`) and nothing in `signals` vouches for or decided it (free
/// and relay lists, the operator's files, a reviewer). Never for a domain with MX.
pub fn did_you_mean<'a>(providers: &'a Providers, domain: &Domain, signals: &Signals, mx: &MxInfo) -> Option<&'a str> {
    if mx.has_mx() || signals.known_beyond_disposable_lists() {
        return None;
    }
    providers.closest(domain)
}

impl Providers {
    /// Loads a list text (one name per line, `#` comments), refusing names that are not their
    /// own registrable domain under a known public suffix, and any beyond [`MAX_PROVIDERS`].
    pub fn load_text(&mut self, text: &str) -> LoadReport {
        let report = load_lines(text, |line| self.insert(line));
        self.names.sort();
        self.names.dedup();
        report
    }

    fn insert(&mut self, name: &str) -> Result<(), EntryError> {
        let domain = Domain::parse(name).map_err(|_| EntryError::Invalid)?;
        let name = domain.as_str();
        if domain.registrable() != Some(name) || !suffix_is_known(split(name).1) {
            return Err(EntryError::NotRegistrable);
        }
        if self.names.len() >= MAX_PROVIDERS {
            return Err(EntryError::OverLimit);
        }
        self.names.push(name.into());
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.binary_search_by(|n| (**n).cmp(name)).is_ok()
    }

    /// The one provider `domain` is closest to within the rules above, if exactly one is; never
    /// `domain` itself. Knows nothing of DNS or lists: see [`did_you_mean`].
    pub fn closest(&self, domain: &Domain) -> Option<&str> {
        let typed = domain.as_str();
        if self.contains(typed) {
            return None;
        }
        let (name, suffix) = split(typed);
        let typed = Typed {
            name,
            suffix,
            suffix_real: suffix_is_known(suffix),
            // `gmail.co` is no typo of `ymail.com`: a provider's exact name is never "corrected".
            name_known: self.names.iter().any(|p| split(p).0 == name),
        };
        let mut best: Option<(u8, &str)> = None;
        let mut tied = false;
        for provider in &self.names {
            let Some(cost) = typed.cost(provider) else { continue };
            match best {
                Some((b, _)) if cost > b => {}
                Some((b, _)) if cost == b => tied = true,
                _ => {
                    best = Some((cost, provider));
                    tied = false;
                }
            }
        }
        if tied { None } else { best.map(|(_, p)| p) }
    }
}

/// A typed domain, split, with what the rules need to know about its parts.
struct Typed<'a> {
    name: &'a str,
    suffix: &'a str,
    /// The suffix is a real public suffix (`co`, `cm`), not a slip (`con`).
    suffix_real: bool,
    /// The name is exactly some provider's name (`gmail`), so it is no typo.
    name_known: bool,
}

impl Typed<'_> {
    /// How far this is from `provider` (1: one edit; 2: a mistyped name under a mistyped
    /// suffix), or `None` when the rules do not allow the correction.
    fn cost(&self, provider: &str) -> Option<u8> {
        let (p_name, p_suffix) = split(provider);
        let name_edit = if self.name == p_name {
            Edit::Same
        } else if p_name.len() >= MIN_FUZZY_NAME && !self.name_known {
            edit(self.name.as_bytes(), p_name.as_bytes())
        } else {
            Edit::Far
        };
        match (name_edit, edit(self.suffix.as_bytes(), p_suffix.as_bytes())) {
            (Edit::One, Edit::Same) => Some(1),
            // A real suffix is never turned into another when the name itself is right.
            (Edit::Same, Edit::One) if !self.suffix_real => Some(1),
            (Edit::One, Edit::One) => Some(2),
            _ => None,
        }
    }
}

/// The first label and the rest (`gmail` + `com`, `yahoo` + `co.uk`).
fn split(domain: &str) -> (&str, &str) {
    domain.split_once('.').unwrap_or((domain, ""))
}

/// Whether `suffix` is exactly a public suffix the Public Suffix List names (`co`, `cm`,
/// `co.uk`; not `con`, `cmo`, `comm`).
fn suffix_is_known(suffix: &str) -> bool {
    psl::suffix(suffix.as_bytes()).is_some_and(|s| s.is_known() && s.as_bytes().len() == suffix.len())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Same,
    /// One transposition of neighbours, one character missing or extra, or one character
    /// replaced by a neighbouring key.
    One,
    Far,
}

fn edit(typed: &[u8], target: &[u8]) -> Edit {
    if typed == target {
        return Edit::Same;
    }
    let one = match typed.len().abs_diff(target.len()) {
        0 => replaced_or_swapped(typed, target),
        1 if typed.len() > target.len() => one_extra(typed, target),
        1 => one_extra(target, typed),
        _ => false,
    };
    if one { Edit::One } else { Edit::Far }
}

/// `longer` is `shorter` with one character inserted somewhere.
fn one_extra(longer: &[u8], shorter: &[u8]) -> bool {
    let i = common_prefix(longer, shorter);
    longer.get(i + 1..) == shorter.get(i..)
}

/// Same length: one position replaced by a neighbouring key, or two neighbours swapped.
fn replaced_or_swapped(typed: &[u8], target: &[u8]) -> bool {
    let i = common_prefix(typed, target);
    let (Some(&a), Some(&b)) = (typed.get(i), target.get(i)) else { return false };
    if typed.get(i + 1..) == target.get(i + 1..) {
        return neighbours(a, b);
    }
    typed.get(i + 1) == Some(&b) && target.get(i + 1) == Some(&a) && typed.get(i + 2..) == target.get(i + 2..)
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The QWERTY rows; each is shifted right of the one above by part of a key, so a key touches
/// the keys at its own column and the next one in the row above, and at its own column and the
/// one before in the row below.
const ROWS: [&[u8]; 4] = [b"1234567890-", b"qwertyuiop", b"asdfghjkl", b"zxcvbnm"];

fn key(c: u8) -> Option<(usize, usize)> {
    ROWS.iter().enumerate().find_map(|(row, keys)| keys.iter().position(|&k| k == c).map(|col| (row, col)))
}

/// Whether `a` and `b` are neighbouring keys.
fn neighbours(a: u8, b: u8) -> bool {
    let (Some((ra, ca)), Some((rb, cb))) = (key(a), key(b)) else { return false };
    if ra == rb {
        ca.abs_diff(cb) == 1
    } else if rb + 1 == ra {
        cb == ca || cb == ca + 1 // b in the row above a
    } else if ra + 1 == rb {
        ca == cb || ca == cb + 1 // b in the row below a
    } else {
        false
    }
}

#[cfg(test)]
mod tests;
