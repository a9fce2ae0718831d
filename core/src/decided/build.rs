//! The one way a [`DecidedSet`] is built: name by name, each name straight into the part of a
//! split set it belongs in ([`bucket_of`]), so that a gateway can read `GET /api/v1/decisions`
//! as a stream ([`PartsBuilder::from_json`]) and hold no more than the parts' names while it
//! does: never the answer, a [`DecisionList`] or the whole set. A Wasm VM's
//! memory never shrinks, so what the parse holds at its peak is held for the proxy's life.

use std::io::Read;

use super::{DecidedSet, DecisionList, bucket_of, encode};
use crate::Domain;

/// The list of the answer a name is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    ReviewerBlock,
    ReviewerAllow,
    OperatorBlock,
    OperatorAllow,
}

/// The parts of a split [`DecidedSet`] as names come in, in any order; [`Self::into_parts`]
/// sorts each part and drops names twice over, so the order names come in changes nothing.
#[derive(Debug)]
pub struct PartsBuilder {
    parts: Vec<Part>,
}

/// One part's names as they came: the three tables of [`DecidedSet`] and a decision byte per
/// reviewer name.
#[derive(Debug, Default)]
struct Part {
    tables: [Names; 3],
    decisions: Vec<u8>,
}

/// Names concatenated and their end offsets: no allocation per name.
#[derive(Debug, Default)]
struct Names {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Names {
    fn push(&mut self, name: &str) {
        self.bytes.extend_from_slice(name.as_bytes());
        self.ends.push(self.bytes.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends.get(i - 1).copied().unwrap_or(0) };
        let end = self.ends.get(i).copied().unwrap_or(0);
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The names sorted, each once, with their decision bytes (`decisions`, or 0 for a table
    /// without them): for a name there twice, the one [`by_name_block_first`] puts first.
    fn sorted<'a>(&'a self, decisions: &[u8]) -> Vec<(&'a [u8], u8)> {
        let mut names: Vec<(&[u8], u8)> =
            (0..self.len()).map(|i| (self.get(i), decisions.get(i).copied().unwrap_or(0))).collect();
        names.sort_by(by_name_block_first);
        names.dedup_by(|a, b| a.0 == b.0);
        names
    }
}

/// By name; a reviewer's name both blocked and allowed is blocked (the sidecar's lists agree;
/// this only has to be deterministic). One comparison for every table: one sort in the module.
fn by_name_block_first(a: &(&[u8], u8), b: &(&[u8], u8)) -> std::cmp::Ordering {
    a.0.cmp(b.0).then_with(|| (a.1 != b'B').cmp(&(b.1 != b'B')))
}

impl PartsBuilder {
    /// An empty set cut in `buckets` parts (at least 1).
    pub fn new(buckets: usize) -> Self {
        Self { parts: (0..buckets.max(1)).map(|_| Part::default()).collect() }
    }

    /// Adds `name` from list `listed`. A name that does not parse as a [`Domain`], or is not in
    /// its normal form, is left out (the sidecar sends normal names; nothing else can match).
    pub fn push(&mut self, listed: Listed, name: &str) {
        if !Domain::parse(name).is_ok_and(|d| d.as_str() == name) {
            return;
        }
        let buckets = self.parts.len();
        let Some(part) = self.parts.get_mut(bucket_of(name, buckets)) else { return };
        let (table, decision) = match listed {
            Listed::ReviewerBlock => (0, Some(b'B')),
            Listed::ReviewerAllow => (0, Some(b'A')),
            Listed::OperatorBlock => (1, None),
            Listed::OperatorAllow => (2, None),
        };
        part.tables[table].push(name);
        part.decisions.extend(decision);
    }

    /// Adds every name of `list`.
    pub fn extend(&mut self, list: &DecisionList) {
        let lists = [
            (&list.reviewer.block, Listed::ReviewerBlock),
            (&list.reviewer.allow, Listed::ReviewerAllow),
            (&list.operator.block, Listed::OperatorBlock),
            (&list.operator.allow, Listed::OperatorAllow),
        ];
        for (names, listed) in lists {
            names.iter().for_each(|name| self.push(listed, name));
        }
    }

    /// Each part as a [`DecidedSet`], in bucket order, built one at a time as the iterator is
    /// read (a caller that stores each at once holds one built part, never all of them).
    pub fn into_parts(self) -> impl Iterator<Item = DecidedSet> {
        self.parts.into_iter().map(Part::finish)
    }

    /// Reads the answer of `GET /api/v1/decisions` from `reader` (the JSON of a
    /// [`DecisionList`], held to the same rules, `json.rs`) straight into `buckets` parts: the
    /// answer is read [`JSON_BUFFER`](super::JSON_BUFFER) bytes at a time and no name is kept
    /// on its own. An error (`InvalidData` for what does not parse) leaves nothing built.
    pub fn from_json(reader: impl Read, buckets: usize) -> std::io::Result<Self> {
        let mut builder = Self::new(buckets);
        super::json::read(reader, &mut builder)?;
        Ok(builder)
    }
}

impl Part {
    fn finish(self) -> DecidedSet {
        let [reviewer, block, allow] = &self.tables;
        let (reviewer, block, allow) = (reviewer.sorted(&self.decisions), block.sorted(&[]), allow.sorted(&[]));
        fn names<'a>(t: &[(&'a [u8], u8)]) -> Vec<&'a [u8]> {
            t.iter().map(|n| n.0).collect()
        }
        let tables = [names(&reviewer), names(&block), names(&allow)];
        DecidedSet::from_bytes(encode(&tables, reviewer.iter().map(|n| n.1))).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
