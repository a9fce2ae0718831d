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

    /// The names sorted, each once.
    fn sorted(&self) -> Vec<&[u8]> {
        let mut names: Vec<&[u8]> = (0..self.len()).map(|i| self.get(i)).collect();
        names.sort_unstable();
        names.dedup();
        names
    }
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
    pub fn from_json(mut reader: impl Read, buckets: usize) -> std::io::Result<Self> {
        let mut builder = Self::new(buckets);
        super::json::read(&mut reader, &mut builder)?;
        Ok(builder)
    }
}

impl Part {
    fn finish(self) -> DecidedSet {
        let [reviewer, block, allow] = &self.tables;
        let decision = |i: usize| self.decisions.get(i).copied().unwrap_or(b'A');
        // A name both blocked and allowed by reviewers cannot be: blocked (the sidecar's list
        // is consistent; this only has to be deterministic). Block sorts first, `dedup` keeps it.
        let mut order: Vec<usize> = (0..reviewer.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            reviewer.get(a).cmp(reviewer.get(b)).then_with(|| (decision(a) != b'B').cmp(&(decision(b) != b'B')))
        });
        order.dedup_by(|a, b| reviewer.get(*a) == reviewer.get(*b));
        let tables = [order.iter().map(|&i| reviewer.get(i)).collect(), block.sorted(), allow.sorted()];
        DecidedSet::from_bytes(encode(&tables, order.iter().map(|&i| decision(i)))).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
