//! What the sidecar has decided about names, for a gateway that must decide without it:
//! `GET /api/v1/decisions` ([`DecisionList`], the sidecar's side) and [`DecidedSet`], the
//! lookup the filter's `local_fallback` makes with the same precedence as the sidecar's verdict:
//! a reviewer's decision on the most specific covering name wins; else the operator's blocklist
//! (any covering name), then its allowlist.
//!
//! The walk covers every parent of a name: the sidecar leaves out names that are public
//! suffixes (a decision there covers nothing), so walking every parent matches what its walk up
//! to the registrable domain matches.

use serde::{Deserialize, Serialize};

use crate::{Decision, Domain};

mod build;
mod json;
pub use build::{Listed, PartsBuilder};
pub use json::BUFFER as JSON_BUFFER;

/// The answer of `GET /api/v1/decisions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionList {
    /// Reviewers' decisions in force.
    pub reviewer: DecidedNames,
    /// The operator's `--blocklist` / `--allowlist` names.
    pub operator: DecidedNames,
    /// False when a list was cut at the endpoint's bound (the rest is still decided by the
    /// sidecar's own verdicts, only not known to the gateway when the sidecar gives none).
    pub complete: bool,
}

/// Names decided `disposable` (`block`) and `safe` (`allow`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidedNames {
    pub block: Vec<String>,
    pub allow: Vec<String>,
}

/// A [`DecisionList`] prepared for lookups, in one flat buffer a gateway stores in shared data
/// and searches where it lies, parsing nothing ([`Self::from_bytes`]): every worker of a proxy
/// then holds one compact copy (a Wasm VM) or none of its own (the module), not a parsed list.
///
/// Layout ([`MAGIC`], then little-endian `u32`s): the counts of the three sorted tables
/// (reviewers', the operator's block and allow); a decision byte per reviewer name (`B`, `A`);
/// each table's name end offsets; each table's names, concatenated.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct DecidedSet {
    bytes: Vec<u8>,
    tables: [Table; 3],
    /// Where the reviewers' decision bytes start.
    decisions: usize,
}

/// One sorted table of names inside [`DecidedSet::bytes`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Table {
    count: usize,
    /// Where its `count` end offsets (relative to `names`) start.
    ends: usize,
    names: usize,
}

const MAGIC: &[u8; 4] = b"evd1";
const REVIEWER: usize = 0;
const OPERATOR_BLOCK: usize = 1;
const OPERATOR_ALLOW: usize = 2;

impl DecidedSet {
    /// Names that do not parse as a [`Domain`] (or are not in its normal form) are left out.
    /// The whole set in one part: [`PartsBuilder`] builds it (and the parts a gateway stores).
    pub fn new(list: &DecisionList) -> Self {
        let mut builder = PartsBuilder::new(1);
        builder.extend(list);
        builder.into_parts().next().unwrap_or_default()
    }

    /// The set stored as [`Self::as_bytes`] wrote it, checked whole (the offsets within the
    /// buffer, each table sorted, each decision known); `None` for anything else.
    pub fn from_bytes(bytes: Vec<u8>) -> Option<Self> {
        if bytes.get(..4)? != MAGIC {
            return None;
        }
        let counts = [read_u32(&bytes, 4)?, read_u32(&bytes, 8)?, read_u32(&bytes, 12)?];
        let decisions: usize = 16;
        let mut ends = decisions.checked_add(counts[REVIEWER])?;
        let mut names = counts.iter().try_fold(ends, |at, n| at.checked_add(n.checked_mul(4)?))?;
        let mut set = Self { tables: [Table::default(); 3], decisions, bytes: Vec::new() };
        for (slot, count) in set.tables.iter_mut().zip(counts) {
            *slot = Table { count, ends, names };
            let len = if count == 0 { 0 } else { read_u32(&bytes, ends + (count - 1) * 4)? };
            ends += count * 4;
            names = names.checked_add(len)?;
        }
        if names != bytes.len() {
            return None;
        }
        set.bytes = bytes;
        let known = |b: &u8| *b == b'B' || *b == b'A';
        let decided = set.bytes.get(decisions..decisions + counts[REVIEWER])?.iter().all(known);
        (decided && set.tables.iter().all(|t| set.sorted(t))).then_some(set)
    }

    /// The stored form ([`Self::from_bytes`]).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.tables.iter().map(|t| t.count).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The decision in force for `domain`, as the sidecar would apply it.
    pub fn decision(&self, domain: &Domain) -> Option<Decision> {
        decide(parents(domain).map(|name| self.entry(name)))
    }

    /// What this set says of `name` itself (not of its parents).
    pub fn entry(&self, name: &str) -> Entry {
        let reviewer = self
            .find(&self.tables[REVIEWER], name)
            .map(|i| if self.bytes[self.decisions + i] == b'B' { Decision::Block } else { Decision::Allow });
        let on = |t: usize| self.find(&self.tables[t], name).is_some();
        Entry { reviewer, blocked: on(OPERATOR_BLOCK), allowed: on(OPERATOR_ALLOW) }
    }

    /// The `i`th name of `t` (`i < t.count`; the offsets were checked by `from_bytes`).
    fn name(&self, t: &Table, i: usize) -> &[u8] {
        let end = |i: usize| read_u32(&self.bytes, t.ends + i * 4).unwrap_or(0);
        let start = if i == 0 { 0 } else { end(i - 1) };
        self.bytes.get(t.names + start..t.names + end(i)).unwrap_or_default()
    }

    fn find(&self, t: &Table, name: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, t.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.name(t, mid).cmp(name.as_bytes()) {
                std::cmp::Ordering::Equal => return Some(mid),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        None
    }

    /// Offsets that never go back and names in strictly increasing order.
    fn sorted(&self, t: &Table) -> bool {
        let mut previous_end = 0;
        for i in 0..t.count {
            let end = read_u32(&self.bytes, t.ends + i * 4).unwrap_or(0);
            if end < previous_end || (i > 0 && self.name(t, i - 1) >= self.name(t, i)) {
                return false;
            }
            previous_end = end;
        }
        true
    }
}

impl std::fmt::Debug for DecidedSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts = self.tables.map(|t| t.count);
        f.debug_struct("DecidedSet").field("counts", &counts).field("bytes", &self.bytes.len()).finish()
    }
}

/// The buffer of [`DecidedSet`]: sorted, deduplicated tables and the reviewers' decisions.
fn encode<N: AsRef<[u8]>>(tables: &[Vec<N>; 3], decisions: impl Iterator<Item = u8>) -> Vec<u8> {
    let names: usize = tables.iter().flatten().map(|n| n.as_ref().len()).sum();
    let count: usize = tables.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(16 + tables[REVIEWER].len() + count * 4 + names);
    out.extend_from_slice(MAGIC);
    for t in tables {
        out.extend_from_slice(&u32_of(t.len()).to_le_bytes());
    }
    out.extend(decisions);
    for t in tables {
        let mut end = 0;
        for name in t {
            end += name.as_ref().len();
            out.extend_from_slice(&u32_of(end).to_le_bytes());
        }
    }
    for name in tables.iter().flatten() {
        out.extend_from_slice(name.as_ref());
    }
    out
}

/// A size as a table's `u32` (a decision list is bounded far below 4 GiB by the sidecar's answer).
fn u32_of(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn read_u32(bytes: &[u8], at: usize) -> Option<usize> {
    let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(b)).ok()
}

/// What a set says of one name ([`DecidedSet::entry`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Entry {
    /// A reviewer's decision on the name.
    pub reviewer: Option<Decision>,
    /// On the operator's blocklist, allowlist.
    pub blocked: bool,
    pub allowed: bool,
}

/// The decision in force from the entries of a name and its parents, most specific first: a
/// reviewer's decision on the most specific name wins; else the operator's blocklist (any name),
/// then its allowlist.
pub fn decide(entries: impl Iterator<Item = Entry>) -> Option<Decision> {
    let entries: Vec<Entry> = entries.collect();
    entries.iter().find_map(|e| e.reviewer).or_else(|| {
        if entries.iter().any(|e| e.blocked) {
            Some(Decision::Block)
        } else if entries.iter().any(|e| e.allowed) {
            Some(Decision::Allow)
        } else {
            None
        }
    })
}

/// The part of a split set ([`PartsBuilder`]) `name` is in: 64-bit FNV-1a, stable
/// everywhere (the sync that writes the parts and every worker that reads them agree).
pub fn bucket_of(name: &str, buckets: usize) -> usize {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    usize::try_from(hash % u64::try_from(buckets.max(1)).unwrap_or(1)).unwrap_or(0)
}

/// `domain` and every parent name, most specific first.
pub fn parents(domain: &Domain) -> impl Iterator<Item = &str> {
    let mut next = Some(domain.as_str());
    std::iter::from_fn(move || {
        let current = next?;
        next = current.split_once('.').map(|(_, p)| p);
        Some(current)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn precedence_is_the_sidecars() {
        let list = DecisionList {
            reviewer: DecidedNames {
                block: names(&["burner.example", "bad.vouched.example"]),
                allow: names(&["ok.burner.example", "vouched.example"]),
            },
            operator: DecidedNames {
                block: names(&["op.example", "vouched.example", "Not A Name"]),
                allow: names(&["op-ok.example", "op.example"]),
            },
            complete: true,
        };
        let set = DecidedSet::new(&list);
        assert_eq!(set.len(), 8, "the name that does not parse is left out");
        let check = |name: &str, expected: Option<Decision>| {
            assert_eq!(set.decision(&Domain::parse(name).unwrap()), expected, "{name}");
        };
        use Decision::*;
        check("burner.example", Some(Block));
        check("fresh-4711.burner.example", Some(Block));
        check("ok.burner.example", Some(Allow));
        check("x.ok.burner.example", Some(Allow));
        // A reviewer's decision wins over the operator's lists, the most specific one first.
        check("vouched.example", Some(Allow));
        check("bad.vouched.example", Some(Block));
        // Operator: the blocklist before the allowlist.
        check("op.example", Some(Block));
        check("a.op-ok.example", Some(Allow));
        check("unrelated.example", None);
    }

    fn sample_list() -> DecisionList {
        let many: Vec<String> = (0..500).map(|i| format!("n{i}.decided.example")).collect();
        DecisionList {
            reviewer: DecidedNames { block: many, allow: names(&["ok.decided.example"]) },
            operator: DecidedNames { block: names(&["op.example"]), allow: names(&["op-ok.example"]) },
            complete: true,
        }
    }

    fn sample() -> DecidedSet {
        DecidedSet::new(&sample_list())
    }

    #[test]
    fn the_stored_form_is_read_in_place_and_decides_the_same() {
        let set = sample();
        let again = DecidedSet::from_bytes(set.as_bytes().to_vec()).expect("its own form");
        assert_eq!(again, set);
        for name in [
            "n0.decided.example",
            "x.n499.decided.example",
            "ok.decided.example",
            "op.example",
            "a.op-ok.example",
            "n500.decided.example",
        ] {
            let d = Domain::parse(name).unwrap();
            assert_eq!(again.decision(&d), set.decision(&d), "{name}");
        }
        assert_eq!(again.decision(&Domain::parse("n250.decided.example").unwrap()), Some(Decision::Block));
        assert_eq!(DecidedSet::from_bytes(DecidedSet::default().as_bytes().to_vec()), None, "no magic: not a set");
        let empty = DecidedSet::new(&DecisionList::default());
        assert!(empty.is_empty() && DecidedSet::from_bytes(empty.as_bytes().to_vec()).is_some());
    }

    #[test]
    fn a_damaged_stored_form_is_refused_never_a_panic() {
        let bytes = sample().as_bytes().to_vec();
        for len in 0..bytes.len() {
            assert!(DecidedSet::from_bytes(bytes[..len].to_vec()).is_none(), "cut at {len}");
        }
        // Every byte of the header, the decisions and the offsets changed in turn: refused, or
        // (a name's byte) still a set that answers without panicking.
        for at in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[at] ^= flip;
                if let Some(set) = DecidedSet::from_bytes(damaged) {
                    set.decision(&Domain::parse("n7.decided.example").unwrap());
                }
            }
        }
        // A binary search needs order: a table out of order, or with a name twice, is refused.
        let written = |t: Vec<&str>| encode(&[t, vec![], vec![]], std::iter::repeat_n(b'B', 2));
        assert!(DecidedSet::from_bytes(written(vec!["a.example", "b.example"])).is_some());
        assert!(DecidedSet::from_bytes(written(vec!["b.example", "a.example"])).is_none());
        assert!(DecidedSet::from_bytes(written(vec!["a.example", "a.example"])).is_none());
    }

    #[test]
    fn a_split_set_decides_as_the_whole_one() {
        let whole = sample();
        for buckets in [1, 7, 256] {
            let mut builder = PartsBuilder::new(buckets);
            builder.extend(&sample_list());
            let parts: Vec<DecidedSet> = builder.into_parts().collect();
            assert_eq!(parts.len(), buckets);
            assert_eq!(parts.iter().map(DecidedSet::len).sum::<usize>(), whole.len(), "{buckets}");
            for name in [
                "n0.decided.example",
                "x.n42.decided.example",
                "ok.decided.example",
                "a.op.example",
                "op-ok.example",
                "no.example",
            ] {
                let d = Domain::parse(name).unwrap();
                let split = decide(parents(&d).map(|p| parts[bucket_of(p, buckets)].entry(p)));
                assert_eq!(split, whole.decision(&d), "{name} in {buckets}");
            }
            for part in &parts {
                assert_eq!(DecidedSet::from_bytes(part.as_bytes().to_vec()).as_ref(), Some(part), "a part is a set");
            }
        }
    }
}
